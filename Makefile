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

install: $(STAMP) sandbox

# Jobs run under bubblewrap unless PT2SCOPE_ISOLATION=none (docs/security.md): say how to get it, loudly.
.PHONY: sandbox
sandbox:
	@command -v bwrap >/dev/null || [ "$$PT2SCOPE_ISOLATION" = none ] || { echo "bubblewrap is missing: \
	apt-get install -y bubblewrap (or PT2SCOPE_ISOLATION=none to run jobs unsandboxed, never in public)" >&2; exit 1; }

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
	$(PY) -m service serve --port $(PORT)

test: install lint-js test-js
	$(PY) -m pytest -q tests

# Front end: eslint (eslint.config.js) and the layout/viewer tests under node's test runner (tests/js/, which build
# their graphs with the venv's Python).
.PHONY: lint-js test-js
lint-js: assets
	npx eslint .

test-js: install
	node --test tests/js/

test-engine: install
	$(PY) -m pytest -q tests/engine

# Every bench/ script, each printing a small table (results: docs/benchmarks.md); a failing one is named at the
# end. throughput and api_latency use this machine's PostgreSQL and Redis (as .ci/run starts them); gpu_* scripts
# need a CUDA device and are skipped, saying so, without one.
GPU_BENCHES := $(wildcard bench/gpu_*.py)
CPU_BENCHES := $(filter-out $(GPU_BENCHES),$(wildcard bench/*.py))
HAS_CUDA    := $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())"

bench: install assets
	@failed=; \
	for script in $(CPU_BENCHES); do echo "== $$script (load $$(cut -d' ' -f1 /proc/loadavg))"; \
	  $(PY) $$script || failed="$$failed $$script"; done; \
	for script in $(GPU_BENCHES); do \
	  if $(HAS_CUDA); then echo "== $$script"; \
	    $(PY) $$script $$([ $$script = bench/gpu_fidelity.py ] && mktemp -d) || failed="$$failed $$script"; \
	  else echo "== $$script: skipped: no CUDA device here (torch.cuda.is_available() is False)"; fi; done; \
	[ -z "$$failed" ] || { echo "make bench: failed:$$failed" >&2; exit 1; }

clean:
	rm -rf $(VENV) node_modules static/vendor
