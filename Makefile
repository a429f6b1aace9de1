# Two entry points a newcomer needs (see README):
#   make render   set up .venv (runtime deps only) and render every shipped environment into rendered/
#   make test     set up .venv (dev deps) and the pinned Go tools, then run the whole test suite
PY := .venv/bin/python
RUNTIME := .venv/.runtime-installed
STAMP := .venv/.installed
# The tool cache (tools/toolchain.py cache_root): outside the checkout, shared by fresh clones.
CACHE := $(or $(TRAINYARD_CACHE),$(HOME)/.cache/trainyard)

.PHONY: setup setup-runtime tools render check validate test test-fast lint

# uv installs the pinned requirements into .venv: the same pins as pip would, from uv's own
# cache (~/.cache/uv). Measured in a fresh clone under load 9-13: pip 159-243 s, uv 5 s warm,
# 25 s cold. uv itself is pinned and kept in the tool cache, outside the checkout; it is built
# in a scratch venv and only its binary (a static executable) is kept, moved into place in one
# step so two makes started at once never see half an install.
UV_VERSION := 0.13.9
UV := $(CACHE)/bin/uv-$(UV_VERSION)
$(UV):
	@mkdir -p $(CACHE)/bin
	@tmp=$$(mktemp -d) && python3 -m venv $$tmp \
	  && $$tmp/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION) \
	  && cp $$tmp/bin/uv $(UV).$$$$ && mv -f $(UV).$$$$ $(UV); rc=$$?; rm -rf $$tmp; exit $$rc

# Rendering needs only requirements.txt (about 60 MB); the dev set (pytest, mypy, the
# Kubernetes client, ...) is installed on top when a test or lint target asks for it.
$(RUNTIME): requirements.txt | $(UV)
	python3 -m venv .venv
	$(UV) pip install --quiet --python $(PY) -r requirements.txt
	touch $(RUNTIME)

$(STAMP): $(RUNTIME) requirements-dev.txt | $(UV)
	$(UV) pip install --quiet --python $(PY) -r requirements-dev.txt
	touch $(STAMP)

setup-runtime: $(RUNTIME)

setup: $(STAMP)

tools: setup-runtime
	$(PY) tools/install.py
	$(PY) generate.py fetch-crds --if-missing

render: setup-runtime
	$(PY) generate.py render

check: setup-runtime
	$(PY) generate.py render --check

# validate runs kubeconform and promtool only: build just those two, not the whole toolchain.
validate: setup-runtime
	$(PY) tools/install.py kubeconform promtool
	$(PY) generate.py fetch-crds --if-missing
	$(PY) generate.py validate

# mypy's incremental cache kept beside the tool cache, outside the checkout, so CI's fresh
# clone reuses it: a fresh clone's mypy took 148 s cold (load 8) against 2 s warm. mypy checks
# each module's mtime and, when it differs (a fresh clone), the source's hash, so only a module
# whose text changed is checked again, with everything that depends on its interface.
lint: export MYPY_CACHE_DIR := $(CACHE)/mypy
lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# The edit loop: every test that starts no server (docs/testing.md "Running the tests"), on
# both cores of the 2-core machine (pytest-xdist; FAST_JOBS=0 runs it in one process).
FAST_JOBS ?= 2
FAST := -m "not controlplane and not slow"
# Compiled bytecode (and pytest's rewritten test modules) kept beside the tool cache, outside
# the checkout: with PYTHONDONTWRITEBYTECODE set (as in some shells and CI images) every test
# process and every `generate.py` a test starts compiled the whole tree again (collection
# 6.2 s -> 2.8 s measured). Python checks each file's mtime and size, so an edit recompiles it.
PYCACHE := $(CACHE)/pycache
test-fast test: export PYTHONDONTWRITEBYTECODE :=
test-fast test: export PYTHONPYCACHEPREFIX := $(PYCACHE)
test-fast: setup
	$(PY) -m pytest -q -n $(FAST_JOBS) $(FAST) --hypothesis-profile=edit-loop

# The whole suite in two runs that together select every test: the serverless tests on both
# cores (as test-fast, at the full Hypothesis profile: 142 s in one process, about half on
# two), then the slow and control-plane tests in one process, where they share the session's
# apiserver and each box test has the cores its timing tolerances were measured with. The
# serial run prints its 25 slowest steps: where CI's time budget goes, in every CI log.
test: tools lint
	$(PY) -m pytest -q -n $(FAST_JOBS) $(FAST)
	$(PY) -m pytest -q -m "controlplane or slow" --durations=25
