#!/usr/bin/env python3
"""Does the order of timed runs change their numbers? One shape, a sequence of segments run back to
back in one process (ours / ours_det / an SDPA backend / idle), each timed per call with CUDA
events and printed as medians of consecutive chunks, while nvidia-smi samples the SM clock, power
and temperature. Written to see whether a kernel timed right after another heavy run (compare.py
times the peers first, then ours) is slowed by the clock the first one left.

    python3 bench/order_probe.py --d 128 --n 4096 --pass bwd \
        --seq idle:2,ours:60,sdpa_cudnn:60,ours:60,idle:2,sdpa_cudnn:60,ours_det:60
"""
import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.environ.get("FLASHATTN_LIB", "build/libflashattn.so"))
    ap.add_argument("--algo", default="fa3")
    ap.add_argument("--pass", dest="pas", default="bwd", choices=["fwd", "bwd"])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--causal", type=int, default=0)
    ap.add_argument("--seq", default="idle:2,ours:60,sdpa_cudnn:60,ours:60")
    ap.add_argument("--chunk", type=int, default=10)
    args = ap.parse_args()
    compare.WARMUP_MS = compare.SETTLE_MS = 0  # exactly the calls asked for
    import torch
    b, h = max(1, 16384 // args.n), max(1, 2048 // args.d)
    sets = compare.make_sets(torch, b, args.n, h, args.d, torch.bfloat16, args.pas == "bwd")
    fl = compare.flops(args.pas, b, h, args.n, args.d, bool(args.causal))
    lib = compare.load_library(args.lib)
    runners = {}
    for name, det in (("ours", False), ("ours_det", True)):
        o = compare.Ours(lib, torch, args.algo, args.causal, sets, args.pas == "bwd", deterministic=det)
        if args.pas == "bwd":
            for i in range(len(sets)):
                o.forward(i)
        call = o.backward if args.pas == "bwd" else o.forward
        runners[name] = [lambda i=i, c=call: c(i) for i in range(len(sets))]
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu",
                            "--format=csv,noheader", "-lms", "100"], stdout=subprocess.PIPE, text=True)
    t0 = time.time()
    marks = []
    for seg in args.seq.split(","):
        what, count = seg.split(":")
        count = int(count)
        marks.append((time.time() - t0, what))
        if what == "idle":
            time.sleep(count)
            continue
        peer = what.startswith("sdpa")
        with compare.sdpa_backend(what) if peer else contextlib.nullcontext(), \
                torch.no_grad() if peer and args.pas == "fwd" else contextlib.nullcontext():
            if peer and what not in runners:
                runners[what] = compare.sdpa_fns(torch, sets, bool(args.causal), args.pas)
            ms = [compare.time_calls(torch, runners[what], 0, args.chunk) for _ in range(max(1, count // args.chunk))]
        tf = [fl / m / 1e9 for m in ms]
        print(f"{time.time() - t0:6.2f}s {what:12s} chunk medians TFLOP/s: " + " ".join(f"{x:.0f}" for x in tf)
              + f"  (median {statistics.median(tf):.0f})", flush=True)
    smi.terminate()
    samples = smi.communicate()[0].strip().splitlines()
    print(f"nvidia-smi samples ({len(samples)}; segment starts at " +
          ", ".join(f"{t:.1f}s {w}" for t, w in marks) + "):")
    # one line per ~0.5 s: clock MHz / power W / temperature C
    for line in samples[::5]:
        print("  " + line)


if __name__ == "__main__":
    main()
