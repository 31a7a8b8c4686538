#!/usr/bin/env python3
"""Where a persistent FA3 forward tile's time goes (diagnostic builds, -DFA_SM90_FWD_TIMELINE=1).

The library writes the file named by FA_SM90_FWD_TIMELINE_OUT after each persistent forward
launch (src/cuda/sm90/flash_fwd.cuh, launch_fwd; cuda/common/timeline_dump.hpp): four int64 (CTAs, rounds, consumer
warpgroups, stamps), then per CTA, tile and warpgroup the stamps of enum FwdStamp: Info (key
blocks | query block << 16 | SM id << 40), clock64() at Start, QIn, KIn, Turn, S0Done, LoopEnd,
EpiConv, EpiBar (TMA-store epilogue only), End, then the mainloop's summed waits for K, V, the
ping-pong turn, S and O (cycles, over the blocks after the first), and (newer builds) clock64()
at NextCall, NextDone, WorkDone: the gap between tiles. Cycles are SM cycles; stamps
are compared within one CTA only.

Prints, per number of key blocks in the tile, the median cycles of each phase of a warpgroup's
tile and of each mainloop wait per block after the first, a least-squares fit of the tile period
(Start to the next tile's Start) against the key blocks (the intercept is the fixed cost of a
tile, in cycles and in blocks' worth), and how far apart the consumer warpgroups run.
With FA_SM90_FWD_TILE_CHAIN a chained tile's Q wait, K wait, turn wait and first Q·Kᵀ are 0:
they ran in the previous tile's "rest of loop", which ends with the chained turn.

    python3 scripts/fwd_timeline.py timeline.bin [more.bin ...]
"""
import struct
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore", "All-NaN slice")

PHASES = [  # (name, from stamp, to stamp); an EpiBar of 0 (direct stores) counts as EpiConv
    ("Q wait", 1, 2),
    ("K wait", 2, 3),
    ("turn wait", 3, 4),
    ("1st QK", 4, 5),
    ("rest of loop", 5, 6),
    ("epi convert", 6, 7),
    ("epi buf+bar", 7, 8),
    ("epi store", 8, 9),
]
WAITS = ["K", "V", "turn", "S", "O"]  # stamps 10..14


def load(path):
    with open(path, "rb") as f:
        ctas, rounds, wgs, stamps = struct.unpack("<4q", f.read(32))
        a = np.frombuffer(f.read(), dtype=np.uint64)
    return a.reshape(ctas, rounds, wgs, stamps)


def summarise(path):
    a = load(path)
    ctas, rounds, wgs, _ = a.shape
    info = a[..., 0]
    t = a[..., 1:10].astype(np.float64)  # stamps 1..9 -> columns 0..8
    waits = a[..., 10:15].astype(np.float64)
    t[..., 7] = np.where(t[..., 7] == 0, t[..., 6], t[..., 7])  # no EpiBar: direct stores
    nb = (info & np.uint64(0xFFFF)).astype(np.int64)
    valid = a[..., 1] > 0
    print(f"{path}: {ctas} CTAs x up to {rounds} tiles x {wgs} consumer warpgroups, "
          f"{int(valid.sum())} (tile, warpgroup) rows")
    rows = []  # (blocks, phases..., period, waits per later block...)
    spans = []
    for c in range(ctas):
        for w in range(wgs):
            ks = np.nonzero(valid[c, :, w])[0]
            if len(ks) == 0:
                continue
            tc = t[c, ks, w]
            spans.append(tc[-1, 8] - tc[0, 0])
            for i, k in enumerate(ks):
                if nb[c, k, w] == 0 or np.any(tc[i] == 0):
                    continue
                ph = [tc[i, b - 1] - tc[i, a_ - 1] for _, a_, b in PHASES]
                period = tc[i + 1, 0] - tc[i, 0] if i + 1 < len(ks) else np.nan
                later = nb[c, k, w] - 1
                wt = list(waits[c, k, w] / later) if later > 0 else [np.nan] * len(WAITS)
                rows.append([nb[c, k, w]] + ph + [period] + wt)
    r = np.array(rows)
    nph = len(PHASES)
    print("blocks  tiles " + "".join(f"{n:>13}" for n, _, _ in PHASES) + "       period  per block   "
          + " ".join(f"{w + ' wait':>7}" for w in WAITS) + "  (waits: per block after the first)")
    for b in sorted(set(r[:, 0].astype(int))):
        s_ = r[r[:, 0] == b]
        med = np.nanmedian(s_[:, 1:], axis=0)
        wmed = med[nph + 1:]
        print(f"{b:6d} {len(s_):6d} " + "".join(f"{m:13.0f}" for m in med[:nph]) +
              f" {med[nph]:12.0f} {med[nph] / b:10.0f}   " +
              " ".join("      -" if np.isnan(x) else f"{x:7.0f}" for x in wmed))
    ok = ~np.isnan(r[:, nph + 1])
    if ok.sum() > 2 and len(set(r[ok, 0])) > 1:
        b, a0 = np.polyfit(r[ok, 0], r[ok, nph + 1], 1)
        print(f"fit: period = {a0:.0f} + {b:.0f} x blocks cycles -> fixed cost per tile {a0 / b:.2f} blocks' worth")
    else:
        med = np.nanmedian(r[ok, nph + 1]) if ok.any() else float("nan")
        print(f"one block count: period {med:.0f} cycles")
    if wgs >= 2:
        # Warpgroup 1 against warpgroup 0 on the same tiles: how far apart they run, and how much
        # of warpgroup 0's epilogue (LoopEnd to End) the other's epilogue covers.
        both = valid[:, :, 0] & valid[:, :, 1]
        off = (t[:, :, 1, 4] - t[:, :, 0, 4])[both]  # S0Done
        e0 = t[:, :, 0, 8] - t[:, :, 0, 5]
        ov = np.clip(np.minimum(t[:, :, 0, 8], t[:, :, 1, 8]) - np.maximum(t[:, :, 0, 5], t[:, :, 1, 5]), 0, None)
        print(f"warpgroup 1 - warpgroup 0 at the first Q·Kᵀ's retirement: median {np.median(off):.0f} cycles; "
              f"epilogues overlap: median {np.median(ov[both]):.0f} of warpgroup 0's {np.median(e0[both]):.0f} cycles")
    if a.shape[3] >= 18:
        # Between tiles (stamps 15..17: NextCall, NextDone, WorkDone): the previous tile's End to
        # the scheduler call, the scheduler, tile_work, then to this tile's Start.
        between = []
        for c in range(ctas):
            for w in range(wgs):
                ks = np.nonzero(valid[c, :, w])[0]
                for i in range(1, len(ks)):
                    prev_end = float(a[c, ks[i - 1], w, 9])
                    nc, nd, wd = (float(x) for x in a[c, ks[i], w, 15:18])
                    st = float(a[c, ks[i], w, 1])
                    if prev_end > 0 and nc >= prev_end:
                        between.append([nc - prev_end, nd - nc, wd - nd, st - wd, st - prev_end])
        if between:
            m = np.median(np.array(between), axis=0)
            print(f"between tiles, median cycles: End -> scheduler call {m[0]:.0f}, scheduler {m[1]:.0f}, "
                  f"tile_work {m[2]:.0f}, -> Start {m[3]:.0f}; End -> next Start {m[4]:.0f}")
    if a.shape[3] >= 22:
        # FA_SM90_FWD_TILE_CHAIN builds (stamps 18..21): a tile's tail, waiting for the next tile's
        # record, its Q, its first K block, then the last P·V's turn (0 where not chained).
        tail = a[..., 18:22].astype(np.float64)[valid & (nb > 0)]
        if tail.size and tail[:, 3].any():
            m = np.median(tail, axis=0)
            q = np.percentile(tail, 90, axis=0)
            print(f"chained tail, median (p90) cycles: record {m[0]:.0f} ({q[0]:.0f}), next Q {m[1]:.0f} "
                  f"({q[1]:.0f}), next K0 {m[2]:.0f} ({q[2]:.0f}), turn {m[3]:.0f} ({q[3]:.0f})")
    sp = np.array(spans)
    print(f"per-(CTA, warpgroup) span, cycles: min {sp.min():.0f}, median {np.median(sp):.0f}, max {sp.max():.0f} "
          f"(max/median {sp.max() / np.median(sp):.3f})")
    print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        summarise(p)
