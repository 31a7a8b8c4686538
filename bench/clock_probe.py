#!/usr/bin/env python3
"""SM clock and board power while one attention forward runs back to back, ours against a peer.

    python3 bench/clock_probe.py --lib build/libflashattn.so --shapes 128:512:0,256:512:0 \
        --backends fa3,sdpa_cudnn --seconds 3 --rounds 2

Why: ncu times a kernel at a locked clock, compare.py at the clock the board sustains. The two
disagree by backend (session 35: d128 N512 ours/cuDNN 0.95 under ncu, 0.91 in compare.py), which
is what a kernel that draws more power per unit of work, and so runs at a lower clock under the
power limit, would show. This runs each (backend, shape) for --seconds of calls rotating over the
input sets as compare.py does (same grid: B = 16384 / N, H = 2048 / d), while `nvidia-smi -lms`
samples the SM clock and power, and reports per run: ms per call (CUDA events over the whole
run), TFLOP/s, median SM clock and power over the run's second half, and cycles per call
(ms × clock), the clock-free measure of the kernel's work.
Its siblings: bench/order_probe.py prints the raw nvidia-smi trace beside per-chunk medians for
one shape (the clock after a pause); scripts/gpu/clock_ab.sh samples during whole compare.py runs
(median-of-20 timing, per library build). This one is the sustained mean per backend and shape.
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


class Sampler:
    """nvidia-smi's samples, each stamped with time.perf_counter() on arrival."""

    def __init__(self, period_ms):
        self.samples = []
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                 f"-lms={period_ms}", "-i", os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            print(f"clock_probe: no nvidia-smi ({e}); clocks not sampled")
            self.proc = None
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            parts = [x.strip() for x in line.split(",")]
            try:
                self.samples.append((time.perf_counter(), float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                pass

    def window(self, t0, t1):
        return [(c, p) for t, c, p in self.samples if t0 <= t <= t1]

    def stop(self):
        if self.proc:
            self.proc.terminate()


def run_for(torch, fns, seconds):
    """Calls rotating over fns for `seconds`; (ms per call by events, wall window of the second half)."""
    n = len(fns)
    i = 0
    t_start = time.perf_counter()
    t_half = t_start + seconds / 2
    while time.perf_counter() < t_half:  # the first half: the clock settles
        for _ in range(n):
            fns[i % n]()
            i += 1
        torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = 0
    w0 = time.perf_counter()
    e0.record()
    while time.perf_counter() - w0 < seconds / 2:
        for _ in range(4 * n):  # enough queued work that the host never starves the GPU
            fns[i % n]()
            i += 1
            calls += 1
        torch.cuda.synchronize()
    e1.record()
    torch.cuda.synchronize()
    w1 = time.perf_counter()
    return e0.elapsed_time(e1) / calls, (w0, w1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.environ.get("FLASHATTN_LIB", "build/libflashattn.so"))
    ap.add_argument("--shapes", default="128:512:0,256:512:0", help="d:N:causal,...")
    ap.add_argument("--backends", default="fa3,sdpa_cudnn", help="ours (fa3, fa2, auto) and SDPA peers")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the backends per shape")
    ap.add_argument("--period-ms", type=int, default=20)
    args = ap.parse_args()
    import torch
    lib = None
    sampler = Sampler(args.period_ms)
    rows = []
    try:
        for shape in args.shapes.split(","):
            d, n, causal = (int(x) for x in shape.split(":"))
            b, h = max(1, 16384 // n), max(1, 2048 // d)
            sets = compare.make_sets(torch, b, n, h, d, torch.bfloat16, False)
            fl = compare.flops("fwd", b, h, n, d, bool(causal))
            for rnd in range(args.rounds):
                for be in args.backends.split(","):
                    if be in compare.SDPA_BACKENDS:
                        with compare.sdpa_backend(be), torch.no_grad():
                            fns = compare.sdpa_fns(torch, sets, bool(causal), "fwd")
                            ms, (w0, w1) = run_for(torch, fns, args.seconds)
                    else:
                        lib = lib or compare.load_library(args.lib)
                        ours = compare.Ours(lib, torch, be, causal, sets, False)
                        ms, (w0, w1) = run_for(torch, [lambda i=i: ours.forward(i) for i in range(len(sets))],
                                               args.seconds)
                    win = sampler.window(w0, w1)
                    mhz = statistics.median(c for c, _ in win) if win else float("nan")
                    watt = statistics.median(p for _, p in win) if win else float("nan")
                    rows.append((d, n, causal, be, rnd, ms, fl / ms / 1e9, mhz, watt, ms * 1e3 * mhz, len(win)))
                    print(f"d{d} N{n} causal={causal} {be} round {rnd}: {ms * 1e3:.1f} us, "
                          f"{fl / ms / 1e9:.0f} TFLOP/s, {mhz:.0f} MHz, {watt:.0f} W ({len(win)} samples)",
                          flush=True)
            del sets
            torch.cuda.empty_cache()
    finally:
        sampler.stop()
    print("| d | N | causal | backend | round | us/call | TFLOP/s | SM MHz | W | kcycles/call |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d, n, c, be, rnd, ms, tf, mhz, w, cyc, _ in rows:
        print(f"| {d} | {n} | {c} | {be} | {rnd} | {ms * 1e3:.1f} | {tf:.0f} | {mhz:.0f} | {w:.0f} | {cyc / 1e3:.0f} |")


if __name__ == "__main__":
    main()
