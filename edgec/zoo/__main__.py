"""python -m edgec.zoo NAME [-o FILE] [--opset N]: write one of the example models."""

import sys

from . import main

sys.exit(main())
