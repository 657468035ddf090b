# Two commands do everything on a fresh clone: `make serve` and `make test`.
PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
MODEL_ID ?= facebook/m2m100_418M
FIXTURE  := build/fixture-model
# Installed first and alone: left to the resolver, torch would come as the multi-GB CUDA build.
TORCH    := $(shell grep -E '^torch==' requirements.txt)

.PHONY: setup serve fixture serve-fixture test lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

# Registers MODEL_ID (hub id or local directory) in the BentoML store if needed, then serves it
# on the port from bentoconfiguration.yaml (9527).
serve: setup
	tag=$$($(BIN)/python save_model.py --model-id "$(MODEL_ID)") && \
	TRANSLATOR_MODEL=$$tag $(BIN)/bentoml serve service:Translation

fixture: setup
	$(BIN)/python -m translator.fixture --output $(FIXTURE)

# The tiny fixture model, served like the real one: for trying the API without the real weights.
serve-fixture: fixture
	$(MAKE) serve MODEL_ID=$(FIXTURE)

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf build .pytest_cache .ruff_cache .mypy_cache
