# adjit: `make test` and `make bench` work on a fresh clone; each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: test bench examples clean

$(VENV)/.base: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base
	$(PY) -m pip install -q -e '.[test]'
	touch $@

test: $(VENV)/.test
	$(PY) -m pytest -q

bench: $(VENV)/.base
	$(PY) benchmarks/run.py

examples: $(VENV)/.base
	for f in examples/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
