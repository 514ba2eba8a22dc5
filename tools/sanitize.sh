#!/usr/bin/env bash
# Run part of the test suite with the native runtime and every generated module built
# under AddressSanitizer and UndefinedBehaviorSanitizer (issue 4, item 19).
#
#   tools/sanitize.sh                 the default subset (below)
#   tools/sanitize.sh tests/test_x.py -k name     any pytest arguments instead
#   CV_SANITIZE_KEEP=1 tools/sanitize.sh ...      keep the scratch directory afterwards
#
# What it does, in a scratch directory (the checkout is not touched):
#   1. copies cuvil_aot/ and native/, and builds cuvil_aot/runtime/native there with
#      -fsanitize=address,undefined;
#   2. builds a sanitized Python host (tools/sanitize_host.c: CPython's main linked
#      with the sanitizers, so the ASan runtime comes first without LD_PRELOAD, leak
#      detection off since CPython keeps memory to exit, PYTHONMALLOC=malloc so Python
#      objects live on the sanitized heap). LD_PRELOAD=libasan.so would do for one
#      process, but tests start children with sys.executable and a minimal environment:
#      they must get the sanitizer runtime and options whatever their environment;
#   3. points CUVIL_AOT_CC at "$CC -fsanitize=address,undefined ...": every module a
#      test compiles is instrumented too (the flags are part of the cache key, and the
#      cache is a fresh one);
#   4. runs the positive controls (tools/sanitize_control.c: a heap out-of-bounds write
#      and a signed overflow, called from Python in the sanitized host): each must be
#      reported, or the run stops, since a silent sanitizer proves nothing;
#   5. runs pytest in the sanitized host on the copy of the package.
#
# Not in CI: instrumented kernels are several times slower and the run takes minutes.
# Needs gcc or clang with the sanitizer runtimes, and a Python built with a shared
# libpython (or its static libpython.a).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
CC=${CC:-gcc}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cuvil_aot-sanitize.XXXXXX")
if [ -n "${CV_SANITIZE_KEEP:-}" ]; then  # keep the host, runtime and cache to debug with
    trap 'echo "kept $WORK (run $WORK/bin/python3 with PYTHONPATH=$WORK)"' EXIT
else
    trap 'rm -rf "$WORK"' EXIT
fi

echo "== building the sanitized runtime in $WORK"
cp -r "$REPO/cuvil_aot" "$REPO/native" "$WORK/"
find "$WORK/cuvil_aot" \( -name 'native*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +
PYINC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
EXT=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# shellcheck disable=SC2086
"$CC" $SAN -O1 -shared -fPIC -std=gnu11 -I"$WORK/native/include" -I"$PYINC" \
    "$WORK"/native/src/*.c -o "$WORK/cuvil_aot/runtime/native$EXT" -lpthread -ldl -lm

echo "== building the sanitized Python host"
mkdir -p "$WORK/bin"
LINK=$("$PY" - <<'PY'
import sysconfig as s
v = s.get_config_var
ver = f"{v('VERSION')}{getattr(__import__('sys'), 'abiflags', '')}"
if v("Py_ENABLE_SHARED"):
    print(f"-L{v('LIBDIR')} -lpython{ver} -Wl,-rpath,{v('LIBDIR')}")
else:
    print(f"{v('LIBPL')}/{v('LIBRARY')} {v('LIBS')} {v('SYSLIBS')}")
print(v("LINKFORSHARED") or "")
PY
)
# shellcheck disable=SC2086
"$CC" $SAN -I"$PYINC" "$REPO/tools/sanitize_host.c" $LINK -o "$WORK/bin/python3"
HOST="$WORK/bin/python3"
"$HOST" -c 'import sys, numpy; print("host:", sys.executable, "prefix:", sys.prefix)'

export PYTHONPATH="$WORK"
export CUVIL_AOT_CC="$CC $SAN"
export CUVIL_AOT_CACHE_DIR="$WORK/cache"
export CUVIL_AOT_CUDA_ARCHS=none

echo "== positive controls (each must be reported)"
# shellcheck disable=SC2086
"$CC" $SAN -O1 -shared -fPIC "$REPO/tools/sanitize_control.c" -o "$WORK/control.so"
control() {  # $1: function, $2: the report it must produce
    local log="$WORK/control-$1.log"
    if "$HOST" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1]).$1(16)" "$WORK/control.so" \
            >"$log" 2>&1; then
        echo "FAIL: $1 ran to completion: the sanitizer is not active" >&2; exit 1
    fi
    grep -q "$2" "$log" || { cat "$log" >&2; echo "FAIL: no '$2' report" >&2; exit 1; }
    echo "ok: $1 -> $(grep -m1 -o "$2.*" "$log" | cut -c1-90)"
}
control cv_control_oob_write "heap-buffer-overflow"
control cv_control_signed_overflow "signed integer overflow"

echo "== the sanitized runtime loads and the generated code is instrumented"
"$HOST" - "$WORK" <<'PY'
import sys, types
from pathlib import Path
import numpy as np
import cuvil_aot.runtime.native as rt
from cuvil_aot import knobs
from cuvil_aot.compiler import pipeline
from cuvil_aot.load.settings import Settings
assert rt.__file__.startswith(sys.argv[1]), rt.__file__  # the copy, not the checkout
assert b"__asan_" in Path(rt.__file__).read_bytes(), "the runtime is not instrumented"
probe = Path(sys.argv[1]) / "sanprobe.py"
probe.write_text("import numpy as np\nimport cuvil_aot as cv\n\n\n@cv.optimize\n"
                 "def f(x: cv.f32['N']):\n    return x * 2.0\n")
sys.path.insert(0, str(probe.parent))
import sanprobe
(probe.parent / "sanprobe-build").mkdir()
options = Settings.from_knobs(knobs.read()).build_options  # CUVIL_AOT_CC: the sanitizer
art = pipeline.build(sanprobe, options, probe.parent / "sanprobe-build")
assert b"__asan_" in art.path.read_bytes(), "generated modules are not instrumented"
print("runtime:", rt.__file__, "- instrumented; a generated module:", art.path.name, "- instrumented")
PY

if [ "$#" -eq 0 ]; then
    set -- tests/test_bad_input.py tests/test_bad_input_models.py tests/test_elementwise.py \
        tests/test_reductions.py tests/test_matmul.py tests/test_shapes.py \
        tests/test_fusion.py tests/test_runtime.py tests/test_special_values.py \
        tests/test_huge.py tests/test_nn.py
fi
args=()
for arg in "$@"; do  # tests/... is relative to the checkout
    case "$arg" in tests/*) args+=("$REPO/$arg") ;; *) args+=("$arg") ;; esac
done
echo "== pytest (sanitized): $*"
# Not from the checkout: its cuvil_aot/ (unsanitized) would shadow the copy in $WORK.
cd "$WORK"
"$HOST" -m pytest -q -p no:cacheprovider "${args[@]}"
