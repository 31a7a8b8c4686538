#!/usr/bin/env bash
# One GPU call (session 35), from the repository root with .deps carried:
#     bash scripts/gpu/d256_clock.sh "$OUT"
# 1. d256 unmasked with cuDNN's key block (its kernel `64x128x256`): 128-key blocks, one K/V stage,
#    no intra-warpgroup overlap (FA_SM90_FWD_D256_BLOCK_N=128, _STAGES=1, _OVERLAP=0; the tested
#    build/, fa3 forward tests), against the defaults (80-key blocks, 2 stages, overlap; build-off/)
#    and the defaults without the overlap (build-o0/), bf16 d256 non-causal N 512..16k, twice,
#    alternated, cuDNN re-timed in each.
# 2. bench/clock_probe.py: SM clock, power and cycles per call of ours (defaults) and cuDNN, 3 s of
#    back-to-back calls each, at d128 N512, d256 N512, d64 causal N512, d128 N8k; then the
#    128-key d256 build at d256 N512.
# Returns: bench.md, summary.txt, ab_stdout.txt, clock.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_d256_out}}
W=/tmp/fa_d256_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
start=$SECONDS
A='--algos fa3 --peers sdpa_cudnn --causal no --seqlens 512,1024,2048,4096,16384 --hdims 256 --pass fwd'
V='sm90_fwd_bf16_hd256$'
benches=""
for round in 1 2; do
  for b in b128@build off@build-off o0@build-o0; do
    benches+="${b%@*}$round@${b#*@}@@$A;"
  done
done
INSTANCE_FILTER="$V" \
  EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF "-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_BLOCK_N=128 -DFA_SM90_FWD_D256_STAGES=1 -DFA_SM90_FWD_D256_OVERLAP=0"' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 \
  VARIANTS="off@sm90_fwd_bf16_hd(64|128|256)@;o0@$V@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D256_OVERLAP=0" \
  BENCHES="${benches%;}" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
echo "=== clock probe at $((SECONDS - start)) s"
{
  [[ -f build-off/libflashattn.so ]] &&
    python3 bench/clock_probe.py --lib build-off/libflashattn.so --shapes 128:512:0,256:512:0,64:512:1,128:8192:0 \
      --backends fa3,sdpa_cudnn --seconds 3 --rounds 2
  [[ -f build/libflashattn.so ]] &&
    python3 bench/clock_probe.py --lib build/libflashattn.so --shapes 256:512:0 --backends fa3,sdpa_cudnn \
      --seconds 3 --rounds 1
} >"$OUT/clock.txt" 2>&1
echo "d256_clock: done in $((SECONDS - start)) s"
grep -vE "^\|[-| ]+\|$" "$OUT/bench.md" 2>/dev/null | grep -E "^###|^\| 256|geomean" | cut -c1-150
grep -E "^\|" "$OUT/clock.txt" | cut -c1-150
tail -3 "$OUT/clock.txt"
