# Two commands do everything on a fresh machine; both install what they need into .venv first.
#   make demo   grade the bundled sample submissions into results/
#   make test   run the whole test suite
# Each stage says what it does, and how long it takes on a first run, in one line. pip shows its progress
# when the output is a terminal (--quiet otherwise, for logs and CI).
# The interpreter the venv is made from: the system's python3.11 where it has its venv module (a distribution's build,
# its libpython linked into the interpreter: `import torch` takes 10% and grading 15% less CPU there than on a plain
# source build such as pyenv's, bench/RESULTS.md), else python3.11 on the PATH. PYTHON=... chooses.
PYTHON ?= $(or $(shell /usr/bin/python3.11 -c 'import ensurepip, venv' 2>/dev/null && echo /usr/bin/python3.11),python3.11)
VENV   := .venv
BIN    := $(VENV)/bin
KIT    := $(VENV)/.installed
STAMP  := $(VENV)/.installed-test

.PHONY: demo test check install

# the kit alone (torch and what grading needs): all make demo and make check use
$(KIT): pyproject.toml
	@echo "installing the kit and torch 2.13.0 (CPU) into $(VENV) (first run: under a minute)..."
	@$(PYTHON) -m venv $(VENV)
	@if [ -t 1 ]; then quiet=; else quiet=--quiet; fi; \
	  $(BIN)/python autograder/release/torch_cpu.py $$quiet && \
	  $(BIN)/python -m pip install $$quiet --disable-pip-version-check -e .
	@touch $(KIT)
	@echo "installed: $(BIN)/grade"

# and the test tools (nbgrader, JupyterLab, Playwright, Dask, the LTI libraries, ruff, pytest-xdist): make test's
$(STAMP): $(KIT)
	@echo "installing the test tools into $(VENV) (first run: about 2 minutes)..."
	@if [ -t 1 ]; then quiet=; else quiet=--quiet; fi; \
	  $(BIN)/python -m pip install $$quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(KIT)
	@echo "grading the 4 sample submissions of samples/submissions/ into results/ (about 30 s: torch starts, then each in its sandbox)..."
	@$(BIN)/grade autograde samples/submissions --out results
	@echo "results: results/<name>/results.json (Gradescope format) and results/<name>/feedback.html; the class: results/summary.html"

check: $(KIT)
	@echo "checking exercises/ against the public cases (about 10 s)..."
	@$(BIN)/grade check exercises

# The linter first (ruff check, configured in pyproject.toml: a second), then the whole suite in one pytest run on four
# pytest-xdist workers (a test module to a worker, the longest first, the fast unit tests last, filling the cores while
# the real components' tests wait for servers, kernels and timeouts: tests/support/two_workers.py), printing its 20
# slowest steps by wall time and by CPU. The tests whose numbers depend on the CPU's vector units run again within it,
# as on a CPU without them (tests/integration/test_numerics_without_vector_units.py): a difference between CPUs is
# found here, not in a classroom. The unit tests alone, for a quick answer while working:
# .venv/bin/python -m pytest -m unit -n 2 (about a minute).
# The suite's Python processes (several hundred: grade, its zygotes, kernels, pytest's workers) read the kit's and the
# tests' bytecode from __pycache__ in the checkout (ignored by git): where the environment says not to write it
# (PYTHONDONTWRITEBYTECODE, set in some containers), each compiled them again, pytest's assertion rewriting 4 CPU-s a
# process of its own.
test: export PYTHONDONTWRITEBYTECODE :=
test: $(STAMP)
	@echo "1/2 the linter: ruff check (about 1 s)..."
	$(BIN)/ruff check .
	@echo "2/2 the suite: unit tests, end-to-end tests with real components (13 to 20 minutes on 2 cores, by the machine)..."
	$(BIN)/python -m pytest -n 4 --dist loadscope --no-loadscope-reorder --durations=20
