#!/usr/bin/env bash
# On the device machine, from a checkout (issue 24, the int8 GEMV): the probe with the
# runtime's kernel as it is (and as it was, where bench/gpu/_old_inc/cuvil_aot holds an
# older cuda_q8.h: git show REV:native/include/cuvil_aot/cuda_q8.h); ncu of the runtime's
# kernel; the int8 GPU tests and q8_gemv.py on the runtime built here.   Q8_STAGES="probe ncu tests bench" bench/gpu/q8_run.sh OUTDIR
set -uo pipefail
OUT=$(realpath -m "${1:?usage: bench/gpu/q8_run.sh OUTDIR}")
R=$(cd "$(dirname "$0")/../.." && pwd)
STAGES=" ${Q8_STAGES:-probe ncu tests bench} "
mkdir -p "$OUT"
(cmake -S "$R" -B /tmp/rtb -G Ninja -DPython_EXECUTABLE="$(command -v python3)" > "$OUT/native.log" 2>&1 \
    && cmake --build /tmp/rtb >> "$OUT/native.log" 2>&1 && cp /tmp/rtb/native*.so "$R/cuvil_aot/runtime/") &
NATIVE=$!
cd "$R/bench/gpu"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
F="-O3 -std=c++17 -arch=sm_90"
P=()
nvcc $F -I"$R/native/include" q8_probe.cu -o /tmp/q8_new & P+=($!)
[ -d _old_inc ] && { nvcc $F -I_old_inc -I"$R/native/include" q8_probe.cu -o /tmp/q8_old & P+=($!); }
[ -d _blk_inc ] && { nvcc $F -I_blk_inc -I"$R/native/include" q8_probe.cu -o /tmp/q8_blk & P+=($!); }
wait "${P[@]}"
if [[ $STAGES == *" probe "* ]]; then
    for v in new old blk; do [ -x /tmp/q8_$v ] && { echo "== $v"; /tmp/q8_$v; }; done 2>&1 | tee "$OUT/q8_probe.txt"
fi
if [[ $STAGES == *" ncu "* ]]; then
    NCU="ncu --kernel-name-base mangled --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats"
    timeout 100 $NCU -k regex:current /tmp/q8_new > "$OUT/ncu_runtime.txt" 2>&1
fi
wait $NATIVE || { tail -30 "$OUT/native.log"; exit 1; }
cd "$(mktemp -d)"
if [[ $STAGES == *" tests "* ]]; then
    PYTHONPATH="$R" timeout 400 python3 -m pytest -c "$R/pyproject.toml" --rootdir "$R" -m gpu -n 8 -q \
        -p no:warnings -p no:cacheprovider "$R/tests/test_int8_weights.py" > "$OUT/tests.log" 2>&1
    tail -3 "$OUT/tests.log"
fi
if [[ $STAGES == *" bench "* ]]; then
    PYTHONPATH="$R" python3 "$R/bench/gpu/q8_gemv.py" 2>&1 | tee "$OUT/q8_gemv.txt"
fi
