"""CPU attention, ours vs PyTorch's, same machine, same thread count, same run.

Runs the `fa_bench_cpu` binary (our CPU backend, fp32, plus OpenBLAS sgemm as the machine's dense
ceiling) with --json, then times torch.nn.functional.scaled_dot_product_attention in fp32 on the
CPU for every shape it reported (batch 1, B*H heads, Nq = Nk = N, head dim d; causal where the
binary ran causal; torch's top-left causal equals our bottom-right one when Nq = Nk), and prints
one table. FLOPs as in fa_bench_cpu: forward 4*B*H*N*N*d (halved for causal), backward 2.5x.

Usage (from the repository root, after building with FA_BUILD_BENCH=ON):
  python3 bench/cpu_vs_torch.py [--bench build/bench/fa_bench_cpu] [--threads 16]
      [--n 1024,4096,8192] [--d 64,128] [--causal 0,1] [--reps 5] [--target-gflop 60]
      [--backward] [--json out.json]
OPENBLAS_CORETYPE is passed through to the binary (set it if OpenBLAS misdetects the CPU).
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def find_bench(path):
    if path:
        return path
    hits = sorted(glob.glob("build*/bench/fa_bench_cpu"), key=os.path.getmtime, reverse=True)
    if not hits:
        sys.exit("fa_bench_cpu not found: build it (cmake ... -DFA_BUILD_BENCH=ON) or pass --bench")
    return hits[0]


def median_seconds(fn, reps):
    fn()  # warm-up: allocator, thread pool, caches
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def torch_times(torch, n, d, bh, causal, reps, backward):
    F = torch.nn.functional
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, bh, n, d, generator=g, dtype=torch.float32) for _ in range(3))
    with torch.no_grad():
        fwd = median_seconds(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps)
    bwd = float("nan")
    if backward:
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        dout = torch.randn(1, bh, n, d, generator=g)

        def fwd_bwd():
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            out.backward(dout)

        # The backward alone: forward+backward minus the forward (autograd keeps what it needs).
        bwd = max(median_seconds(fwd_bwd, reps) - fwd, 1e-9)
    return fwd, bwd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=None, help="path of fa_bench_cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--n", default="1024,4096,8192")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--target-gflop", type=float, default=60.0,
                    help="forward work per timed run (sets B*H); ~60 gives tens of ms on 16 cores")
    ap.add_argument("--backward", action="store_true", help="also time the backward")
    ap.add_argument("--json", default=None, help="write the combined results here")
    args = ap.parse_args()

    import torch  # imported late so that --help works without torch

    torch.set_num_threads(args.threads)
    bench = find_bench(args.bench)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        tmp_path = tmp.name
    cmd = [bench, "--threads", str(args.threads), "--reps", str(args.reps), "--n", args.n,
           "--d", args.d, "--causal", args.causal, "--target-gflop", str(args.target_gflop),
           "--json", tmp_path]
    if not args.backward:
        cmd.append("--no-backward")
    print("running:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(tmp_path) as f:
        ours = json.load(f)
    os.unlink(tmp_path)

    sgemm = ours["sgemm_gflops"]
    rows = []
    for r in ours["results"]:
        flop = 4.0 * r["bh"] * r["n"] * r["n"] * r["d"] * (0.5 if r["causal"] else 1.0)
        t_fwd, t_bwd = torch_times(torch, r["n"], r["d"], r["bh"], r["causal"], args.reps, args.backward)
        row = dict(r)
        row["torch_fwd_gflops"] = flop / t_fwd * 1e-9
        row["torch_bwd_gflops"] = 2.5 * flop / t_bwd * 1e-9 if args.backward else None
        rows.append(row)

    print(f"\nthreads {args.threads}, torch {torch.__version__}, OpenBLAS ({ours.get('blas_core')}) "
          f"sgemm {sgemm:.1f} GFLOP/s, our micro-kernel {ours['isa']}")
    head = f"{'N':>6} {'d':>4} {'causal':>6} {'B*H':>4} | {'ours fwd':>9} {'torch fwd':>9} {'ratio':>6} {'/sgemm':>6}"
    if args.backward:
        head += f" | {'ours bwd':>9} {'torch bwd':>9} {'ratio':>6}"
    print(head + "   (GFLOP/s)")
    for r in rows:
        line = (f"{r['n']:>6} {r['d']:>4} {int(r['causal']):>6} {r['bh']:>4} | {r['fwd_gflops']:>9.1f} "
                f"{r['torch_fwd_gflops']:>9.1f} {r['fwd_gflops'] / r['torch_fwd_gflops']:>6.2f} "
                f"{r['fwd_gflops'] / sgemm if sgemm > 0 else float('nan'):>6.2f}")
        if args.backward:
            line += (f" | {r['bwd_gflops']:>9.1f} {r['torch_bwd_gflops']:>9.1f} "
                     f"{r['bwd_gflops'] / r['torch_bwd_gflops']:>6.2f}")
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "torch": torch.__version__, "sgemm_gflops": sgemm,
                       "blas_core": ours.get("blas_core"), "results": rows}, f, indent=1)


if __name__ == "__main__":
    main()
