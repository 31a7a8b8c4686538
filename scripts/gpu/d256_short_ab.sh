#!/usr/bin/env bash
# One GPU call (session 42: 226 s on an H100, docs/perf/ab_session42.md), from the repository root
# with .deps carried:
#     bash scripts/gpu/d256_short_ab.sh "$OUT"
# The unmasked d256 short-range tile (fwd_tile_config.hpp: FA_SM90_FWD_D256_SHORT, _SHORT_BLOCK_N;
# run_sm90_fwd routes key lengths <= FA_SM90_FWD_D256_SHORT_MAX_N to it, default 512):
#   build/      64-key blocks × 2 stages with the overlap (the default when it ran; set here), tested: the fa3 forward d256
#               tests with the default routing, with every unmasked d256 call on the 80-key tile
#               (MAX_N=0) and every one on the short tile (MAX_N large); memcheck / racecheck /
#               synccheck on the new Grid and RingSmall cases (FA_SM90_FWD_MAX_CTAS=3 for the ring);
#   build-w128/ 128-key blocks × 1 stage without the overlap (bf16 d256 only, library only; the
#               default since, tested and sanitised in its own call: LOG.md, session 42).
# Bench: bf16 d256 non-causal N 512/1k/2k, three ways (off = MAX_N=0, s64, s128 forced on), two
# alternations, cuDNN re-timed in each.
# Prediction: N512 +4-8% for 64 keys (8 blocks of 512 against 7 of 560), +1-4% for 128 keys;
# N1k (80 keys waste 1.6%) and 2k: 64 keys -3 to -8% (the per-block work over more blocks), 128
# within ±2%.
# Returns: bench.md, summary.txt (tests, then sanitizers), ab_stdout.txt, sanitizer.log.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_d256s_out}}
W=/tmp/fa_d256s_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal no --seqlens 512,1024,2048 --hdims 256 --pass fwd'
ON=FA_SM90_FWD_D256_SHORT_MAX_N=1000000
OFF=FA_SM90_FWD_D256_SHORT_MAX_N=0
B=''
for r in 1 2; do
  B+="${B:+;}off$r@build@$OFF@$A;s64_$r@build@$ON@$A;s128_$r@build-w128@$ON@$A"
done
T='*CudaForward*_d256_*fa3*:PackGqa/*_d256_*'
# Build, tests and the bench first; the sanitizers after, in what is left of the call.
INSTANCE_FILTER='sm90_fwd_(bf16|fp16)_hd256' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_SHORT_BLOCK_N=64' \
  TEST_FILTER="$T" STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=70 TESTS2_TIMEOUT_S=60 \
  TESTS2="$OFF@$T;$ON@$T" \
  VARIANTS='w128@sm90_fwd_bf16_hd256$@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_SHORT_BLOCK_N=128' \
  BENCHES="$B" \
  bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
grep -E "spill|Used [0-9]+ registers" /tmp/ab_build_w128.log 2>/dev/null | sort | uniq -c | head -5
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
mkdir -p "$W/san"
STAGES=sanitize DEADLINE_S=${SAN_DEADLINE_S:-200} \
  SAN_FILTER='Grid/CudaForward.*/bf16_d256_h4x2_b2_q300_k500_fa3' \
  SAN_FILTER_RACE='Grid/CudaForward.*/bf16_d256_h4x2_b2_q300_k500_fa3' \
  SAN_RING='RingSmall/*fp16_d256_h2x2_b2_q512_k400*' SAN_RING_ENV='' \
  bash scripts/gpu/check.sh "$W/san" >"$W/san/check.txt" 2>&1
sed -n '/=== summary/,$p' "$W/san/check.txt" | tee -a "$OUT/summary.txt"
cp "$W/san/sanitizer.log" "$OUT/" 2>/dev/null
