#!/usr/bin/env bash
# The FA3 forward grid (bf16; by default d64/d128/d256 × N512..16k × causal/not) against SDPA's
# FlashAttention-2 and cuDNN backends with alternated rounds (bench/compare.py --rounds): each
# shape's backends timed ROUNDS times, the order reversed each round, the median reported, so
# that no backend is always the one timed right after a shape's allocation or after itself.
# Session 40 measured the single-round grid ±9% per shape between two runs on one H100 and ~4%
# lower at N ≤ 2k than the same shapes timed alone (LOG.md); the whole grid with rounds is the run
# that separates the two. Library: the bf16 sm90 forward instances only (FA_INSTANCE_FILTER).
#     bash scripts/gpu/grid_rounds.sh "$OUT"      (~360 s on one H100/H200 with ROUNDS=3)
# Session 40's call 7 (18 short shapes; compare_fwd_session40_rounds.md) is this with
#     PEERS=sdpa_cudnn SEQLENS=512,1024,2048 CEILINGS= bash scripts/gpu/grid_rounds.sh "$OUT"
# FlexAttention as a peer too (bench/compare.py's "flex": torch.compile'd, one compilation per
# shape in the warm-up; ~11 s per shape with four backends on an H100 in session 48), e.g. at d128:
#     PEERS=sdpa_flash,sdpa_cudnn,flex HDIMS=128 bash scripts/gpu/grid_rounds.sh "$OUT"
# Writes compare.json / compare.md / PNGs and the build log to $OUT; prints every round's TFLOP/s.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_grid_rounds_out}}
ROUNDS=${ROUNDS:-3}
PEERS=${PEERS:-sdpa_flash,sdpa_cudnn}
HDIMS=${HDIMS:-64,128,256}
SEQLENS=${SEQLENS:-512,1024,2048,4096,8192,16384}
CAUSAL=${CAUSAL:-both}
CEILINGS=${CEILINGS---ceilings --plot-grid}
mkdir -p "$OUT"
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source scripts/gpu/build_lib.sh
nvidia-smi -L
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
build_lib lib build-grid "sm90_fwd_bf16_hd($(tr , '|' <<<"$HDIMS"))" 16 "$OUT/build.log" || exit 1
# shellcheck disable=SC2086  # CEILINGS: zero or more flags
python3 bench/compare.py --lib build-grid/libflashattn.so --algos fa3 --peers "$PEERS" --pass fwd \
  --hdims "$HDIMS" --seqlens "$SEQLENS" --causal "$CAUSAL" --rounds "$ROUNDS" $CEILINGS --out "$OUT" \
  >"$OUT/compare_stdout.txt" 2>&1
echo "compare rc=$? at $((SECONDS - start)) s"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
python3 - "$OUT/compare.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    if r.get("tflops") is None:
        continue
    rounds = " ".join(f"{r['tflops'] * r['ms'] / ms:.0f}" for ms in r.get("ms_rounds", []))
    print(f"d{r['d']} {'causal' if r['causal'] else 'noncaus'} N{r['n']} {r['backend']:>10}: "
          f"median {r['tflops']:.0f} TFLOP/s; rounds {rounds}")
PY
grep -E "geomean|min ratio|^Ceilings" "$OUT/compare.md"
