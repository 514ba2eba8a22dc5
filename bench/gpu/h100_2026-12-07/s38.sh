#!/usr/bin/env bash
# Thirty-eighth session: install, the ports' GPU tests, then first builds of the ports on
# this machine's cores, this tree against .gpucheck/old (baa801c), alternately.
set -uo pipefail
ROOT=$(pwd); O=$OUT; T0=$SECONDS; LIMIT=${LIMIT:-560}
log() { echo "[$((SECONDS-T0))s] $*" | tee -a "$O/steps.txt"; }
left() { echo $((LIMIT - (SECONDS - T0))); }
C=$(mktemp -d)
GPU_CHECK_TESTS=none GPU_CHECK_BENCH=none tools/gpu_check.sh "$C" > "$C/steps_install.txt" 2>&1
log "installed: $(tail -2 $C/steps_install.txt | tr '\n' ' ')"
cp "$(python3 -c 'import cuvil_aot.runtime.native as n; print(n.__file__)')" "$ROOT/cuvil_aot/runtime/"
cp "$ROOT"/cuvil_aot/runtime/native*.so "$ROOT/.gpucheck/old/cuvil_aot/runtime/"
W=$(mktemp -d); cd "$W"
export PYTHONPATH=$ROOT
t=$(( $(left) - 200 )); [ $t -gt ${TCAP:-9999} ] && t=$TCAP
log "tests $TEST_FILES (limit $t s)"
timeout $t python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -m gpu -n 4 \
    --dist loadgroup -p no:cacheprovider -p no:warnings --timeout 240 -q -rfE \
    $(for f in $TEST_FILES; do echo "$ROOT/tests/$f"; done) >> "$O/tests.log" 2>&1
log "tests exit $?: $(grep -E 'passed|failed' $O/tests.log | tail -1)"
for r in 1 2; do for tree in new old; do R=$ROOT; [ $tree = old ] && R=$ROOT/.gpucheck/old
    for m in hf_bert hf_llama; do
        [ $(left) -gt 30 ] || { log "builds cut"; break 3; }
        s=$(cd $R && CUVIL_AOT_CUDA_ARCHS=none PYTHONPATH=$R:$R/bench timeout 120 python3 -m cuvil_aot show $m --timings 2>&1 | grep -E "built in|C compiler" | tr '\n' ' ')
        log "cpu $tree $r $m: $s"
    done
    s=$(cd $R && CUVIL_AOT_CUDA_ARCHS=sm_90 PYTHONPATH=$R:$R/bench timeout 120 python3 -m cuvil_aot show hf_gpt2 --timings 2>&1 | grep -E "built in|C compiler|nvcc sm_90" | tr '\n' ' ')
    log "sm_90 $tree $r hf_gpt2: $s"
done; done
log done
