#!/usr/bin/env bash
# Installs edgec with its test dependencies into .venv and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
.venv/bin/ruff check edgec tests examples benchmarks scripts
# the ONNX node tests through generated C; fails when CONFORMANCE.md is stale
.venv/bin/python scripts/conformance.py --check CONFORMANCE.md
.venv/bin/python -m pytest -n 2 "$@"
