# Two commands do everything on a fresh clone: `make serve` and `make test`.
PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
MODEL_ID ?= facebook/m2m100_418M
FIXTURE  := build/fixture-model
# Installed first and alone: left to the resolver, torch would come as the multi-GB CUDA build.
TORCH    := $(shell grep -E '^torch==' requirements.txt)

.PHONY: setup serve fixture serve-fixture test eval bench bench-smoke soak lint clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -r requirements-dev.txt
	PYTHON=$(BIN)/python bash deploy/tools/install-kubectl.sh >/dev/null
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

EVAL_DATA ?= translator/data/eval/flores
EVAL_OUT  ?= build/eval
# Scores the fixture in-process on its shipped test set; URL=http://127.0.0.1:9527 scores a running
# service through its API instead. Resumable: re-run the same command after an interruption.
eval: $(if $(URL),setup,fixture)
	$(BIN)/python -m translator.evaluate --data $(EVAL_DATA) --output $(EVAL_OUT) \
		$(if $(URL),--url $(URL),--model $(FIXTURE)) $(EVAL_ARGS)

# Offline limit vs this service vs a per-request FastAPI baseline, same model and sentences
# (bench/README.md). Long (its one-record half with 30 s points: 14 min on 2 CPU cores): run it
# on a quiet machine.
# BENCH_ARGS="--model-id ./m2m100_418M --name real" for real weights; results in bench/results/.
bench: setup
	$(BIN)/python -m bench $(BENCH_ARGS)

# The harness on the fixture model, a few seconds per point (the test suite runs the same).
bench-smoke: setup
	$(BIN)/python -m bench --smoke $(BENCH_ARGS)

# Fifteen minutes (SOAK_ARGS="--minutes 30" for more) of mixed load on one server, every answer
# checked against the fixture corpus and the server's memory sampled: nothing lost, nothing grows.
soak: setup
	$(BIN)/python -m bench.soak $(SOAK_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf build .pytest_cache .ruff_cache .mypy_cache
