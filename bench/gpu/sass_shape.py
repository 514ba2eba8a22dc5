"""The shape of a kernel's SASS before its first warp shuffle (the GEMV main loop of
lstm_probe.cu's kernels): how many instructions of each kind, and the order of its loads
and FMAs (W: a float4 load of the weights, x: a scalar load, f<n>: n FMAs, c: a constant
bank load, |: a block barrier). At batch 1 every warp of a 1024-thread block issues all of
them, so the count matters as much as the loads in flight.

    cuobjdump -sass probe.cubin > probe.sass
    python bench/gpu/sass_shape.py probe.sass pair_timed pair32_timed
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

TAGS = {"LDG.E.128.CONSTANT": "W", "LDG.E.CONSTANT": "x", "BAR.SYNC.DEFER_BLOCKING": "|"}


def instructions(text: str, function: str) -> list[str]:
    """The opcodes (with modifiers) of ``function`` in a cuobjdump -sass listing."""
    lines = text.split("\n")
    title = f"Function : {function}"
    start = next(i for i, line in enumerate(lines) if line.strip().endswith(title))
    ops = []
    for line in lines[start + 1:]:
        if "Function :" in line:
            break
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if m:
            words = m.group(1).split()
            ops.append(words[1] if words[0].startswith("@") else words[0])
    return ops


def shape(ops: list[str]) -> tuple[int, Counter[str], str]:
    """Up to the first shuffle: the instruction count, counts by kind, the load/FMA order."""
    head = ops[:next((i for i, op in enumerate(ops) if op.startswith("SHFL")), len(ops))]
    kinds = Counter(op.split(".")[0] for op in head)
    order = "".join(TAGS.get(op, "f" if op.startswith("FFMA") else "c" if op.startswith("LDC")
                             else "") for op in head)
    order = re.sub(r"([fc])\1+", lambda m: f"{m.group(1)}{len(m.group(0))}", order)
    return len(head), kinds, order


def main() -> None:
    text = Path(sys.argv[1]).read_text()
    for function in sys.argv[2:]:
        count, kinds, order = shape(instructions(text, function))
        print(f"{function}: {count} instructions, {dict(kinds.most_common(8))}\n  {order}")


if __name__ == "__main__":
    main()
