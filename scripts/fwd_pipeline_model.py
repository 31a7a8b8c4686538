#!/usr/bin/env python3
"""A model of the sm90 forward kernel's synchronisation, to check its protocol without a GPU.

What it models (src/cuda/sm90/flash_fwd_kernel.cuh, the warp-specialised TMA path with the tile handoff):
- the producer thread: per tile of its walk, the handoff record, then Q, K_i and V_i loads, each
  after acquiring its ring slot (PipelineTma: full/empty mbarriers, position it in stage it % S);
- the consumer warpgroups, each one actor (its 128 threads move together): per tile, the waits,
  the releases and the ping-pong turns of consume_tile in the order the code runs them, with the
  switches FA_SM90_FWD_TILE_CHAIN, FA_SM90_FWD_Q_AHEAD and FA_SM90_FWD_EARLY_Q_RELEASE;
- the ping-pong named barriers: warpgroup w waits on barrier w, the warpgroup before it in the
  round robin arrives there after issuing its GEMMs.
wgmma completion, TMA completion and the epilogue's per-warpgroup barrier involve no other actor and
are taken as immediate.

What it checks, over random tile lists (key blocks 0-5 per tile, tiles the walk skips) and random
interleavings of the actors:
- no deadlock: some actor can always move until all are done;
- every mbarrier wait is for the barrier's current phase or the one just completed (a wait two
  phases behind would alias on parity and hang or pass wrongly on the GPU);
- a slot is released only by a consumer that waited for it, once per consumer, and refilled
  only after every consumer released it;
- every ping-pong arrival is consumed before the next one reaches the same barrier, and none is
  left at the end;
- every consumer read the Q, K and V positions the producer filled for its tile, in order.

Usage: python3 scripts/fwd_pipeline_model.py [--trials N] [--seed S]
Runs the default protocol and each switch combination; exits 1 on the first violation.
"""
import argparse
import random
import sys


class Violation(Exception):
    pass


class Ring:
    """An mbarrier ring of `stages` slots: full (producer fills) and empty (consumers release)."""

    def __init__(self, name, stages, consumers):
        self.name, self.stages, self.consumers = name, stages, consumers
        self.full_done = [0] * stages     # completed phases of full[s]
        self.empty_done = [0] * stages    # completed phases of empty[s]
        self.empty_arrivals = [set() for _ in range(stages)]
        self.waited = {}                  # position -> consumers that waited for it
        self.filled = {}                  # position -> what the producer put there

    def _check_phase(self, done, want, what):
        # A parity wait for phase `want` (0-based) is sound while the barrier has completed
        # `want` or `want + 1` phases; two more and the parity aliases.
        if done > want + 1:
            raise Violation(f"{self.name}: {what} waits for phase {want}, barrier already at {done}")

    # producer side
    def can_acquire(self, it):
        s, k = it % self.stages, it // self.stages
        if k == 0:
            return True
        self._check_phase(self.empty_done[s], k - 1, f"acquire({it})")
        return self.empty_done[s] >= k

    def fill(self, it, tag):
        s = it % self.stages
        if self.full_done[s] != it // self.stages:
            raise Violation(f"{self.name}: fill({it}) with full[{s}] at phase {self.full_done[s]}")
        self.full_done[s] += 1
        self.filled[it] = tag

    # consumer side
    def can_wait(self, it):
        s, k = it % self.stages, it // self.stages
        self._check_phase(self.full_done[s], k, f"wait({it})")
        return self.full_done[s] >= k + 1

    def waited_by(self, it, who, tag):
        if self.filled.get(it) != tag:
            raise Violation(f"{self.name}: consumer {who} wanted {tag} at position {it}, "
                            f"slot holds {self.filled.get(it)}")
        self.waited.setdefault(it, set()).add(who)

    def release(self, it, who):
        s = it % self.stages
        if who not in self.waited.get(it, ()):
            raise Violation(f"{self.name}: consumer {who} releases position {it} it did not wait for")
        if self.full_done[s] != it // self.stages + 1:
            raise Violation(f"{self.name}: release({it}) while slot {s} holds another position")
        if who in self.empty_arrivals[s]:
            raise Violation(f"{self.name}: consumer {who} releases position {it} twice")
        self.empty_arrivals[s].add(who)
        if len(self.empty_arrivals[s]) == self.consumers:
            self.empty_arrivals[s] = set()
            self.empty_done[s] += 1


class PingPong:
    def __init__(self, wgs):
        self.wgs = wgs
        self.tokens = [0] * wgs

    def pass_to(self, w):
        nxt = (w + 1) % self.wgs
        if self.tokens[nxt]:
            raise Violation(f"ping-pong: arrival on barrier {nxt} before its last one was consumed")
        self.tokens[nxt] = 1


def make_tiles(rng):
    """One CTA's walk: (tile id, n_blocks), or None for a tile tile_work rejects."""
    tiles = []
    for t in range(rng.randint(1, 9)):
        r = rng.random()
        if r < 0.08:
            tiles.append(None)
        else:
            tiles.append((t, rng.choice([0, 1, 1, 2, 2, 3, 5]) if r < 0.9 else 0))
    return tiles


def producer(st, cfg, tiles):
    walk = [t for t in tiles if t is not None]
    kv_it = q_it = rec_it = 0
    q_loaded = False
    for i, (tid, n) in enumerate(walk):
        yield lambda r=rec_it: st.rec.can_acquire(r)
        st.rec.fill(rec_it, ("rec", tid))
        rec_it += 1
        if n == 0:
            continue

        def load(ring, it, tag):
            yield lambda: ring.can_acquire(it)
            ring.fill(it, tag)

        if not (cfg["q_ahead"] and q_loaded):
            yield from load(st.q, q_it, ("Q", tid))
        yield from load(st.k, kv_it, ("K", tid, 0))
        if cfg["q_ahead"]:
            ahead = next(((t2, n2) for t2, n2 in walk[i + 1:] if n2 > 0), None)
            q_loaded = ahead is not None
            if ahead:
                yield from load(st.q, q_it + 1, ("Q", ahead[0]))
        yield from load(st.v, kv_it, ("V", tid, 0))
        for b in range(1, n):
            yield from load(st.k, kv_it + b, ("K", tid, b))
            yield from load(st.v, kv_it + b, ("V", tid, b))
        kv_it += n
        q_it += 1
    yield lambda r=rec_it: st.rec.can_acquire(r)
    st.rec.fill(rec_it, ("rec", "end"))


def consumer(st, cfg, w, tiles):
    walk = [t for t in tiles if t is not None]
    pp = st.pp

    def wait(ring, it, tag):
        yield lambda: ring.can_wait(it)
        ring.waited_by(it, w, tag)

    def turn_wait():
        yield lambda: pp.tokens[w] > 0
        pp.tokens[w] = 0

    kv_it = q_it = 0
    chained_in = False
    for rec_it in range(len(walk) + 1):
        # (A chained tile's record was waited for in the previous tile's tail already; the code
        # waits again, on a phase that has completed.)
        yield from wait(st.rec, rec_it, ("rec", walk[rec_it][0] if rec_it < len(walk) else "end"))
        if rec_it == len(walk):
            break
        tid, n = walk[rec_it]
        if n > 0:
            if cfg.get("mutant") == "double_k_release" and chained_in:
                st.k.release(kv_it, w)
            if not chained_in:
                yield from wait(st.q, q_it, ("Q", tid))
                yield from wait(st.k, kv_it, ("K", tid, 0))
                yield from turn_wait()
                pp.pass_to(w)
                st.k.release(kv_it, w)
                if cfg["early_q"] and n == 1:
                    st.q.release(q_it, w)
            for b in range(1, n):
                yield from wait(st.k, kv_it + b, ("K", tid, b))
                yield from turn_wait()
                yield from wait(st.v, kv_it + b - 1, ("V", tid, b - 1))
                pp.pass_to(w)
                st.k.release(kv_it + b, w)
                if cfg["early_q"] and b == n - 1:
                    st.q.release(q_it, w)
                st.v.release(kv_it + b - 1, w)
            if not cfg["early_q"]:
                st.q.release(q_it, w)
            last = kv_it + n - 1
            if cfg.get("mutant") != "skip_v_wait":
                yield from wait(st.v, last, ("V", tid, n - 1))
            chain_out = False
            if cfg["chain"]:
                nxt = walk[rec_it + 1] if rec_it + 1 < len(walk) else ("end", 0)
                yield from wait(st.rec, rec_it + 1, ("rec", nxt[0]))
                chain_out = nxt[1] > 0
                if cfg.get("mutant") == "one_wg_chains":
                    chain_out = chain_out and w == 0
                if chain_out:
                    yield from wait(st.q, q_it + 1, ("Q", nxt[0]))
                    yield from wait(st.k, kv_it + n, ("K", nxt[0], 0))
            yield from turn_wait()
            pp.pass_to(w)
            if chain_out:
                st.k.release(kv_it + n, w)
                if cfg["early_q"] and nxt[1] == 1 and cfg.get("mutant") != "no_q_release":
                    st.q.release(q_it + 1, w)
            st.v.release(last, w)
            chained_in = chain_out
            kv_it += n
            q_it += 1
        else:
            chained_in = False
        st.rec.release(rec_it, w)  # after the epilogue
    # consume(): warpgroup 0 takes the arrival the last warpgroup left on its barrier.
    if w == 0:
        yield from turn_wait()


class State:
    def __init__(self, cfg):
        wgs = cfg["wgs"]
        self.q = Ring("Q", 1 if cfg.get("mutant") == "one_q_slot" else 2, wgs)
        self.k = Ring("K", 2, wgs)
        self.v = Ring("V", 2, wgs)
        self.rec = Ring("record", 2, wgs)
        self.pp = PingPong(wgs)
        # The last warpgroup opens warpgroup 0's barrier before the first tile.
        self.pp.tokens[0] = 1


def run_trial(cfg, rng):
    tiles = make_tiles(rng)
    st = State(cfg)
    actors = [producer(st, cfg, tiles)] + [consumer(st, cfg, w, tiles) for w in range(cfg["wgs"])]
    pending = {}
    for i, a in enumerate(actors):
        pending[i] = next(a, None)
    live = {i for i, c in pending.items() if c is not None}
    while live:
        ready = [i for i in live if pending[i]()]
        if not ready:
            raise Violation(f"deadlock with tiles {tiles}: actors {sorted(live)} all wait")
        i = rng.choice(ready)
        pending[i] = next(actors[i], None)
        if pending[i] is None:
            live.discard(i)
    if any(st.pp.tokens):
        raise Violation(f"ping-pong arrival left at the end: {st.pp.tokens}")
    return tiles


CONFIGS = {
    "default": dict(chain=False, q_ahead=False, early_q=True),
    "late_q_release": dict(chain=False, q_ahead=False, early_q=False),
    "q_ahead": dict(chain=False, q_ahead=True, early_q=True),
    "chain": dict(chain=True, q_ahead=False, early_q=True),
    "chain+q_ahead": dict(chain=True, q_ahead=True, early_q=True),
    "chain+q_ahead+late_q_release": dict(chain=True, q_ahead=True, early_q=False),
}


# Deliberate breaks, each of which the checks must catch (run by --mutants).
MUTANTS = {
    "double_k_release": "a chained tile releases its first K block again",
    "one_wg_chains": "only warpgroup 0 chains its tiles",
    "no_q_release": "the chained tail does not release a one-block next tile's Q",
    "one_q_slot": "Q one tile ahead with a single Q slot",
    "skip_v_wait": "the last V released without waiting for it",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutants", action="store_true",
                    help="also check that each deliberate break of the protocol is caught")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    if args.mutants:
        for m, what in MUTANTS.items():
            cfg = dict(CONFIGS["chain+q_ahead"], wgs=2, mutant=m)
            caught = None
            for _ in range(args.trials):
                try:
                    run_trial(cfg, rng)
                except Violation as e:
                    caught = e
                    break
            if caught is None:
                print(f"mutant {m} ({what}): NOT caught in {args.trials} trials")
                return 1
            print(f"mutant {m} ({what}): caught: {caught}")
    for name, base in CONFIGS.items():
        for wgs in (2, 3):
            cfg = dict(base, wgs=wgs)
            for _ in range(args.trials):
                try:
                    run_trial(cfg, rng)
                except Violation as e:
                    print(f"{name}, {wgs} warpgroups: VIOLATION: {e}")
                    return 1
            print(f"{name}, {wgs} warpgroups: {args.trials} random walks and interleavings, no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
