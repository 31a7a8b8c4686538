#!/usr/bin/env bash
# A/B of library builds with the SM clock and board power sampled during each benchmark run, on
# the GPU machine, from the repository root with .deps carried:
#     F=sm90_fwd_bf16_hd64_mask
#     CLK_VARIANTS="old@$F@;wg1@$F@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D64_MASKED_BLOCK_M=64" \
#     CLK_ARGS='--hdims 64 --seqlens 512 --causal yes' bash scripts/gpu/clock_ab.sh "$OUT"
# Why: two kernels can take the same number of SM cycles (the per-tile timeline counts cycles)
# and still differ in time when the board runs them at different clocks (the H200 sustains a
# clock set by its power limit). Builds each "name@instance regex@cmake flag" as build-<name>/
# (build_lib.sh), then runs bench/compare.py (ours alone) on each in turn, CLK_ROUNDS times,
# while nvidia-smi samples clocks.sm and power.draw every 50 ms (read only: nothing is set).
# Clock and power are the medians over the samples drawing at least 80% of the run's peak power
# (the timed loops, not Python's start-up).
# CLK_PEER=sdpa_cudnn (any compare.py peer) adds a run of that peer alone to every round, on the
# same shapes, so a peer's clock is read the same way as ours.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_clk_out}}
mkdir -p "$OUT"
CLK_ROUNDS=${CLK_ROUNDS:-2}
CLK_ARGS=${CLK_ARGS:---hdims 64 --seqlens 512 --causal yes}
IFS=';' read -ra variants <<<"${CLK_VARIANTS:?name@filter@flag;...}"
nv=${#variants[@]}
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source scripts/gpu/build_lib.sh
names=()
for v in "${variants[@]}"; do
  IFS='@' read -r name filter flag <<<"$v"
  names+=("$name")
  fl=()
  [[ -n "$flag" ]] && fl=("$flag")
  build_lib "build-$name" "build-$name" "$filter" $((16 / nv > 2 ? 16 / nv : 2)) "/tmp/clk_build_$name.log" \
    "${fl[@]}" &
done
wait
[[ -n "${CLK_PEER:-}" ]] && names+=("peer:$CLK_PEER")
echo "| run | lib | TFLOP/s (shapes in order) | SM MHz (busy) | W (busy) | busy samples |" | tee "$OUT/clock_ab.md"
echo "|---|---|---|---|---|---|" | tee -a "$OUT/clock_ab.md"
for ((r = 1; r <= CLK_ROUNDS; ++r)); do
  for name in "${names[@]}"; do
    csv="/tmp/clk_${name/:/_}_$r.csv"
    nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 >"$csv" 2>/dev/null &
    smi=$!
    if [[ $name == peer:* ]]; then
      run=(--lib "build-${names[0]}/libflashattn.so" --algos '' --peers "${name#peer:}")
    else
      run=(--lib "build-$name/libflashattn.so" --algos fa3 --peers '')
    fi
    # shellcheck disable=SC2086
    timeout 120 python3 bench/compare.py "${run[@]}" \
      --pass fwd $CLK_ARGS --out "/tmp/clk_cmp_${name/:/_}_$r" >"/tmp/clk_run_${name/:/_}_$r.log" 2>&1
    rc=$?
    kill "$smi" 2>/dev/null
    wait "$smi" 2>/dev/null
    tf=$(grep -E '^\| [0-9]+ \|' "/tmp/clk_run_${name/:/_}_$r.log" |
      awk -F'|' '{gsub(/ /,"",$6); printf "%s ", $6}')
    stats=$(python3 - "$csv" <<'EOF'
import sys, statistics
mhz, w = [], []
for line in open(sys.argv[1]):
    parts = [p.strip() for p in line.split(",")]
    try:
        mhz.append(float(parts[0])); w.append(float(parts[1]))
    except (ValueError, IndexError):
        pass
# The run is mostly Python start-up at idle clocks: keep the samples of the timed loops, those
# drawing at least 80% of the run's peak power.
busy = [i for i in range(len(w)) if w[i] >= 0.8 * max(w)] if w else []
if busy:
    print(f"{statistics.median(mhz[i] for i in busy):.0f} | {statistics.median(w[i] for i in busy):.0f} | "
          f"{len(busy)} of {len(mhz)}")
else:
    print("- | - | 0")
EOF
)
    echo "| $r | $name (rc=$rc) | $tf| $stats |" | tee -a "$OUT/clock_ab.md"
  done
done
echo "clock_ab.sh: done in $((SECONDS - start)) s"
