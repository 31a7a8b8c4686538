#!/usr/bin/env bash
# One GPU call (session 43), from the repository root with .deps carried:
#     bash scripts/gpu/d192_line.sh "$OUT"
# The d192 forward with its defaults (fwd_tile_config.hpp: the masked 128-key wide tile up to 512
# keys, the 112-key tile otherwise): the fa3 forward d192 and d256 tests (the two head dims with
# short-range tiles), then bf16 d192 × N 512..16k × causal / not against SDPA's cuDNN and
# FlashAttention-2 backends with 3 alternated rounds (bench/compare.py --rounds; d192 is not in
# the FA3 grid that grid_rounds.sh times). Writes compare.json / .md / .png, summary.txt.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_d192_line_out}}
mkdir -p "$OUT"
W=/tmp/fa_d192_line_work
rm -rf "$W" && mkdir -p "$W"
INSTANCE_FILTER='sm90_fwd_(bf16|fp16)_hd(192|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF' \
  TEST_FILTER='*CudaForward*_d192_*fa3*:PackGqa/*_d192_*:*CudaForward*_d256_*fa3*:PackGqa/*_d256_*' \
  STAGES=build,test DEADLINE_S=240 bash scripts/gpu/check.sh "$W" >"$W/check.txt" 2>&1
sed -n '/=== summary/,$p' "$W/check.txt" | tee "$OUT/summary.txt"
grep -E -A8 "^\[  FAILED  \]" "$W/tests.log" 2>/dev/null | head -40
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader
python3 bench/compare.py --lib build/libflashattn.so --algos fa3 --peers sdpa_flash,sdpa_cudnn --pass fwd \
  --hdims 192 --seqlens 512,1024,2048,4096,8192,16384 --causal both --rounds "${ROUNDS:-3}" --plot-grid \
  --out "$OUT" >"$W/compare_stdout.txt" 2>&1
echo "compare rc=$? at ${SECONDS} s"
grep -E "^\|" "$OUT/compare.md"
