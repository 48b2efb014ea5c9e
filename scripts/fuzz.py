#!/usr/bin/env python3
"""The import fuzzer: edgec/testing/fuzz.py (its --help), kept here as the command line the
README and BENCHMARKS.md give."""

import sys

from edgec.testing.fuzz import main

if __name__ == "__main__":
    sys.exit(main())
