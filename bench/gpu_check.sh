#!/usr/bin/env bash
# `make gpu-check`: the GPU path proven in one device call (issues #31, #37, #38), on a lent machine
# with a CUDA GPU, from the project's root, as it is:
#
#   bash bench/gpu_check.sh        # the device call carries .whl (../shared/gpu/wheels.sh) and build/fixture-model
#
#   1. tests/gpu: every backend on CUDA (eager, compiled, CTranslate2 where installed), exact on the fixture;
#   2. the engines offline (bench/engines.py): eager transformers against the compiled backend, greedy
#      and beam 5, batches 1 to 2,048, start-up, GPU busy fraction, memory peak, the kernels at 512/1,024;
#   3. the service (`python -m bench --systems service`, the 418M with random weights, 16 forced
#      tokens, batch limit 512): 512 one-record clients with the model's generate in a thread of the
#      engine process (as before #37) and in a process of its own, 64 sixteen-record clients, and the
#      fastest engine `backend: auto` measures at start-up;
#   4. one page, $OUT/gpu-check.md and .json (bench/gpu_summary.py), with every log in
#      $OUT/gpu-check-logs.tar.gz: three files, within the device call's eight.
#
# GPU_CHECK_PARTS picks steps (default tests,engines,service); GPU_CHECK_SECONDS the seconds a point
# (default 4). Each step runs within a budget (tests 100 s, engines 200 s, each service 55 s) and is
# killed past it, and the whole within GPU_CHECK_DEADLINE_S (470: under 8 minutes, the device call's
# size), the last service points cut or skipped first; the page is written whatever happened.
# GPU_CHECK_REHEARSAL=1 runs every step on a CPU with the fixture model and tiny sizes:
# the set-up and the plumbing proven before a lent machine's minutes are spent (bench/README.md).
# Where bentoml is missing and .whl is there (the lent machine), the carried wheels are installed in
# /tmp/site first; the carried fixture is used as it is (FIXTURE_REUSE), never trained again there.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results}
PARTS=${GPU_CHECK_PARTS:-tests,engines,service}
SECONDS_PER_POINT=${GPU_CHECK_SECONDS:-4}
REHEARSAL=${GPU_CHECK_REHEARSAL:-0}
WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
if ! "$PYTHON" -c 'import bentoml' 2>/dev/null && [ -d .whl ]; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "gpu-check: the carried wheels did not install" >&2; exit 2; }
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export FIXTURE_REUSE=1 BENTOML_DO_NOT_TRACK=true PYTHONUNBUFFERED=1
if [ "$REHEARSAL" = 1 ]; then
    echo "gpu-check rehearsal on the CPU: fixture model, tiny sizes; no number here means anything" | tee "$WORK/device.txt"
elif ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu-check: torch sees no CUDA device here; nothing to check (GPU_CHECK_REHEARSAL=1 rehearses it)" >&2
    exit 2
else
    "$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(), "torch", torch.__version__, "cuda", torch.version.cuda)' \
        | tee "$WORK/device.txt"
    nvidia-smi --query-gpu=name,memory.total,power.limit --format=csv,noheader >> "$WORK/device.txt" 2>/dev/null
fi
status=0
started=$(date +%s)
# Whatever happens (a step killed at its budget, the call's own limit), the page and the logs.
finish() {
    "$PYTHON" -m bench.gpu_summary "$WORK" "$OUT" || status=1
    tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$WORK" . 2>/dev/null
    echo "gpu-check: $(( $(date +%s) - started )) s; $OUT/gpu-check.md, .json and gpu-check-logs.tar.gz"
}
trap finish EXIT
# Servers a killed step left (BentoML's workers start sessions of their own): the processes this
# check started, found by a mark in their environment, never by name (bench/own_processes.sh).
source bench/own_processes.sh
mark_own_processes gpu-check
leftovers() { end_own_leftovers; }
# The whole check stays within DEADLINE (under the 8 minutes a device call is sized for): a step gets
# its own budget or what is left, whichever is less, and one that would start with under 20 s left
# is skipped (said in its log and on the page) rather than killed as it begins.
DEADLINE=${GPU_CHECK_DEADLINE_S:-470}
# Each step's outcome, a line each (name, budget, seconds, outcome), for the page's first table.
outcome() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$WORK/steps.tsv"; }
step() {  # step NAME BUDGET_S COMMAND...: run within its budget, log to $WORK/NAME.log, remember a failure, go on
    local name=$1 budget=$2 left begun rc=0; shift 2
    left=$(( DEADLINE - ($(date +%s) - started) - 10 ))  # 10: timeout's grace before its kill
    if [ "$left" -lt 20 ]; then
        echo "== $name skipped: ${DEADLINE} s of the check spent" | tee "$WORK/$name.log"
        outcome "$name" "$budget" 0 "skipped: the check's ${DEADLINE} s spent"
        status=1
        return
    fi
    [ "$left" -lt "$budget" ] && budget=$left
    echo "== $name ($(( $(date +%s) - started )) s in, budget ${budget} s): $*"
    begun=$(date +%s)
    timeout -k 10 "$budget" "$@" >"$WORK/$name.log" 2>&1 || rc=$?
    case $rc in
        0) outcome "$name" "$budget" $(( $(date +%s) - begun )) ok ;;
        124|137) outcome "$name" "$budget" $(( $(date +%s) - begun )) "out of time: killed at its budget" ;;
        *) outcome "$name" "$budget" $(( $(date +%s) - begun )) "failed: exit $rc" ;;
    esac
    [ "$rc" = 0 ] || { echo "== $name FAILED or out of time (see its log)"; status=1; leftovers; }
    tail -n 4 "$WORK/$name.log"
}
wants() { [[ ",$PARTS," == *",$1,"* ]]; }
if [ "$REHEARSAL" = 1 ]; then
    MODEL=(--model build/fixture-model); BATCHES=1,8; SERVICE=(--smoke); CLIENTS=8; BIG=8; SIXTEEN=2
else
    MODEL=(); BATCHES=1,64,512,1024,2048; SERVICE=(); CLIENTS=512; BIG=512; SIXTEEN=64
fi
wants tests && step tests 100 "$PYTHON" -m pytest -q -p no:cacheprovider tests/gpu
wants engines && step engines 200 "$PYTHON" -m bench.engines "${MODEL[@]}" --engines transformers:bfloat16,compiled:bfloat16 \
    --beams 1,5 --batches "$BATCHES" --seconds "$SECONDS_PER_POINT" --profile "512,1024" --name gpu-engines \
    --output "$WORK" --logs "$WORK/engines" --run-timeout 90
export HARNESS_START_TIMEOUT_S=${HARNESS_START_TIMEOUT_S:-40}
service() {  # service NAME ENGINE RUNNER RECORDS CLIENTS
    step "service-$1" 55 "$PYTHON" -m bench "${SERVICE[@]}" --systems service --engines "$2" --runner "$3" \
        --records "$4" --concurrency "$5" --max-batch-size "$BIG" --max-concurrency 2048 --duration "$SECONDS_PER_POINT" \
        --warmup 2 --name "gpu-service-$1" --output "$WORK" --logs "$WORK/service-$1"
}
if wants service; then
    service transformers-thread transformers:bfloat16 thread 1 "$CLIENTS"
    service transformers-process transformers:bfloat16 process 1 "$CLIENTS"
    service transformers-process-16records transformers:bfloat16 process 16 "$SIXTEEN"
    service auto-process auto:auto process 1 "$CLIENTS"
fi
exit $status
