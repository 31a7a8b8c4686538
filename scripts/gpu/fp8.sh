#!/usr/bin/env bash
# GPU run of the FP8 (e4m3) forward (fa_fp8_forward: src/cuda/fp8/ quantisers + the fp8 trait of
# src/cuda/sm90/flash_fwd.cuh), from the repository root (.deps carried):
#     bash scripts/gpu/fp8.sh "$OUT"
# 1. scripts/gpu/check.sh with STAGES=build,test,sanitize: configure (Ninja, sm_90a, ptxas -v) with
#    the fp8 instances and the 16-bit sm90 forward instances they are compared with, build -j16,
#    the fp8 GPU tests (TEST_FILTER), compute-sanitizer memcheck/racecheck/synccheck on small cases;
# 2. the SASS of the fp8 kernels: QGMMA (the e4m3 wgmma) with E4M3 operands and UTMALDG counts per fp8 kernel;
# 3. bench/compare.py: ours fa3 (bf16), fa3fp8 (the kernel alone), fa3fp8q (quantisation
#    included) against SDPA's cuDNN backend (bf16) on the FA3 grid (COMPARE_ARGS);
# 4. check.sh's summary and the table, last.
# Environment: INSTANCE_FILTER, TEST_FILTER (default *Fp8*), SAN_FILTER, SAN_FILTER_RACE,
# COMPARE_ARGS, DEADLINE_S (default 580), BUILD_DIR (default build-fp8), JOBS (16).
# Files in $OUT (<= 8): build.log, ptxas.txt, tests.json, tests.log, sanitizer.log (check.sh),
# fp8.log, compare.json, compare.md.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_fp8_out}}
mkdir -p "$OUT"
export DEADLINE_S=${DEADLINE_S:-580}
export BUILD_DIR=${BUILD_DIR:-build-fp8}
export INSTANCE_FILTER=${INSTANCE_FILTER:-sm90_fwd_(fp8_(bf16|fp16)|bf16)_hd(64|128|256)}
export TEST_FILTER=${TEST_FILTER:-*Fp8*:Quick/CudaForward.*fa3*}
export SAN_FILTER=${SAN_FILTER:-*Fp8*Small*}
export SAN_FILTER_RACE=${SAN_FILTER_RACE:-*Fp8*Small*}
export SAN_RING=
COMPARE_ARGS=${COMPARE_ARGS:---hdims 64,128,256 --seqlens 512,1024,2048,4096,8192,16384 --causal both}
SECONDS=0

STAGES=build,test,sanitize bash scripts/gpu/check.sh "$OUT" 2>&1 | tee "$OUT/fp8.log" | tail -40

lib="$BUILD_DIR/libflashattn.so"
echo; echo "=== SASS of the fp8 kernels ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
if [[ -f "$lib" ]] && command -v cuobjdump >/dev/null; then
  cuobjdump -sass "$lib" | awk '
    /Function :/ { name = $3; fp8 = (name ~ /float_e4m3/) }
    fp8 && /[HQ]GMMA/ { h[name]++; if ($0 ~ /E4M3/) e[name]++ }
    fp8 && /UTMALDG/ { t[name]++ }
    END { for (n in h) printf "%s\n    wgmma (HGMMA/QGMMA) %d (E4M3 %d), UTMALDG %d\n", substr(n, 1, 110), h[n], e[n], t[n] }' |
    tee -a "$OUT/fp8.log"
else
  echo "no $lib or no cuobjdump" | tee -a "$OUT/fp8.log"
fi

echo; echo "=== bench/compare.py $COMPARE_ARGS ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
left=$((DEADLINE_S - SECONDS - 10))
if [[ ! -f "$lib" ]]; then
  echo "bench: no $lib"
elif ((left < 30)); then
  echo "bench: SKIPPED (time budget: ${left}s left)"
else
  # shellcheck disable=SC2086
  timeout "$left" python3 bench/compare.py --lib "$lib" --algos fa3,fa3fp8,fa3fp8q --peers sdpa_cudnn --pass fwd \
    $COMPARE_ARGS --out "$OUT" >>"$OUT/fp8.log" 2>&1
  echo "bench rc=$? (${SECONDS}s elapsed)"
  grep -E "Error|error|Traceback" "$OUT/fp8.log" | grep -v -E "maxdiff|error rule" | tail -5
  rm -f "$OUT/compare.png"
fi

echo
echo "=== summary ==="
sed -n '/^=== summary/,$p' "$OUT/fp8.log" | head -30
[[ -f "$OUT/compare.md" ]] && cat "$OUT/compare.md"
