# Two commands do all set-up: `make run` and `make test` (see README.md).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
STAMP   := $(VENV)/.installed
PORT    ?= 8000
REQS    := $(wildcard requirements/*.txt)
ASSETS  := static/vendor/.built

.PHONY: install test test-engine run bench clean

$(PY):
	python3 -m venv $(VENV)

$(STAMP): $(PY) $(REQS)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(foreach r,$(REQS),-r $(r))
	touch $@

install: $(STAMP)

# Front-end assets from the npm lockfile, bundled into static/vendor/ (ignored by git; no CDN at run time).
$(ASSETS): package.json package-lock.json $(wildcard static/src/*.js)
	npm ci --no-audit --no-fund --loglevel=error
	npm run --silent build
	touch $@

.PHONY: assets
assets: $(ASSETS)

# The pages under test load the bundled editor.
test: assets

# Migrates the database, then serves on 127.0.0.1:$(PORT) with one embedded worker (SQLite data and broker).
run: install assets
	$(PY) -m webapp serve --port $(PORT)

test: install
	$(PY) -m pytest -q tests

test-engine: install
	$(PY) -m pytest -q tests/engine

bench: install
	$(PY) bench/capture_overhead.py

clean:
	rm -rf $(VENV) node_modules static/vendor
