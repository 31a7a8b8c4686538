#!/usr/bin/env bash
# The one script a GPU run executes, from the repository root (with .deps carried):
#     bash scripts/gpu/check.sh "$OUT"
# Builds everything that runs on the H200 (sm_90a: sm80-class kernels are compiled for 90a too),
# reports per-TU compile cost, per-kernel registers/spills and SASS instruction counts, runs the
# GPU tests, compute-sanitizer (memcheck, racecheck, synccheck) on the Quick subset, the
# side-by-side benchmark against PyTorch SDPA, and the Python GPU tests when the package exists;
# prints a short summary table last.
#
# Environment (all optional):
#   STAGES        comma list of build,test,sanitize,bench,python,overhead   (default: all)
#   TEST_FILTER   gtest filter for the test stage                   (default: *)
#   SAN_FILTER    gtest filter for memcheck                         (default: Quick/*)
#   SAN_FILTER_RACE  filter for racecheck/synccheck (slower tools)  (default: Quick/*_auto:Quick/*_fa2)
#   SAN_RING      run under all three tools with FA_SM90_FWD_MAX_CTAS=3 (default: RingSmall/*; empty: off)
#   SAN_RING_ENV  "VAR=VALUE filter": the ring tools once more with VAR set, on filter
#                 (default: the masked d256 ring case on the 80-key tile; empty: off)
#   COMPARE_ARGS  arguments for bench/compare.py                    (default: --quick --plot-grid)
#   DEADLINE_S    whole-script budget in seconds; stages get what is left (default: 540)
#   BUILD_DIR     (default: build)     JOBS (default: 16)
#   INSTANCE_FILTER  regex: compile only the matching kernel instances (FA_INSTANCE_FILTER)
#   EXTRA_CMAKE   more configure flags (shell words: quote a flag that holds spaces)
#   BUILD_MAX_S   longest the build may take (default 300; a full build on one 16-core GPU host may need more)
#   BENCH_MAX_S   longest the bench stage may take (default 200; the whole grid with --ceilings needs ~250)
#   PYTEST_ARGS   extra pytest arguments for the python stage, e.g. "-k packed" after a filtered
#                 build (shell words)                                (default: none: the whole suite)
# Files written to $OUT (at most 8): build.log, ptxas.txt, tests.json, tests.log, sanitizer.log,
# compare.json, compare.md, compare.png (or ablation.json with --ablation).
set -uo pipefail

OUT=${1:-${OUT:-/tmp/fa_check_out}}
mkdir -p "$OUT"
STAGES=${STAGES:-build,test,sanitize,bench,python,overhead}
TEST_FILTER=${TEST_FILTER:-*}
SAN_FILTER=${SAN_FILTER:-Quick/*}
SAN_FILTER_RACE=${SAN_FILTER_RACE:-Quick/*_auto:Quick/*_fa2}
SAN_RING=${SAN_RING-RingSmall/*}
SAN_RING_ENV=${SAN_RING_ENV-FA_SM90_FWD_D256_WIDE_MAX_N=0 RingSmall/*bf16_d256*}
COMPARE_ARGS=${COMPARE_ARGS:---quick --plot-grid}
DEADLINE_S=${DEADLINE_S:-540}
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-16}
INSTANCE_FILTER=${INSTANCE_FILTER:-}
EXTRA_CMAKE=${EXTRA_CMAKE:-}
SUMMARY=$(mktemp /tmp/fa_check_summary.XXXXXX)
export PYTHONUNBUFFERED=1

has_stage() { [[ ",$STAGES," == *",$1,"* ]]; }
note() { printf '%-10s %s\n' "$1" "$2" >>"$SUMMARY"; }
banner() { echo; echo "=== $* ($(date +%H:%M:%S), ${SECONDS}s elapsed) ==="; }
# Seconds a stage may take: what it asks for, capped by what is left of DEADLINE_S.
budget() {
  local want=$1 left=$((DEADLINE_S - SECONDS - 15))
  ((left < want)) && want=$left
  echo "$want"
}

banner "GPU"
nvidia-smi -L || echo "nvidia-smi failed"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>/dev/null
nvcc --version | tail -1
echo "stages: $STAGES; deadline ${DEADLINE_S}s; out $OUT"

# ---------------------------------------------------------------------------------------------
if has_stage build; then
  banner "configure + build ($BUILD_DIR, sm_90a, ptxas -v)"
  : >"$OUT/build.log"
  extra=()
  # GoogleTest: the GPU image may lack libgtest-dev; build it from .deps/googletest (a copy of
  # Debian's /usr/src/googletest, carried with .deps) when no installed one is found.
  if [[ ! -f /usr/include/gtest/gtest.h ]]; then
    if [[ -f "$BUILD_DIR/_gtest/include/gtest/gtest.h" ]]; then
      extra=(-DCMAKE_PREFIX_PATH="$PWD/$BUILD_DIR/_gtest")
    elif [[ -f .deps/googletest/CMakeLists.txt ]]; then
      echo "building GoogleTest from .deps/googletest"
      { cmake -S .deps/googletest -B "$BUILD_DIR/_gtest_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
          -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$PWD/$BUILD_DIR/_gtest" &&
        cmake --build "$BUILD_DIR/_gtest_build" -j"$JOBS" && cmake --install "$BUILD_DIR/_gtest_build"; } >>"$OUT/build.log" 2>&1 &&
        extra=(-DCMAKE_PREFIX_PATH="$PWD/$BUILD_DIR/_gtest")
    fi
    if ((${#extra[@]} == 0)); then
      echo "no GoogleTest found: building without tests"; extra=(-DFA_BUILD_TESTS=OFF); note build "no GoogleTest: tests not built"
    fi
  fi
  # Shell words, so one flag may hold spaces: EXTRA_CMAKE='"-DCMAKE_CUDA_FLAGS=-DA=1 -DB=2"'.
  eval "extra_cmake=($EXTRA_CMAKE)"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DFA_CUDA_ARCHS=90a -DFA_PTXAS_VERBOSE=ON -DFA_BUILD_BENCH=ON \
    -DCMAKE_BUILD_TYPE=Release -DFA_INSTANCE_FILTER="$INSTANCE_FILTER" "${extra_cmake[@]}" "${extra[@]}" >>"$OUT/build.log" 2>&1
  cfg=$?
  t=$(budget "${BUILD_MAX_S:-300}")
  if ((cfg != 0)); then
    tail -30 "$OUT/build.log"; note build "CONFIGURE FAILED (build.log)"
  elif ((t < 30)); then
    note build "SKIPPED (time budget)"
  else
    start=$SECONDS
    timeout "$t" cmake --build "$BUILD_DIR" -j"$JOBS" >>"$OUT/build.log" 2>&1
    rc=$?
    grep -E "error|FAILED|warning C7508" "$OUT/build.log" | head -40
    if ((rc == 0)); then note build "ok in $((SECONDS - start)) s"
    elif ((rc == 124)); then note build "TIMED OUT after ${t}s (build.log)"
    else tail -40 "$OUT/build.log"; note build "FAILED rc=$rc (build.log)"; fi
  fi
  banner "compile report"
  python3 scripts/compile_report.py "$BUILD_DIR" --top 15 | tee "$OUT/ptxas.txt"
  grep -m1 "compile report:" "$OUT/ptxas.txt" | sed 's/^compile report: //' | while read -r l; do note compile "$l"; done
  # The report lists only the top units; its last line counts all of them.
  grep -m1 -E "^compile report: [0-9]+ unit\(s\) over" "$OUT/ptxas.txt" | sed 's/^compile report: //' |
    while read -r l; do note compile "$l"; done
  banner "registers / spills (ptxas -v)"
  python3 scripts/gpu/ptxas_table.py "$OUT/build.log" --summary "$SUMMARY" >>"$OUT/ptxas.txt" 2>&1
  grep -E "SPILL|STACK FRAME" "$OUT/ptxas.txt" | head -20
  tail -1 "$OUT/ptxas.txt"
  banner "SASS instruction counts (cuobjdump)"
  lib=$(ls "$BUILD_DIR"/libflashattn.so* 2>/dev/null | head -1)
  if [[ -n "$lib" ]]; then
    timeout "$(budget 120)" python3 scripts/gpu/sass_counts.py "$lib" --summary "$SUMMARY" >>"$OUT/ptxas.txt" 2>&1
    grep -E "<--" "$OUT/ptxas.txt" | grep -v -E "SPILL|STACK FRAME" | head -20
    tail -1 "$OUT/ptxas.txt"
  else
    note sass "no libflashattn.so in $BUILD_DIR"
  fi
fi

TESTBIN="$BUILD_DIR/tests/fa_tests_cuda"

# ---------------------------------------------------------------------------------------------
if has_stage test; then
  banner "GPU tests ($TEST_FILTER)"
  t=$(budget 200)
  if [[ ! -x "$TESTBIN" ]]; then
    note tests "NOT RUN: $TESTBIN missing"
  elif ((t < 20)); then
    note tests "SKIPPED (time budget)"
  else
    start=$SECONDS
    timeout "$t" "$TESTBIN" --gtest_filter="$TEST_FILTER" --gtest_output=json:"$OUT/tests.json" >"$OUT/tests.log" 2>&1
    rc=$?
    # Failures in full, then gtest's closing lines; the log has everything.
    grep -E -A12 "^\[  FAILED  \]|Failure$" "$OUT/tests.log" | head -80
    grep -E "^\[==========\]|^\[  PASSED  \]|^\[  SKIPPED \]|^\[  FAILED  \] [0-9]+ test" "$OUT/tests.log" | tail -5
    python3 - "$OUT/tests.json" "$rc" "$((SECONDS - start))" "$OUT/tests.log" >>"$SUMMARY" <<'EOF'
import json, sys
path, rc, secs, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    j = json.load(open(path))
except Exception:
    print(f"{'tests':10s} NO JSON (rc={rc}{', timed out' if rc == 124 else ''}; see tests.log)")
    sys.exit(0)
passed = failed = skipped = 0
for suite in j.get("testsuites", []):
    for t in suite.get("testsuite", []):
        if t.get("failures"):
            failed += 1
        elif t.get("result") == "SKIPPED":
            skipped += 1
        else:
            passed += 1
print(f"{'tests':10s} {passed} passed, {failed} failed, {skipped} skipped in {secs} s (rc={rc})")
# Skip reasons: the line after gtest's "<file>:<line>: Skipped", grouped without the shape part.
reasons, prev = {}, ""
for line in open(log, errors="replace"):
    if prev.rstrip().endswith(": Skipped"):
        key = line.strip()
        if ": " in key and "does not provide" in key:
            key = key.split(": ", 1)[0] + ": " + key.split(": ", 1)[1][:70]
        reasons[key[:110]] = reasons.get(key[:110], 0) + 1
    prev = line
for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])[:6]:
    print(f"{'':10s}   skipped x{v}: {k}")
EOF
  fi
fi

# ---------------------------------------------------------------------------------------------
if has_stage sanitize; then
  banner "compute-sanitizer on the Quick subset"
  : >"$OUT/sanitizer.log"
  if [[ ! -x "$TESTBIN" ]] || ! command -v compute-sanitizer >/dev/null; then
    note sanitizer "NOT RUN (no test binary or no compute-sanitizer)"
  else
    # racecheck reports the FA3 forward's tile-handoff records (mbarrier-ordered stores and loads,
    # which it does not model: racecheck_probe.sh); race_classify.py passes a run whose only
    # hazards are those and fails any other. Its print limit is raised so that none is hidden.
    san_verdict() {  # tool label marker rc seconds verdict [extra]
      local tool=$1 label=$2 marker=$3 rc=$4 t=$5 verdict=$6 extra=${7:-}
      if [[ $tool == racecheck && $rc == 99 ]]; then
        local cls
        cls=$(python3 scripts/gpu/race_classify.py "$OUT/sanitizer.log" "$marker")
        if [[ $? == 0 ]]; then note "$label" "$cls"; else note "$label" "ERRORS: $cls (sanitizer.log)"; fi
        return
      fi
      case $rc in
        0) note "$label" "clean: ${verdict:-no summary line}" ;;
        99) note "$label" "ERRORS: ${verdict} (sanitizer.log)" ;;
        124) note "$label" "TIMED OUT after ${t}s" ;;
        *) note "$label" "rc=$rc ${verdict} ${extra}" ;;
      esac
    }
    for tool in memcheck racecheck synccheck; do
      filter=$SAN_FILTER; want=100
      [[ $tool != memcheck ]] && filter=$SAN_FILTER_RACE && want=60
      t=$(budget $want)
      if ((t < 20)); then note "$tool" "SKIPPED (time budget)"; continue; fi
      marker="--- $tool ($filter, ${t}s max)"
      echo "$marker" | tee -a "$OUT/sanitizer.log"
      timeout "$t" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 200 \
        "$TESTBIN" --gtest_filter="$filter" --gtest_brief=1 >>"$OUT/sanitizer.log" 2>&1
      rc=$?
      verdict=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY" "$OUT/sanitizer.log" | tail -1 | sed 's/^=* *//')
      gt=$(grep -E "^\[  (PASSED|FAILED) +\]|tests? ran" "$OUT/sanitizer.log" | tail -1)
      san_verdict "$tool" "$tool" "$marker" "$rc" "$t" "$verdict" "$gt"
      tail -3 "$OUT/sanitizer.log"
    done
    # The persistent FA3 forward with several tiles per CTA, at a size the tools can finish: the
    # RingSmall cases with at most 3 CTAs (FA_SM90_FWD_MAX_CTAS, read by the launcher).
    ring_tools() {  # label filter [VAR=VALUE]
      local label=$1 filter=$2 extra=${3:-} tool t marker rc verdict
      for tool in memcheck racecheck synccheck; do
        t=$(budget 90)
        if ((t < 20)); then note "$tool $label" "SKIPPED (time budget)"; continue; fi
        marker="--- $tool ($filter, FA_SM90_FWD_MAX_CTAS=3 $extra, ${t}s max)"
        echo "$marker" | tee -a "$OUT/sanitizer.log"
        env FA_SM90_FWD_MAX_CTAS=3 $extra timeout "$t" compute-sanitizer --tool "$tool" --error-exitcode 99 \
          --print-limit 200 "$TESTBIN" --gtest_filter="$filter" --gtest_brief=1 >>"$OUT/sanitizer.log" 2>&1
        rc=$?
        verdict=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY" "$OUT/sanitizer.log" | tail -1 | sed 's/^=* *//')
        san_verdict "$tool" "$tool $label" "$marker" "$rc" "$t" "$verdict"
        tail -2 "$OUT/sanitizer.log"
      done
    }
    [[ -n "$SAN_RING" ]] && ring_tools ring "$SAN_RING"
    [[ -n "$SAN_RING_ENV" ]] && ring_tools "ring ${SAN_RING_ENV%% *}" "${SAN_RING_ENV#* }" "${SAN_RING_ENV%% *}"
  fi
fi

# ---------------------------------------------------------------------------------------------
if has_stage bench; then
  banner "bench/compare.py $COMPARE_ARGS"
  t=$(budget "${BENCH_MAX_S:-200}")
  lib=$(ls "$BUILD_DIR"/libflashattn.so 2>/dev/null | head -1)
  if [[ -z "$lib" ]]; then
    note bench "NOT RUN: no $BUILD_DIR/libflashattn.so"
  elif ((t < 30)); then
    note bench "SKIPPED (time budget)"
  else
    # shellcheck disable=SC2086
    timeout "$t" python3 bench/compare.py --lib "$lib" --out "$OUT" $COMPARE_ARGS 2>&1 | tail -60
    rc=$?
    if [[ -f "$OUT/compare.json" ]]; then
      python3 - "$OUT/compare.json" >>"$SUMMARY" <<'EOF2'
import json, sys
j = json.load(open(sys.argv[1]))
f = lambda x: "-" if x is None else f"{x:.2f}"
for s in j.get("summary", []):
    print(f"{'bench ' + s['pass_']:10s} geomean ours/FA2 {f(s['geomean_ours_over_fa2'])}, ours/cuDNN "
          f"{f(s['geomean_ours_over_cudnn'])}; min ours/FA2 {f(s['min_ours_over_fa2'])}, min ours/cuDNN "
          f"{f(s['min_ours_over_cudnn'])}")
EOF2
    elif [[ -f "$OUT/ablation.json" ]]; then
      note bench "ablation written (ablation.json), rc=$rc"
    else
      note bench "rc=$rc, no compare.json (see output above)"
    fi
  fi
fi

# ---------------------------------------------------------------------------------------------
if has_stage python; then
  banner "Python GPU tests"
  t=$(budget 150)
  if [[ ! -d python || ! -d tests/python || ! -f python/pyproject.toml ]]; then
    note python "NOT RUN: no python package or tests/python"
  elif ((t < 30)); then
    note python "SKIPPED (time budget)"
  else
    # python/README.md: the package links the library built above; --no-build-isolation keeps
    # it offline (nanobind and scikit-build-core are in the GPU image).
    if FLASHATTN_LIB_DIR="$PWD/$BUILD_DIR" timeout "$t" python3 -m pip install -q --no-build-isolation ./python \
      >/tmp/fa_pip.log 2>&1; then
      t=$(budget 120)
      # shellcheck disable=SC2086 # PYTEST_ARGS is shell words
      timeout "$t" python3 -m pytest tests/python -q -rs -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 | tail -25
      rc=${PIPESTATUS[0]}
      note python "pytest tests/python ${PYTEST_ARGS:-(whole suite: CPU and CUDA cases)} rc=$rc"
    else
      tail -15 /tmp/fa_pip.log
      note python "pip install ./python FAILED (non-fatal)"
    fi
  fi
fi

# ---------------------------------------------------------------------------------------------
# Host overhead per call at a tiny shape: C++ layers (raw launch, attribute memo on/off, TMA map
# encode, fa_forward), then the Python layers over the same baseline (needs the package above).
if has_stage overhead; then
  banner "call overhead (host)"
  hb="$BUILD_DIR/bench/fa_host_overhead"
  if [[ ! -x "$hb" ]]; then
    note overhead "NOT RUN: $hb missing"
  else
    {
      echo "### $hb --shape 1,1,16,2,128 --iters 20000"
      timeout 60 "$hb" --shape 1,1,16,2,128 --iters 20000
      echo "### FA_NO_LAUNCH_CACHE=1"
      FA_NO_LAUNCH_CACHE=1 timeout 60 "$hb" --shape 1,1,16,2,128 --iters 20000
      echo "### python3 bench/python_overhead.py --shape 1,1,16,2,128 --iters 4000"
      timeout 120 python3 bench/python_overhead.py --shape 1,1,16,2,128 --iters 4000 --host-bench "$hb"
    } >"$OUT/overhead.txt" 2>&1
    tail -30 "$OUT/overhead.txt"
    note overhead "written to overhead.txt"
  fi
fi

banner "summary"
cat "$SUMMARY"
echo "files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
rm -f "$SUMMARY"
