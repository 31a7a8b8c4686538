#!/usr/bin/env bash
# LSE / O error of ours (fa1, fa2, fa3) next to PyTorch's SDPA kernels on the same inputs
# (bench/lse_peers.py), on the GPU machine (one call, .deps carried):
#     bash scripts/gpu/lse_peers.sh "$OUT"
# Builds the library only, with the instances the cases need (INSTANCE_FILTER overrides), and
# writes $OUT/build.log, $OUT/lse_peers.json and $OUT/lse_peers.md.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_lse_out}}
mkdir -p "$OUT"
FILTER=${INSTANCE_FILTER:-'^(sm80_fa1_fwd_bf16_hd(64|128)|sm80_fwd_bf16_hd(64|128)|sm80_fwd_fp16_hd256_mask|sm90_fwd_bf16_hd(64|128)|sm90_fwd_fp16_hd256_mask_softcap)$'}
start=$SECONDS
cmake -S . -B build-lse -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_BUILD_TESTS=OFF \
  -DFA_BUILD_ABLATIONS=OFF -DFA_INSTANCE_FILTER="$FILTER" >"$OUT/build.log" 2>&1 &&
  cmake --build build-lse -j"${JOBS:-16}" --target flashattn >>"$OUT/build.log" 2>&1 || {
  tail -30 "$OUT/build.log"; exit 1; }
echo "lse_peers: built in $((SECONDS - start)) s"
python3 bench/lse_peers.py --lib build-lse/libflashattn.so --rounds "${ROUNDS:-30}" --out "$OUT"
echo "lse_peers: done in $((SECONDS - start)) s"
