#!/usr/bin/env bash
# On the device machine, from a checkout (issues 23 and 24, the GEMM's epilogue and bf16):
# wg_epi_probe (the generated entry's epilogue variants beside cuBLAS), the GPU tests of the
# GEMM paths, after bench/gpu/bf16.py with each implementation's kernels listed (on the
# runtime built here; BF16_TESTS names the test_gpu_*.py files); `gemms`:
# bench/gpu/layer_gemms.py; `ncu`: ncu of its erf-GELU bf16 GEMM at the FFN's up shape.   BF16_STAGES="probe gemms ncu bench tests" bench/gpu/bf16_run.sh OUTDIR
set -uo pipefail
OUT=$(realpath -m "${1:?usage: bench/gpu/bf16_run.sh OUTDIR}")
R=$(cd "$(dirname "$0")/../.." && pwd)
STAGES=" ${BF16_STAGES-probe tests bench} "  # set and empty: build only
MODES=${BF16_MODES:-reduce-overhead}
mkdir -p "$OUT"
(cmake -S "$R" -B /tmp/rtb -G Ninja -DPython_EXECUTABLE="$(command -v python3)" > "$OUT/native.log" 2>&1 \
    && cmake --build /tmp/rtb >> "$OUT/native.log" 2>&1 && cp /tmp/rtb/native*.so "$R/cuvil_aot/runtime/") &
NATIVE=$!
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/gpu.txt"
if [[ $STAGES == *" probe "* ]]; then
    (cd "$R/bench/gpu" && nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
        -I"$R/native/include" wg_epi_probe.cu -lcuda -lcublas -o /tmp/we && /tmp/we) 2>&1 | tee "$OUT/wg_epi_probe.txt"
fi
wait $NATIVE || { tail -30 "$OUT/native.log"; exit 1; }
cd "$(mktemp -d)"
if [[ $STAGES == *" gemms "* ]]; then
    PYTHONPATH="$R" python3 "$R/bench/gpu/layer_gemms.py" 2>&1 | grep -v Warn | tee "$OUT/layer_gemms.txt"
fi
if [[ $STAGES == *" ncu "* ]]; then
    PYTHONPATH="$R" timeout 150 ncu --launch-count 1 -k regex:gemm_b16_wg --section SpeedOfLight \
        --section WarpStateStats --section InstructionStats --section SchedulerStats \
        --section ComputeWorkloadAnalysis --section SourceCounters \
        python3 "$R/bench/gpu/layer_gemms.py" --only gelu16 --shape "ffn up" > "$OUT/ncu_gelu16.txt" 2>&1
    tail -5 "$OUT/ncu_gelu16.txt"
fi
if [[ $STAGES == *" bench "* ]]; then
    PYTHONPATH="$R" python3 "$R/bench/gpu/bf16.py" "$OUT" --profile --modes "$MODES" 2>&1 | tail -40
fi
if [[ $STAGES == *" tests "* ]]; then
    PYTHONPATH="$R" timeout ${BF16_TEST_S:-280} python3 -m pytest -c "$R/pyproject.toml" --rootdir "$R" -m gpu -n 16 -q \
        -p no:warnings -p no:cacheprovider -x $(for t in ${BF16_TESTS:-gemm wgmma bf16 precision attention}; do echo "$R/tests/test_gpu_$t.py"; done) \
        > "$OUT/tests.log" 2>&1
    tail -3 "$OUT/tests.log"
fi
