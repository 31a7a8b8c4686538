#!/usr/bin/env bash
# One GPU call (written in session 36, not yet run), from the repository root with .deps carried:
#     bash scripts/gpu/causal_one_round.sh "$OUT"
# Causal L2 sections of one round with the snake alternating across sections
# (FA_SM90_FWD_CAUSAL_SECTION_ROUNDS=1) against the default two-round cap. By key-block counts
# (tests/core/test_tile_scheduler.cpp, OneRoundSectionsAlternate) it halves the K/V a round first
# touches (d128 N512: 33 heads instead of 66; d256 N512: 16.5 MB instead of 32) at the same
# balance at d256 (2.6% worse than the cap of 2 at d128 N512 by block counts, the partial last
# section). Prediction: d256 causal N512 +3-6%, d128 N512 0-1%, d64 0-3%, N >= 2k within the noise.
# One build (bf16 d64/d128/d256 sm90 forward), the fa3 forward tests, the causal ones again with
# the switch on, then compare.py against cuDNN (re-timed in every run) at causal N 512..4k,
# order on2, one, one, on2. Returns bench.md, summary.txt, ab_stdout.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_c1r_out}}
W=/tmp/fa_c1r_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal yes --seqlens 512,1024,2048,4096 --hdims 64,128,256 --pass fwd'
E=FA_SM90_FWD_CAUSAL_SECTION_ROUNDS
benches="two1@build@@$A;one1@build@$E=1@$A;one2@build@$E=1@$A;two2@build@@$A"
INSTANCE_FILTER='sm90_fwd_bf16_hd(64|128|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=120 \
  TESTS2="$E=1@*CudaForward*causal*fa3*" BENCHES="$benches" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
