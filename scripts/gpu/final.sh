#!/usr/bin/env bash
# The release run on a 2-GPU machine (nvidia-h200-x2), in two calls so each fits the 600 s limit:
#     bash scripts/gpu/final.sh a "$OUT"   # full build (32 jobs), GPU tests on GPU 0 while the
#                                          # sanitizers run on GPU 1
#     bash scripts/gpu/final.sh b "$OUT"   # (same warm machine) the benchmark grid on GPU 0 while
#                                          # the ablations, Python tests and overhead run on GPU 1
#     bash scripts/gpu/final.sh one "$OUT" # both in one call (short device budget; see below)
# Each half writes at most 8 files to $OUT (the device tool's limit). On a 1-GPU machine both
# halves still work (everything runs on GPU 0, one after the other would be slower: use check.sh).
set -uo pipefail
PART=${1:?a, b or one}
OUT=${2:-${OUT:-/tmp/fa_final_out}}
mkdir -p "$OUT"
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
g1=$((ngpu > 1 ? 1 : 0))
CHECK="bash scripts/gpu/check.sh"
case "$PART" in
  a)
    STAGES=build JOBS=${JOBS:-32} DEADLINE_S=420 $CHECK "$OUT" >"$OUT/a_build.txt" 2>&1
    tail -12 "$OUT/a_build.txt"
    CUDA_VISIBLE_DEVICES=0 STAGES=test DEADLINE_S=200 $CHECK "$OUT" >"$OUT/a_test.txt" 2>&1 &
    CUDA_VISIBLE_DEVICES=$g1 STAGES=sanitize DEADLINE_S=${SAN_DEADLINE_S:-200} $CHECK "$OUT" >"$OUT/a_san.txt" 2>&1 &
    wait
    grep -E -A12 "^\[  FAILED  \]|Failure$" "$OUT/tests.log" 2>/dev/null | head -60
    sed -n '/=== summary/,$p' "$OUT/a_test.txt" "$OUT/a_san.txt"
    ;;
  b)
    CUDA_VISIBLE_DEVICES=0 STAGES=bench COMPARE_ARGS="${COMPARE_ARGS:---algos fa2,fa3 --ceilings --plot-grid}" \
      DEADLINE_S=560 $CHECK "$OUT" >"$OUT/b_bench.txt" 2>&1 &
    (
      export CUDA_VISIBLE_DEVICES=$g1
      timeout 150 python3 bench/compare.py --lib build/libflashattn.so --ablation --pass fwd --out "$OUT/abl_fwd"
      timeout 150 python3 bench/compare.py --lib build/libflashattn.so --ablation --pass bwd --out "$OUT/abl_bwd" \
        --ablation-filter '^(fa3 default|fa2 default|fa3 bwd|fa2 bwd)'
      STAGES=python,overhead DEADLINE_S=260 $CHECK "$OUT"
    ) >"$OUT/b_rest.txt" 2>&1 &
    wait
    grep -E "^  (fwd|bwd) " "$OUT/b_rest.txt"
    sed -n '/=== summary/,$p' "$OUT/b_rest.txt"
    grep -E "^SUMMARY|measurements in" "$OUT/b_bench.txt"
    ;;
  one)
    # Both halves in one call, for a session with ~10 device minutes left: the build, then the
    # grid and the ablations on GPU 0 while the tests, sanitizers, Python tests and host overhead
    # run on GPU 1. Everything is written under a work folder and packed into $OUT/final.tgz
    # (refreshed every 30 s, so a call cut short still returns what had finished) plus
    # $OUT/summary.txt: more than the 8 files the device tool returns are produced.
    # Two GPUs or none: on one, the tests would run beside the timed grid.
    ((ngpu >= 2)) || { echo "final.sh one: needs 2 GPUs (found $ngpu); use a and b" >&2; exit 2; }
    W=/tmp/fa_final_one
    rm -rf "$W" "$W.stop" && mkdir -p "$W"
    pack() {
      local t
      t=$(mktemp "$OUT/.final.XXXXXX") && tar -czf "$t" -C "$W" . 2>/dev/null && mv "$t" "$OUT/final.tgz"
      rm -f "$t"
    }
    # Packs every 30 s until told to stop; waited for below, so no tar outlives it.
    (n=0; while [[ ! -f "$W.stop" ]]; do sleep 5; ((++n % 6 == 0)) && pack; done) &
    packer=$!
    STAGES=build JOBS=${JOBS:-32} DEADLINE_S=420 $CHECK "$W" >"$W/a_build.txt" 2>&1
    tail -12 "$W/a_build.txt"
    (
      export CUDA_VISIBLE_DEVICES=0
      STAGES=bench COMPARE_ARGS="${COMPARE_ARGS:---algos fa2,fa3 --ceilings --plot-grid}" DEADLINE_S=200 \
        $CHECK "$W" >"$W/b_bench.txt" 2>&1
      timeout 90 python3 bench/compare.py --lib build/libflashattn.so --ablation --pass fwd --out "$W/abl_fwd"
      timeout 90 python3 bench/compare.py --lib build/libflashattn.so --ablation --pass bwd --out "$W/abl_bwd" \
        --ablation-filter '^(fa3 default|fa2 default|fa3 bwd|fa2 bwd)'
    ) >"$W/b_abl.txt" 2>&1 &
    p0=$!
    (
      export CUDA_VISIBLE_DEVICES=$g1
      STAGES=test DEADLINE_S=150 $CHECK "$W" >"$W/a_test.txt" 2>&1
      STAGES=sanitize DEADLINE_S=${SAN_DEADLINE_S:-100} $CHECK "$W" >"$W/a_san.txt" 2>&1
      STAGES=python,overhead DEADLINE_S=160 $CHECK "$W" >"$W/b_rest.txt" 2>&1
    ) &
    p1=$!
    wait "$p0" "$p1"
    touch "$W.stop"
    wait "$packer"
    {
      grep -E -A12 "^\[  FAILED  \]|Failure$" "$W/tests.log" 2>/dev/null | head -60
      sed -n '/=== summary/,$p' "$W/a_test.txt" "$W/a_san.txt" "$W/b_rest.txt"
      grep -E "^  (fwd|bwd) " "$W/b_abl.txt"
      grep -E "^SUMMARY|measurements in" "$W/b_bench.txt"
    } >"$W/summary.txt" 2>&1
    pack
    cp "$W/summary.txt" "$OUT/summary.txt"
    cat "$W/summary.txt"
    ;;
  *) echo "final.sh: part must be a, b or one" >&2; exit 2 ;;
esac
