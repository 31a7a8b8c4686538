#!/usr/bin/env python3
"""Summarise an FA3 backward per-CTA timeline (diagnostic builds, -DFA_SM90_BWD_TIMELINE=1).

The library writes the file named by FA_SM90_BWD_TIMELINE_OUT after each main-kernel launch:
an int64 CTA count, then 8 uint64 per CTA (flash_bwd_kernel.cuh, enum Stamp): SM id | steps << 32,
then %globaltimer at entry, K/V arrived, first Q/dO arrived, last step done, epilogue done, dQ
warp done, producer done. This prints where a CTA's time goes beyond its steps, the gaps between
consecutive CTAs on one SM, and how busy the SMs are over the kernel's span (the tail).

    python3 scripts/bwd_timeline.py timeline.bin [more.bin ...]
"""
import struct
import sys

import numpy as np

SLOTS = ["sm", "entry", "kv_in", "first_q", "loop_end", "epi_end", "dq_end", "prod_end"]


def load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<q", f.read(8))
        a = np.frombuffer(f.read(n * 8 * len(SLOTS)), dtype=np.uint64).reshape(n, len(SLOTS))
    return a


def pct(x, qs=(10, 50, 90)):
    return " / ".join(f"{np.percentile(x, q):7.2f}" for q in qs)


def summarise(path):
    a = load(path)
    sm = (a[:, 0] & 0xFFFFFFFF).astype(np.int64)
    steps = (a[:, 0] >> np.uint64(32)).astype(np.int64)
    t = a[:, 1:].astype(np.float64)
    ok = (steps > 0) & np.all(t[:, :5] > 0, axis=1)
    t0 = t[ok, 0].min()
    t = (t - t0) / 1000.0  # µs from the first CTA's entry
    entry, kv_in, first_q, loop_end, epi_end, dq_end, prod_end = (t[:, i] for i in range(7))
    end = np.maximum(epi_end, dq_end)
    print(f"== {path}: {len(a)} CTAs ({ok.sum()} with steps), SMs used {len(np.unique(sm[ok]))}, "
          f"steps per CTA {np.unique(steps[ok])[:6]}")
    span = end[ok].max()
    print(f"kernel span (first entry -> last end) {span:9.1f} us")
    per_step = (loop_end - first_q)[ok] / steps[ok]  # first_q: step 0's dO wait done
    print("                                  p10 /     p50 /     p90 (us)")
    print(f"entry -> K/V in                 {pct((kv_in - entry)[ok])}")
    print(f"entry -> first Q/dO in          {pct((first_q - entry)[ok])}")
    print(f"per step (first Q .. loop end)  {pct(per_step)}")
    print(f"loop end -> epilogue done       {pct((epi_end - loop_end)[ok])}")
    print(f"loop end -> dQ warp done        {pct((dq_end - loop_end)[ok])}")
    fixed = (end - entry)[ok] - steps[ok] * np.median(per_step)
    print(f"CTA time - steps x median step   {pct(fixed)}  (fixed cost per CTA)")
    # Consecutive CTAs of one SM: the gap from one's end to the next one's entry.
    gaps, busy = [], np.zeros(int(sm.max()) + 1)
    for m in np.unique(sm[ok]):
        idx = np.where(ok & (sm == m))[0]
        idx = idx[np.argsort(entry[idx])]
        busy[m] = (end[idx] - entry[idx]).sum()
        gaps += list(entry[idx[1:]] - end[idx[:-1]])
    if gaps:
        print(f"gap end -> next entry (same SM) {pct(np.array(gaps))}  ({len(gaps)} gaps)")
    n_sm = len(np.unique(sm[ok]))  # the SMs that ran a CTA (all of them on a grid of many waves)
    print(f"SM busy fraction over the span: {busy.sum() / (n_sm * span):.4f} ({n_sm} SMs); "
          f"CTA entries per SM {np.bincount(sm[ok]).max()} max / {np.bincount(sm[ok])[np.bincount(sm[ok]) > 0].min()} min")
    last_ends = np.array([end[ok & (sm == m)].max() for m in np.unique(sm[ok])])
    print(f"SMs' last CTA end: p10 {np.percentile(last_ends, 10):.1f}  p50 {np.percentile(last_ends, 50):.1f}  "
          f"max {last_ends.max():.1f} us (tail = max - p50: {last_ends.max() - np.percentile(last_ends, 50):.1f} us)")
    # Tail-split pieces (fewer steps than the whole tiles): when they ran and for how long.
    piece = ok & (steps < steps[ok].max())
    if piece.any() and len(np.unique(steps[ok])) <= 3:
        print(f"pieces: {piece.sum()} CTAs, steps {np.unique(steps[piece])}, duration {pct((end - entry)[piece])} us; "
              f"first piece entry {entry[piece].min():.1f}, last piece end {end[piece].max():.1f} us")
    waves = np.sort(entry[ok])
    print(f"CTA entries: first {waves[0]:.1f}, #{n_sm}: {waves[min(n_sm, len(waves) - 1)]:.1f}, last {waves[-1]:.1f} us")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarise(p)
