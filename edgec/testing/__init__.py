"""edgec's test tooling, importable by the tests, the benchmarks and the scripts alike: the ONNX
conformance harness (conformance*.py), the import fuzzer (fuzz.py) and the real-data helpers
(digits.py, textlines.py, pretrained_inputs.py). The package's right-most layer: it imports any
part of edgec, and nothing in edgec imports it."""
