#!/usr/bin/env bash
# On the device machine, from a checkout: install cuvil_aot, then run the probes of this
# folder (chain, generated and hand-written softmax, the LSTM step's and the ResNet head's
# batch-1 kernels by phase, mid-size GEMM tiles and split-K, call costs with and without the
# one-kernel) and write their outputs to OUTDIR.   bench/gpu/run_probes.sh OUTDIR
set -uo pipefail
OUT=$(realpath -m "${1:?usage: bench/gpu/run_probes.sh OUTDIR}")
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
(python3 -m pip install --no-build-isolation --no-deps -q "$HERE/../.." > "$OUT/install.log" 2>&1 \
    || tail -20 "$OUT/install.log") &
INSTALL=$!
cd "$HERE"
ARCH="-O3 -std=c++17 -arch=sm_90 -I../../native/include"
nvcc $ARCH chain_probe.cu -o /tmp/chain_probe && /tmp/chain_probe 2>&1 | tee "$OUT/chain_probe.txt"
nvcc $ARCH gen_probe.cu -o /tmp/gen_probe \
    && /tmp/gen_probe 2>&1 | tee "$OUT/gen_probe.txt"
nvcc $ARCH lstm_probe.cu -o /tmp/lstm_probe && /tmp/lstm_probe 2>&1 | tee "$OUT/lstm_probe.txt"
nvcc $ARCH resnet_probe.cu -o /tmp/resnet_probe && /tmp/resnet_probe 2>&1 | tee "$OUT/resnet_probe.txt"
nvcc $ARCH tc_probe.cu -o /tmp/tc_probe && /tmp/tc_probe 2>&1 | tee "$OUT/tc_probe.txt"
nvcc -O3 -arch=sm_90 rows_probe.cu -o /tmp/rows_probe && /tmp/rows_probe 2>&1 | grep -E "scalar|copy" \
    | tee "$OUT/rows_probe.txt"
wait $INSTALL
cd "$(mktemp -d)"
python3 "$HERE/call_probe.py" 2>&1 | tee "$OUT/call_probe.txt"
CUVIL_AOT_CUDA_ONE=0 python3 "$HERE/call_probe.py" 2>&1 | tee "$OUT/call_probe_one_off.txt"
python3 "$HERE/../gpu_cold.py" "$OUT" 2>&1 | tee "$OUT/gpu_cold.txt"
