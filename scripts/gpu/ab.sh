#!/usr/bin/env bash
# A/B run on the GPU machine: one default build with tests, extra library builds that differ by
# build flags, and benchmark commands against any of them, all in one call:
#     INSTANCE_FILTER='sm90_fwd_bf16_hd128' TEST_FILTER='*fa3*' \
#     VARIANTS='wide@sm90_fwd_bf16_hd(64|128)$@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D128_BLOCK_N=160' \
#     BENCHES='base@build@@--algos fa3 --hdims 128;wide@build-wide@@--algos fa3 --hdims 128' \
#         bash scripts/gpu/ab.sh "$OUT"
# VARIANTS: "name@instance regex@cmake flags" separated by ';' -> build-<name>/libflashattn.so
# (library only, no ablation variants), built while the default build (scripts/gpu/check.sh STAGES=build,test with
# INSTANCE_FILTER / TEST_FILTER) builds and tests.
# TESTS2: "env assignments@gtest filter" separated by ';': more test runs of the default build
# (e.g. a runtime switch forced), summarised after the main tests.
# BENCHES: "label@build dir@env assignments@bench/compare.py args" separated by ';', run one after
# the other once everything is built; each one's markdown table is printed and collected in
# $OUT/bench.md with compare.py's list of failed shapes and output warnings (peers are re-timed in
# each, so every ratio is same-run).
# ALTERNATE: "label@build dir" pairs separated by spaces, with ALTERNATE_ARGS (compare.py args) and
# ALTERNATE_ROUNDS (default 2): BENCHES becomes each pair in turn, ALTERNATE_ROUNDS times over
# (labels get the round number: off1, on1, off2, on2, ...), appended to any BENCHES given.
# AB_TAG names its /tmp logs (two runs side by side on a 2-GPU machine, one per GPU, need two tags).
# If ./snap.tar exists (a `git archive` of a commit) everything runs on that snapshot.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_ab_out}}
mkdir -p "$OUT"
VARIANTS=${VARIANTS:-}
BENCHES=${BENCHES:-}
TESTS2=${TESTS2:-}
if [[ -n "${ALTERNATE:-}" ]]; then
  for ((round = 1; round <= ${ALTERNATE_ROUNDS:-2}; round++)); do
    for b in $ALTERNATE; do
      BENCHES+="${BENCHES:+;}${b%@*}$round@${b#*@}@@${ALTERNATE_ARGS:-}"
    done
  done
fi
JOBS=${JOBS:-16}
ROOT=$PWD
if [[ -f snap.tar ]]; then
  rm -rf /tmp/fa_snap_${AB_TAG:-ab} && mkdir -p /tmp/fa_snap_${AB_TAG:-ab} && tar -xf snap.tar -C /tmp/fa_snap_${AB_TAG:-ab}
  ln -s "$ROOT/.deps" /tmp/fa_snap_${AB_TAG:-ab}/.deps
  cd /tmp/fa_snap_${AB_TAG:-ab} || exit 1
  echo "ab: using snap.tar"
fi
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source "$ROOT/scripts/gpu/build_lib.sh"
IFS=';' read -ra variants <<<"$VARIANTS"
nv=${#variants[@]}
# The default build gets most of the cores; each variant (a few instances) a share.
vjobs=$(( nv > 0 ? (JOBS / 2 / nv > 2 ? JOBS / 2 / nv : 2) : 0 ))
for v in "${variants[@]}"; do
  IFS='@' read -r name filter flags <<<"$v"
  fl=()
  [[ -n "$flags" ]] && fl=("$flags")
  build_lib "variant $name" "build-$name" "$filter" "$vjobs" "/tmp/${AB_TAG:-ab}_build_$name.log" "${fl[@]}" &
done
STAGES=${STAGES:-build,test} DEADLINE_S=${CHECK_DEADLINE_S:-330} JOBS=$((JOBS - (nv > 0 ? JOBS / 2 : 0))) \
  bash scripts/gpu/check.sh "$OUT" >"$OUT/check.txt" 2>&1
wait
echo "builds + tests done at $((SECONDS - start)) s"
sed -n '/=== summary/,$p' "$OUT/check.txt"
grep -E -A8 "^\[  FAILED  \]" "$OUT/tests.log" 2>/dev/null | head -40
IFS=';' read -ra tests2 <<<"$TESTS2"
for t in "${tests2[@]}"; do
  IFS='@' read -r envs filter <<<"$t"
  echo "### tests with ${envs:-no env}: $filter"
  # shellcheck disable=SC2086
  env $envs timeout "${TESTS2_TIMEOUT_S:-120}" "${BUILD_DIR:-build}/tests/fa_tests_cuda" --gtest_filter="$filter" --gtest_brief=1 \
    >"/tmp/${AB_TAG:-ab}_tests2.log" 2>&1
  echo "rc=$?"
  grep -E "^\[  FAILED  \]|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]|tests? ran" /tmp/${AB_TAG:-ab}_tests2.log | head -12
done
: >"$OUT/bench.md"
IFS=';' read -ra benches <<<"$BENCHES"
for b in "${benches[@]}"; do
  IFS='@' read -r label dir envs args <<<"$b"
  echo "### $label ($dir, env: ${envs:-none}): compare.py $args" | tee -a "$OUT/bench.md"
  # shellcheck disable=SC2086
  env $envs timeout "${BENCH_TIMEOUT_S:-150}" python3 bench/compare.py --lib "$dir/libflashattn.so" $args \
    --out "/tmp/${AB_TAG:-ab}_bench_$label" >"/tmp/${AB_TAG:-ab}_bench_$label.log" 2>&1
  echo "(rc=$? at $((SECONDS - start)) s)" >>"$OUT/bench.md"
  cat "/tmp/${AB_TAG:-ab}_bench_$label/compare.md" "/tmp/${AB_TAG:-ab}_bench_$label/ablation.md" 2>/dev/null |
    grep -E "^\||^## Not measured|^- " >>"$OUT/bench.md" ||
    tail -5 "/tmp/${AB_TAG:-ab}_bench_$label.log" >>"$OUT/bench.md"
done
echo "ab: done in $((SECONDS - start)) s"
grep -vE "^\|[-| ]+\|$" "$OUT/bench.md" | cut -c1-170
