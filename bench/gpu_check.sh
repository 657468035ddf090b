#!/usr/bin/env bash
# `make gpu-check`: the GPU path proven in one command, on a machine with a CUDA GPU (issue #31).
#
#   1. tests/gpu: both engines on CUDA, every half precision, exact on the fixture;
#   2. the offline limit per batch size (1 to 512) on both engines, the 418M architecture with
#      random weights and 16 forced tokens (python -m bench --systems offline);
#   3. the service itself (`bentoml serve` on the GPU, as `make serve` starts it) at 1, 64 and 512
#      one-record clients and at 32 sixteen-record clients, batches of up to 512;
# each written as a bench report under $OUT (default bench/results), with the log of every step.
# Nothing is fetched: the venv ($PYTHON) must already hold requirements-dev.txt with a CUDA torch.
# Sized for the device machine's 10-minute command limit: set GPU_CHECK_SECONDS (default 20) lower
# to fit a shorter lease. On a machine without CUDA it stops at once, saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-bench/results}
SECONDS_PER_POINT=${GPU_CHECK_SECONDS:-20}
mkdir -p "$OUT"
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu-check: torch sees no CUDA device here; nothing to check" >&2
    exit 2
fi
"$PY" -c 'import torch; print("gpu-check on", torch.cuda.get_device_name(), "torch", torch.__version__, "cuda", torch.version.cuda)' \
    | tee "$OUT/gpu-check-device.txt"
status=0
step() {  # step NAME COMMAND...: run, log to $OUT/gpu-check-NAME.log, remember a failure, go on
    local name=$1; shift
    echo "== $name: $*"
    "$@" >"$OUT/gpu-check-$name.log" 2>&1 || { echo "== $name FAILED (see $OUT/gpu-check-$name.log)"; status=1; }
    tail -n 5 "$OUT/gpu-check-$name.log"
}
step tests "$PY" -m pytest -q -p no:cacheprovider tests/gpu
step offline "$PY" -m bench --systems offline --offline-batch-sizes 1,32,128,256,512 \
    --engines transformers:bfloat16,ctranslate2:float16 --duration "$SECONDS_PER_POINT" --warmup 3 \
    --name gpu-offline --output "$OUT"
step service-1record "$PY" -m bench --systems service --records 1 --concurrency 1,64,512 --max-batch-size 512 \
    --max-concurrency 1024 --duration "$SECONDS_PER_POINT" --warmup 5 --name gpu-service-1record --output "$OUT"
step service-16records "$PY" -m bench --systems service --records 16 --concurrency 32 --max-batch-size 512 \
    --duration "$SECONDS_PER_POINT" --warmup 5 --name gpu-service-16records --output "$OUT"
exit $status
