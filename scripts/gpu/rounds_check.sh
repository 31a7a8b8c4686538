#!/usr/bin/env bash
# bench/compare.py --rounds on the GPU: a library of the bf16 d64/d128 FA3 forward instances, then
# causal N512/1k against cuDNN, three alternated rounds per shape (each round's median kept in
# compare.json's ms_rounds), so the spread between rounds is on record next to the median.
#     bash scripts/gpu/rounds_check.sh "$OUT"      (~150 s on one H100/H200)
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_rounds_out}}
mkdir -p "$OUT"
start=$SECONDS
# shellcheck source=scripts/gpu/build_lib.sh
source scripts/gpu/build_lib.sh
nvidia-smi -L
build_lib lib build-rounds 'sm90_fwd_bf16_hd(64|128)' 16 "$OUT/build.log" || exit 1
python3 bench/compare.py --lib build-rounds/libflashattn.so --algos fa3 --peers sdpa_cudnn --pass fwd \
  --hdims 64,128 --seqlens 512,1024 --causal yes --rounds "${ROUNDS:-3}" --out "$OUT" >"$OUT/compare_stdout.txt" 2>&1
echo "compare rc=$? at $((SECONDS - start)) s"
python3 - "$OUT/compare.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    rounds = " ".join(f"{r['tflops'] * r['ms'] / ms:.0f}" for ms in r.get("ms_rounds", []))
    print(f"d{r['d']} N{r['n']} {r['backend']:>10}: median {r['tflops']:.0f} TFLOP/s; rounds {rounds}")
PY
