# Sillo Dash. `make run` starts the product; `make test` runs the whole suite.
# Both set up a virtual environment with a Python 3.12+ found on this machine
# (or PYTHON=/path/to/python3.12).

VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

# python3.x on PATH, else pyenv's installs (pyenv's shims answer "command not
# found" for versions that are not selected, so each candidate is run).
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 python3 \
	$$(ls -d "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV); do \
	"$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { command -v "$$p"; break; }; \
	done)

.PHONY: run test lint format bench dist clean

$(PY):
	@test -n "$(PYTHON)" || { echo "Sillo Dash needs Python 3.12 or newer and found none; set PYTHON=/path/to/python3.12" >&2; exit 1; }
	"$(PYTHON)" -m venv $(VENV)

$(VENV)/.runtime: requirements.txt | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@ $(VENV)/.runtime

$(VENV)/.bench: requirements.txt requirements-dev.txt requirements-bench.txt | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	touch $@ $(VENV)/.dev $(VENV)/.runtime

# DEBUG off, as users meet the product: error pages without tracebacks or settings
# (`make run DJANGO_DEBUG=true` while developing). Plain http on this machine: cookies that
# are not Secure, or the browser would drop the session.
DJANGO_DEBUG ?= false
# Links in notifications point at the address served (a SILLO_BASE_URL set outside wins).
SILLO_BASE_URL ?= http://$(HOST)
RUN_ENV = DJANGO_DEBUG=$(DJANGO_DEBUG) DJANGO_SECURE_COOKIES=false SILLO_BASE_URL=$(SILLO_BASE_URL)

# The server is exec'd: make passes a SIGTERM on to its child, which then is the
# server itself, not a shell that would leave it running.
run: $(VENV)/.runtime
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	$(RUN_ENV) $(PY) manage.py collectstatic --noinput -v0
	$(RUN_ENV) $(PY) manage.py ensureadmin --url http://$(HOST)/
	$(if $(NODEMO),,$(RUN_ENV) $(PY) manage.py demo --if-empty)
	exec env $(RUN_ENV) $(PY) manage.py runscheduler --serve $(HOST)

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Unbuffered, so a log cut short (a CI limit) ends at the test that was running.
# Two pytest-xdist workers: most of the suite waits on the processes, servers and
# browser it starts, and one test at a time left 2 cores more than half idle.
# TEST_WORKERS=0 runs one test at a time, in pytest's own process.
TEST_WORKERS ?= 2
test: lint
	PYTHONUNBUFFERED=1 $(PY) -m pytest -n $(TEST_WORKERS) -m "not production" $(PYTEST_ARGS)
	PYTHONUNBUFFERED=1 $(PY) -m tests.production_profile -n $(TEST_WORKERS) $(PYTEST_ARGS)

format: $(VENV)/.dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Every benchmark side by side with its peers, then docs/benchmarks.md (QUICK=1: < 5 min).
bench: $(VENV)/.bench
	$(PY) bench/run.py $(if $(QUICK),--quick,)

# The reusable app as an sdist and a wheel in dist/ (docs/packaging.md).
dist: $(VENV)/.dev
	$(PY) -m build --no-isolation --outdir dist .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis dist
