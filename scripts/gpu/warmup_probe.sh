#!/usr/bin/env bash
# One GPU call (session 35), from the repository root with .deps carried:
#     bash scripts/gpu/warmup_probe.sh "$OUT"
# Is compare.py's same-run ratio at short N biased by order? Per shape compare.py allocates the
# inputs (a pause), then times the peer (0.5 s of warm-up calls, then 20 timed calls), then ours.
# bench/clock_probe.py (3 s per backend, back to back) measured cuDNN 8-10% slower at N512 than
# compare.py does and ours the same. Here: compare.py with --warmup-ms 500 (default) and 3000,
# alternated twice, bf16 non-causal d128/d256 N512 and N4096, causal d64 N512; then clock_probe
# with cuDNN first. Returns bench.md, clock.txt, build summary.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_warm_out}}
W=/tmp/fa_warm_work
rm -rf "$W" && mkdir -p "$W" "$OUT"
start=$SECONDS
INSTANCE_FILTER='sm90_fwd_bf16_hd(64|128|256)' EXTRA_CMAKE='-DFA_BUILD_ABLATIONS=OFF -DFA_BUILD_TESTS=OFF' \
  STAGES=build bash scripts/gpu/check.sh "$W" >"$W/check.txt" 2>&1
sed -n '/=== summary/,$p' "$W/check.txt" | head -8 | tee "$OUT/summary.txt"
echo "built at $((SECONDS - start)) s"
: >"$OUT/bench.md"
for round in 1 2; do
  for wm in 500 3000; do
    for c in "no --hdims 128,256 --seqlens 512,4096" "yes --hdims 64 --seqlens 512"; do
      echo "### round $round warmup-ms $wm causal $c" | tee -a "$OUT/bench.md"
      # shellcheck disable=SC2086
      python3 bench/compare.py --lib build/libflashattn.so --algos fa3 --peers sdpa_cudnn --pass fwd \
        --warmup-ms $wm --causal $c --out "$W/c" 2>&1 | grep -E "^\| (64|128|256) " | tee -a "$OUT/bench.md"
    done
  done
done
echo "=== clock probe (cuDNN first) at $((SECONDS - start)) s"
python3 bench/clock_probe.py --lib build/libflashattn.so --shapes 128:512:0,64:512:1 \
  --backends sdpa_cudnn,fa3 --seconds 3 --rounds 1 >"$OUT/clock.txt" 2>&1
echo "warmup_probe: done in $((SECONDS - start)) s"
grep -E "^\|" "$OUT/clock.txt"
