.PHONY: install test lint format bench bench-quick run

install:
	pip install -r requirements-dev.txt

test:
	pip install -r requirements-dev.txt && pytest

lint:
	ruff check .
	ruff format --check .

format:
	ruff format .
	ruff check --fix .

bench:
	pip install -r requirements-bench.txt && python -m bench

bench-quick:
	pip install -r requirements-bench.txt && python -m bench --quick

run:
	pip install -r requirements.txt && python app.py
