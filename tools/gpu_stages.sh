#!/usr/bin/env bash
# One device call in stages: tools/gpu_check.sh installs (no tests, no benchmarks), then
# each of STAGES runs within LIMIT seconds of the start, writing its files into $OUT:
#   tests / tests2   pytest -m gpu on TEST_FILES / TEST_FILES2 (tests/ paths, ::ids allowed)
#   q8               bench/gpu/q8_probe.cu at 4096 -> 11008 and the runtime's lines, q8_gemv.py
#   full             bench/gpu_transformers.py --cases FULL_CASES --modes FULL_MODES
#   kp, abtree       kernel_profile.py on KP_CASES (abtree: this tree against .gpucheck/old)
#   mg, ncu, ab      model_gemms.py, ncu of NCU_KERNELS on NCU_CASE, knob_ab.py
#   LIMIT=570 STAGES="tests full" TEST_FILES="test_gpu_attention.py" bash tools/gpu_stages.sh
# (Earlier records under bench/gpu/ hold the copies of its forerunners each call ran.)
set -uo pipefail
ROOT=$(pwd); O=$OUT; T0=$SECONDS; LIMIT=${LIMIT:-580}
log() { echo "[$((SECONDS-T0))s] $*" | tee -a "$O/steps.txt"; }
left() { echo $((LIMIT - (SECONDS - T0))); }
C=$(mktemp -d)
GPU_CHECK_TESTS=none GPU_CHECK_BENCH=none tools/gpu_check.sh "$C" > "$C/steps_install.txt" 2>&1
log "installed: $(tail -2 $C/steps_install.txt | tr '\n' ' ')"
W=$(mktemp -d); cd "$W"
cp "$(python3 -c 'import cuvil_aot.runtime.native as n; print(n.__file__)')" "$ROOT/cuvil_aot/runtime/"
export PYTHONPATH=$ROOT
tests() {
    local t=$(( $(left) - 20 )); [ $t -gt ${TCAP:-9999} ] && t=$TCAP
    log "tests ${TENV:-} $* (limit $t s)"
    env ${TENV:-} timeout $t python3 -m pytest -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -m gpu -n 4 \
        --dist loadgroup -p no:cacheprovider -p no:warnings --timeout 240 -q -rfE \
        $(for f in "$@"; do echo "$ROOT/tests/$f"; done) >> "$O/tests.log" 2>&1
    log "tests exit $?: $(grep -E 'passed|failed' $O/tests.log | tail -1)"
}
for s in ${STAGES:-}; do
    case $s in
        mg) timeout $(( $(left) - 5 )) python3 "$ROOT/bench/gpu/model_gemms.py" > "$O/model_gemms.md" 2> "$W/mg.err"; log "mg exit $?: $(tail -3 $W/mg.err)" ;;
        kp) timeout $(( $(left) - 5 )) python3 "$ROOT/bench/gpu/kernel_profile.py" --cases ${KP_CASES:-bert_1x16,bert_stack_1x8} --sequence > "$O/kernel_profile.txt" 2>&1; log "kp exit $?" ;;
        ncu) for k in ${NCU_KERNELS:-_a0 gemm_f32_dot}; do
                 CUVIL_AOT_CUDA_GRAPH=0 timeout $(( $(left) - 5 )) ncu -k regex:$k -c ${NCU_COUNT:-2} --section SpeedOfLight --section LaunchStats \
                     --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
                     python3 "$ROOT/bench/gpu/ncu_case.py" ${NCU_CASE:-bert_1x16} --calls 2 >> "$O/ncu.txt" 2>&1; log "ncu $k exit $?"; done ;;
        tests) tests ${TEST_FILES:-test_gpu_attention.py} ;;
        tests2) TCAP=${TCAP2:-9999} tests ${TEST_FILES2:-test_hf_llama.py} ;;
        q8) (cd "$ROOT/bench/gpu" && nvcc -O3 -std=c++17 -arch=sm_90 -I"$ROOT/native/include" q8_probe.cu -o "$W/q8" \
                 && Q8_FIRST=1 timeout 120 "$W/q8" && Q8_ONLY=runtime timeout 120 "$W/q8") > "$O/q8_probe.txt" 2>&1; log "q8 exit $?"
            timeout $(( $(left) - 5 )) python3 "$ROOT/bench/gpu/q8_gemv.py" --rounds 3 > "$O/q8_gemv.txt" 2>&1; log "q8_gemv exit $?" ;;
        full) env ${FULL_ENV:-} timeout $(( $(left) - 5 )) python3 "$ROOT/bench/gpu_transformers.py" "$W/full" --cases ${FULL_CASES:-bert_1x16} --modes ${FULL_MODES:-reduce-overhead} > "$O/full.log" 2>&1; cp "$W/full/gpu_transformers.md" "$O/full.md"; log full ;;
        ab) timeout $(( $(left) - 5 )) python3 "$ROOT/bench/gpu/knob_ab.py" "$W/kab" --cases "${AB_CASES:-bert_1x16,bert_stack_1x8}" \
                 --rounds ${AB_ROUNDS:-2} $AB_SETTINGS > "$W/kab.log" 2>&1; log "ab exit $?: $(tail -2 $W/kab.log)"; cp "$W/kab/knob_ab.md" "$O/" ;;
        abtree) cp "$ROOT"/cuvil_aot/runtime/native*.so "$ROOT/.gpucheck/old/cuvil_aot/runtime/"
            for r in 1 2; do for t in new old; do R=$ROOT; [ $t = old ] && R=$ROOT/.gpucheck/old
                [ $(left) -gt 40 ] || { log "abtree cut"; break 2; }
                timeout $(( $(left) - 5 )) python3 "$R/bench/gpu/kernel_profile.py" --cases ${KP_CASES:-bert_1x16,bert_stack_1x8} > "$W/kp_$t$r.txt" 2>&1
                { echo "### $t round $r"; grep -A6 "cuvil_aot: wall" "$W/kp_$t$r.txt"; } >> "$O/abtree.txt"; log "abtree $t $r"
            done; done ;;
    esac
done
log done
