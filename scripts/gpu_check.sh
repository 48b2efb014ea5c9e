#!/usr/bin/env bash
# The GPU check of issue 33, for the lent GPU machine (scripts/gpu_check.py says what it runs):
# the checkout travels as the device tool's working tree; edgec runs from it (PYTHONPATH), with
# the machine's own PyTorch, onnx, onnxruntime, networkx and numpy. The one dependency that
# machine lacks, fastjsonschema, travels as a wheel in .whl (.gitignore has it): once, here,
#
#     python3 -m pip download --no-deps --only-binary=:all: fastjsonschema -d .whl
#
# and the conformance sample's CUDA libraries, built here where the node tests are,
#
#     .venv/bin/python scripts/gpu_check.py .gpu --prepare
#
# then run `bash scripts/gpu_check.sh` there with carry [".whl", ".gpu"] and a timeout of
# about 9 minutes; gpu_check.json and the log come back from $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/edgec-gpu-check-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
# nvcc where the CUDA toolkit keeps it, if it is not on PATH already
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
timeout 500 python3 scripts/gpu_check.py "$OUT" --prepared .gpu "$@" 2>&1 | tee "$OUT/gpu_check.log"
