#!/usr/bin/env bash
# Thirty-eighth session, last call: install, then the GPU tests of the ports and two
# attentions in one call, where attentions of one text share one kernel.
set -uo pipefail
ROOT=$(pwd); O=$OUT; T0=$SECONDS
log() { echo "[$((SECONDS-T0))s] $*" | tee -a "$O/steps.txt"; }
C=$(mktemp -d)
GPU_CHECK_TESTS=none GPU_CHECK_BENCH=none tools/gpu_check.sh "$C" > "$C/steps_install.txt" 2>&1
log "installed: $(tail -2 $C/steps_install.txt | tr '\n' ' ')"
cp "$(python3 -c 'import cuvil_aot.runtime.native as n; print(n.__file__)')" "$ROOT/cuvil_aot/runtime/" 2>/dev/null
W=$(mktemp -d); cd "$W"
export PYTHONPATH=$ROOT
timeout ${TLIM:-100} python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -m gpu -n 2 \
    -p no:cacheprovider -p no:warnings -q -rfE "$ROOT/tests/test_hf_gpt2.py" \
    "$ROOT/tests/test_hf_llama.py" >> "$O/tests.log" 2>&1
log "tests exit $?: $(grep -E 'passed|failed' $O/tests.log | tail -1)"
