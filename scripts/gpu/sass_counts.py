#!/usr/bin/env python3
"""Counts the instructions that show which hardware path a kernel uses, per kernel, from
`cuobjdump --dump-sass` of the built library.

Usage: sass_counts.py LIBRARY [--summary FILE]
       sass_counts.py --sass DUMP.txt [--summary FILE]      (a saved cuobjdump --dump-sass)
  sm80-class (FA1/FA2: mma.sync, ldmatrix, cp.async):  HMMA, LDSM, LDGSTS
  sm90 (FA3: wgmma, TMA):                              HGMMA (QGMMA: fp8 wgmma), UTMALDG
                                                       (UTMASTG, SYNCS for mbarriers)
  local memory (spills, stack arrays; should be 0):   LDL, STL
Only the attention kernels (forward, backward main loop, decode) are held to the instruction
checks: the helpers around them (dQ conversion, the backward's pre-pass, the split-KV combine, fp8
quantisation) use no tensor cores by design, and their names do not match ATTENTION below. A kernel
is classed sm90 when it holds a wgmma or its name mentions sm90. Flagged: an sm80-class attention
kernel without HMMA/LDSM, an sm90 one without a wgmma or without UTMALDG (LDGSTS in the no-TMA
ablation), and any kernel with LDL/STL. An attention kernel whose body is a handful of
instructions is reported as compiled empty, not flagged: the sm80 backward's small-shared-memory
d256 variant is a trap on sm_90 (flash_bwd.cuh, kThisArch), where the big one runs instead; the
summary line counts them so a kernel emptied by mistake still shows.
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_names import KernelNames  # noqa: E402

OPS = ["HMMA", "LDSM", "LDGSTS", "HGMMA", "QGMMA", "UTMALDG", "UTMASTG", "SYNCS", "LDL", "STL"]
# Fewer instructions than this (NOPs not counted) and an attention kernel has no body on this arch
# (a compiled-out template: LDC, BPT.TRAP, BRA, then alignment NOPs); the smallest real one has
# hundreds.
EMPTY_MAX = 16
# Names (mangled or demangled both contain them) of the kernels that compute attention; none of
# the helpers' names (bwd_convert_dq*, bwd_prepass/preprocess, decode_combine, fp8 quantise/amax,
# zero_kv_grad) contains one.
ATTENTION = re.compile(r"fwd_kernel|bwd_main|decode_fwd")

_func_re = re.compile(r"^\s*Function\s*:\s*(\S+)")
_op_re = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?")
_arch_re = re.compile(r"arch\s*=\s*(sm_\w+)")


def parse(sass):
    """{(mangled name, arch): {op: count, ..., "total": every instruction but NOP}} from a dump."""
    funcs = {}
    cur = None
    arch = "?"
    for line in sass.splitlines():
        m = _arch_re.search(line)
        if m and "Function" not in line:
            arch = m.group(1)
            continue
        m = _func_re.match(line)
        if m:
            cur = (m.group(1), arch)
            funcs.setdefault(cur, dict.fromkeys(OPS + ["total"], 0))
            continue
        if cur is None:
            continue
        m = _op_re.search(line)
        if m:
            funcs[cur]["total"] += m.group(1) != "NOP"
            if m.group(1) in funcs[cur]:
                funcs[cur][m.group(1)] += 1
    return funcs


def classify(name, c):
    """(is sm90, problems, empty) for one kernel: name demangled where possible, c its counts.
    An sm90 kernel that loads by cp.async (LDGSTS) instead of TMA is the forward's no-TMA
    ablation (FwdKernel without fwd_feature::kTma), which is built to lack UTMALDG."""
    wgmma = c["HGMMA"] + c["QGMMA"]
    is90 = wgmma > 0 or "sm90" in name
    problems = []
    if c["LDL"] or c["STL"]:
        problems.append("local memory")
    attention = bool(ATTENTION.search(name))
    empty = attention and c["total"] < EMPTY_MAX and wgmma + c["HMMA"] == 0
    if attention and not empty:
        if is90 and (wgmma == 0 or c["UTMALDG"] + c["LDGSTS"] == 0):
            problems.append("sm90 without wgmma or async loads")
        if not is90 and (c["HMMA"] == 0 or c["LDSM"] == 0):
            problems.append("sm80-class without HMMA/LDSM")
    return is90, problems, empty


def report(funcs, names):
    """The per-kernel table's lines and the summary line; names: a KernelNames-like object."""
    lines = [" ".join(f"{op:>7}" for op in OPS) + "  arch    class  kernel"]
    flags = empties = 0
    tot = dict.fromkeys(OPS, 0)
    for n, arch in sorted(funcs, key=lambda k: (names.short(k[0], 90), k[1])):
        c = funcs[(n, arch)]
        for op in OPS:
            tot[op] += c[op]
        is90, problems, empty = classify(names.demangled(n), c)
        flags += bool(problems)
        empties += empty
        note = [f"<-- {', '.join(problems)}"] if problems else []
        if empty:
            note.append(f"(compiled empty: {c['total']} instructions)")
        lines.append(" ".join(f"{c[op]:>7}" for op in OPS) +
                     f"  {arch:7s} {'sm90 ' if is90 else 'sm80c'}  {names.short(n, 90)}" +
                     "".join("  " + s for s in note))
    lines.append(f"sass: {len(funcs)} kernels; totals " + ", ".join(f"{op} {tot[op]}" for op in OPS) +
                 f"; {flags} kernel(s) flagged, {empties} attention kernel(s) compiled empty")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib", nargs="?")
    ap.add_argument("--sass", help="a saved `cuobjdump --dump-sass` output instead of LIBRARY")
    ap.add_argument("--summary")
    a = ap.parse_args()
    if (a.lib is None) == (a.sass is None):
        ap.error("give LIBRARY or --sass DUMP")
    if a.sass:
        with open(a.sass) as f:
            sass = f.read()
    else:
        try:
            sass = subprocess.run(["cuobjdump", "--dump-sass", a.lib], capture_output=True, text=True,
                                  timeout=300).stdout
        except Exception as e:  # no cuobjdump, or a library without device code
            print(f"sass: cuobjdump failed: {e}")
            return 0
    funcs = parse(sass)
    lines = report(funcs, KernelNames(n for n, _ in funcs))
    print("\n".join(lines))
    if a.summary:
        with open(a.summary, "a") as f:
            f.write(lines[-1] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
