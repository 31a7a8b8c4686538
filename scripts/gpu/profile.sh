#!/usr/bin/env bash
# Profiles selected kernels with Nsight Compute on the GPU machine:
#     FILTER='sm80_bwd_bf16_hd128' CASES='fa2bwd|bwd_main|--algo fa2 --pass bwd --n 4096' \
#         bash scripts/gpu/profile.sh "$OUT"
# Builds only the kernel instances matching FILTER (libflashattn.so, no tests), then for each case
# "name|kernel-regex|ncu_driver args" (cases separated by ';'; the regex itself cannot hold a '|'):
#   - per-kernel durations of one call (every kernel the call launches), and
#   - `ncu --set full` of the first launch matching the regex after one warm-up call,
# written to $OUT/ncu_<name>.txt. SOURCE=1 also writes $OUT/src_<name>.csv: the source page (SASS,
# per-instruction stall samples and memory counters) of that launch, which scripts/stall_map.py
# maps to our source lines on the CPU machine (scripts/sass_mix.py compares opcode mixes, a peer's too).
# FULL=0 skips the --set full report (durations and the source page only).
# If ./snap.tar exists (a `git archive` of a commit), the build
# and the profile use that snapshot instead of the working tree (so a half-edited tree does not
# break the run). ncu runs with --clock-control none: it would otherwise lock the SM clock to base for
# each profiled kernel, and the device notes ask that the card's clocks be left alone.
# EXTRA_CMAKE adds configure flags (e.g. -DCMAKE_CUDA_FLAGS=-DFOO=1). LIB=<libflashattn.so> skips the
# build and profiles that library (FILTER then unused).
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_prof_out}}
mkdir -p "$OUT"
FILTER=${FILTER:-}
[[ -n "$FILTER" || -n "${LIB:-}" ]] || { echo "profile: FILTER (instance regex) or LIB is required"; exit 1; }
CASES=${CASES:?CASES is required}
JOBS=${JOBS:-16}
EXTRA_CMAKE=${EXTRA_CMAKE:-}
ROOT=$PWD
if [[ -f snap.tar ]]; then
  rm -rf /tmp/fa_snap && mkdir -p /tmp/fa_snap && tar -xf snap.tar -C /tmp/fa_snap
  ln -s "$ROOT/.deps" /tmp/fa_snap/.deps
  cd /tmp/fa_snap || exit 1
  echo "profile: using snap.tar"
fi
start=$SECONDS
if [[ -n "${LIB:-}" ]]; then
  # LIB=path/libflashattn.so: profile a library already built on this machine (e.g. check.sh's
  # build/ from an earlier call on the same warm instance) instead of building the filtered one.
  [[ -f "$LIB" ]] || { echo "profile: LIB=$LIB not found"; exit 1; }
  export FLASHATTN_LIB=$(readlink -f "$LIB")
  echo "profile: prebuilt $FLASHATTN_LIB"
else
  cmake -S . -B build-prof -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_PTXAS_VERBOSE=ON \
    -DFA_BUILD_TESTS=OFF -DFA_INSTANCE_FILTER="$FILTER" $EXTRA_CMAKE >"$OUT/build.log" 2>&1 &&
    cmake --build build-prof -j"$JOBS" --target flashattn >>"$OUT/build.log" 2>&1
  rc=$?
  echo "build rc=$rc in $((SECONDS - start)) s"
  grep -E "error|warning C7508" "$OUT/build.log" | head -20
  python3 scripts/gpu/ptxas_table.py "$OUT/build.log" 2>/dev/null | grep -E "^\S|SPILL" | head -30
  ((rc == 0)) || { tail -30 "$OUT/build.log"; exit 1; }
  export FLASHATTN_LIB=$PWD/build-prof/libflashattn.so
fi
IFS=';' read -ra cases <<<"$CASES"
for c in "${cases[@]}"; do
  IFS='|' read -r name regex dargs <<<"$c"
  f="$OUT/ncu_$name.txt"
  echo "=== $name: $dargs ($((SECONDS - start)) s)"
  {
    echo "### per-kernel durations of one call ($dargs)"
    timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread \
      --kernel-name "regex:^(?!.*(distribution|elementwise|vectorized)).*" --launch-skip 0 --launch-count 12 python3 bench/ncu_driver.py $dargs --calls 1 2>&1 |
      grep -E "^\s+[a-z_]+.*\(|gpu__time_duration|launch__grid_size|launch__registers" | head -60
    if [[ "${FULL:-1}" == 1 ]]; then
      echo "### ncu --set full, kernel regex $regex"
      timeout 240 ncu --clock-control none --set full --import-source no --kernel-name "regex:$regex" --launch-skip 1 --launch-count 1 \
        python3 bench/ncu_driver.py $dargs --calls 2 2>&1 | grep -v "^==PROF==" | sed -e 's/[[:space:]]\+$//'
    fi
  } >"$f" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy" "$f" | head -8
  if [[ "${SOURCE:-0}" == 1 ]]; then
    timeout 240 ncu --clock-control none --section SourceCounters --import-source no --kernel-name "regex:$regex" --launch-skip 1 \
      --launch-count 1 -f -o "/tmp/fa_src_$name" python3 bench/ncu_driver.py $dargs --calls 2 >/dev/null 2>&1 &&
      ncu -i "/tmp/fa_src_$name.ncu-rep" --page source --csv --print-source sass >"$OUT/src_$name.csv"
    echo "source page: rc=$? $(wc -l <"$OUT/src_$name.csv" 2>/dev/null) lines"
  fi
done
echo "profile: done in $((SECONDS - start)) s"
