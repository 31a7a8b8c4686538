#!/usr/bin/env python3
"""Per-kernel registers / stack / spills from a build log made with -DFA_PTXAS_VERBOSE=ON.

Usage: ptxas_table.py BUILD_LOG [--summary FILE]
Prints one row per kernel entry and arch; flags any spill or stack frame. With --summary, appends
one line ("ptxas: N kernels, M with spills/stack") to FILE for check.sh's closing table.
ptxas -v prints, per entry:
  ptxas info : Compiling entry function '<mangled>' for 'sm_90a'
  ptxas info : Function properties for <mangled>
      S bytes stack frame, A bytes spill stores, B bytes spill loads
  ptxas info : Used R registers, used N barriers, ... smem ...
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_names import KernelNames  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("log")
ap.add_argument("--summary")
a = ap.parse_args()

entry_re = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
props_re = re.compile(r"Function properties for (\S+)")
frame_re = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
used_re = re.compile(r"Used (\d+) registers(.*)")
smem_re = re.compile(r"(\d+) bytes smem")

kernels = {}  # (name, arch) -> dict
cur_entry = None
cur_props = None
for line in open(a.log, errors="replace"):
    m = entry_re.search(line)
    if m:
        cur_entry = (m.group(1), m.group(2))
        kernels.setdefault(cur_entry, dict(regs=None, stack=0, spill_st=0, spill_ld=0, smem=0))
        continue
    m = props_re.search(line)
    if m:
        cur_props = m.group(1)
        continue
    m = frame_re.search(line)
    if m and cur_entry and cur_props == cur_entry[0]:
        k = kernels[cur_entry]
        k["stack"], k["spill_st"], k["spill_ld"] = (int(x) for x in m.groups())
        continue
    m = used_re.search(line)
    if m and cur_entry:
        k = kernels[cur_entry]
        k["regs"] = int(m.group(1))
        s = smem_re.search(m.group(2))
        if s:
            k["smem"] = int(s.group(1))
        cur_entry = None

kn = KernelNames(n for n, _ in kernels)
demangled = kn.full


def short(n, width=110):
    return kn.short(n, width)


bad = 0
print(f"{'regs':>5} {'stack':>6} {'spillST':>8} {'spillLD':>8} {'smem':>7}  arch     kernel")
for (n, arch), k in sorted(kernels.items(), key=lambda kv: short(kv[0][0])):
    flag = ""
    if k["spill_st"] or k["spill_ld"]:
        flag = "  <-- SPILL"
    elif k["stack"]:
        flag = "  <-- STACK FRAME"
    bad += bool(flag)
    print(f"{k['regs'] if k['regs'] is not None else '?':>5} {k['stack']:>6} {k['spill_st']:>8} {k['spill_ld']:>8} "
          f"{k['smem']:>7}  {arch:8} {short(n)}{flag}")
line = f"ptxas: {len(kernels)} kernel entries, {bad} with spills or a stack frame"
print(line)
if a.summary:
    with open(a.summary, "a") as f:
        f.write(line + "\n")
