"""Helpers the tests (tests/) and the benches (bench/) share: the test topics, starting and stopping
`forest` processes, local servers that speak the Anthropic and OpenAI APIs, Zotero libraries, the
workbench under AppTest, fault injection and a real llama.cpp server. Imported from the repository
root (`python -m bench.x`, pytest's `pythonpath = ["."]`); not part of the installed package."""
