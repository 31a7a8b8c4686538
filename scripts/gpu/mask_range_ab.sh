#!/usr/bin/env bash
# One GPU call for FA_SM90_FWD_MASK_RANGE (fwd_mask.hpp; session 46), from the repository root
# with .deps carried:
#     bash scripts/gpu/mask_range_ab.sh "$OUT"
# Builds (bf16 d64/d128/d256 forward instances):
#   build/      the switch on at every head dim (MASK=62); the fa3 forward tests and PackGqa run on
#               it, and the RingSmall cases under the three sanitizers;
#   build-off/  the switch off everywhere (-DFA_SM90_FWD_MASK_RANGE=0; the default is 2 since
#               session 47).
# Then bench/compare.py against cuDNN (re-timed in every run) on each build, twice, alternated:
# bf16, d64/d128/d256, N 512-8k, causal and not. Tables in $OUT/bench.md, logs beside it.
# Prediction (fwd_mask.hpp): 0-2% at d64 causal N <= 2k, nothing elsewhere.
# A shorter call: HDIMS=64 SEQLENS=512,1024,2048 STAGES=build,test (169 s on an H100 in session
# 46: +1.8% geomean, docs/perf/ab_session46.md). The full form: 501 s on an H100 in session 47
# (docs/perf/ab_session47.md).
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_mask_range_out}}
mkdir -p "$OUT"
M=${MASK:-62}
HD=${HDIMS:-64,128,256}
A="--algos fa3 --peers sdpa_cudnn --causal both --seqlens ${SEQLENS:-512,1024,2048,8192} --hdims $HD --pass fwd"
V="sm90_fwd_bf16_hd($(tr , '|' <<<"$HD"))"
INSTANCE_FILTER="$V" \
  EXTRA_CMAKE="-DFA_BUILD_ABLATIONS=OFF \"-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_MASK_RANGE=$M\"" \
  TEST_FILTER='*CudaForward*fa3*:PackGqa/*' STAGES=${STAGES:-build,test,sanitize} \
  SAN_FILTER=None.none SAN_FILTER_RACE=None.none SAN_RING='RingSmall/*' \
  VARIANTS="off@$V@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_MASK_RANGE=0" \
  ALTERNATE='on@build off@build-off' ALTERNATE_ARGS="$A" \
  bash scripts/gpu/ab.sh "$OUT" 2>&1 | tee "$OUT/ab_stdout.txt"
