#!/usr/bin/env python3
"""Counts the instructions that show which hardware path a kernel uses, per kernel, from
`cuobjdump --dump-sass` of the built library.

Usage: sass_counts.py LIBRARY [--summary FILE]
  sm80-class (FA1/FA2: mma.sync, ldmatrix, cp.async):  HMMA, LDSM, LDGSTS
  sm90 (FA3: wgmma, TMA):                              HGMMA, UTMALDG (UTMASTG, SYNCS for mbarriers)
  local memory (spills, stack arrays; should be 0):   LDL, STL
A kernel is classed sm90 when it holds HGMMA or its name mentions sm90; the check flags sm80-class
kernels without HMMA/LDSM, sm90 kernels without HGMMA/UTMALDG, and any LDL/STL.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_names import KernelNames  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("lib")
ap.add_argument("--summary")
a = ap.parse_args()

OPS = ["HMMA", "LDSM", "LDGSTS", "HGMMA", "UTMALDG", "UTMASTG", "SYNCS", "LDL", "STL"]
try:
    sass = subprocess.run(["cuobjdump", "--dump-sass", a.lib], capture_output=True, text=True, timeout=300).stdout
except Exception as e:  # no cuobjdump, or a library without device code
    print(f"sass: cuobjdump failed: {e}")
    sys.exit(0)

func_re = re.compile(r"^\s*Function\s*:\s*(\S+)")
op_re = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?")
arch_re = re.compile(r"arch\s*=\s*(sm_\w+)")
funcs = {}  # (mangled name, arch) -> counts
cur = None
arch = "?"
for line in sass.splitlines():
    m = arch_re.search(line)
    if m and "Function" not in line:
        arch = m.group(1)
        continue
    m = func_re.match(line)
    if m:
        cur = (m.group(1), arch)
        funcs.setdefault(cur, {op: 0 for op in OPS})
        continue
    if cur is None:
        continue
    m = op_re.search(line)
    if m:
        op = m.group(1)
        if op in funcs[cur]:
            funcs[cur][op] += 1

kn = KernelNames(n for n, _ in funcs)
demangled = kn.full


def short(n, width=90):
    return kn.short(n, width)


print(" ".join(f"{op:>7}" for op in OPS) + "  arch    class  kernel")
flags = 0
tot = {op: 0 for op in OPS}
for n, arch in sorted(funcs, key=lambda k: (short(k[0]), k[1])):
    c = funcs[(n, arch)]
    for op in OPS:
        tot[op] += c[op]
    is90 = c["HGMMA"] > 0 or "sm90" in demangled.get(n, n)
    problems = []
    if c["LDL"] or c["STL"]:
        problems.append("local memory")
    # Only attention kernels are held to the instruction checks (helpers like workspace
    # zeroing or the LSE combine use no tensor cores).
    heavy = c["HMMA"] + c["HGMMA"] > 0 or any(w in demangled.get(n, n) for w in ("fwd", "bwd", "attn"))
    if heavy and is90 and (c["HGMMA"] == 0 or c["UTMALDG"] == 0):
        problems.append("sm90 without HGMMA/UTMALDG")
    if heavy and not is90 and (c["HMMA"] == 0 or c["LDSM"] == 0):
        problems.append("sm80-class without HMMA/LDSM")
    flags += bool(problems)
    print(" ".join(f"{c[op]:>7}" for op in OPS) + f"  {arch:7s} {'sm90 ' if is90 else 'sm80c'}  {short(n)}" +
          (f"  <-- {', '.join(problems)}" if problems else ""))
line = (f"sass: {len(funcs)} kernels; totals " + ", ".join(f"{op} {tot[op]}" for op in OPS) +
        f"; {flags} kernel(s) flagged")
print(line)
if a.summary:
    with open(a.summary, "a") as f:
        f.write(line + "\n")
