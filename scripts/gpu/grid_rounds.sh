#!/usr/bin/env bash
# The whole FA3 forward grid (bf16, d64/d128/d256 × N512..16k × causal/not) against SDPA's
# FlashAttention-2 and cuDNN backends with alternated rounds (bench/compare.py --rounds): each
# shape's backends timed ROUNDS times, the order reversed each round, the median reported, so
# that no backend is always the one timed right after a shape's allocation or after itself.
# Session 40 measured the single-round grid ±9% per shape between two runs on one H100 and ~4%
# lower at N ≤ 2k than the same shapes timed alone (LOG.md); this is the run that separates the
# two. Library: the bf16 sm90 forward instances only (FA_INSTANCE_FILTER).
#     bash scripts/gpu/grid_rounds.sh "$OUT"      (~360 s on one H100/H200 with ROUNDS=3)
# Writes compare.json / compare.md / compare.png and the build log to $OUT.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_grid_rounds_out}}
ROUNDS=${ROUNDS:-3}
PEERS=${PEERS:-sdpa_flash,sdpa_cudnn}
mkdir -p "$OUT"
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source scripts/gpu/build_lib.sh
nvidia-smi -L
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
build_lib lib build-grid 'sm90_fwd_bf16_hd(64|128|256)' 16 "$OUT/build.log" || exit 1
python3 bench/compare.py --lib build-grid/libflashattn.so --algos fa3 --peers "$PEERS" --pass fwd \
  --hdims 64,128,256 --causal both --rounds "$ROUNDS" --ceilings --plot-grid --out "$OUT" \
  >"$OUT/compare_stdout.txt" 2>&1
echo "compare rc=$? at $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
grep -E "^\| (64|128|256) |geomean|min ratio|^Ceilings" "$OUT/compare.md"
