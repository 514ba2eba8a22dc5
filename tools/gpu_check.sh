#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build and install cuvil_aot from this checkout, run the
# GPU tests and the GPU benchmarks, and write logs and results to OUTDIR.
#
#   tools/gpu_check.sh OUTDIR            tests + benchmarks (torch.compile included)
#   GPU_CHECK_BENCH=quick|none ...       shorter benchmarks without torch.compile, or none
#   GPU_CHECK_BENCH=transformers ...     bench/gpu_transformers.py alone
#   GPU_CHECK_BENCH=ab GPU_CHECK_AB="base= on=CUVIL_AOT_X=1" [GPU_CHECK_AB_CASES=...]
#                                        cuvil_aot under knob settings, interleaved
#                                        (bench/gpu/knob_ab.py)
#   GPU_CHECK_TESTS="-k softmax" ...     extra pytest arguments (none: no tests)
set -uo pipefail
OUT=$(realpath -m "${1:?usage: tools/gpu_check.sh OUTDIR}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1

# PyCUDA, where the image lacks it: its source distribution and the wheels of its
# dependencies travel in .gpucheck/ (git-ignored; see the README's GPU section), and it is
# built here in the background while cuvil_aot builds.
pycuda_build() {
    local src=$(ls "$ROOT"/.gpucheck/pycuda-*.tar.gz 2>/dev/null | head -1)
    [ -n "$src" ] || { echo "no PyCUDA source in .gpucheck/"; return 1; }
    python3 -m pip install -q --no-index --no-deps "$ROOT"/.gpucheck/*.whl || return 1
    local dir=$(mktemp -d) && tar xzf "$src" -C "$dir" && cd "$dir"/pycuda-* || return 1
    local cuda=$(dirname "$(dirname "$(command -v nvcc)")")
    python3 configure.py --cuda-root="$cuda" && python3 setup.py build_ext -j 16 \
        && python3 setup.py -q bdist_wheel && python3 -m pip install -q --no-deps dist/*.whl
}
PYCUDA_PID=
if ! python3 -c "import pycuda" 2>/dev/null; then
    (pycuda_build > "$OUT/pycuda.log" 2>&1) &
    PYCUDA_PID=$!
fi

echo "== build and install" | tee "$OUT/summary.txt"
if ! python3 -m pip install --no-build-isolation --no-deps -q "$ROOT" > "$OUT/install.log" 2>&1; then
    tail -40 "$OUT/install.log"
    exit 1
fi
if [ -n "$PYCUDA_PID" ]; then
    wait "$PYCUDA_PID"
    python3 -c "import pycuda; print('PyCUDA', pycuda.VERSION_TEXT)" 2>&1 | tail -1 | tee -a "$OUT/summary.txt"
fi
# Run from elsewhere so that `import cuvil_aot` is the installed package, not the sources.
cd "$(mktemp -d)"
# The benchmarks put the checkout first on sys.path (to import bench/): give its package the
# runtime just built, which git ignores and so never travels with the checkout.
cp "$(python3 -c 'import cuvil_aot.runtime.native as n; print(n.__file__)')" \
    "$ROOT/cuvil_aot/runtime/"

if [ "${GPU_CHECK_TESTS:-}" != none ]; then
    echo "== pytest -m gpu" | tee -a "$OUT/summary.txt"
    # Warnings stay warnings here: the frameworks emit their own (pytest.warns still works).
    # Every test marked gpu, wherever it lives (-m gpu deselects the rest).
    python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -m gpu -n 4 --dist loadgroup \
        -p no:cacheprovider -p no:warnings --timeout 300 -q -rfE --durations=20 ${GPU_CHECK_TESTS:-} \
        "$ROOT/tests" \
        > "$OUT/pytest.log" 2>&1
    echo "pytest exit $?" | tee -a "$OUT/summary.txt"
    grep -E "passed|failed|error" "$OUT/pytest.log" | tail -3 | tee -a "$OUT/summary.txt"
fi

# The batch-1 anchor (an empty cuLaunchKernel + synchronize from C), in the benchmarks' run.
anchor() {
    nvcc -O3 -arch=native "$ROOT/bench/gpu/launch_anchor.cu" -o "$OUT/launch_anchor" \
        && "$OUT/launch_anchor"; rm -f "$OUT/launch_anchor"
}
case "${GPU_CHECK_BENCH:-full}" in
    none) ;;
    quick) anchor 2>&1 | tee "$OUT/bench.log"
           python3 "$ROOT/bench/gpu_bench.py" "$OUT" --quick 2>&1 | tee -a "$OUT/bench.log"
           python3 "$ROOT/bench/gpu_cold.py" "$OUT" 2>&1 | tee -a "$OUT/bench.log" ;;
    transformers) python3 "$ROOT/bench/gpu_transformers.py" "$OUT" 2>&1 | tee "$OUT/bench.log" ;;
    ab) python3 "$ROOT/bench/gpu/knob_ab.py" "$OUT/ab" \
            --cases "${GPU_CHECK_AB_CASES:-gpt2_8x128,bert_8x128}" ${GPU_CHECK_AB:?} \
            2>&1 | tee "$OUT/bench.log" ;;
    *) anchor 2>&1 | tee "$OUT/bench.log"
       python3 "$ROOT/bench/gpu_bench.py" "$OUT" --compile 2>&1 | tee -a "$OUT/bench.log"
       python3 "$ROOT/bench/gpu_cold.py" "$OUT" --compile 2>&1 | tee -a "$OUT/bench.log"
       python3 "$ROOT/bench/gpu_transformers.py" "$OUT" 2>&1 | tee -a "$OUT/bench.log"
       # two GPUs or more: both driven at once from two threads (says so and stops on one)
       python3 "$ROOT/bench/gpu/two_devices.py" 2>&1 | tee -a "$OUT/bench.log" ;;
esac
cat "$OUT/summary.txt"
