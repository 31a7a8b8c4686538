#!/usr/bin/env bash
# The release measurements on a one-GPU machine (nvidia-h200), in three calls on one warm instance
# (the device tool keeps build/ between calls while the machine stays held; it is given back
# after ~30 s idle, so fire the calls back to back):
#     bash scripts/gpu/single.sh build "$OUT"  # full build with the ablation variants, the Quick
#                                             # tests, then the forward ablation if time is left
#     bash scripts/gpu/single.sh grid "$OUT"   # the FA3-paper grid against the peers (+ ceilings),
#                                             # then the ablations not yet run
#     bash scripts/gpu/single.sh extra "$OUT"  # Python GPU tests, host overhead, then $PROFILE_CASES
#                                             # (scripts/gpu/profile.sh on build/'s library)
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
# $2 = seconds it may take, $3 = extra compare.py arguments.
ablation() {
  local pas=$1 t=$2 dir=$KEEP/abl_$1
  if [[ -f $dir/ablation.json ]]; then echo "ablation $pas: done in an earlier call"; return 0; fi
  if ((t < 40)); then echo "ablation $pas: NOT RUN (${t}s left)"; return 0; fi
  mkdir -p "$dir.part"
  # shellcheck disable=SC2086
  timeout "$t" python3 bench/compare.py --lib build/libflashattn.so --ablation --pass "$pas" --out "$dir.part" $3 \
    >"$dir.part/log.txt" 2>&1
  local rc=$?
  tail -30 "$dir.part/log.txt"
  if ((rc == 0)) && [[ -f $dir.part/ablation.json ]]; then rm -rf "$dir" && mv "$dir.part" "$dir"
  else echo "ablation $pas: rc=$rc (incomplete, kept in $dir.part)"; fi
}
BWD_FILTER='^(fa3 default|fa2 default|fa3 bwd|fa2 bwd)'

case "$PART" in
  build)
    STAGES=build,test TEST_FILTER=${TEST_FILTER:-Quick/*} BUILD_MAX_S=${BUILD_MAX_S:-480} DEADLINE_S=$(($(left) - 20)) \
      $CHECK "$OUT" >"$OUT/build_part.txt" 2>&1
    sed -n '/=== summary/,$p' "$OUT/build_part.txt"
    mkdir -p "$KEEP"
    ablation fwd $(($(left) - 10)) ""
    ;;
  grid)
    mkdir -p "$KEEP"
    STAGES=bench COMPARE_ARGS="${COMPARE_ARGS:---algos fa2,fa3 --ceilings --plot-grid}" DEADLINE_S=$(($(left) - 200)) \
      $CHECK "$OUT" >"$OUT/grid_part.txt" 2>&1
    grep -E "^SUMMARY|geomean|min ratio" "$OUT/grid_part.txt" | head -12
    sed -n '/=== summary/,$p' "$OUT/grid_part.txt"
    ablation fwd $(($(left) - 190)) ""
    ablation bwd $(($(left) - 10)) "--ablation-filter $BWD_FILTER"
    ;;
  extra)
    STAGES=python,overhead DEADLINE_S=${EXTRA_DEADLINE_S:-240} $CHECK "$OUT" >"$OUT/extra_part.txt" 2>&1
    sed -n '/=== summary/,$p' "$OUT/extra_part.txt"
    if [[ -n "${PROFILE_CASES:-}" ]]; then
      LIB=build/libflashattn.so CASES="$PROFILE_CASES" timeout $(($(left) - 10)) bash scripts/gpu/profile.sh "$OUT"
    fi
    ;;
  *) echo "single.sh: unknown part $PART" >&2; exit 2 ;;
esac
# Every ablation result so far comes back with each call (JSON + table).
for p in fwd bwd; do
  [[ -f $KEEP/abl_$p/ablation.json ]] && cp "$KEEP/abl_$p/ablation.json" "$OUT/ablation_$p.json"
  [[ -f $KEEP/abl_$p/ablation.md ]] && cp "$KEEP/abl_$p/ablation.md" "$OUT/ablation_$p.md"
done
echo "single.sh $PART: done at ${SECONDS}s; files: $(ls "$OUT" | tr '\n' ' ')"
