#!/usr/bin/env bash
# One GPU call, from the repository root with .deps carried:
#     bash scripts/gpu/d192_short_ab.sh "$OUT"
# d192's short-range tiles (fwd_tile_config.hpp: FA_SM90_FWD_D192_SHORT, _MASKED_WIDE,
# _SHORT_OVERLAP; run_sm90_fwd routes key spans <= FA_SM90_FWD_D192_SHORT_MAX_N (unmasked) /
# FA_SM90_FWD_D192_WIDE_MAX_N (masked) to them; the bench forces both ways). Both tiles are built
# here (FA_SM90_FWD_D192_SHORT=1, as when session 43 ran it; the default since leaves the unmasked
# one out):
#   build/    128 keys × 1 stage, no overlap, tested: the fa3 forward d192 and d256
#             tests (d256's routing shares the code), then the d192 tests once more
#             with every d192 call on the 112-key tile (both MAX_N=0) and every
#             one on the short-range tiles (both large); memcheck / racecheck / synccheck on the new
#             RingSmall cases (FA_SM90_FWD_MAX_CTAS=3) and a Grid case;
#   build-ov/ the unmasked tile with the intra-warpgroup overlap (bf16 d192 only, library only).
# Bench: bf16 d192, N 512/1k/2k/4k, non-causal and causal, three ways (off = both MAX_N=0, on =
# both forced on, ov = build-ov forced on), two alternations, cuDNN re-timed in each.
# Prediction: non-causal +4-8% at N512 and N1k (the 112-key tile computes 560 / 1120 keys in 5 / 10
# blocks, the short tile 512 / 1024 in 4 / 8), about even at 2k (2128 keys in 19 blocks against 16),
# -2..-5% at 4k (the second stage and overlap win once a tile has many blocks); ov within ±2% of
# on at N <= 1k, better at 2k-4k. Causal: +3-8% at N <= 1k (diagonal one block instead of two
# ragged ones), even at 2k, below at 4k.
# Returns: bench.md, summary.txt (tests, then sanitizers), ab_stdout.txt, sanitizer.log.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_d192s_out}}
W=/tmp/fa_d192s_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal both --seqlens 512,1024,2048,4096 --hdims 192 --pass fwd'
AN='--algos fa3 --peers sdpa_cudnn --causal no --seqlens 512,1024,2048,4096 --hdims 192 --pass fwd'
ON='FA_SM90_FWD_D192_SHORT_MAX_N=1000000 FA_SM90_FWD_D192_WIDE_MAX_N=1000000'
OFF='FA_SM90_FWD_D192_SHORT_MAX_N=0 FA_SM90_FWD_D192_WIDE_MAX_N=0'
B=''
for r in 1 2; do
  B+="${B:+;}off$r@build@$OFF@$A;on$r@build@$ON@$A;ov$r@build-ov@$ON@$AN"
done
T='*CudaForward*_d192_*fa3*:PackGqa/*_d192_*'
# d256 too: its short-range tiles' routing moved into the same code (flash_fwd.cuh, short_tile_call).
T0="$T:*CudaForward*_d256_*fa3*:PackGqa/*_d256_*"
[[ -n "${SKIP_AB:-}" ]] || INSTANCE_FILTER='sm90_fwd_(bf16|fp16)_hd(192|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D192_SHORT=1' \
  TEST_FILTER="$T0" STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=90 TESTS2_TIMEOUT_S=60 \
  TESTS2="$OFF@$T;$ON@$T" \
  VARIANTS='ov@sm90_fwd_bf16_hd192$@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D192_SHORT=1 -DFA_SM90_FWD_D192_SHORT_OVERLAP=1' \
  BENCHES="$B" \
  bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
grep -E "spill|Used [0-9]+ registers" /tmp/ab_build_ov.log 2>/dev/null | sort | uniq -c | head -5
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
# The sanitizers in what is left of a 600 s call (SAN_DEADLINE_S overrides); build/ stays on a
# warm machine, so a second call can run this part alone: SKIP_AB=1.
san_s=${SAN_DEADLINE_S:-$((580 - SECONDS))}
((san_s < 60)) && { echo "sanitizers: ${san_s}s left, not run (SKIP_AB=1 runs them alone)"; exit 0; }
mkdir -p "$W/san"
STAGES=sanitize DEADLINE_S=$san_s \
  SAN_FILTER='Grid/CudaForward.*/bf16_d192_h4x2_b2_q300_k500_causal_fa3:Grid/CudaForward.*/bf16_d192_h4x2_b2_q1000_k1000_causal_fa3' \
  SAN_FILTER_RACE='RingSmall/*_d192_*' \
  SAN_RING='RingSmall/*_d192_*' SAN_RING_ENV="FA_SM90_FWD_D192_SHORT_MAX_N=0 RingSmall/*_d192_*" \
  bash scripts/gpu/check.sh "$W/san" >"$W/san/check.txt" 2>&1
sed -n '/=== summary/,$p' "$W/san/check.txt" | tee -a "$OUT/summary.txt"
cp "$W/san/sanitizer.log" "$OUT/" 2>/dev/null
