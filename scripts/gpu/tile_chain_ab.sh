#!/usr/bin/env bash
# One GPU call for the FA3 forward's tile-boundary switches prepared in sessions 31-33 without a
# device (fwd_tile_config.hpp), from the repository root with .deps carried:
#     bash scripts/gpu/tile_chain_ab.sh "$OUT"
# Builds (bf16 d64/d128 forward instances; the tested one adds fp8-bf16):
#   build/      chain: FA_SM90_FWD_TILE_CHAIN + FA_SM90_FWD_Q_AHEAD + FA_SM90_FWD_EPI_LATE (with the
#               epilogue overlap it needs); the fa3 forward tests, PackGqa and Fp8 run on it, and
#               the RingSmall cases (3 CTAs, several tiles each) under the three sanitizers;
#   build-late/ session 32's candidate: FA_SM90_FWD_EPI_LATE + FA_SM90_FWD_TILE_PREFETCH;
#   build-qa/   FA_SM90_FWD_Q_AHEAD alone;
#   build-off/  the defaults.
# Then bench/compare.py against cuDNN (re-timed in every run) on each build, twice, alternated:
# bf16, d64 and d128, N 512-8k, causal and not. Tables in $OUT/bench.md, logs beside it (~450 s).
# MASK: the head_dim_bit mask the switches get (default 10 = d64 + d128).
# Run in session 33 (259 s): chain -3.8% geomean, late -0.7%, Q-ahead alone -1.0% against the
# defaults; docs/perf/ab_session33.md.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_chain_out}}
mkdir -p "$OUT"
M=${MASK:-10}
A='--algos fa3 --peers sdpa_cudnn --causal both --seqlens 512,1024,2048,8192 --hdims 64,128 --pass fwd'
L="-DFA_SM90_FWD_EPI_OVERLAP=$M -DFA_SM90_FWD_EPI_OVERLAP_MASKED=$M -DFA_SM90_FWD_EPI_LATE=$M"
C="$L -DFA_SM90_FWD_TILE_CHAIN=$M -DFA_SM90_FWD_Q_AHEAD=$M"
V='sm90_fwd_bf16_hd(64|128)'
benches=""
for round in 1 2; do
  for b in chain@build late@build-late qa@build-qa off@build-off; do
    benches+="${b%@*}$round@${b#*@}@@$A;"
  done
done
INSTANCE_FILTER='sm90_fwd_(bf16|fp8_bf16)_hd(64|128)' \
  EXTRA_CMAKE="-DFA_BUILD_ABLATIONS=OFF \"-DCMAKE_CUDA_FLAGS=$C\"" \
  TEST_FILTER='*CudaForward*fa3*:PackGqa/*:*Fp8*' STAGES=build,test,sanitize \
  SAN_FILTER=None.none SAN_FILTER_RACE=None.none SAN_RING='RingSmall/*' \
  VARIANTS="late@$V@-DCMAKE_CUDA_FLAGS=$L -DFA_SM90_FWD_TILE_PREFETCH=$M;qa@$V@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_Q_AHEAD=$M;off@$V@" \
  BENCHES="${benches%;}" bash scripts/gpu/ab.sh "$OUT" 2>&1 | tee "$OUT/ab_stdout.txt"
