# Two commands do all set-up: `make run` and `make test` (see README.md).
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
STAMP   := $(VENV)/.installed
PORT    ?= 8000
REQS    := $(wildcard requirements/*.txt)
ASSETS  := static/vendor/.built

.PHONY: install test test-fast test-engine lint run bench clean

$(PY):
	python3 -m venv $(VENV)

# torch and torchvision go in first, as the matching pair of requirements/torch.txt (docs/deploy.md, "Which torch
# build"): from TORCH_INDEX when set (a PyTorch index, as the images do), else PyPI's own build, named with `===` so
# that a local CPU wheel (2.13.0+cpu) is never paired with PyPI's torchvision, which links the CUDA build of torch.
TORCH_INDEX ?=
TORCH_PAIR  := $(shell grep -E '^torch' requirements/torch.txt)

$(STAMP): $(PY) $(REQS)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX) $(TORCH_PAIR),$(subst ==,===,$(TORCH_PAIR)))
	$(PIP) install -q $(foreach r,$(REQS),-r $(r))
	touch $@

install: system-packages $(STAMP)

# What the system must provide (COMMAND:Debian package): installed with apt-get as root, else the exact command is
# printed and make stops. Jobs run under bubblewrap unless PT2SCOPE_ISOLATION=none (docs/security.md); Inductor
# compiles C++ with g++; npm builds the front-end assets.
NEED := sh scripts/need-system-packages
.PHONY: system-packages
system-packages:
	@$(NEED) $(if $(filter none,$(PT2SCOPE_ISOLATION)),,bwrap:bubblewrap) g++:g++ npm:npm

# Front-end assets from the npm lockfile, bundled into static/vendor/ (ignored by git; no CDN at run time).
$(ASSETS): package.json package-lock.json $(wildcard static/src/*.js)
	npm ci --no-audit --no-fund --loglevel=error
	npm run --silent build
	touch $@

.PHONY: assets
assets: $(ASSETS)

# The pages under test load the bundled editor; browser tests drive Debian's Chromium (never a downloaded one).
.PHONY: browser-packages
browser-packages:
	@$(NEED) chromium:chromium
test: assets browser-packages

# Migrates the database, then serves on 127.0.0.1:$(PORT) with one embedded worker (SQLite data and broker).
run: install assets
	$(PY) -m service serve --port $(PORT)

# --durations: every run names its slowest tests, so the suite's time is measured where it is spent.
test: install lint lint-js test-js
	$(PY) -m pytest -q --durations=30 tests

# What needs only the virtual environment (markers: pyproject.toml, applied in tests/conftest.py), and g++ for the
# Inductor compiles: no bubblewrap, PostgreSQL, Redis, browser or deploy set-up; its jobs run unsandboxed (trusted
# test code). How long it takes: docs/benchmarks.md, "Test suite: make test-fast".
test-fast: $(STAMP)
	PT2SCOPE_ISOLATION=none $(PY) -m pytest -q --durations=30 -m "not (sandbox or services or browser or deploy)" tests

# Python lint, format and type checks (ruff and mypy, pinned in requirements/test.txt; settings in pyproject.toml:
# mypy checks contract/, storage/ and webapp/).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

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
