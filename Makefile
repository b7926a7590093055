# BaitBench: `make demo` sets everything up and runs the main job; `make test` runs the tests;
# `make serve` serves the site in production (README, "Production").
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/baitbench
# The browser tests drive Debian's Chromium (never a browser build downloaded by Playwright).
CHROMIUM ?= /usr/bin/chromium
REDIS_SERVER ?= /usr/bin/redis-server
TEST_ENV = BAITBENCH_CHROMIUM=$(CHROMIUM) BAITBENCH_REDIS_SERVER=$(REDIS_SERVER) PYTHONDONTWRITEBYTECODE=

.PHONY: install test-tools demo serve test test-pg lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# What `make test` needs besides Python: Debian's chromium (browser tests) and redis-server
# (the queue's Redis test starts a private one when none answers on 127.0.0.1:6379). Each is
# installed with apt-get when missing, as root or through sudo; where neither works, make
# stops and says what to install, rather than letting tests be skipped.
define debian_package
	@if [ ! -x "$(1)" ]; then \
	  echo "make: the tests need $(1); installing Debian's $(2) with apt-get"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif command -v sudo >/dev/null 2>&1; then SUDO=sudo; \
	  else echo "make: error: $(1) is missing and this user cannot install it: run 'apt-get install $(2)' as root" >&2; exit 1; fi; \
	  command -v apt-get >/dev/null 2>&1 || { echo "make: error: $(1) is missing and there is no apt-get: install $(2) and set $(3)=/path/to/it" >&2; exit 1; }; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(2) >/dev/null; \
	  test -x "$(1)" || { echo "make: error: apt-get did not install $(1)" >&2; exit 1; }; \
	fi
endef

test-tools:
	$(call debian_package,$(CHROMIUM),chromium,CHROMIUM)
	$(call debian_package,$(REDIS_SERVER),redis-server,REDIS_SERVER)

# `make demo PORT=8001` when 8000 is taken.
PORT ?= 8000
demo: $(BIN)/.installed
	mkdir -p var
	$(BIN)/python manage.py demo --port $(PORT)
	@# A development server: WhiteNoise serves the static files where they lie.
	BAITBENCH_DEV=1 $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# Production: the environment holds the settings (README, "Production"); nothing is installed
# here, so a machine that installed the project its own way runs it with VENV=its/prefix.
# MIGRATE=0 when the site connects as a role that may not alter tables (README, "A database
# role that cannot alter tables"): the table owner runs `manage.py migrate` beforehand.
MIGRATE ?= 1
serve:
	$(if $(filter 1,$(MIGRATE)),$(BIN)/python manage.py migrate --noinput)
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	exec $(BIN)/gunicorn baitbench_site.wsgi

test: $(BIN)/.installed test-tools
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --dist worksteal $(PYTEST_ARGS)

test-pg: $(BIN)/.installed test-tools
	$(TEST_ENV) DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q -n 2 --dist worksteal $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .

bench: $(BIN)/.installed
	$(BIN)/python bench/stats.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/calls.py
	$(BIN)/python bench/pages.py

clean:
	rm -rf $(VENV) var/*.sqlite3* var/static
