#!/usr/bin/env python3
"""KV-cache decode benchmark: flashattn's fa_kvcache_forward (C ABI via ctypes) against PyTorch
SDPA's FLASH_ATTENTION, CUDNN_ATTENTION and EFFICIENT_ATTENTION backends, same process, same data.

Grid (defaults): bf16, d 128, Hq 32, Hk in {32, 8}, Nq 1, B in {1, 8, 32}, L in {1k, 4k, 16k, 64k};
shapes whose K+V exceed --max-gb (40) are skipped. Every sequence holds L keys (no cache_seqlens;
L_b = capacity), non-causal (with Nq = 1 every key is visible either way).

Backends:
  ours            contiguous cache [B, L, Hk, D], num_splits = 0 (the heuristic; the split count it
                  chose is reported, recovered from the workspace size)
  ours_split1     the same with num_splits = 1 (split-KV off: the ablation)
  ours_page16/256 a paged cache [B*L/ps, ps, Hk, D] holding the same rows, shuffled block table
  sdpa_*          q (B, Hq, 1, D) and K/V (B, Hk, L, D) as .transpose(1, 2) views of the same
                  [B, L, H, D] tensors ours reads. GQA (Hk < Hq): enable_gqa=True where the backend
                  takes it; otherwise K/V expanded by repeat_interleave BEFORE timing (the expansion
                  is not timed; the record says "gqa": "repeat_interleave").

Method (as bench/compare.py): CUDA events around each call on torch's current stream, --warmup
calls and at least 0.5 s of calls first (compare.WARMUP_MS: the clock the GPU sustains, not its
boost after a pause; since session 16), the median of --iters (>= 20) timed calls; inputs rotate over enough buffer sets that
together they exceed twice the 60 MB L2 (one set when K/V alone do). Ours runs with a preallocated
workspace (fa_kvcache_workspace_size) and output. Bytes counted: K + V + Q + O (what a decode step
must move at least); GB/s = bytes / median time (the H200's HBM peak is ~4.8 TB/s).
Sanity: max |ours - sdpa_flash| and max |paged - contiguous| are recorded per shape.

Usage: python3 bench/decode.py --lib build/libflashattn.so [--out-json F] [--out-md F] [--quick]
       python3 bench/decode.py --ab-table A.json B.json --ab-labels a,b [--out-md F]
Our time is that of the whole fa_kvcache_forward call: attention kernel plus, when it splits, the
combine kernel.
"""
import argparse
import ctypes
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import FA_BACKEND_CUDA, FaOptions, FaTensor, check_status, load_library, \
    tensor_desc, time_calls  # noqa: E402

compare.FA_DTYPE.setdefault("int32", 4)  # FA_DTYPE_INT32: block tables (tensor_desc reads this dict)


class FaKvcache(ctypes.Structure):
    T = ctypes.POINTER(FaTensor)
    _fields_ = [("k_cache", T), ("v_cache", T), ("cache_seqlens", T), ("block_table", T),
                ("cache_batch_idx", T), ("k_new", T), ("v_new", T), ("num_splits", ctypes.c_int)]


def declare_kvcache(lib):
    T, O, K = ctypes.POINTER(FaTensor), ctypes.POINTER(FaOptions), ctypes.POINTER(FaKvcache)
    lib.fa_kvcache_forward.restype = ctypes.c_int
    lib.fa_kvcache_forward.argtypes = [T, K, T, T, O]
    lib.fa_kvcache_workspace_size.restype = ctypes.c_int
    lib.fa_kvcache_workspace_size.argtypes = [T, K, O, ctypes.POINTER(ctypes.c_size_t)]


class OursDecode:
    """One configuration (cache form, num_splits) over the rotating sets, descriptors built once."""

    def __init__(self, lib, torch, sets, num_splits, tables=None):
        self.lib = lib
        self.opt = FaOptions()
        lib.fa_options_init(ctypes.byref(self.opt))
        self.opt.backend = FA_BACKEND_CUDA
        self.opt.stream = torch.cuda.current_stream().cuda_stream
        self.keep = []  # descriptors must outlive the pointers in FaKvcache
        self.calls = []
        for i, s in enumerate(sets):
            d = {k: tensor_desc(s[k]) for k in ("q", "out", "lse")}
            kd, vd = tensor_desc(s["kc"]), tensor_desc(s["vc"])
            kv = FaKvcache()
            kv.k_cache, kv.v_cache = ctypes.pointer(kd), ctypes.pointer(vd)
            if tables is not None:
                td = tensor_desc(tables[i])
                d["table"] = td
                kv.block_table = ctypes.pointer(td)
            kv.num_splits = num_splits
            self.keep.append((d, kd, vd, kv))
            self.calls.append((d, kv))
        d0, kv0 = self.calls[0]
        size = ctypes.c_size_t(0)
        self.check(lib.fa_kvcache_workspace_size(ctypes.byref(d0["q"]), ctypes.byref(kv0), ctypes.byref(self.opt),
                                                 ctypes.byref(size)))
        self.ws = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
        self.opt.workspace = self.ws.data_ptr() if size.value else None
        self.opt.workspace_bytes = size.value
        self.workspace_bytes = size.value

    def check(self, st):
        check_status(self.lib, st)

    def call(self, i):
        d, kv = self.calls[i]
        self.check(self.lib.fa_kvcache_forward(ctypes.byref(d["q"]), ctypes.byref(kv), ctypes.byref(d["out"]),
                                               ctypes.byref(d["lse"]), ctypes.byref(self.opt)))


SDPA = {"sdpa_flash": "FLASH_ATTENTION", "sdpa_cudnn": "CUDNN_ATTENTION", "sdpa_efficient": "EFFICIENT_ATTENTION"}


def time_sdpa(torch, peer, sets, hq, hk, warmup, iters):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    with sdpa_kernel([getattr(SDPBackend, SDPA[peer])]), torch.no_grad():
        views = [(s["q"].transpose(1, 2), s["kc"].transpose(1, 2), s["vc"].transpose(1, 2)) for s in sets]
        gqa = "none"
        if hk != hq:
            try:  # enable_gqa first: no expanded copy of K/V
                F.scaled_dot_product_attention(*views[0], enable_gqa=True)
                torch.cuda.synchronize()
                fns = [lambda t=t: F.scaled_dot_product_attention(*t, enable_gqa=True) for t in views]
                gqa = "enable_gqa"
            except Exception:
                r = hq // hk
                views = [(q, k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)) for q, k, v in views]
                fns = [lambda t=t: F.scaled_dot_product_attention(*t) for t in views]
                gqa = "repeat_interleave"
        else:
            fns = [lambda t=t: F.scaled_dot_product_attention(*t) for t in views]
        ms = time_calls(torch, fns, warmup, iters)
        out = fns[0]().transpose(1, 2)  # (B, 1, Hq, D)
        del views, fns
        return ms, out, gqa


def make_sets(torch, b, L, hq, hk, d, dtype, l2_bytes=60e6):
    per = 2 * b * L * hk * d * dtype.itemsize
    count = min(64, max(1, math.ceil(2 * l2_bytes / per)))
    sets = []
    for _ in range(count):
        sets.append(dict(q=torch.randn(b, 1, hq, d, device="cuda", dtype=dtype),
                         kc=torch.randn(b, L, hk, d, device="cuda", dtype=dtype),
                         vc=torch.randn(b, L, hk, d, device="cuda", dtype=dtype),
                         out=torch.empty(b, 1, hq, d, device="cuda", dtype=dtype),
                         lse=torch.empty(b, hq, 1, device="cuda", dtype=torch.float32)))
    return sets


def paged_sets(torch, sets, ps):
    """The same rows in a shuffled page pool: pool[table[b, p]] = cache[b, p*ps:(p+1)*ps]."""
    out, tables = [], []
    for s in sets:
        b, L, hk, d = s["kc"].shape
        pages = b * L // ps
        table = torch.randperm(pages, device="cuda", dtype=torch.int64)
        kp = torch.empty(pages, ps, hk, d, device="cuda", dtype=s["kc"].dtype)
        vp = torch.empty_like(kp)
        kp[table] = s["kc"].reshape(pages, ps, hk, d)
        vp[table] = s["vc"].reshape(pages, ps, hk, d)
        tables.append(table.to(torch.int32).reshape(b, L // ps).contiguous())
        out.append(dict(q=s["q"], kc=kp, vc=vp, out=torch.empty_like(s["out"]), lse=torch.empty_like(s["lse"])))
    return out, tables


def run_shape(torch, lib, args, b, L, hq, hk, d, dtype):
    sets = make_sets(torch, b, L, hq, hk, d, dtype)
    kv_bytes = 2 * b * L * hk * d * dtype.itemsize
    moved = kv_bytes + 2 * b * hq * d * dtype.itemsize
    base = dict(b=b, L=L, hq=hq, hk=hk, d=d, kv_gb=kv_bytes / 1e9, sets=len(sets))
    rows, outs = [], {}

    def record(name, fn_ms, **extra):
        rec = dict(base, backend=name)
        try:
            ms, extra2 = fn_ms()
            rec.update(us=ms * 1e3, gbps=moved / (ms * 1e-3) / 1e9, **extra2)
        except Exception as e:
            rec.update(us=None, gbps=None, error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        rec.update(extra)
        rows.append(rec)
        print(f"  {name:16s} " + (f"{rec['us']:9.1f} us {rec['gbps']:7.0f} GB/s" if rec.get("us") else rec.get("error", "")),
              flush=True)

    def ours(name, the_sets, splits, tables=None):
        def fn():
            o = OursDecode(lib, torch, the_sets, splits, tables)
            ms = time_calls(torch, [lambda i=i: o.call(i) for i in range(len(the_sets))], args.warmup, args.iters)
            rows_total = b * hq
            chosen = o.workspace_bytes // (rows_total * (d + 1) * 4) if o.workspace_bytes else 1
            outs[name] = the_sets[0]["out"].clone()
            return ms, dict(num_splits=int(chosen), workspace_bytes=o.workspace_bytes)
        record(name, fn)

    if "ours" in args.ours:
        ours("ours", sets, 0)
    if "ours_split1" in args.ours:
        ours("ours_split1", sets, 1)
    for ps in (16, 256):
        if L % ps or f"ours_page{ps}" not in args.ours:
            continue
        psets, tables = paged_sets(torch, sets, ps)
        ours(f"ours_page{ps}", psets, 0, tables)
        del psets, tables
        torch.cuda.empty_cache()
    for peer in args.peers:
        def fn(peer=peer):
            ms, out, gqa = time_sdpa(torch, peer, sets, hq, hk, args.warmup, args.iters)
            outs[peer] = out
            return ms, dict(gqa=gqa)
        record(peer, fn)
        torch.cuda.empty_cache()
    # Sanity: same inputs, so outputs must agree to bf16 rounding.
    sanity = {}
    if "ours" in outs:
        for k, v in outs.items():
            if k != "ours":
                sanity[f"maxdiff_ours_vs_{k}"] = float((outs["ours"].float() - v.float()).abs().max())
    for r in rows:
        r.update(sanity)
    del sets
    torch.cuda.empty_cache()
    return rows


def markdown(rows, peers, title):
    shapes = []
    for r in rows:
        key = (r["hk"], r["b"], r["L"])
        if key not in shapes:
            shapes.append(key)
    names = ["ours", "ours_split1", "ours_page16", "ours_page256"] + peers
    lines = [f"# KV-cache decode: {title}, Nq 1 (us, GB/s of K+V+Q+O)", "",
             "Ratio columns: peer time / ours time (> 1: ours faster). `splits`: ours' automatic count.", "",
             "| Hk | B | L | K+V GB | splits | " + " | ".join(names) + " | " +
             " | ".join(f"{p}/ours" for p in peers) + " | split1/ours |",
             "|" + "---|" * (5 + len(names) + len(peers) + 1)]
    for key in shapes:
        rs = {r["backend"]: r for r in rows if (r["hk"], r["b"], r["L"]) == key}
        any_r = next(iter(rs.values()))
        cell = lambda n: (f"{rs[n]['us']:.1f} ({rs[n]['gbps']:.0f})" if n in rs and rs[n].get("us") else "-")
        ours_us = rs.get("ours", {}).get("us")
        ratio = lambda n: (f"{rs[n]['us'] / ours_us:.2f}" if ours_us and n in rs and rs[n].get("us") else "-")
        splits = rs.get("ours", {}).get("num_splits", "-")
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {any_r['kv_gb']:.2f} | {splits} | " +
                     " | ".join(cell(n) for n in names) + " | " + " | ".join(ratio(p) for p in peers) +
                     f" | {ratio('ours_split1')} |")
    gq = sorted({r.get("gqa") for r in rows if r.get("gqa")})
    lines += ["", f"SDPA GQA handling seen: {', '.join(gq) or 'n/a'} (repeat_interleave is done before timing)."]
    return "\n".join(lines) + "\n"


def ab_table(path_a, path_b, labels):
    """Markdown table of two runs' ours / ours_page256 times per shape (an A/B of a run-time switch:
    the same grid run twice, e.g. with FA_DECODE_KEY_SPLIT=1 and =0)."""
    runs = []
    for path in (path_a, path_b):
        with open(path) as f:
            runs.append({(r["hk"], r["b"], r["L"], r["backend"]): r for r in json.load(f)["rows"]})
    la, lb = labels
    lines = [f"| Hk | B | L | backend | splits {la} | {la} us (GB/s) | splits {lb} | {lb} us (GB/s) | {lb}/{la} |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(runs[0], key=lambda k: (-k[0], k[1], k[2], k[3])):
        a, b = runs[0][key], runs[1].get(key)
        if b is None:
            continue
        cell = lambda r: f"{r['us']:.1f} ({r['gbps']:.0f})" if r.get("us") else r.get("error", "-")
        ratio = f"{b['us'] / a['us']:.2f}" if a.get("us") and b.get("us") else "-"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {a.get('num_splits', '-')} | {cell(a)} | "
                     f"{b.get('num_splits', '-')} | {cell(b)} | {ratio} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/libflashattn.so")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--lengths", default="1024,4096,16384,65536")
    ap.add_argument("--hks", default="32,8")
    ap.add_argument("--hq", type=int, default=32)
    ap.add_argument("--hdim", type=int, default=128)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--peers", default="sdpa_flash,sdpa_cudnn,sdpa_efficient")
    ap.add_argument("--max-gb", type=float, default=40.0, help="skip shapes whose K+V exceed this")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="B 8, L 4k/16k, Hk 8 only")
    ap.add_argument("--ours", default="ours,ours_split1,ours_page16,ours_page256",
                    help="which of our variants to time")
    ap.add_argument("--ab-table", nargs=2, metavar=("A_JSON", "B_JSON"),
                    help="no timing: print (and --out-md) the A/B table of two --out-json files")
    ap.add_argument("--ab-labels", default="A,B")
    ap.add_argument("--out-json")
    ap.add_argument("--out-md")
    args = ap.parse_args()
    if args.ab_table:
        md = ab_table(*args.ab_table, args.ab_labels.split(",", 1))
        print(md)
        if args.out_md:
            with open(args.out_md, "w") as f:
                f.write(md)
        return
    args.iters = max(args.iters, 20)
    args.ours = [v for v in args.ours.split(",") if v]
    args.peers = [p for p in args.peers.split(",") if p]
    import torch
    lib = load_library(args.lib)
    declare_kvcache(lib)
    if lib.fa_cuda_device_count() == 0:
        sys.exit("no CUDA device")
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    batches = [8] if args.quick else [int(x) for x in args.batches.split(",")]
    lengths = [4096, 16384] if args.quick else [int(x) for x in args.lengths.split(",")]
    hks = [8] if args.quick else [int(x) for x in args.hks.split(",")]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}; warmup {args.warmup}, median of {args.iters}")
    rows = []
    for hk in hks:
        for b in batches:
            for L in lengths:
                gb = 2 * b * L * hk * args.hdim * dtype.itemsize / 1e9
                if gb > args.max_gb:
                    print(f"skip Hk {hk} B {b} L {L}: K+V {gb:.1f} GB > {args.max_gb}")
                    continue
                print(f"Hk {hk} B {b} L {L} (K+V {gb:.2f} GB)", flush=True)
                torch.manual_seed(b * 1000003 + L + hk)
                rows += run_shape(torch, lib, args, b, L, args.hq, hk, args.hdim, dtype)
    md = markdown(rows, args.peers, f"{args.dtype}, d{args.hdim}, Hq {args.hq}")
    print(md)
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump(dict(method=__doc__, rows=rows), f, indent=1)
    if args.out_md:
        with open(args.out_md, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
