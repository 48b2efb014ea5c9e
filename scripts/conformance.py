#!/usr/bin/env python3
"""The ONNX conformance suite through edgec's C: edgec/testing/conformance.py (its --help),
kept here as the command line CI, the README and CONFORMANCE.md give."""

import sys

from edgec.testing.conformance import main

if __name__ == "__main__":
    sys.exit(main())
