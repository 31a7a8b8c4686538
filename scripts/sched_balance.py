#!/usr/bin/env python3
"""Per-CTA work of the persistent FA3 forward's static tile walk, against a greedy LPT assignment.

    python3 scripts/sched_balance.py --d 64 --n 512 --causal 1      # FA3-paper grid sizing

Follows src/cuda/scheduler/tile_scheduler.hpp (StaticLptScheduler::tile_at and make_params): the
(batch, head) pairs cut into L2 sections, the snake over rounds of G CTAs, and a causal walk that
restarts the snake in every section, its sections capped at --max-rounds rounds (set_grid's
max_section_rounds, FA_SM90_FWD_CAUSAL_SECTION_ROUNDS, default 2; an odd cap alternates the
snake's direction across sections instead of restarting it). A tile's cost is its number of key
blocks, plus --overhead blocks for its fixed work (Q load, first Q·Kᵀ, epilogue). The result says how far the busiest CTA
is above the mean, which bounds what any rebalancing of whole tiles could gain. A greedy
longest-first assignment to the least-loaded CTA stands in for a dynamic scheduler.
No GPU needed.
"""
import argparse
import heapq


def walk_loads(m_blocks, pairs, section_pairs, ctas, causal, cost, rotate=False, alternate=False):
    loads = [0.0] * ctas
    if causal:
        rounds = -(-section_pairs * m_blocks // ctas)
        # set_grid's section_rotate: the idle slots of a full section's last round.
        shift = rounds * ctas - section_pairs * m_blocks if rotate else 0
        for sec in range(-(-pairs // section_pairs)):
            p = min(section_pairs, pairs - sec * section_pairs)
            for r in range(rounds):
                backwards = (sec * rounds + r if alternate else r) & 1
                for c in range(ctas):
                    u = (c + sec * shift) % ctas
                    local = r * ctas + (ctas - 1 - u if backwards else u)
                    if local < p * m_blocks:
                        loads[c] += cost(m_blocks - 1 - local // p)
    else:  # every tile costs the same: only how many each CTA gets matters
        total = pairs * m_blocks
        for c in range(ctas):
            loads[c] = sum(cost(0) for t in range(c, total, ctas))
    return loads


def lpt_makespan(costs, ctas):
    heap = [0.0] * ctas
    for w in sorted(costs, reverse=True):
        heapq.heapreplace(heap, heap[0] + w)
    return max(heap)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--b", type=int, default=0, help="batch (0: 16384 / N)")
    ap.add_argument("--h", type=int, default=0, help="heads (0: 2048 / d)")
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--block-m", type=int, default=128, help="query tile (flash_fwd's kBlockM)")
    ap.add_argument("--block-n", type=int, default=128, help="key block (kBlockN)")
    ap.add_argument("--ctas", type=int, default=132)
    ap.add_argument("--l2-budget-mb", type=int, default=32, help="K/V bytes per L2 section (causal walk)")
    ap.add_argument("--overhead", type=float, default=0.0, help="fixed cost per tile, in key blocks")
    ap.add_argument("--max-rounds", type=int, default=2,
                    help="causal sections of at most this many rounds (0: the L2 budget alone)")
    ap.add_argument("--rotate", type=int, default=0,
                    help="1: each causal L2 section's snake rotated (FA_SM90_FWD_SECTION_ROTATE=1)")
    a = ap.parse_args()
    b = a.b or max(1, 16384 // a.n)
    h = a.h or max(1, 2048 // a.d)
    m_blocks = -(-a.n // a.block_m)
    n_blocks = -(-a.n // a.block_n)
    pairs = b * h
    kv_bytes = 2 * a.n * a.d * 2
    section_pairs = max(1, min(pairs, (a.l2_budget_mb << 20) // kv_bytes))
    if a.causal and a.max_rounds > 0:
        section_pairs = min(section_pairs, max(1, a.max_rounds * a.ctas // m_blocks))

    def cost(m):
        if not a.causal:
            return n_blocks + a.overhead
        last_key = min(a.n, (m + 1) * a.block_m)  # bottom-right causal with Nq = Nk
        return -(-last_key // a.block_n) + a.overhead

    loads = walk_loads(m_blocks, pairs, section_pairs, a.ctas, a.causal, cost, bool(a.rotate),
                       bool(a.causal and a.max_rounds % 2))
    mean = sum(loads) / len(loads)
    costs = [cost(m) for m in range(m_blocks)] * pairs
    lpt = lpt_makespan(costs, a.ctas)
    print(f"d{a.d} N{a.n} B{b} H{h} causal={a.causal}: {m_blocks * pairs} tiles of {a.block_m} rows, "
          f"{section_pairs} pairs per L2 section, {a.ctas} CTAs, overhead {a.overhead} blocks/tile")
    print(f"static walk{' (rotated sections)' if a.rotate and a.causal else ''}: busiest CTA {max(loads) / mean:.3f} x mean, idlest {min(loads) / mean:.3f} x mean")
    print(f"greedy LPT:  busiest CTA {lpt / mean:.3f} x mean; the walk's makespan is "
          f"{max(loads) / lpt - 1:+.1%} over it")


if __name__ == "__main__":
    main()
