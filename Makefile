.PHONY: install test lint format bench-deps bench bench-quick run

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

# langchain-community is installed without its declared dependencies: they pull in aiohttp,
# which would switch google-genai's transport (see requirements-bench.txt).
bench-deps:
	pip install -r requirements-bench.txt && pip install --no-deps langchain-community==0.4.2

bench: bench-deps
	python -m bench

bench-quick: bench-deps
	python -m bench --quick

run:
	pip install -r requirements.txt && python app.py
