# Sourced by the GPU scripts (ab.sh, fwd_timeline.sh, clock_ab.sh): a library-only build of a
# few kernel instances for sm_90a, the unit of their A/B variants.
#   build_lib LABEL DIR FILTER JOBS LOG [more cmake args...]
# Configures DIR (Ninja, Release, ptxas -v, no tests or ablation variants, FA_INSTANCE_FILTER =
# FILTER), builds the flashattn target (and any in BUILD_LIB_TARGETS, e.g. a bench binary) with
# JOBS jobs, all output into LOG, then prints "LABEL: build rc=N at S s" (S: since the caller's
# $start) and the ptxas spill summary.
build_lib() {
  local label=$1 dir=$2 filter=$3 jobs=$4 log=$5
  shift 5
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_PTXAS_VERBOSE=ON \
    -DFA_BUILD_TESTS=OFF -DFA_BUILD_ABLATIONS=OFF -DFA_INSTANCE_FILTER="$filter" "$@" >"$log" 2>&1 &&
    # shellcheck disable=SC2086
    cmake --build "$dir" -j"$jobs" --target flashattn ${BUILD_LIB_TARGETS:-} >>"$log" 2>&1
  local rc=$?
  echo "$label: build rc=$rc at $((SECONDS - ${start:-0})) s"
  python3 scripts/gpu/ptxas_table.py "$log" 2>/dev/null | grep -E "SPILL|kernel entries"
  return "$rc"
}
