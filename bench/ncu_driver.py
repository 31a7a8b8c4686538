#!/usr/bin/env python3
"""Runs one of our kernels a few times at one shape, for a profiler (ncu, nsys) to capture.

    ncu --kernel-name regex:flash --launch-skip 1 --launch-count 1 \
        python3 bench/ncu_driver.py --algo fa3 --pass fwd --d 128 --n 8192

The same descriptors as bench/compare.py (one ctypes call per launch, FA3-paper grid sizing:
B = 16384 / N, H = 2048 / d unless given), so a profiled launch is the launch compare.py times.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.environ.get("FLASHATTN_LIB", "build/libflashattn.so"))
    ap.add_argument("--algo", default="auto", choices=sorted(compare.FA_ALGO) + sorted(compare.SDPA_BACKENDS),
                    help="one of ours, or a PyTorch SDPA backend (to profile the peer at the same shape)")
    ap.add_argument("--pass", dest="pas", default="fwd", choices=["fwd", "bwd"])
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--b", type=int, default=0, help="batch (0: 16384 / N)")
    ap.add_argument("--h", type=int, default=0, help="heads (0: 2048 / d)")
    ap.add_argument("--causal", type=int, default=0)
    ap.add_argument("--deterministic", type=int, default=0)
    ap.add_argument("--calls", type=int, default=2)
    args = ap.parse_args()
    compare.WARMUP_MS = compare.SETTLE_MS = 0  # exactly the calls asked for
    import torch
    b = args.b or max(1, 16384 // args.n)
    h = args.h or max(1, 2048 // args.d)
    sets = compare.make_sets(torch, b, args.n, h, args.d, torch.bfloat16, args.pas == "bwd", l2_bytes=0)[:1]
    if args.algo in compare.SDPA_BACKENDS:
        # The peer through the same timing helper compare.py uses (warm-up 0, `calls` timed calls).
        compare.time_sdpa(torch, args.algo, sets, bool(args.causal), args.pas, 0, args.calls)
        torch.cuda.synchronize()
        print(f"ncu_driver: {args.algo} {args.pas} B{b} H{h} N{args.n} d{args.d} causal={args.causal} x{args.calls}")
        return
    lib = compare.load_library(args.lib)
    ours = compare.Ours(lib, torch, args.algo, args.causal, sets, args.pas == "bwd")
    ours.opt.deterministic = args.deterministic
    if args.pas == "bwd":
        fwd = compare.Ours(lib, torch, args.algo, args.causal, sets, False)
        fwd.forward(0)
    for _ in range(args.calls):
        ours.backward(0) if args.pas == "bwd" else ours.forward(0)
    torch.cuda.synchronize()
    print(f"ncu_driver: {args.algo} {args.pas} B{b} H{h} N{args.n} d{args.d} causal={args.causal} x{args.calls}")


if __name__ == "__main__":
    main()
