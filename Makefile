# Two commands do all set-up: `make run` and `make test` (see README.md).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
STAMP   := $(VENV)/.installed
PORT    ?= 8000
REQS    := $(wildcard requirements/*.txt)

.PHONY: install test test-engine run bench clean

$(PY):
	python3 -m venv $(VENV)

$(STAMP): $(PY) $(REQS)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(foreach r,$(REQS),-r $(r))
	touch $@

install: $(STAMP)

test: install
	$(PY) -m pytest -q tests

test-engine: install
	$(PY) -m pytest -q tests/engine

bench: install
	$(PY) bench/capture_overhead.py

clean:
	rm -rf $(VENV) node_modules static/vendor
