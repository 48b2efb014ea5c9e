"""Target descriptions: the ISA and its features per target name (target.py) and the facts of
each CPU micro-architecture that the cost models read (uarch.py)."""
