"""Each precision mode's GEMM on the CPU, with its error beside its time: `x @ w + b` of
float32 arrays under @optimize(precision=...), and `a @ b` of bfloat16 arrays (whose
error is against their own values: exact products, float32 sums). Best of interleaved
rounds after a warm-up; the error is the largest |got - want| / (|x| @ |w|) over the
output against float64 (the quantity the README's bounds are stated in).

Then int8 weights (issue 24): a GPT-2 decode step's projections at batch 1, twelve layers
of 768->2304, 768->768, 768->3072, 3072->768 (bench/int8_decode.py), fp32 weights against
int8 ones (cuvil_aot.quantize_weights) per channel and per group of 128.

    python bench/precision.py [M K N ...] > bench/precision.txt
    python bench/precision.py --int8-only [rounds]
"""

from __future__ import annotations

import platform
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import compile_source  # noqa: E402

MODES = ("fp32", "tf32", "bf16", "fp16")
SOURCE = "import numpy as np\nimport cuvil_aot as cv\n" + "".join(textwrap.dedent(f'''
    @cv.optimize(precision={mode!r})
    def linear_{mode}(x: cv.f32["M", "K"], w: cv.f32["K", "N"], b: cv.f32["N"]):
        return x @ w + b
    ''') for mode in MODES) + textwrap.dedent('''
    @cv.optimize
    def bf16_operands(a: cv.bf16["M", "K"], b: cv.bf16["K", "N"]):
        return a @ b
    ''')
SHAPES = [(512, 1024, 1024), (2048, 2048, 2048), (4096, 768, 768)]


def best_s(cases: dict[str, tuple], rounds: int = 12) -> dict[str, float]:
    """Each case's best time over ``rounds`` rounds, the cases interleaved in each: on a
    shared machine the other load comes and goes, and the minimum is the run it left alone."""
    best = dict.fromkeys(cases, float("inf"))
    for fn, *args in cases.values():
        fn(*args)
    for _ in range(rounds):
        for name, (fn, *args) in cases.items():
            t = time.perf_counter()
            fn(*args)
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def error(got: np.ndarray, x: np.ndarray, w: np.ndarray, b: np.ndarray | float) -> float:
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    return float((np.abs(got - (x64 @ w64 + b)) / (np.abs(x64) @ np.abs(w64))).max())


def main(shapes: list[tuple[int, int, int]]) -> None:
    module = compile_source(Path(tempfile.mkdtemp()), SOURCE)
    cpu = platform.processor() or platform.machine()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu}, cuvil_aot on the "
          "CPU; best of 12 interleaved rounds; error = max |err| / (|x| @ |w|) against float64")
    print("| M x K x N | case | ms | GFLOP/s | x fp32 | error |")
    print("| --- | --- | --- | --- | --- | --- |")
    rng = np.random.default_rng(0)
    for m, k, n in shapes:
        x = rng.standard_normal((m, k), np.float32)
        w = rng.standard_normal((k, n), np.float32)
        b = rng.standard_normal(n, np.float32)
        xa, wa = x.astype(ml_dtypes.bfloat16), w.astype(ml_dtypes.bfloat16)
        cases = {f"precision={mode}": (getattr(module, f"linear_{mode}"), x, w, b)
                 for mode in MODES}
        cases["bf16 arrays"] = (module.bf16_operands, xa, wa)
        cases["NumPy fp32 (OpenBLAS)"] = (np.matmul, x, w)
        best = best_s(cases)
        flop = 2.0 * m * k * n
        for name, (fn, *args) in cases.items():
            s = best[name]
            err = error(fn(*args), args[0], args[1], args[2] if len(args) > 2 else 0.0)
            print(f"| {m}x{k}x{n} | {name} | {s * 1e3:.2f} | {flop / s / 1e9:.0f} | "
                  f"{best['precision=fp32'] / s:.2f} | {err:.1e} |")


if __name__ == "__main__":
    from int8_decode import int8_decode

    if sys.argv[1:2] == ["--int8-only"]:
        int8_decode(int(sys.argv[2]) if len(sys.argv) > 2 else 40)
    else:
        args = [int(a) for a in sys.argv[1:]]
        main([tuple(args[i:i + 3]) for i in range(0, len(args), 3)] or SHAPES)  # type: ignore
        int8_decode(40)
