#!/usr/bin/env python3
"""The generated-code snapshot: edgec/testing/snapshot.py (its --help), kept here as the command
line docs/architecture.md gives."""

import sys

from edgec.testing.snapshot import main

if __name__ == "__main__":
    sys.exit(main())
