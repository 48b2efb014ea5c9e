#!/usr/bin/env bash
# The main job, from a fresh clone: install edgec, compile the bundled example model into a
# static library, link it into the example C app, run it, and run the same artifact from Python,
# checked against onnxruntime. Installs edgec with the extras its commands use: `check`
# (onnxruntime, for `edgec run --check` and `edgec bench --vs`) and `report` (matplotlib, for
# the plots of `--report html`).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[check,report]'
out=build/tiny_cnn
.venv/bin/edgec compile examples/models/tiny_cnn.onnx -o "$out" --report html
gcc -O2 -Wall -DMODEL=tiny_cnn -I "$out" examples/app/main.c "$out/libtiny_cnn.a" -lm -pthread -o build/app
.venv/bin/python - "$out" <<'PY'
import json, sys
import numpy as np
m = json.load(open(f"{sys.argv[1]}/manifest.json"))
x = np.random.default_rng(0).standard_normal(m["inputs"][0]["shape"]).astype(np.float32)
x.tofile("build/input0.bin")
np.savez("build/inputs.npz", **{m["inputs"][0]["name"]: x})
PY
echo "== the C app linking libtiny_cnn.a:"
build/app build/input0.bin build/output
echo "== the same library from Python (edgec run), checked against onnxruntime:"
.venv/bin/edgec run "$out" --inputs build/inputs.npz --check examples/models/tiny_cnn.onnx
echo "== $out/report.html shows the graph, each kernel's latency and the memory plan."
echo "== Next: a bigger model from edgec's zoo (README.md, 'Models to try'):"
echo "   .venv/bin/python -m edgec.zoo resnet18 -o build/resnet18.onnx"
echo "   .venv/bin/python -c \"import numpy as np; np.savez('build/calib.npz', input=np.random.default_rng(0).standard_normal((8, 1, 3, 224, 224)).astype(np.float32))\""
echo "   .venv/bin/edgec compile build/resnet18.onnx -o build/resnet18 --quantize int8 --calib build/calib.npz"
echo "   (calibration samples give the integer kernels; random ones will do for speed, real inputs for accuracy;"
echo "    without --calib only the weights are quantized, a preview of their accuracy that runs slower than float)"
echo "   .venv/bin/edgec bench build/resnet18 --vs build/resnet18.onnx --tolerance 0.05"
