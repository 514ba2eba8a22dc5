#!/usr/bin/env bash
# On the device machine: an A/B of two source trees, interleaved in one call, so that the
# host's drift (±30% between hosts, less within a call) falls on both alike. NEW is this
# checkout; OLD a tree carried beside it, made on the build machine with
#   git archive <rev> | tar -x -C .ab/old     (carry .ab: it is git-ignored)
# Each tree gets its own runtime build and module cache. Per round (new old new old):
# bench/gpu_transformers.py --modes none and bench/gpu/call_timeline.py over CASES; then
# kernel_profile.py --sequence over PCASES once each; then, if TESTS names test files
# (tests/...), those GPU tests on the new tree.
#
#   OLD=.ab/old CASES=gpt2_8x128,bert_8x128 bench/gpu/ab_trees.sh OUTDIR
set -uo pipefail
OUT=$(realpath -m "${1:?usage: OLD=dir bench/gpu/ab_trees.sh OUTDIR}")
NEW=$(cd "$(dirname "$0")/../.." && pwd)
OLD=$(realpath "${OLD:?OLD: the other tree}")
CASES=${CASES:-gpt2_8x128,bert_8x128,bert_32x128}
PCASES=${PCASES:-gpt2_8x128}
mkdir -p "$OUT"
# one measuring script for both (it puts its own tree first on sys.path: a copy in each)
cp "$NEW/bench/gpu/call_timeline.py" "$OLD/bench/gpu/"
build() { # the runtime of tree $1, into its cuvil_aot/runtime/
    cmake -S "$1" -B "/tmp/ab_rt_$2" -G Ninja -DPython_EXECUTABLE="$(command -v python3)" \
        > "$OUT/build_$2.log" 2>&1 && cmake --build "/tmp/ab_rt_$2" >> "$OUT/build_$2.log" 2>&1 \
        && cp /tmp/ab_rt_"$2"/native*.so "$1/cuvil_aot/runtime/"
}
build "$NEW" new & build "$OLD" old & wait
ls "$NEW"/cuvil_aot/runtime/native*.so "$OLD"/cuvil_aot/runtime/native*.so > /dev/null \
    || { tail -20 "$OUT"/build_*.log; exit 1; }
run() { # variant, tree, command...
    local v=$1 tree=$2
    shift 2
    (cd /tmp && CUVIL_AOT_CACHE_DIR=/tmp/ab_cache_$v PYTHONPATH="$tree" timeout 150 python3 "$@")
}
for round in 1 2; do
    for v in new old; do
        tree=$NEW; [ $v = old ] && tree=$OLD
        run $v "$tree" "$tree/bench/gpu_transformers.py" "/tmp/ab_gt_$v" --cases "$CASES" \
            --modes none 2>&1 | grep -E "^\| (gpt2|bert)" | sed "s/^/$v$round /"
        run $v "$tree" "$tree/bench/gpu/call_timeline.py" --cases "$CASES" 2>&1 | grep "^##" \
            | sed "s/^/$v$round /"
    done
done | tee "$OUT/ab.txt"
for v in new old; do
    tree=$NEW; [ $v = old ] && tree=$OLD
    run $v "$tree" "$tree/bench/gpu/kernel_profile.py" --sequence --cases "$PCASES" 2>&1 \
        | grep -v -i warn > "$OUT/kernel_seq_$v.txt"
done
if [ -n "${TESTS:-}" ]; then
    (cd "$NEW" && timeout "${TEST_S:-240}" python3 -m pytest -m gpu -n 16 -q -p no:warnings \
        -p no:cacheprovider $TESTS > "$OUT/tests.log" 2>&1)
    tail -n 4 "$OUT/tests.log"
fi
