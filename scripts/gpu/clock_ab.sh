#!/usr/bin/env bash
# A/B of library builds with the SM clock and board power sampled during each benchmark run, on
# the GPU machine, from the repository root with .deps carried:
#     CLK_VARIANTS='old@sm90_fwd_bf16_hd64_mask@;wg1@sm90_fwd_bf16_hd64_mask@-DCMAKE_CUDA_FLAGS=-DFA_SM90_FWD_D64_MASKED_BLOCK_M=64' \
#     CLK_ARGS='--hdims 64 --seqlens 512 --causal yes' bash scripts/gpu/clock_ab.sh "$OUT"
# Why: two kernels can take the same number of SM cycles (the per-tile timeline counts cycles)
# and still differ in time when the board runs them at different clocks (the H200 sustains a
# clock set by its power limit). Clock and power are the medians over the samples drawing at
# least 80% of the run's peak power (the timed loops, not Python's start-up). Builds each "name@instance regex@cmake flag" as build-<name>/
# (library only), then runs bench/compare.py (ours alone) on each in turn, CLK_ROUNDS times,
# while nvidia-smi samples clocks.sm and power.draw every 50 ms (read only: nothing is set).
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_clk_out}}
mkdir -p "$OUT"
CLK_ROUNDS=${CLK_ROUNDS:-2}
CLK_ARGS=${CLK_ARGS:---hdims 64 --seqlens 512 --causal yes}
IFS=';' read -ra variants <<<"${CLK_VARIANTS:?name@filter@flag;...}"
nv=${#variants[@]}
start=$SECONDS
names=()
for v in "${variants[@]}"; do
  IFS='@' read -r name filter flag <<<"$v"
  names+=("$name")
  fl=()
  [[ -n "$flag" ]] && fl=("$flag")
  (
    cmake -S . -B "build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFA_CUDA_ARCHS=90a -DFA_BUILD_TESTS=OFF \
      -DFA_BUILD_ABLATIONS=OFF -DFA_INSTANCE_FILTER="$filter" "${fl[@]}" >"/tmp/clk_build_$name.log" 2>&1 &&
      cmake --build "build-$name" -j$((16 / nv > 2 ? 16 / nv : 2)) --target flashattn >>"/tmp/clk_build_$name.log" 2>&1
    echo "build-$name: rc=$? at $((SECONDS - start)) s"
  ) &
done
wait
echo "| run | lib | TFLOP/s (shapes in order) | SM MHz median (busy) | W median (busy) | busy samples |" | tee "$OUT/clock_ab.md"
echo "|---|---|---|---|---|---|" | tee -a "$OUT/clock_ab.md"
for ((r = 1; r <= CLK_ROUNDS; ++r)); do
  for name in "${names[@]}"; do
    csv="/tmp/clk_${name}_$r.csv"
    nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 50 >"$csv" 2>/dev/null &
    smi=$!
    # shellcheck disable=SC2086
    timeout 120 python3 bench/compare.py --lib "build-$name/libflashattn.so" --algos fa3 --peers '' --pass fwd \
      $CLK_ARGS --out "/tmp/clk_cmp_${name}_$r" >"/tmp/clk_run_${name}_$r.log" 2>&1
    rc=$?
    kill "$smi" 2>/dev/null
    wait "$smi" 2>/dev/null
    tf=$(grep -E '^\| [0-9]+ \|' "/tmp/clk_run_${name}_$r.log" | awk -F'|' '{gsub(/ /,"",$6); printf "%s ", $6}')
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
print(f"{statistics.median(mhz[i] for i in busy):.0f} | {statistics.median(w[i] for i in busy):.0f} | {len(busy)} of {len(mhz)}"
      if busy else "- | - | 0")
EOF
)
    echo "| $r | $name (rc=$rc) | $tf| $stats |" | tee -a "$OUT/clock_ab.md"
  done
done
echo "clock_ab.sh: done in $((SECONDS - start)) s"
