#!/usr/bin/env bash
# Per-tile timeline of the FA3 forward (diagnostic build, -DFA_SM90_FWD_TIMELINE=1) on the GPU
# machine, from the repository root with .deps carried:
#     bash scripts/gpu/fwd_timeline.sh "$OUT"
# Builds build-tl/ (the bf16 forward instances of $TL_FILTER, library only, timeline on), runs
# each case of $TL_CASES ("d:N:causal" separated by spaces) through bench/compare.py with
# FA_SM90_FWD_TIMELINE_OUT set (the last call's timeline wins), and prints
# scripts/fwd_timeline.py's summary of each. The timeline build's timings are not the library's
# (every call synchronises to write its file).
# TL_CUDA_FLAGS: the timeline build's CUDA flags (default -DFA_SM90_FWD_TIMELINE=1; add tile switches).
# AB_BENCHES (optional): "label@env assignments@compare.py args" separated by ';', run afterwards
# against build/ (a default filtered build of $AB_FILTER, built alongside build-tl/).
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_tl_out}}
mkdir -p "$OUT"
TL_FILTER=${TL_FILTER:-sm90_fwd_bf16_hd(64|128)}
TL_CASES=${TL_CASES:-64:512:yes 64:512:no 128:512:yes 128:512:no 64:2048:yes 128:2048:no}
AB_BENCHES=${AB_BENCHES:-}
AB_FILTER=${AB_FILTER:-sm90_fwd_bf16_hd(64|128|256)}
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source scripts/gpu/build_lib.sh
build_lib build-tl build-tl "$TL_FILTER" 8 /tmp/tl_build_build-tl.log \
  "-DCMAKE_CUDA_FLAGS=${TL_CUDA_FLAGS:--DFA_SM90_FWD_TIMELINE=1}" &
[[ -n "$AB_BENCHES" ]] && build_lib build build "$AB_FILTER" 8 /tmp/tl_build_build.log &
wait
for c in $TL_CASES; do
  IFS=: read -r d n causal <<<"$c"
  f="$OUT/tl_d${d}_n${n}_$([[ $causal == yes ]] && echo causal || echo full).bin"
  FA_SM90_FWD_TIMELINE_OUT="$f" timeout 60 python3 bench/compare.py --lib build-tl/libflashattn.so --algos fa3 \
    --peers '' --pass fwd --hdims "$d" --seqlens "$n" --causal "$causal" --warmup-ms 50 --iters 20 \
    --out "/tmp/tl_cmp_${d}_${n}" >"/tmp/tl_run.log" 2>&1 || { echo "case $c: rc=$?"; tail -5 /tmp/tl_run.log; }
  [[ -f "$f" ]] && python3 scripts/fwd_timeline.py "$f" | tee -a "$OUT/timeline.txt"
done
IFS=';' read -ra benches <<<"$AB_BENCHES"
: >"$OUT/bench.md"
for b in "${benches[@]}"; do
  IFS='@' read -r label envs args <<<"$b"
  echo "### $label (env: ${envs:-none}): compare.py $args" >>"$OUT/bench.md"
  # shellcheck disable=SC2086
  env $envs timeout 90 python3 bench/compare.py --lib build/libflashattn.so $args --out "/tmp/tl_bench_$label" \
    >"/tmp/tl_bench_$label.log" 2>&1
  echo "(rc=$? at $((SECONDS - start)) s)" >>"$OUT/bench.md"
  grep -E "^\|" "/tmp/tl_bench_$label/compare.md" >>"$OUT/bench.md" 2>/dev/null || tail -5 "/tmp/tl_bench_$label.log" >>"$OUT/bench.md"
done
echo "fwd_timeline.sh: done in $((SECONDS - start)) s"
[[ -s "$OUT/bench.md" ]] && grep -vE "^\|[-| ]+\|$" "$OUT/bench.md" | cut -c1-120
