#!/usr/bin/env python3
"""Prints the per-translation-unit compile cost recorded by scripts/compile_timer.sh.

Usage: compile_report.py BUILD_DIR [--limit-s 30] [--limit-mb 2048]
Keeps the latest entry per object; flags units over the budget (DEVELOPERS.md: 30 s, 2 GB) by
wall time. The CPU column (user + system, where recorded) is the unit's own work: on a machine
running two jobs at once the wall time can exceed it when the jobs slow each other's cores.
"""
import argparse, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("build_dir")
ap.add_argument("--limit-s", type=float, default=30.0)
ap.add_argument("--limit-mb", type=int, default=2048)
ap.add_argument("--top", type=int, default=15)
a = ap.parse_args()
path = os.path.join(a.build_dir, "compile_times.tsv")
if not os.path.exists(path):
    print(f"compile report: {path} not found (configure with -DFA_COMPILE_REPORT=ON)")
    sys.exit(0)
latest = {}
for line in open(path):
    parts = line.rstrip("\n").split("\t")
    if len(parts) in (3, 4):
        latest[parts[2]] = (float(parts[0]), int(parts[1]), float(parts[3]) if len(parts) == 4 else None)
rows = sorted(latest.items(), key=lambda kv: -kv[1][0])
over = [r for r in rows if r[1][0] > a.limit_s or r[1][1] > a.limit_mb]
total = sum(v[0] for _, v in rows)
cpus = [v[2] for _, v in rows if v[2] is not None]
cpu_note = f", {sum(cpus):.0f} s of CPU, largest {max(cpus):.1f} s" if cpus else ""
print(f"compile report: {len(rows)} units, {total:.0f} s of compiler time, "
      f"slowest {rows[0][1][0]:.1f} s, peak {max(v[1] for _, v in rows)} MB{cpu_note}" if rows else "compile report: empty")
print(f"{'seconds':>8} {'CPU s':>7} {'peak MB':>8}  unit")
for name, (s, mb, cpu) in rows[: a.top]:
    flag = "  OVER BUDGET" if (s > a.limit_s or mb > a.limit_mb) else ""
    cpu_s = f"{cpu:7.1f}" if cpu is not None else f"{'-':>7}"
    print(f"{s:8.1f} {cpu_s} {mb:8d}  {os.path.relpath(name, a.build_dir) if os.path.isabs(name) else name}{flag}")
if over:
    print(f"compile report: {len(over)} unit(s) over {a.limit_s:.0f} s / {a.limit_mb} MB")
