"""The benches: a script per measured figure (docs/benchmarks.md), run as modules from the repository
root (`python -m bench.eval_qasper --papers 20`). Helpers they share with the tests are in testkit/."""
