#!/usr/bin/env bash
# GPU run of the KV-cache decode path (src/cuda/decode/), from the repository root (.deps carried):
#     bash scripts/gpu/decode.sh "$OUT"
# 1. scripts/gpu/check.sh with STAGES=build,test,sanitize: configure (Ninja, sm_90a, ptxas -v) with
#    only the decode instances (FA_INSTANCE_FILTER), build -j16, the kvcache GPU tests (Kv/*),
#    compute-sanitizer memcheck (and racecheck/synccheck) on three small kvcache cases;
# 2. bench/decode.py (ours contiguous/paged/split-off vs SDPA flash/cuDNN/efficient), JSON + md;
# 3. the A/B of a run-time switch (DECODE_AB_ENV, default FA_DECODE_KEY_SPLIT=0: the 64-row tile
#    instead of the key-split tile for M <= 16): ours and ours_page256 only, on DECODE_AB_GRID,
#    timed twice in a row (switch at its default, then DECODE_AB_ENV), table appended to decode.md;
# 4. check.sh's summary, then the decode table, last.
# Environment: INSTANCE_FILTER (default: the 12 decode instances), TEST_FILTER (default Kv/*:CudaKvcachePlan.*),
# DECODE_ARGS (extra bench/decode.py arguments, e.g. --quick), DEADLINE_S (default 580),
# BUILD_DIR (default build-decode), JOBS (16), DECODE_AB_ENV (default FA_DECODE_KEY_SPLIT=0; empty:
# no A/B), DECODE_AB_GRID (bench/decode.py arguments of the A/B), DECODE_AB_FLAGS (optional: CUDA
# flags of a second library timed with --quick, e.g. -DFA_DECODE_STAGES=3).
# Files in $OUT (<= 10): build.log, ptxas.txt, tests.json, tests.log, sanitizer.log (check.sh),
# decode.json, decode.md, decode.log, ab_default.json, ab_switch.json.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_decode_out}}
mkdir -p "$OUT"
export DEADLINE_S=${DEADLINE_S:-580}
export BUILD_DIR=${BUILD_DIR:-build-decode}
export INSTANCE_FILTER=${INSTANCE_FILTER:-sm80_decode_}
export TEST_FILTER=${TEST_FILTER:-Kv/*:CudaKvcachePlan.*}
# Small cases for the sanitizers: split-KV with a combine (key-split tile, M = 4), a paged cache
# with append (64-row tile, M = 32), an empty sequence (key-split); racecheck/synccheck: one split
# case of each tile (the key-split tile's warp merge goes through shared memory).
SAN="Kv/CudaKvcache.Matches/d128_gqa4_q1_split3:Kv/CudaKvcache.Matches/d64_gqa8_q4_causal_new4_page16"
SAN="$SAN:Kv/CudaKvcache.Matches/d128_empty_q1_split2"
export SAN_FILTER=${SAN_FILTER:-$SAN}
export SAN_FILTER_RACE=${SAN_FILTER_RACE:-Kv/CudaKvcache.Matches/d128_gqa4_q1_split3:Kv/CudaKvcache.Matches/d64_m17_q1_split3}
DECODE_AB_ENV=${DECODE_AB_ENV-FA_DECODE_KEY_SPLIT=0}
DECODE_AB_GRID=${DECODE_AB_GRID:---peers= --ours ours,ours_page256 --hks 8,32 --batches 1,32 --lengths 4096,65536 --max-gb 9}
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
# A/B of the run-time switch: same library, same grid, back to back.
if [[ -n "$DECODE_AB_ENV" && -f "$lib" ]]; then
  echo; echo "=== A/B: $DECODE_AB_ENV ($(date +%H:%M:%S), ${SECONDS}s elapsed) ==="
  left=$(((DEADLINE_S - SECONDS - 10) / 2))
  if ((left > 30)); then
    # shellcheck disable=SC2086
    timeout "$left" python3 bench/decode.py --lib "$lib" $DECODE_AB_GRID --out-json "$OUT/ab_default.json" \
      >>"$OUT/decode.log" 2>&1
    echo "A/B default rc=$?"
    # shellcheck disable=SC2086
    timeout "$left" env $DECODE_AB_ENV python3 bench/decode.py --lib "$lib" $DECODE_AB_GRID \
      --out-json "$OUT/ab_switch.json" >>"$OUT/decode.log" 2>&1
    echo "A/B $DECODE_AB_ENV rc=$? (${SECONDS}s elapsed)"
    if [[ -f "$OUT/ab_default.json" && -f "$OUT/ab_switch.json" ]]; then
      python3 bench/decode.py --ab-table "$OUT/ab_default.json" "$OUT/ab_switch.json" \
        --ab-labels "default,$DECODE_AB_ENV" --out-md "$OUT/ab.md" >/dev/null
      { echo; echo "## A/B: default vs $DECODE_AB_ENV ($DECODE_AB_GRID)"; echo; cat "$OUT/ab.md"; } >>"$OUT/decode.md"
      rm -f "$OUT/ab.md"
    fi
  else
    echo "A/B: SKIPPED (time budget)"
  fi
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
