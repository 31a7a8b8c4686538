#!/usr/bin/env bash
# GPU run of the FP8 (e4m3) forward (fa_fp8_forward: src/cuda/fp8/ quantisers + the fp8 trait of
# src/cuda/sm90/flash_fwd_kernel.cuh), from the repository root (.deps carried):
#     bash scripts/gpu/fp8.sh "$OUT"
# 1. scripts/gpu/check.sh with STAGES=build,test,sanitize: configure (Ninja, sm_90a, ptxas -v) with
#    the fp8 instances and the 16-bit sm90 forward instances they are compared with, build -j16,
#    the fp8 GPU tests (TEST_FILTER), compute-sanitizer memcheck/racecheck/synccheck on small cases;
# 2. the SASS of the fp8 kernels: QGMMA (the e4m3 wgmma) with E4M3 operands and UTMALDG counts per fp8 kernel;
# 3. bench/compare.py: ours fa3 (bf16), fa3fp8 (the kernel alone), fa3fp8q (quantisation
#    included) against SDPA's cuDNN backend (bf16) on the FA3 grid (COMPARE_ARGS);
# 4. (FP8_PY=1, default) the Python package against this build: pytest tests/python/test_fp8.py;
#    (FP8_CLI=1, default) `fa run --fp8` variants and `fa check`'s forward/fp8 rows;
# 5. (FP8_ACC=1, default) bench/fp8_accuracy.py: RMSE of O vs float64, per-head / block /
#    incoherent, with and without outliers (FA3 §4.3's table);
# 6. (POLY_AB_FLAGS, e.g. -DFA_SM90_FWD_POLY_EXP2=2) a second library of the same forward instances
#    with those CUDA flags, built while 4-5 run: `fa check` forward + fp8 rows on it, then
#    compare.py fa3 / fa3fp8 on POLY_AB_ARGS for default, switch, default, switch (alternating
#    processes), tables appended to fp8.log;
# 7. check.sh's summary and the tables, last.
# Environment: INSTANCE_FILTER, TEST_FILTER (default *Fp8*:Quick/CudaForward.*fa3*), SAN_FILTER,
# SAN_FILTER_RACE, COMPARE_ARGS, DEADLINE_S (default 580), BUILD_DIR (default build-fp8), JOBS (16),
# FP8_STAGES (check.sh stages, default build,test,sanitize), FP8_PY, FP8_CLI, FP8_ACC, POLY_AB_FLAGS,
# POLY_AB_ARGS, POLY_AB_NAME (the A/B table's file name, default poly_ab).
# Files in $OUT (<= 8): build.log, ptxas.txt, tests.log (check.sh), fp8.log, compare.json,
# compare.md, accuracy.md, poly_ab.md.
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

STAGES=${FP8_STAGES:-build,test,sanitize} bash scripts/gpu/check.sh "$OUT" 2>&1 | tee -a "$OUT/fp8.log" | tail -40

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
  rm -f "$OUT"/compare*.png
fi

# The second library (compile-time switch) builds in the background while the Python/CLI stages run.
poly_pid=
if [[ -n "${POLY_AB_FLAGS:-}" && -f "$lib" ]]; then
  ab=build-fp8-ab
  ( cmake -S . -B "$ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_BUILD_TESTS=OFF \
      -DFA_BUILD_BENCH=OFF -DFA_BUILD_ABLATIONS=OFF -DFA_INSTANCE_FILTER="$INSTANCE_FILTER" \
      -DCMAKE_CUDA_FLAGS="$POLY_AB_FLAGS" && cmake --build "$ab" -j"${JOBS:-16}" --target flashattn fa ) \
    >"/tmp/fa_poly_build.log" 2>&1 &
  poly_pid=$!
fi

if [[ "${FP8_PY:-1}" == 1 && -f "$lib" ]]; then
  echo; echo "=== pytest tests/python/test_fp8.py ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
  if FLASHATTN_LIB_DIR="$PWD/$BUILD_DIR" timeout 120 python3 -m pip install -q --no-build-isolation ./python \
    >/tmp/fa_pip.log 2>&1; then
    timeout 150 python3 -m pytest tests/python/test_fp8.py -q -rs -p no:cacheprovider 2>&1 | tail -15 | tee -a "$OUT/fp8.log"
  else
    tail -15 /tmp/fa_pip.log | tee -a "$OUT/fp8.log"
  fi
fi

fa_bin="$BUILD_DIR/fa"
if [[ "${FP8_CLI:-1}" == 1 && -x "$fa_bin" ]]; then
  echo; echo "=== fa run --fp8 / fa check ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
  for a in "" "--kernel-only --head-dim 256" "--dtype fp16 --head-dim 64 --scaling per-head --no-incoherent --window 256,0" \
    "--kernel-only --head-dim 128 --causal"; do
    echo "--- fa run --fp8 $a" | tee -a "$OUT/fp8.log"
    # shellcheck disable=SC2086
    timeout 60 "$fa_bin" run --fp8 $a 2>&1 | tail -4 | tee -a "$OUT/fp8.log"
  done
  echo "--- fa check --no-backward --no-kvcache --quiet" | tee -a "$OUT/fp8.log"
  timeout 120 "$fa_bin" check --backend cuda --no-backward --no-kvcache --quiet 2>&1 | tail -6 | tee -a "$OUT/fp8.log"
fi

if [[ "${FP8_ACC:-1}" == 1 && -f "$lib" ]]; then
  echo; echo "=== bench/fp8_accuracy.py ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
  timeout 120 python3 bench/fp8_accuracy.py --lib "$lib" --out-md "$OUT/accuracy.md" >>"$OUT/fp8.log" 2>&1
  echo "accuracy rc=$?"
fi

if [[ -n "$poly_pid" ]]; then
  echo; echo "=== A/B: $POLY_AB_FLAGS ($(date +%H:%M:%S), ${SECONDS}s elapsed) ===" | tee -a "$OUT/fp8.log"
  wait "$poly_pid"; echo "second build rc=$? ($(date +%H:%M:%S))" | tee -a "$OUT/fp8.log"
  grep -E "error|FAILED" /tmp/fa_poly_build.log | head -10
  ab=build-fp8-ab
  if [[ -f "$ab/libflashattn.so" ]]; then
    echo "--- fa check (switch build) --no-backward --no-kvcache --quiet" | tee -a "$OUT/fp8.log"
    timeout 120 "$ab/fa" check --backend cuda --no-backward --no-kvcache --quiet 2>&1 | tail -6 | tee -a "$OUT/fp8.log"
    # Several tiles and key blocks of the unmasked d64/d128 instances (fa check's shapes are small).
    for a in "--head-dim 64 --seqlen 1000 --seqlen-k 4097" "--head-dim 64 --seqlen 4097 --seqlen-k 1000" \
      "--head-dim 128 --seqlen 1000 --seqlen-k 4097"; do
      echo "--- (switch build) fa run --fp8 $a" | tee -a "$OUT/fp8.log"
      # shellcheck disable=SC2086
      timeout 60 "$ab/fa" run --fp8 $a --check-rows 0 2>&1 | tail -4 | tee -a "$OUT/fp8.log"
    done
    POLY_AB_ARGS=${POLY_AB_ARGS:---hdims 64,128,256 --seqlens 1024,8192 --causal both}
    : >"$OUT/${POLY_AB_NAME:-poly_ab}.md"
    for round in 1 2; do
      for which in default switch; do
        l=$lib; [[ $which == switch ]] && l="$ab/libflashattn.so"
        left=$((DEADLINE_S - SECONDS - 10))
        ((left < 30)) && { echo "A/B: out of time" | tee -a "$OUT/fp8.log"; break 2; }
        # shellcheck disable=SC2086
        timeout "$left" python3 bench/compare.py --lib "$l" --algos fa3,fa3fp8 --peers= --pass fwd $POLY_AB_ARGS \
          --out "/tmp/fa_ab_$which$round" >>"$OUT/fp8.log" 2>&1
        { echo; echo "## round $round: $which (${which/switch/$POLY_AB_FLAGS})"; echo;
          sed -n '/^| d |/,/^| \*\*min/p' "/tmp/fa_ab_$which$round/compare.md"; } >>"$OUT/${POLY_AB_NAME:-poly_ab}.md"
      done
    done
  else
    tail -20 /tmp/fa_poly_build.log | tee -a "$OUT/fp8.log"
  fi
fi
rm -f "$OUT/tests.json" "$OUT/sanitizer.log"

echo
echo "=== summary ==="
sed -n '/^=== summary/,$p' "$OUT/fp8.log" | head -30
[[ -f "$OUT/compare.md" ]] && cat "$OUT/compare.md"
[[ -f "$OUT/accuracy.md" ]] && cat "$OUT/accuracy.md"
[[ -f "$OUT/${POLY_AB_NAME:-poly_ab}.md" ]] && cat "$OUT/${POLY_AB_NAME:-poly_ab}.md"
