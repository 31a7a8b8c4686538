#!/usr/bin/env bash
# One GPU call (session 34), from the repository root with .deps carried:
#     bash scripts/gpu/peer_mix_ab.sh "$OUT"
# 1. d128 unmasked key blocks of 160 (FA_SM90_FWD_D128_BLOCK_N) against 128, on today's kernel:
#    build/ has 160 and runs the fa3 forward tests (every non-multiple-of-160 length goes through
#    the partial last block); build-off/ has the defaults. bench/compare.py against cuDNN (re-timed
#    in every run), bf16 d128 non-causal N 512, 2k, 4k, 16k, twice, alternated.
#    Session 3 measured 160 on that day's kernel: -4 to -10% at N 1k-4k, +2% at 16k.
# 2. ncu source pages (SASS, executed instructions and stall samples per instruction) of ours
#    (build-off) and of cuDNN at d64 causal N512 (our weakest shape against it), d128 and d256
#    non-causal N512, and their opcode mixes side by side (scripts/sass_mix.py): which work cuDNN's kernel
#    does not do.
# Returns (8 files at most): bench.md, summary.txt, ab_stdout.txt, mix.txt, prof.tar.gz.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_mix_out}}
W=/tmp/fa_mix_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
start=$SECONDS
A='--algos fa3 --peers sdpa_cudnn --causal no --seqlens 512,2048,4096,16384 --hdims 128 --pass fwd'
V='sm90_fwd_bf16_hd(64|128|256)'
benches=""
for round in 1 2; do
  for b in w160@build off@build-off; do
    benches+="${b%@*}$round@${b#*@}@@$A;"
  done
done
INSTANCE_FILTER="$V" \
  EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D128_BLOCK_N=160' \
  TEST_FILTER='*CudaForward*fa3*' STAGES=build,test CHECK_DEADLINE_S=240 \
  VARIANTS="off@$V@" BENCHES="${benches%;}" bash scripts/gpu/ab.sh "$W" 2>&1 | tee "$OUT/ab_stdout.txt"
cp "$W/bench.md" "$OUT/" 2>/dev/null
sed -n '/=== summary/,$p' "$W/check.txt" >"$OUT/summary.txt" 2>/dev/null
echo "=== profiles at $((SECONDS - start)) s"
if [[ -f build-off/libflashattn.so ]]; then
  CASES='ours_d64c512|sm90_fwd_kernel|--algo fa3 --d 64 --n 512 --causal 1;'
  CASES+='cudnn_d64c512|sdpa|--algo sdpa_cudnn --d 64 --n 512 --causal 1;'
  CASES+='ours_d128n512|sm90_fwd_kernel|--algo fa3 --d 128 --n 512 --causal 0;'
  CASES+='cudnn_d128n512|sdpa|--algo sdpa_cudnn --d 128 --n 512 --causal 0;'
  CASES+='ours_d256n512|sm90_fwd_kernel|--algo fa3 --d 256 --n 512 --causal 0;'
  CASES+='cudnn_d256n512|sdpa|--algo sdpa_cudnn --d 256 --n 512 --causal 0'
  CASES="$CASES" LIB=build-off/libflashattn.so SOURCE=1 FULL=0 bash scripts/gpu/profile.sh "$W/prof" 2>&1 | tail -20
  {
    for s in d64c512 d128n512 d256n512; do
      echo "### $s"
      python3 scripts/sass_mix.py "ours=$W/prof/src_ours_$s.csv" "cudnn=$W/prof/src_cudnn_$s.csv" --top 28 --loops
    done
  } >"$OUT/mix.txt" 2>&1
  tar -czf "$OUT/prof.tar.gz" -C "$W" prof
fi
echo "peer_mix_ab: done in $((SECONDS - start)) s"
grep -vE "^\|[-| ]+\|$" "$OUT/bench.md" 2>/dev/null | cut -c1-150
head -80 "$OUT/mix.txt" 2>/dev/null | cut -c1-160
