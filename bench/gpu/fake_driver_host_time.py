"""The host time of a GPU call without a GPU: Hugging Face's GPT-2 block as users port it
(bench/hf_gpt2.py, 32 versions) built for sm_90 and called on device arrays of GPT-2 small's
sizes against the fake driver (tests/data/fake_libcuda.c: each launch logged, nothing run),
`out=` given (the fake allocates nothing). Prints the build's seconds and the best of 5 x 200
calls per case. ``--cflags=-O1`` compiles the whole wrapper with that level instead of
toolchain/cc.py's choice (module.c at CFLAGS, the launch code at LAUNCH_CFLAGS).

    PYTHONPATH=.:tests python bench/gpu/fake_driver_host_time.py [--cflags=-O3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import ctypes, sys, time
from pathlib import Path
from cuvil_aot.compiler.toolchain import cc
if FLAGS:
    cc.CFLAGS = cc.LAUNCH_CFLAGS = (FLAGS, *cc.CFLAGS[1:])
from conftest import compile_source
from fake_driver import DeviceArray, Record

class Array(DeviceArray):
    @property
    def shape(self):
        return self.interface["shape"]

fake = ctypes.CDLL("libcuda.so.1")
log = (Record * 4096)()
ctypes.c_int.in_dll(fake, "fake_pools").value = 1
began = time.time()
m = compile_source(Path(WORK), (Path(ROOT) / "bench" / "hf_gpt2.py").read_text(),
                   cuda_archs=("sm_90",))
print(f"build: {time.time() - began:.1f} s", flush=True)
e, heads = 768, 12
a = lambda *shape: Array(0, *shape)
block = m.GPT2Block(m.LayerNorm(a(e), a(e)),
                    m.GPT2Attention(m.Conv1D(a(e, 3 * e), a(3 * e)), m.Conv1D(a(e, e), a(e)),
                                    heads, 1024),
                    m.LayerNorm(a(e), a(e)),
                    m.GPT2MLP(m.Conv1D(a(e, 4 * e), a(4 * e)), m.Conv1D(a(4 * e, e), a(e))))
block.attn.bias = a(1, 1, 1024, 1024)
block.attn.bias.interface["typestr"] = "|b1"
x, x128, past = a(1, 1, e), a(1, 128, e), (a(1, heads, 255, 64), a(1, heads, 255, 64))
decode_out = (a(1, 1, e), a(1, heads, 256, 64), a(1, heads, 256, 64))
prefill_out = (a(1, 128, e),)
cases = {"decode, 1 token, 255 past": lambda: block.forward(x, past, use_cache=True,
                                                             out=decode_out),
         "prefill, 1 x 128": lambda: block.forward(x128, out=prefill_out)}
for case, call in cases.items():
    for _ in range(50):
        call()
        fake.fake_take(log, 4096)
    best = float("inf")
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(200):
            call()
            fake.fake_take(log, 4096)
        best = min(best, (time.perf_counter() - began) / 200)
    print(f"{case}: {best * 1e6:.1f} us a call", flush=True)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cflags", default="", help="one -O level for all of the wrapper")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "tests")]
    import fake_driver

    with tempfile.TemporaryDirectory() as work:
        env = fake_driver.environment(fake_driver.build(Path(work)))
        code = f"WORK, ROOT, FLAGS = {work!r}, {str(ROOT)!r}, {args.cflags!r}\n" + CHILD
        subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=work)


if __name__ == "__main__":
    main()
