#!/usr/bin/env bash
# One GPU call (session 36), from the repository root with .deps carried:
#     bash scripts/gpu/causal_rounds.sh "$OUT"
# The causal walk's two-round L2 sections (FA_SM90_FWD_CAUSAL_SECTION_ROUNDS, default 2; 0 = the
# 32 MB budget alone, the walk before). One build (bf16 d64/d128/d256 sm90 forward), the fa3
# forward tests with the default and the causal ones with the cap off, then compare.py against
# cuDNN (re-timed in every run) at causal N 512..16k, d 64/128/256, cap on / off alternated, then
# the whole forward grid (--ceilings --plot-grid) on the default.
# Returns bench.md, summary.txt, ab_stdout.txt, compare.{md,json,png}, grid_log.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_crd_out}}
W=/tmp/fa_crd_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
start=$SECONDS
A='--algos fa3 --peers sdpa_cudnn --causal yes --seqlens 512,1024,2048,4096,8192,16384 --hdims 64,128,256 --pass fwd'
benches="on1@build@@$A;off1@build@FA_SM90_FWD_CAUSAL_SECTION_ROUNDS=0@$A"
INSTANCE_FILTER='sm90_fwd_bf16_hd(64|128|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=170 \
  TESTS2='FA_SM90_FWD_CAUSAL_SECTION_ROUNDS=0@*CudaForward*causal*fa3*' \
  BENCHES="$benches" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
left=$((570 - (SECONDS - start)))
echo "=== grid at $((SECONDS - start)) s (${left} s left)"
if ((left > 120)) && [[ -f build/libflashattn.so ]]; then
  timeout "$left" python3 bench/compare.py --lib build/libflashattn.so --algos fa3 --pass fwd --ceilings --plot-grid \
    --out "$W/grid" >"$OUT/grid_log.txt" 2>&1
  echo "grid rc=$?"
  cp "$W/grid/compare.md" "$W/grid/compare.json" "$OUT/" 2>/dev/null
  cp "$W/grid"/*.png "$OUT/" 2>/dev/null
  grep -E "^\| \*\*|Ceilings" "$OUT/compare.md" 2>/dev/null
else
  echo "grid: NOT RUN"
fi
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
echo "causal_rounds: done in $((SECONDS - start)) s"
