#!/usr/bin/env bash
# One GPU call (session 36), from the repository root with .deps carried:
#     bash scripts/gpu/causal_rounds2.sh "$OUT"
# Second alternation of causal_rounds.sh's A/B, where the cap binds (d64 / d128; at d256 the
# 32 MB budget already gives <= 2 rounds), plus caps of 3 and 4 rounds: compare.py against cuDNN
# (re-timed in every run) at causal N 512..8k, order off, on, r3, on, off, r4. Build only (the
# tests ran on this commit in causal_rounds.sh's call). Returns bench.md, summary.txt, ab_stdout.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_crd2_out}}
W=/tmp/fa_crd2_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal yes --seqlens 512,1024,2048,4096,8192 --hdims 64,128 --pass fwd'
E=FA_SM90_FWD_CAUSAL_SECTION_ROUNDS
benches="off2@build@$E=0@$A;on2@build@@$A;r3@build@$E=3@$A;on3@build@@$A;off3@build@$E=0@$A;r4@build@$E=4@$A"
INSTANCE_FILTER='sm90_fwd_bf16_hd(64|128)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DFA_BUILD_TESTS=OFF' \
  STAGES=build CHECK_DEADLINE_S=120 BENCH_TIMEOUT_S=90 \
  BENCHES="$benches" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
