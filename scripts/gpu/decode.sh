#!/usr/bin/env bash
# GPU run of the KV-cache decode path (src/cuda/decode/), from the repository root (.deps carried):
#     bash scripts/gpu/decode.sh "$OUT"
# 1. scripts/gpu/check.sh with STAGES=build,test,sanitize: configure (Ninja, sm_90a, ptxas -v) with
#    only the decode instances (FA_INSTANCE_FILTER), build -j16, the kvcache GPU tests (Kv/*),
#    compute-sanitizer memcheck (and racecheck/synccheck) on three small kvcache cases;
# 2. bench/decode.py (ours contiguous/paged/split-off vs SDPA flash/cuDNN/efficient), JSON + md;
# 3. check.sh's summary, then the decode table, last.
# Environment: INSTANCE_FILTER (default: the 12 decode instances), TEST_FILTER (default Kv/*:CudaKvcachePlan.*),
# DECODE_ARGS (extra bench/decode.py arguments, e.g. --quick), DEADLINE_S (default 580),
# BUILD_DIR (default build-decode), JOBS (16).
# Files in $OUT (<= 8): build.log, ptxas.txt, tests.json, tests.log, sanitizer.log (check.sh),
# decode.json, decode.md, decode.log.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_decode_out}}
mkdir -p "$OUT"
export DEADLINE_S=${DEADLINE_S:-580}
export BUILD_DIR=${BUILD_DIR:-build-decode}
export INSTANCE_FILTER=${INSTANCE_FILTER:-sm80_decode_}
export TEST_FILTER=${TEST_FILTER:-Kv/*:CudaKvcachePlan.*}
# Small cases for the sanitizers: split-KV with a combine, a paged cache with append, an empty
# sequence.
SAN="Kv/CudaKvcache.Matches/d128_gqa4_q1_split3:Kv/CudaKvcache.Matches/d64_gqa8_q4_causal_new4_page16"
SAN="$SAN:Kv/CudaKvcache.Matches/d128_empty_q1_split2"
export SAN_FILTER=${SAN_FILTER:-$SAN}
export SAN_FILTER_RACE=${SAN_FILTER_RACE:-Kv/CudaKvcache.Matches/d128_gqa4_q1_split3}
DECODE_ARGS=${DECODE_ARGS:-}
SECONDS=0

STAGES=build,test,sanitize bash scripts/gpu/check.sh "$OUT" 2>&1 | tee "$OUT/decode.log" | tail -40

echo; echo "=== bench/decode.py $DECODE_ARGS ($(date +%H:%M:%S), ${SECONDS}s elapsed) ==="
left=$((DEADLINE_S - SECONDS - 10))
lib="$BUILD_DIR/libflashattn.so"
if [[ ! -f "$lib" ]]; then
  echo "bench: no $lib"
elif ((left < 30)); then
  echo "bench: SKIPPED (time budget: ${left}s left)"
else
  # shellcheck disable=SC2086
  timeout "$left" python3 bench/decode.py --lib "$lib" --out-json "$OUT/decode.json" --out-md "$OUT/decode.md" \
    $DECODE_ARGS >>"$OUT/decode.log" 2>&1
  echo "bench rc=$? (${SECONDS}s elapsed)"
  grep -E "Error|error|Traceback" "$OUT/decode.log" | grep -v "maxdiff" | tail -5
fi
echo
echo "=== summary ==="
sed -n '/^=== summary/,$p' "$OUT/decode.log" | head -30
[[ -f "$OUT/decode.md" ]] && cat "$OUT/decode.md"
