#!/usr/bin/env bash
# One GPU call (written in session 37, run in session 39: LOG.md), from the repository root with .deps carried:
#     bash scripts/gpu/d256_masked_ab.sh "$OUT"
# The masked (causal) d256 instance's key block, against its default of 64 keys × 2 stages with
# the intra-warpgroup overlap (build-off/; since session 39 the default is 80 × 2 plus the wide
# 128-key kernel for key ranges <= 2048, so build-off/ now builds that, not 64 × 2):
#   build/     128 keys, 1 stage, no overlap (FA_SM90_FWD_D256_MASKED_BLOCK_N=128, _STAGES=1,
#              _OVERLAP=0; the tested build: fa3 forward tests). With Nq = Nk a 128-row tile's
#              diagonal is one 128-key block: causal N512 runs 10 blocks per head instead of 20.
#   build-m80/ 80 keys, 2 stages, overlap (the unmasked default's tile; local ptxas: no spills,
#              where session 4's kernel spilled 52 B). Not tested in this call; benchmarked only.
# Local ptxas (session 37): no spills for either; 128 keys with the overlap spills 344 B (C7512).
# Prediction: 128 × 1 +3-8% at causal N >= 2k (unmasked, session 35: 128 × 1 within 1.5% of 80,
# and 64 was 4-8.5% below 80 from N1k), -3 to +3% at N512-1k (fewer blocks, but no overlap);
# 80 × 2 +3-6% at N >= 2k, -5% at N512 (12% of its keys ragged on the diagonal there).
# bf16 d256 causal N 512..16k, two alternations, cuDNN re-timed in each.
# Returns: bench.md, summary.txt, ab_stdout.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_d256m_out}}
W=/tmp/fa_d256m_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
A='--algos fa3 --peers sdpa_cudnn --causal yes --seqlens 512,1024,2048,4096,8192,16384 --hdims 256 --pass fwd'
V='sm90_fwd_bf16_hd256_mask_softcap$'
benches=""
for round in 1 2; do
  for b in m128@build off@build-off m80@build-m80; do
    benches+="${b%@*}$round@${b#*@}@@$A;"
  done
done
INSTANCE_FILTER='sm90_fwd_bf16_hd256' \
  EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF "-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_MASKED_BLOCK_N=128 -DFA_SM90_FWD_D256_MASKED_STAGES=1 -DFA_SM90_FWD_D256_MASKED_OVERLAP=0"' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 BENCH_TIMEOUT_S=100 \
  VARIANTS="off@$V@;m80@$V@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_MASKED_BLOCK_N=80" \
  BENCHES="${benches%;}" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
nvidia-smi --query-gpu=name,power.limit --format=csv,noheader
