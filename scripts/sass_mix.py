#!/usr/bin/env python3
"""Executed instructions and stall samples by opcode, for kernels we have no source of (a peer's
runtime-compiled kernel) beside ours, from ncu source pages of launches of the same problem.

    python3 scripts/sass_mix.py ours=src_ours.csv cudnn=src_cudnn.csv [--top 30] [--loops]

Each CSV: `ncu -i REP --page source --csv --print-source sass` (scripts/gpu/profile.sh SOURCE=1).
Opcodes are the SASS mnemonic without modifiers or predicate (FMNMX, MUFU, HGMMA, ...). Columns per
kernel: warp instructions executed (millions), their share, and the share of all stall samples.
Both kernels solve the same problem, so their executed counts compare directly: a row where one
runs many more of an opcode is work the other avoids. --loops also prints, per kernel, the static
body of its hottest backward-branch loops with each opcode's count, which shows how much of a key
block's work each one does per pass.
"""
import argparse
import collections
import csv
import re
import sys


def opcode(text):
    t = re.sub(r"^@!?U?P[T0-9]+\s+", "", text.strip())
    return t.split()[0].split(".")[0] if t else "?"


def load(path):
    rows = list(csv.reader(open(path)))
    # ncu prints a kernel-name line above the header in some versions.
    h = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    hdr, data = rows[h], [r for r in rows[h + 1:] if len(r) == len(rows[h])]
    col = {k: i for i, k in enumerate(hdr)}

    def num(r, k):
        try:
            return float(r[col[k]].replace(",", ""))
        except (KeyError, ValueError):
            return 0.0

    out = []
    for r in data:
        out.append({
            "addr": int(r[col["Address"]], 16),
            "text": r[col["Source"]],
            "op": opcode(r[col["Source"]]),
            "exe": num(r, "Instructions Executed"),
            "smp": num(r, "Warp Stall Sampling (All Samples)"),
        })
    return out


def loops(ins, top):
    """Backward branches with their body's executed count; the hottest first."""
    by_addr = {x["addr"]: i for i, x in enumerate(ins)}
    found = []
    for i, x in enumerate(ins):
        m = re.search(r"BRA\s+(?:`?\(?[^)]*\)?\s*)?(0x[0-9a-f]+)", x["text"])
        if x["op"] == "BRA" and m and int(m.group(1), 16) <= x["addr"] and int(m.group(1), 16) in by_addr:
            s = by_addr[int(m.group(1), 16)]
            found.append((x["exe"], s, i))  # the branch's count ~ the body's passes
    found.sort(reverse=True)
    for passes, s, e in found[:top]:
        c = collections.Counter(y["op"] for y in ins[s:e + 1])
        exe = sum(y["exe"] for y in ins[s:e + 1])
        print(f"  loop {ins[s]['addr']:#x}-{ins[e]['addr']:#x}: {e - s + 1} instructions, "
              f"{passes:.0f} taken branches (warp), {exe / 1e6:.2f} M executed; "
              + " ".join(f"{k}:{v}" for k, v in c.most_common(16)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="+", help="label=source_page.csv")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--loops", action="store_true")
    a = ap.parse_args()
    data = {}
    for kv in a.kernels:
        label, path = kv.split("=", 1)
        data[label] = load(path)
    labels = list(data)
    exe = {k: collections.Counter() for k in labels}
    smp = {k: collections.Counter() for k in labels}
    static = {k: collections.Counter() for k in labels}
    for k, ins in data.items():
        for x in ins:
            exe[k][x["op"]] += x["exe"]
            smp[k][x["op"]] += x["smp"]
            static[k][x["op"]] += 1
    tot_e = {k: sum(exe[k].values()) or 1.0 for k in labels}
    tot_s = {k: sum(smp[k].values()) or 1.0 for k in labels}
    for k in labels:
        print(f"{k}: {len(data[k])} SASS instructions, {tot_e[k] / 1e6:.2f} M warp instructions executed, "
              f"{tot_s[k]:.0f} stall samples")
    ops = collections.Counter()
    for k in labels:
        ops.update(exe[k])
    head = f"{'opcode':10}" + "".join(f" | {k[:10]:>10} M  exe%  smp%" for k in labels)
    if len(labels) == 2:
        head += " | diff M"
    print(head)
    for op, _ in ops.most_common(a.top):
        line = f"{op:10}"
        for k in labels:
            line += (f" | {exe[k][op] / 1e6:12.3f} {100 * exe[k][op] / tot_e[k]:5.1f} "
                     f"{100 * smp[k][op] / tot_s[k]:5.1f}")
        if len(labels) == 2:
            line += f" | {(exe[labels[0]][op] - exe[labels[1]][op]) / 1e6:+7.3f}"
        print(line)
    if a.loops:
        for k in labels:
            print(f"{k}: hottest loops")
            loops(data[k], 4)


if __name__ == "__main__":
    sys.exit(main())
