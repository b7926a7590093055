# BaitBench: `make demo` sets everything up and runs the main job; `make test` runs the tests;
# `make serve` serves the site in production (README, "Production").
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/baitbench

.PHONY: install demo serve test test-pg lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	mkdir -p var
	$(BIN)/python manage.py demo
	@# A development server: WhiteNoise serves the static files where they lie.
	BAITBENCH_DEV=1 $(BIN)/python manage.py runserver 127.0.0.1:8000

# Production: the environment holds the settings (README, "Production"); nothing is installed
# here, so a machine that installed the project its own way runs it with VENV=its/prefix.
serve:
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	exec $(BIN)/gunicorn baitbench_site.wsgi

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q -n 2 $(PYTEST_ARGS)

test-pg: $(BIN)/.installed
	DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q -n 2 $(PYTEST_ARGS)

lint: $(BIN)/.installed
	$(BIN)/ruff check .

bench: $(BIN)/.installed
	$(BIN)/python bench/stats.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/calls.py
	$(BIN)/python bench/pages.py

clean:
	rm -rf $(VENV) var/*.sqlite3* var/static
