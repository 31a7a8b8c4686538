#!/usr/bin/env bash
# Runs scripts/gpu/racecheck_mbarrier_probe.cu under compute-sanitizer racecheck, one kernel per
# run (mbar, named, sync, racy), on the GPU machine:   bash scripts/gpu/racecheck_probe.sh "$OUT"
# Reading: racecheck models the mbarrier handoff iff "mbar" is clean while "racy" is reported
# and "sync" is clean.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_probe_out}}
mkdir -p "$OUT"
nvcc -O2 -arch=sm_90a -o /tmp/racecheck_probe scripts/gpu/racecheck_mbarrier_probe.cu || exit 1
for k in mbar named sync racy; do
  echo "--- $k"
  compute-sanitizer --tool racecheck --print-limit 4 /tmp/racecheck_probe "$k" 2>&1 | tee -a "$OUT/racecheck_probe.log" |
    grep -E "sums|SUMMARY|Race reported" | head -6
done
echo "--- named under synccheck (a lone lane at a named barrier, its warp's other lanes exited)"
compute-sanitizer --tool synccheck /tmp/racecheck_probe named 2>&1 | tee -a "$OUT/racecheck_probe.log" | grep -E "sums|SUMMARY|rror" | head -6
