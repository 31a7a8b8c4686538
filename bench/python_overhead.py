"""Per-call overhead of the Python layer, at a shape small enough that the kernel is negligible.

Prints microseconds per call for each layer, thinnest first, next to PyTorch's own SDPA on the
same tensors (the bar a user compares against):
  _C.forward            extension + C ABI only (outputs preallocated, no workspace query)
  torch.ops.flashattn   custom op: allocation, workspace-size cache, stream query, DLPack
  flash_attn_func       the public function: argument checks on top of the op
  flash_attn_func+grad  the same with autograd recording
  sdpa                  torch.nn.functional.scaled_dot_product_attention

Usage: python bench/python_overhead.py [--device cuda|cpu] [--iters N]
On CUDA, calls are issued back to back and timed by wall clock over many launches with one
synchronize at the end: at this size the host side, not the GPU, is the bottleneck.
"""

import argparse
import time

import torch
import torch.nn.functional as F

import flashattn
from flashattn import _C


def bench(fn, iters, sync):
    for _ in range(max(10, iters // 10)):  # warm-up: caches, lazy init, allocator pools
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() and flashattn.cuda_built() else "cpu")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--shape", default="1,1,16,2,64", help="batch,seqlen_q,seqlen_k,heads,head_dim")
    args = ap.parse_args()
    b, nq, nk, h, d = (int(x) for x in args.shape.split(","))
    dev = torch.device(args.device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    q = torch.randn(b, nq, h, d, device=dev, dtype=dtype)
    k = torch.randn(b, nk, h, d, device=dev, dtype=dtype)
    v = torch.randn(b, nk, h, d, device=dev, dtype=dtype)
    out = torch.empty_like(q)
    lse = torch.empty(b, h, nq, device=dev, dtype=torch.float32)
    stream = torch.cuda.current_stream().cuda_stream if dev.type == "cuda" else 0
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

    rows = [
        ("_C.forward", lambda: _C.forward(q, k, v, out, lse, 0.0, True, -1, -1, 0.0, False, 0, 0, 0, stream, None)),
        ("torch.ops.flashattn.fwd", lambda: torch.ops.flashattn.fwd(q, k, v, 0.0, True, -1, -1, 0.0, False)),
        ("flash_attn_func", lambda: flashattn.flash_attn_func(q, k, v, causal=True)),
        ("flash_attn_func+grad", lambda: flashattn.flash_attn_func(qg, kg, vg, causal=True)),
        ("sdpa", lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=nq > 1)),
    ]
    print(f"device={dev} dtype={dtype} shape q={tuple(q.shape)} k={tuple(k.shape)} iters={args.iters}")
    for name, fn in rows:
        print(f"{name:26s} {bench(fn, args.iters, sync):8.2f} us/call")


if __name__ == "__main__":
    main()
