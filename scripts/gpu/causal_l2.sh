#!/usr/bin/env bash
# One GPU call (session 36), from the repository root with .deps carried:
#     bash scripts/gpu/causal_l2.sh "$OUT"
# The causal tile walk's L2 section budget (FA_SM90_FWD_CAUSAL_L2_BUDGET_MB, run time; default
# 32 MB). Hypothesis: a causal section's first round runs the heaviest query block of every head in
# the section and so reads the section's whole K/V from DRAM in one round (d128 N512: 32 MB in
# ~9 us), above the H100's ~3 TB/s; smaller sections spread it. One build (bf16 d64/d128/d256
# sm90 forward), the fa3 causal forward tests with each budget forced, then compare.py against
# cuDNN (re-timed in every run) at causal N 512/1k/2k, d 64/128/256, budgets 32/16/8 MB, twice,
# alternated. Returns bench.md, summary.txt, ab_stdout.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_cl2_out}}
W=/tmp/fa_cl2_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal yes --seqlens 512,1024,2048 --hdims 64,128,256 --pass fwd'
benches=""
for round in 1 2; do
  for mb in 32 16 8; do
    benches+="b${mb}_$round@build@FA_SM90_FWD_CAUSAL_L2_BUDGET_MB=$mb@$A;"
  done
done
tests2=""
for mb in 16 8 1; do tests2+="FA_SM90_FWD_CAUSAL_L2_BUDGET_MB=$mb@*CudaForward*causal*fa3*;"; done
INSTANCE_FILTER='sm90_fwd_bf16_hd(64|128|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF' \
  TEST_FILTER='*CudaForward*causal*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=120 \
  TESTS2="${tests2%;}" BENCHES="${benches%;}" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
