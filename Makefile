# `make run`: set up and open the workbench.
# Test tiers: `make test` runs the whole suite (what CI runs, the llama.cpp tier included); `make test-fast` leaves out the tests
# marked slow (1 s of CPU or more, measured), browser (headless Chromium) and faults (killed writer processes), for
# everyday work. Slow tests are marked in their files (@pytest.mark.slow); a run of every tier (`make test`) ends
# with one line naming the unmarked tests that took 1 s of CPU or more (testkit/cpu_times.py); tests/tiers.py marks
# browser and faults.
# Run one tier by hand with e.g. `pytest -m browser` or `pytest -m "not slow"`. Benches run as modules from the
# repository root (`python -m bench.eval_qasper`); bench/ and tests/ share helpers through testkit/.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup run test test-fast browser llm-server bench clean

setup: $(VENV)/.installed

# torch is pinned to the CPU wheel before anything asks for torch (an unpinned one is a multi-GB CUDA build).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test]"
	touch $@

run: setup
	$(BIN)/streamlit run app.py --server.address 127.0.0.1 --server.headless true --browser.gatherUsageStats false

# Two pytest-xdist workers, one test module at a time each (--dist loadfile: a module's fixtures are
# set up once). A serial run used about one of the two cores: it spends much of its time waiting on
# the processes it starts (the workbench, Chromium, CLI commands, servers).
TEST_WORKERS ?= 2
test: setup browser llm-server
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-fast: setup
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow and not browser and not faults"

# The llm_server tier (tests/test_llama_server.py) needs the llm-server extra, which `make test`
# installs once per venv: llama-cpp-python builds from source the first time on a machine (~8 min on
# 2 cores idle, with a C/C++ compiler and cmake; pip keeps the wheel). A machine that cannot build it
# still runs the rest: the tier skips, saying so once. `make test-fast` leaves it out.
llm-server: $(VENV)/.llm-server

$(VENV)/.llm-server: $(VENV)/.installed
	@CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} $(BIN)/pip install --quiet --disable-pip-version-check \
	  -e ".[llm-server]" && touch $@ || \
	echo "WARNING: llama-cpp-python could not be built (it needs a C/C++ compiler and cmake): the llm_server tier will be SKIPPED"

# The browser tests need Debian's chromium and chromium-driver, and fonts for Chinese and emoji
# (without them both are drawn as empty boxes): installed here when run as root with apt-get;
# otherwise those tests skip (or the glyph test fails) and say why.
BROWSER_PACKAGES := chromium chromium-driver fonts-noto-cjk fonts-noto-color-emoji
browser:
	@{ command -v chromium && command -v chromedriver && fc-list :lang=zh | grep -q . && \
	   fc-list | grep -q NotoColorEmoji; } >/dev/null 2>&1 || \
	{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  { apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null 2>&1; }; }; } || \
	echo "WARNING: $(BROWSER_PACKAGES) could not all be installed: browser tests will be SKIPPED or fail"

bench: setup
	$(BIN)/python -m bench.bench_build
	$(BIN)/python -m bench.bench_retrieve
	$(BIN)/python -m bench.bench_research_memory
	$(BIN)/python -m bench.eval_locomo
	$(BIN)/python -m bench.bench_embed
	$(BIN)/python -m bench.bench_pdf_ingest
	$(BIN)/python -m bench.eval_qasper
	$(BIN)/python -m bench.eval_pdf_route
	$(BIN)/python -m bench.bench_server_load
	$(BIN)/python -m bench.bench_personal_writers
	$(BIN)/python -m bench.bench_workbench

clean:
	rm -rf $(VENV)
