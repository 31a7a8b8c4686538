#!/usr/bin/env bash
# The LSE rule's score-accumulation allowance, measured (one call on the GPU machine):
#     bash scripts/gpu/lse_calibrate.sh "$OUT"
# 1. builds the forward instances of the CUDA grid's input-distribution cases (scripts/gpu/seeds.sh);
# 2. bench/lse_peers.py on that library: ours and PyTorch's SDPA kernels against float64 on the
#    same inputs, errors also in units of 2^-24 * score_terms;
# 3. seeds.sh sweeps of those grid cases for each FA_TEST_LSE_ULPS_PER_STEP in ULPS (fresh inputs
#    per round), to see the failure rate each allowance leaves.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_lse_cal}}
mkdir -p "$OUT"
start=$SECONDS
export INSTANCE_FILTER=${INSTANCE_FILTER:-'^(sm80_fa1_fwd_bf16_hd(64|128)|sm80_fa1_fwd_fp16_hd128_mask_softcap|sm80_fwd_bf16_hd(64|128)|sm80_fwd_fp16_hd(128|256)_mask(_softcap)?|sm90_fwd_bf16_hd(64|128)|sm90_fwd_fp16_hd(128|256)_mask_softcap)$'}
export EXTRA_CMAKE=-DFA_BUILD_ABLATIONS=OFF
FILTER='Grid/CudaForward.Matches/*heavy*:Grid/CudaForward.Matches/*bigq*'
mkdir -p "$OUT/u0"
SEED_FILTER="$FILTER" ROUNDS=6 PAR=6 FA_TEST_LSE_ULPS_PER_STEP=0 bash scripts/gpu/seeds.sh "$OUT/u0" | tail -3
mv "$OUT/u0/build.log" "$OUT/build.log" 2>/dev/null
echo "calibrate: built at $((SECONDS - start)) s"
timeout "${PEERS_TIMEOUT_S:-200}" python3 bench/lse_peers.py --lib build/libflashattn.so --rounds "${PEER_ROUNDS:-20}" --out "$OUT" \
  >"$OUT/lse_peers.log" 2>&1
echo "calibrate: lse_peers rc=$? at $((SECONDS - start)) s"
cat "$OUT/lse_peers.md" 2>/dev/null || tail -20 "$OUT/lse_peers.log"
for u in ${ULPS:-0 0.25 0.5 1 2}; do
  mkdir -p "$OUT/u$u"
  SEED_FILTER="$FILTER" ROUNDS=${ROUNDS:-60} PAR=6 FA_TEST_LSE_ULPS_PER_STEP=$u bash scripts/gpu/seeds.sh "$OUT/u$u" >/dev/null 2>&1
  echo "### FA_TEST_LSE_ULPS_PER_STEP=$u (at $((SECONDS - start)) s)"
  grep -E "^\| .*LSE" "$OUT/u$u/seeds.md" | awk -F'|' '{printf "%-58s %s %s %s %s\n", $2, $5, $6, $7, $9}'
done
# Keep the files that come back few: one table per sweep.
for u in ${ULPS:-0 0.25 0.5 1 2}; do cat "$OUT/u$u/seeds.md" >>"$OUT/sweeps.md" 2>/dev/null; done
tar -czf "$OUT/sweeps_csv.tgz" -C "$OUT" $(cd "$OUT" && ls -d u*/seeds.csv 2>/dev/null) 2>/dev/null
rm -rf "$OUT"/u*
echo "calibrate: done in $((SECONDS - start)) s"
