#!/usr/bin/env bash
# One GPU call (written in session 40; run in session 41: 358 s on an H100, docs/perf/ab_session41.md),
# from the repository root with .deps carried:
#     bash scripts/gpu/l2_prefetch_ab.sh "$OUT"
# The L2 prefetch of the next tile's loads (fwd_tile_config.hpp: FA_SM90_FWD_L2_PREFETCH_Q,
# FA_SM90_FWD_L2_PREFETCH_KV; head_dim_bit masks, default 0) against the default build:
#   build/      Q and first K/V block prefetched at every head dim (62/62): the tested build
#               (fa3 forward, PackGqa and RingSmall tests);
#   build-q/    Q only (62/0);
#   build-off/  the default (0/0).
# Local (session 40): with both on, bf16 d64 masked, d128, d256, d256 masked, d256 wide, fp16 d192
# and fp8-bf16 d128 compile with 0 spills and no C75xx; UTMAPF.L2 in their SASS (d256: 12 = Q, K
# and V as 4 boxes each); switches off, bf16 d64 masked / d128 / d256 wide SASS identical to 6a2f2c0.
# Prediction: d256 (one Q slot, whose next load waits for the last Q·Kᵀ and comes from HBM)
# +3-8% at N512-1k causal and non-causal from Q; d128 (two Q slots: its Q already loads a tile
# ahead) within ±2%; the K/V prefetch +0-3% at causal N512 (first touch of a head's K/V), and
# -0-2% at N8k if the extra 132 × 128 KB of L2 lines push out a section's K/V.
# bf16 d128/d256 × N 512/1k/8k × causal/not, two alternations, cuDNN re-timed in each.
# Returns: bench.md, summary.txt, ab_stdout.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_l2pf_out}}
W=/tmp/fa_l2pf_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal both --seqlens 512,1024,8192 --hdims 128,256 --pass fwd'
F='sm90_fwd_bf16_hd(128|256)'
INSTANCE_FILTER="$F" \
  EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF "-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_L2_PREFETCH_Q=62 -DFA_SM90_FWD_L2_PREFETCH_KV=62"' \
  TEST_FILTER='*CudaForward*fa3*:PackGqa/*:RingSmall/*' STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=80 \
  VARIANTS="off@$F@;q@$F@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_L2_PREFETCH_Q=62" \
  ALTERNATE='qkv@build q@build-q off@build-off' ALTERNATE_ARGS="$A" \
  bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
