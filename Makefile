# Two entry points a newcomer needs (see README):
#   make render   set up .venv and render every shipped environment into rendered/
#   make test     set up .venv and the pinned Go tools, then run the whole test suite
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: setup tools render check validate test lint

$(STAMP): requirements.txt requirements-dev.txt
	python3 -m venv .venv
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)

tools: setup
	$(PY) tools/install.py
	$(PY) generate.py fetch-crds --if-missing

render: setup
	$(PY) generate.py render

check: setup
	$(PY) generate.py render --check

validate: tools  # kubeconform and promtool are pinned binaries
	$(PY) generate.py validate

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

test: tools lint
	$(PY) -m pytest -q
