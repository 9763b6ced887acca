# Two commands do everything on a fresh machine; both install what they need into .venv first.
#   make demo   grade the bundled sample submissions into results/
#   make test   run the whole test suite
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/grade autograde samples/submissions --out results
	@echo "results: results/<name>/results.json (Gradescope format) and results/<name>/feedback.html; the class: results/summary.html"

check: $(STAMP)
	$(BIN)/grade check exercises

# The fast unit tests first (seconds), then the rest of the suite, then the tests whose numbers depend on the CPU's vector units again, as on a CPU without
# them (ATEN_CPU_CAPABILITY=default): a difference between CPUs is found here, not in a classroom.
test: $(STAMP)
	$(BIN)/python -m pytest -m unit -q -p no:cacheprovider
	$(BIN)/python -m pytest -m "not unit"
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest -m numerics -p no:cacheprovider -q
