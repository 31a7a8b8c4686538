#!/usr/bin/env bash
# Two GPU calls on one warm machine (session 39), from the repository root with .deps carried:
#     bash scripts/gpu/d256_wide_check.sh check "$OUT"   # build, tests, sanitizers, d256 causal (~300 s)
#     bash scripts/gpu/d256_wide_check.sh grid "$OUT"    # the forward grid (rebuilds if build/ is gone)
# The masked d256 forward's two tiles (fwd_tile_config.hpp): 80 keys × 2 stages with the overlap
# for long key ranges, the 128-key wide tile (companion units *_wide.cu) for short ones
# (FA_SM90_FWD_D256_WIDE_MAX_N, default 2048). Builds the bf16/fp16 d64/d128/d256 FA3 forward.
# check: the fa3 forward tests three ways (the default routing; every masked d256 call on the
# 80-key tile, MAX_N=0; every one on the wide tile), memcheck/racecheck/synccheck on the masked
# d256 Grid cases (1000 keys: wide tile; 2500 keys: 80-key tile), and bf16 d256 causal N512-16k
# against cuDNN (the default routing).
# grid: the FA3-paper forward grid against SDPA's flash and cuDNN backends with the GEMM ceiling.
# Returns: ab_stdout.txt, summary.txt, sanitizer.log, bench.md (check); compare.md, compare.json,
# compare_*.png (grid).
set -uo pipefail
PART=${1:?check or grid}
OUT=${2:-${OUT:-/tmp/fa_d256w_out}}
W=/tmp/fa_d256w_work_$PART
rm -rf "$W" && mkdir -p "$W" "$OUT"
if [[ $PART == check ]]; then
  stages=build,test,sanitize tests2='FA_SM90_FWD_D256_WIDE_MAX_N=0@*CudaForward*fa3*;FA_SM90_FWD_D256_WIDE_MAX_N=1000000@*CudaForward*fa3*'
  benches='d256c@build@@--algos fa3 --peers sdpa_cudnn --causal yes --hdims 256 --pass fwd'
else
  stages=build tests2=''
  benches='grid@build@@--algos fa3 --peers sdpa_flash,sdpa_cudnn --causal both --hdims 64,128,256 --pass fwd --ceilings --plot-grid'
fi
SAN='Grid/CudaForward.*_d256_*causal*_fa3:Grid/CudaForward.*_d256_*_w*_fa3'
RACE='Grid/CudaForward.*/bf16_d256_h4x2_b2_q1000_k1000_causal_fa3:Grid/CudaForward.*/bf16_d256_h2x1_b1_q1000_k2500_causal_fa3'
INSTANCE_FILTER='sm90_fwd_(bf16|fp16)_hd(64|128|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=$stages CHECK_DEADLINE_S=300 \
  SAN_FILTER="$SAN" SAN_FILTER_RACE="$RACE" SAN_RING='' \
  TESTS2="$tests2" BENCH_TIMEOUT_S=420 BENCHES="$benches" \
  bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
cp "$W/sanitizer.log" "$OUT/" 2>/dev/null
[[ $PART == check ]] && cp "$W/bench.md" "$OUT/" 2>/dev/null
cp /tmp/ab_bench_grid/compare.md /tmp/ab_bench_grid/compare.json "$OUT/" 2>/dev/null
ls /tmp/ab_bench_grid/*.png 2>/dev/null | head -3 | xargs -r cp -t "$OUT/"
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
