#!/usr/bin/env bash
# The GPU check of issue 33, for the lent GPU machine (scripts/gpu_check.py says what it runs):
# the checkout travels as the device tool's working tree; edgec runs from it (PYTHONPATH), with
# the machine's own PyTorch, onnx, onnxruntime, networkx and numpy. The one dependency that
# machine lacks, fastjsonschema, travels as a wheel in .whl (.gitignore has it): once, here,
#
#     python3 -m pip download --no-deps --only-binary=:all: fastjsonschema -d .whl
#
# then run `bash scripts/gpu_check.sh` there with carry [".whl"] and a timeout of about 9
# minutes; gpu_check.json and the log come back from $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/edgec-gpu-check-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
timeout 480 python3 scripts/gpu_check.py "$OUT" "$@" 2>&1 | tee "$OUT/gpu_check.log"
