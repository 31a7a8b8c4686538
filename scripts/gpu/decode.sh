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
# BUILD_DIR (default build-decode), JOBS (16), DECODE_AB_FLAGS (optional: CUDA flags of a second
# library timed with --quick, e.g. -DFA_DECODE_STAGES=3).
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
# Optional A/B of a compile-time switch (e.g. DECODE_AB_FLAGS=-DFA_DECODE_STAGES=3): a second
# library with only the decode instances, timed by bench/decode.py --quick; its table is appended
# to decode.md under its flags.
if [[ -n "${DECODE_AB_FLAGS:-}" ]]; then
  echo; echo "=== A/B build: $DECODE_AB_FLAGS ($(date +%H:%M:%S), ${SECONDS}s elapsed) ==="
  ab=build-decode-ab
  { cmake -S . -B "$ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_PTXAS_VERBOSE=ON \
      -DFA_BUILD_TESTS=OFF -DFA_BUILD_BENCH=OFF -DFA_BUILD_ABLATIONS=OFF -DFA_INSTANCE_FILTER="$INSTANCE_FILTER" \
      -DCMAKE_CUDA_FLAGS="$DECODE_AB_FLAGS" && cmake --build "$ab" -j"${JOBS:-16}" --target flashattn; } >>"$OUT/decode.log" 2>&1
  left=$((DEADLINE_S - SECONDS - 10))
  if [[ -f "$ab/libflashattn.so" ]] && ((left > 30)); then
    timeout "$left" python3 bench/decode.py --lib "$ab/libflashattn.so" --quick --out-md "$OUT/decode_ab.md" \
      >>"$OUT/decode.log" 2>&1
    echo "A/B bench rc=$?"
    if [[ -f "$OUT/decode_ab.md" ]]; then
      { echo; echo "## A/B: $DECODE_AB_FLAGS (--quick)"; echo; cat "$OUT/decode_ab.md"; } >>"$OUT/decode.md"
      rm -f "$OUT/decode_ab.md"
    fi
  else
    echo "A/B: no library or no time left (${left}s)"
  fi
fi

echo
echo "=== summary ==="
sed -n '/^=== summary/,$p' "$OUT/decode.log" | head -30
[[ -f "$OUT/decode.md" ]] && cat "$OUT/decode.md"
