#!/usr/bin/env python3
"""Where a kernel's warps stall, per line of our own source, from an ncu source page.

    python3 scripts/stall_map.py SRC.csv UNIT.o [--own flash_bwd.cuh,sm80_tile.cuh] [--skip 862]
                                 [--top 30] [--reasons]

SRC.csv: `ncu -i REP.ncu-rep --page source --csv --print-source sass` of one kernel launch
(scripts/gpu/profile.sh with SOURCE=1 writes it). UNIT.o: the same instance unit compiled here with
the device build's flags (-lineinfo, and -DFA_NO_ABLATIONS=1 when the device build had
FA_BUILD_ABLATIONS=OFF), so that its SASS is the profiled one: the script checks that opcodes
agree instruction by instruction and says how many do not.

ncu's own source view attributes each instruction to its innermost line, which for an MMA or a
copy is a CuTe header. Here each instruction goes to the deepest line of an --own file in its
inline chain (`nvdisasm -gi`), keyed (outermost own line, innermost own line): e.g. (1287, 563) is
gemm_smem's MMA (line 563) as called by the step's S product (line 1287). --skip drops a line
that every instruction shares (the kernel body's call of the step function).
"""
import argparse
import collections
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile


def nvdisasm_tools():
    for name in ("cuobjdump", "nvdisasm"):
        if not shutil.which(name):
            sys.exit(f"stall_map: {name} not on PATH (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")


def disassemble(obj):
    """Per function: list of (offset, opcode text, [(file, line), ...] inline chain)."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["cuobjdump", "-xelf", "all", os.path.abspath(obj)], cwd=d, check=True,
                       stdout=subprocess.DEVNULL)
        cubins = [f for f in os.listdir(d) if f.endswith(".cubin")]
        if len(cubins) != 1:
            sys.exit(f"stall_map: expected one cubin in {obj}, found {cubins}")
        text = subprocess.run(["nvdisasm", "-gi", "-c", os.path.join(d, cubins[0])], check=True,
                              capture_output=True, text=True).stdout
    funcs, cur, chain, fresh = {}, None, [], True
    for line in text.split("\n"):
        m = re.match(r"^\.text\.(\S+):", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)(?: inlined at "([^"]+)", line (\d+))?', line)
        if m:
            if fresh:
                chain, fresh = [], False
            chain.append((os.path.basename(m.group(1)), int(m.group(2))))
            if m.group(3):
                chain.append((os.path.basename(m.group(3)), int(m.group(4))))
            continue
        m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2).strip(), chain))
            fresh = True
    return funcs


def opcode(text):
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    return text.split()[0].split(".")[0] if text.split() else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("obj")
    ap.add_argument("--own",
                    default="flash_bwd.cuh,flash_fwd.cuh,flash_bwd_kernel.cuh,flash_fwd_kernel.cuh,"
                            "fwd_mask.hpp,sm80_tile.cuh",
                    help="comma list of our files whose lines key the groups")
    ap.add_argument("--skip", type=int, action="append", default=[], help="own line to ignore (repeatable)")
    ap.add_argument("--function", help="mangled name (default: the function with as many instructions as the CSV)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--reasons", action="store_true", help="stall reasons of each listed group")
    a = ap.parse_args()
    nvdisasm_tools()

    rows = list(csv.reader(open(a.csv)))
    hdr, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(hdr)}

    def num(r, k):
        try:
            return float(r[col[k]].replace(",", ""))
        except (KeyError, ValueError):
            return 0.0

    addrs = [int(r[col["Address"]], 16) for r in data]
    base = min(addrs)
    funcs = disassemble(a.obj)
    if a.function:
        fn = a.function
    else:
        fits = [f for f, ins in funcs.items() if len(ins) == len(data)]
        if len(fits) != 1:
            sys.exit(f"stall_map: {len(fits)} functions with {len(data)} instructions; pass --function")
        fn = fits[0]
    own = set(a.own.split(","))
    by_off = {}
    for off, text, chain in funcs[fn]:
        lines = [ln for f, ln in chain if f in own and ln not in a.skip]
        by_off[off] = ((max(lines), min(lines)) if lines else None, text)
    bad = sum(1 for r, ad in zip(data, addrs)
              if ad - base in by_off and opcode(r[col["Source"]]) != opcode(by_off[ad - base][1]))
    print(f"{fn}: {len(data)} instructions, {bad} opcode mismatches against {a.obj}")

    samples = "Warp Stall Sampling (All Samples)"
    total = sum(num(r, samples) for r in data) or 1.0
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    share, ops, why = collections.Counter(), collections.defaultdict(collections.Counter), \
        collections.defaultdict(collections.Counter)
    # Executed warp instructions per group: a line can stall little and still cost issue slots.
    exe = collections.Counter()
    for r, ad in zip(data, addrs):
        key, text = by_off.get(ad - base, (None, r[col["Source"]]))
        share[key] += num(r, samples)
        exe[key] += num(r, "Instructions Executed")
        ops[key][opcode(text)] += 1
        for s in stalls:
            why[key][s[6:]] += num(r, s)
    exe_total = sum(exe.values()) or 1.0
    print("samples  executed  (outer, inner) own lines  {opcode: static count}")
    for key, v in share.most_common(a.top):
        line = f"{100 * v / total:6.2f}%  {100 * exe[key] / exe_total:6.2f}%  {str(key):14} {dict(ops[key].most_common(4))}"
        if a.reasons:
            t = sum(why[key].values()) or 1.0
            line += "  " + ", ".join(f"{k} {100 * n / t:.0f}%" for k, n in why[key].most_common(4))
        print(line)


if __name__ == "__main__":
    main()
