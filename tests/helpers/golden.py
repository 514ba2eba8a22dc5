"""The ``[case NAME] source [out] expected`` format of the golden files in tests/data/."""

from __future__ import annotations

import re

HEADER = "import numpy as np\nimport cuvil_aot as cv\n\n"
"""What every case's module starts with; the cases hold the rest of the module body."""


def parse_cases(text: str) -> list[tuple[str, str, str]]:
    """[case NAME] source [out] expected, repeated: (name, source, expected) each."""
    parts = re.split(r"^\[case (\w+)\]\n", text, flags=re.M)[1:]
    cases = []
    for name, block in zip(parts[::2], parts[1::2]):
        source, _, expected = block.partition("[out]\n")
        cases.append((name, source, expected.rstrip("\n")))
    return cases
