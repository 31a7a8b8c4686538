#!/usr/bin/env bash
# The release measurements on a one-GPU machine (nvidia-h200), in three calls on one warm instance
# (the device tool keeps build/ between calls while the machine stays held; it is given back
# after ~30 s idle, and in session 27 it was gone between two calls fired back to back, so the
# grid and extra parts rebuild what they need when build/ is missing):
#     bash scripts/gpu/single.sh build "$OUT"  # full build with the ablation variants, the Quick
#                                             # tests, then the forward ablation if time is left
#     bash scripts/gpu/single.sh grid "$OUT"   # the FA3-paper grid against the peers (+ ceilings),
#                                             # then the ablations not yet run
#     bash scripts/gpu/single.sh extra "$OUT"  # Python GPU tests, host overhead, then $PROFILE_CASES
#                                             # (scripts/gpu/profile.sh on build/'s library)
# On a fresh instance the grid and extra parts build only the bf16 d64/d128/d256 library: the
# Python tests of other dtypes and head dims then fail for want of kernels (run the build part
# first for them).
# Everything is timed one thing at a time: a benchmark never shares the GPU. Results of a part
# that ran in an earlier call live under build/_single/ and are copied to $OUT again.
set -uo pipefail
PART=${1:?build, grid or extra}
OUT=${2:-${OUT:-/tmp/fa_single_out}}
mkdir -p "$OUT"
CHECK="bash scripts/gpu/check.sh"
KEEP=build/_single
LIMIT_S=${LIMIT_S:-580}  # the device tool's 600 s per call, less a margin for copying back
left() { echo $((LIMIT_S - SECONDS)); }

# Runs one ablation pass into $KEEP/abl_<pass> unless an earlier call finished it; $1 = pass,
# $2 = seconds it may take, the rest = extra compare.py arguments.
ablation() {
  local pas=$1 t=$2 dir=$KEEP/abl_$1
  shift 2
  if [[ -f $dir/ablation.json ]]; then echo "ablation $pas: done in an earlier call"; return 0; fi
  if ((t < 40)); then echo "ablation $pas: NOT RUN (${t}s left)"; return 0; fi
  mkdir -p "$dir.part"
  timeout "$t" python3 bench/compare.py --lib build/libflashattn.so --ablation --pass "$pas" --out "$dir.part" "$@" \
    >"$dir.part/log.txt" 2>&1
  local rc=$?
  tail -30 "$dir.part/log.txt"
  if ((rc == 0)) && [[ -f $dir.part/ablation.json ]]; then rm -rf "$dir" && mv "$dir.part" "$dir"
  else echo "ablation $pas: rc=$rc (incomplete, kept in $dir.part)"; fi
}
BWD_FILTER='^(fa3 default|fa2 default|fa3 bwd|fa2 bwd)'
# The grid needs the bf16 d64/d128/d256 instances of both generations; the bwd ablation needs
# the ablation variants, which a fresh instance builds only with the full build part.
GRID_FILTER='sm(80|90)_(fwd|bwd)_bf16_hd(64|128|256)'
need_lib() {
  [[ -f build/libflashattn.so ]] && return 0
  echo "no build/libflashattn.so (a fresh instance): library build of $GRID_FILTER"
  INSTANCE_FILTER=$GRID_FILTER EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DFA_BUILD_TESTS=OFF' STAGES=build \
    BUILD_MAX_S=280 DEADLINE_S=300 $CHECK "$OUT" >"$OUT/lib_build.txt" 2>&1
  sed -n '/=== summary/,$p' "$OUT/lib_build.txt"
  rm -f "$OUT/build.log"
}

case "$PART" in
  build)
    STAGES=build,test TEST_FILTER=${TEST_FILTER:-Quick/*} BUILD_MAX_S=${BUILD_MAX_S:-480} DEADLINE_S=$(($(left) - 20)) \
      $CHECK "$OUT" >"$OUT/build_part.txt" 2>&1
    sed -n '/=== summary/,$p' "$OUT/build_part.txt"
    mkdir -p "$KEEP"
    ablation fwd $(($(left) - 10))
    ;;
  grid)
    need_lib
    mkdir -p "$KEEP"
    # The whole grid with ceilings took 249 s in session 27: more than check.sh's default bench cap.
    STAGES=bench BENCH_MAX_S=320 COMPARE_ARGS="${COMPARE_ARGS:---algos fa2,fa3 --ceilings --plot-grid}" \
      DEADLINE_S=$(($(left) - 20)) $CHECK "$OUT" >"$OUT/grid_part.txt" 2>&1
    grep -E "^SUMMARY|geomean|min ratio" "$OUT/grid_part.txt" | head -12
    sed -n '/=== summary/,$p' "$OUT/grid_part.txt"
    if grep -q "^FA_BUILD_ABLATIONS:BOOL=ON" build/CMakeCache.txt 2>/dev/null; then
      ablation fwd $(($(left) - 190))
      ablation bwd $(($(left) - 10)) --ablation-filter "$BWD_FILTER"
    else
      echo "ablations: NOT RUN (this build has no ablation variants; run the build part first)"
    fi
    ;;
  extra)
    need_lib
    STAGES=python,overhead DEADLINE_S=${EXTRA_DEADLINE_S:-240} $CHECK "$OUT" >"$OUT/extra_part.txt" 2>&1
    sed -n '/=== summary/,$p' "$OUT/extra_part.txt"
    if [[ -n "${PROFILE_CASES:-}" ]]; then
      LIB=build/libflashattn.so CASES="$PROFILE_CASES" timeout $(($(left) - 10)) bash scripts/gpu/profile.sh "$OUT"
    fi
    ;;
  *) echo "single.sh: unknown part $PART" >&2; exit 2 ;;
esac
# Every ablation result so far comes back with each call (JSON + the printed table).
for p in fwd bwd; do
  [[ -f $KEEP/abl_$p/ablation.json ]] && cp "$KEEP/abl_$p/ablation.json" "$OUT/ablation_$p.json"
  [[ -f $KEEP/abl_$p/log.txt ]] && cp "$KEEP/abl_$p/log.txt" "$OUT/ablation_$p.txt"
done
echo "single.sh $PART: done at ${SECONDS}s; files: $(ls "$OUT" | tr '\n' ' ')"
