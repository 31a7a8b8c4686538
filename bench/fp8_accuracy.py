#!/usr/bin/env python3
"""Numerical error of the FP8 forward on the GPU, in the form of FlashAttention-3's §4.3 table.

Q, K, V ~ N(0, 1) with a fraction of entries (default 0.1%) replaced by N(0, outlier_std²)
outliers; O of each configuration is compared with a float64 reference of the same inputs
(softmax(QKᵀ·scale)·V computed by torch in float64 on the GPU):
  * ours bf16 (fa_forward, the FA3 kernel) and SDPA's cuDNN backend in bf16: the 16-bit baseline;
  * ours fp8 (fa_fp8_forward) with per-head scales (the per-tensor baseline of FA3's table), per-head
    + incoherent processing, block scales, block scales + incoherent processing (the default).
Prints (and writes with --out-md / --out-json) the RMSE and the max absolute error of O per
configuration and outlier strength. Needs torch with CUDA and a build with the fp8 kernels.

Usage: python3 bench/fp8_accuracy.py --lib build/libflashattn.so [--b 2 --n 4096 --h 8 --d 128]
"""
import argparse
import ctypes
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as cmp  # noqa: E402  (the ctypes mirror of the C ABI)

SCHEMES = [  # (label, scaling, incoherent)
    ("fp8 per-head", 1, 0),
    ("fp8 per-head + incoherent", 1, 1),
    ("fp8 block", 0, 0),
    ("fp8 block + incoherent", 0, 1),
]


def make_inputs(torch, b, n, h, d, frac, outlier_std, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)

    def one():
        x = torch.randn(b, n, h, d, device="cuda", generator=g, dtype=torch.float32)
        if frac > 0:
            sel = torch.rand(b, n, h, d, device="cuda", generator=g) < frac
            x = torch.where(sel, torch.randn(b, n, h, d, device="cuda", generator=g) * outlier_std, x)
        return x.to(torch.bfloat16)

    return one(), one(), one()


def errors(torch, out, ref):
    diff = out.double() - ref
    return math.sqrt(diff.pow(2).mean().item()), diff.abs().max().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/libflashattn.so")
    ap.add_argument("--b", type=int, default=2)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--h", type=int, default=8)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--frac", type=float, default=0.001, help="fraction of entries that are outliers")
    ap.add_argument("--outlier-stds", default="0,10", help="comma list; 0 = no outliers")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out-md")
    ap.add_argument("--out-json")
    a = ap.parse_args()

    import torch

    lib = cmp.load_library(a.lib)
    if not hasattr(lib, "fa_fp8_forward"):
        sys.exit("this libflashattn has no fa_fp8_forward")
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for ostd in [float(x) for x in a.outlier_stds.split(",")]:
        q, k, v = make_inputs(torch, a.b, a.n, a.h, a.d, a.frac if ostd > 0 else 0.0, ostd, a.seed)
        scale = 1.0 / math.sqrt(a.d)
        # float64 reference, (B, H, N, d) for torch, back to (B, N, H, d).
        qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
        ref = torch.softmax(qd @ kd.transpose(-1, -2) * scale, dim=-1) @ vd
        ref = ref.transpose(1, 2).contiguous()
        del qd, kd, vd
        label = f"N(0,1)" + (f" + {a.frac:.1%} N(0,{ostd:g}²)" if ostd > 0 else "")

        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)
        rows.append(dict(inputs=label, config="SDPA cuDNN bf16", rmse_max=errors(torch, o, ref)))

        out = torch.empty_like(q)
        lse = torch.empty(a.b, a.h, a.n, device="cuda", dtype=torch.float32)
        dq, dk, dv, do, dl = (cmp.tensor_desc(t) for t in (q, k, v, out, lse))
        opt = cmp.FaOptions()
        lib.fa_options_init(ctypes.byref(opt))
        opt.backend, opt.stream = cmp.FA_BACKEND_CUDA, stream
        opt.algo = cmp.FA_ALGO["fa3"]
        size = ctypes.c_size_t(0)
        cmp.check_status(lib, lib.fa_forward_workspace_size(ctypes.byref(dq), ctypes.byref(dk), ctypes.byref(dv),
                                                            None, ctypes.byref(opt), ctypes.byref(size)))
        ws = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
        opt.workspace, opt.workspace_bytes = (ws.data_ptr() if size.value else None), size.value
        cmp.check_status(lib, lib.fa_forward(ctypes.byref(dq), ctypes.byref(dk), ctypes.byref(dv), ctypes.byref(do),
                                             ctypes.byref(dl), ctypes.byref(opt)))
        torch.cuda.synchronize()
        rows.append(dict(inputs=label, config="ours bf16 (FA3)", rmse_max=errors(torch, out, ref)))

        opt.algo = cmp.FA_ALGO["auto"]
        opt.workspace, opt.workspace_bytes = None, 0
        for name, scaling, incoherent in SCHEMES:
            f = cmp.FaFp8()
            lib.fa_fp8_init(ctypes.byref(f))
            f.scaling, f.incoherent = scaling, incoherent
            out.fill_(float("nan"))
            cmp.check_status(lib, lib.fa_fp8_forward(ctypes.byref(dq), ctypes.byref(dk), ctypes.byref(dv),
                                                     ctypes.byref(f), ctypes.byref(do), ctypes.byref(dl),
                                                     ctypes.byref(opt)))
            torch.cuda.synchronize()
            rows.append(dict(inputs=label, config=f"ours {name}", rmse_max=errors(torch, out, ref)))
        del ref, q, k, v, out
        torch.cuda.empty_cache()

    head = (f"# FP8 forward accuracy — {torch.cuda.get_device_name()}, B={a.b} N={a.n} H={a.h} d={a.d}, "
            f"non-causal, bf16 inputs, O vs a float64 reference\n\n"
            "| inputs | configuration | RMSE(O) | max abs err(O) |\n|---|---|---|---|\n")
    md = head + "".join(f"| {r['inputs']} | {r['config']} | {r['rmse_max'][0]:.2e} | {r['rmse_max'][1]:.2e} |\n"
                        for r in rows)
    print(md)
    if a.out_md:
        with open(a.out_md, "w") as fh:
            fh.write(md)
    if a.out_json:
        with open(a.out_json, "w") as fh:
            json.dump(dict(shape=dict(b=a.b, n=a.n, h=a.h, d=a.d, frac=a.frac), rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
