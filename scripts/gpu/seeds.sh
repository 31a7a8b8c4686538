#!/usr/bin/env bash
# How close GPU test cases come to their error bound over many fresh random inputs, on the GPU
# machine (one call, .deps carried):
#     INSTANCE_FILTER='^sm80_fa1_fwd_bf16_hd64$' SEED_FILTER='Grid/CudaForward.Matches/bf16_d64*heavy*' \
#         ROUNDS=100 bash scripts/gpu/seeds.sh "$OUT"
# Builds once (scripts/gpu/check.sh STAGES=build), then runs SEED_FILTER in ROUNDS processes, PAR
# at a time; each process draws a fresh seed per case (the harness's test_seed), and each test
# records its seed and every output's "err / bound" (rule_property) in the gtest XML. Prints, per
# test and output, the ratio err/bound over the rounds (median, p90, max, the max's seed, failures)
# and the first failure messages; writes $OUT/seeds.md and $OUT/seeds.csv (one row per test,
# output and round). A failing seed replays with FA_TEST_SEED=<seed>.
set -uo pipefail
OUT=${1:-${OUT:-/tmp/fa_seeds_out}}
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-50}
PAR=${PAR:-4}
SEED_FILTER=${SEED_FILTER:?set SEED_FILTER to a gtest filter}
BUILD_DIR=${BUILD_DIR:-build}
start=$SECONDS
if [[ ! -x "$BUILD_DIR/tests/fa_tests_cuda" || -n "${REBUILD:-}" ]]; then
  STAGES=build DEADLINE_S=${BUILD_DEADLINE_S:-400} BUILD_DIR="$BUILD_DIR" bash scripts/gpu/check.sh "$OUT" >"$OUT/check.txt" 2>&1
  sed -n '/=== summary/,$p' "$OUT/check.txt"
fi
echo "seeds: build done at $((SECONDS - start)) s"
XML=$(mktemp -d /tmp/fa_seeds.XXXXXX)
for ((r = 0; r < ROUNDS; r += PAR)); do
  for ((k = r; k < r + PAR && k < ROUNDS; ++k)); do
    timeout "${ROUND_TIMEOUT_S:-120}" "$BUILD_DIR/tests/fa_tests_cuda" --gtest_filter="$SEED_FILTER" \
      --gtest_output=xml:"$XML/r$k.xml" >"$XML/r$k.log" 2>&1 &
  done
  wait
done
echo "seeds: $ROUNDS rounds done at $((SECONDS - start)) s"
python3 - "$XML" "$ROUNDS" "$OUT" <<'EOF'
import glob, os, re, statistics, sys
import xml.etree.ElementTree as ET
xml_dir, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows, fails, missing = [], [], 0
for k in range(rounds):
    path = os.path.join(xml_dir, f"r{k}.xml")
    try:
        root = ET.parse(path).getroot()
    except Exception:
        missing += 1
        continue
    for tc in root.iter("testcase"):
        name = f"{tc.get('classname')}.{tc.get('name')}".replace("/CudaForward.Matches/", " fwd ").replace(
            "/CudaBackward.Matches/", " bwd ")
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        props.update({a: v for a, v in tc.attrib.items() if a.startswith("err_") or a == "seed"})
        seed = props.get("seed", "?")
        for key, val in props.items():
            m = re.match(r"err_(\w+)$", key)
            v = re.match(r"\s*([0-9.eE+-]+) / bound ([0-9.eE+-]+)", val or "")
            if m and v:
                err, bound = float(v.group(1)), float(v.group(2))
                rows.append((name, m.group(1), k, seed, err, bound, err / bound if bound > 0 else float("inf")))
        for f in tc.iter("failure"):
            fails.append((name, seed, (f.get("message") or "").replace("\n", " ")[:400]))
with open(os.path.join(out, "seeds.csv"), "w") as f:
    f.write("test,output,round,seed,err,bound,ratio\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
lines = [f"{rounds} rounds ({missing} without XML); ratio = err / bound (fails above 1)", "",
         "| test | out | n | median | p90 | max | seed of max | > 1 |", "|---|---|---|---|---|---|---|---|"]
groups = {}
for r in rows:
    groups.setdefault((r[0], r[1]), []).append(r)
for (name, o), g in sorted(groups.items()):
    rs = sorted(x[6] for x in g)
    worst = max(g, key=lambda x: x[6])
    p90 = rs[min(len(rs) - 1, int(0.9 * len(rs)))]
    lines.append(f"| {name} | {o} | {len(rs)} | {statistics.median(rs):.3f} | {p90:.3f} | {worst[6]:.3f} | "
                 f"{worst[3]} | {sum(x > 1 for x in rs)} |")
lines += ["", f"failure messages: {len(fails)}"] + [f"- {n} seed {s}: {m}" for n, s, m in fails[:12]]
open(os.path.join(out, "seeds.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
echo "seeds: done in $((SECONDS - start)) s"
