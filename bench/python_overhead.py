"""Per-call host overhead of each Python layer, at a shape small enough that the kernel is negligible.

Rows, thinnest first (all forward unless named):
  _C.torch_forward_preallocated  extension + C ABI: tensors read in C++, outputs preallocated
  _C.forward (DLPack)       the framework-neutral binding on the same tensors (4 DLPack exports)
  _C.torch_fwd              + out and lse allocated through torch inside the same call
  _C.torch_bwd              the backward's whole host path below autograd: 6 tensors read,
                            dq/dk/dv and the workspace allocated through torch, launches
  torch.ops.flashattn.fwd   + the torch.library custom-op dispatcher (the torch.compile path)
  flash_attn_func           the public function in eager mode, no grad (direct path)
  flash_attn_func lse       the same with return_attn_probs=True (allocates lse too)
  flash_attn_func+grad      the same with inputs requiring grad (autograd.Function)
  ...+grad via custom op    the same through the custom op and register_autograd (the old path)
  flash_attn_func fwd+bwd   forward and torch.autograd.grad
  empty Function fwd+bwd    a Python autograd.Function that only allocates its outputs and
                            gradients (no extension call, no launch): the floor of any Python
                            autograd.Function plus torch.autograd.grad on this host. fwd+bwd minus
                            this row is what flashattn's own layers and launches add.
  sdpa / sdpa+grad / sdpa fwd+bwd   torch.nn.functional.scaled_dot_product_attention, same tensors
  torch x.add_(1)           the cheapest torch op that launches one kernel: torch's own floor
  torch.neg(q)              a torch op that allocates its output like q and launches one kernel:
                            the floor of any eager call that returns a new tensor through torch's
                            allocator (flash_attn_func's minimum without its own launch costs)
  ... packed                the row above with the call's outputs packed into one allocation
                            (FLASHATTN_PACK_BYTES, here 1 MiB; the other rows: as the environment
                            says, off by default)
  decode ... (--decode-shape; printed last; --rows picks fwd, decode or all) one KV-cache
                            decode call per row, for each cache layout (contiguous, paged) and
                            with/without appending k/v (Nq new keys per sequence, in place;
                            the append rows write the same cache rows on every call):
    _C.torch_kvcache_fwd      the extension entry the eager call reaches (route check, tensors read,
                              out allocated, launch)
    flash_attn_with_kvcache   the public function in eager mode (cache_seqlens an int32 tensor)
    ... int seqlens           the same with cache_seqlens a Python int (converted to a tensor per call)
    ... lse                   the same with return_softmax_lse=True
    torch.ops.flashattn.kvcache_fwd   the custom op (the torch.compile path)
    sdpa                      torch's SDPA (enable_gqa, no mask: exact for Nq 1) over the same
                              contiguous cache, no append;
                              "+ copy_ append" first copies k/v into the cache with two copy_ calls
  raw from Python / binding only (CUDA)   torch._C._cuda_sleep(0), torch's binding of a one-thread
                            kernel launch (no dispatcher, no allocation), and a binding call that
                            launches nothing; their difference is an in-process raw launch, timed
                            round-robin with the other rows ("in-process over raw" lines)
  alloc ...                 one torch allocation (and its free) as the extension makes them: out
                            (torch.empty_like(q)), lse and workspace (a 0-element template's
                            new_empty(shape)), and torch.empty(shape, dtype=, device=) for
                            comparison. On CUDA these go through the caching allocator; the rows
                            say how much of a call's host time its allocations are.

Two numbers per row (same definitions as bench/host_overhead.cpp, fa_host_overhead):
  host us  CPU time to issue one call: batches of --batch calls with no synchronisation inside
           (timed), the stream drained between batches (not timed); the median batch.
  wall us  --iters calls back to back and one synchronisation, divided by --iters.
The last lines say how the extension read torch tensors: "shim" (torch's stable C shim, one
attribute read per tensor; the CUDA stream from the shim too) or "attr: why" (six attribute reads
per tensor and a pybind11 call for the stream; FLASHATTN_TENSOR_READ=attr), and how it allocated
outputs: "shim" (aoti_torch_empty_strided + THPVariable_Wrap, no Python call) or "python: why"
(torch.empty_like / new_empty; FLASHATTN_TENSOR_ALLOC=python).
"over raw" is host us minus the host us of a raw empty-kernel launch (<<<1,32>>>, one
cudaLaunchKernel) measured by fa_host_overhead; pass --host-bench PATH/TO/fa_host_overhead (its own
table is printed first) or --raw-us X. The issue's goal: flash_attn_func's "over raw" <= 5 us.

Usage: python bench/python_overhead.py [--device cuda|cpu] [--iters N] [--batch K] [--shape B,Nq,Nk,H,D]
                                       [--host-bench PATH] [--raw-us X] [--threads T] [--cpu-time]
                                       [--rows all|fwd|decode] [--decode-shape B,Nq,L,Hq,Hk,D,PAGE]
On CPU (no GPU) the numbers include the CPU backend's tiny compute; use them as a proxy for the
Python-side cost only. --cpu-time times with the thread's CPU clock instead of the wall clock: on a
shared, loaded machine it leaves out the time other processes hold the core (host us only).
"""

import argparse
import re
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

import flashattn
from flashattn import _C, _torch


def bench(fn, iters, batch, sync, clock=time.perf_counter):
    for _ in range(max(20, iters // 20)):  # warm-up: caches, lazy init, allocator pools
        fn()
    sync()
    per_call = []
    for _ in range(max(1, iters // batch)):
        t0 = clock()
        for _ in range(batch):
            fn()
        per_call.append((clock() - t0) / batch * 1e6)
        sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    wall = (time.perf_counter() - t0) / iters * 1e6
    return statistics.median(per_call), wall


def raw_from_host_bench(path, shape, iters):
    out = subprocess.run([path, "--shape", shape, "--iters", str(iters)], capture_output=True, text=True, check=False)
    print(out.stdout + out.stderr)
    m = re.search(r"^raw launch: empty kernel\S*\s.*?\s+([0-9.]+)\s+([0-9.]+)", out.stdout, re.M)
    return float(m.group(1)) if m else None


PACK = 1 << 20  # FLASHATTN_PACK_BYTES for the "packed" rows


def decode_rows(shape, dev, dtype):
    """Rows of one decode call per cache layout and append mode; see the module docstring."""
    b, nq, cache, hq, hk, d, page = (int(x) for x in shape.split(","))
    if cache % page or cache <= nq:
        raise SystemExit(f"--decode-shape: cache length {cache} must be a multiple of the page size {page} and > Nq")
    q = torch.randn(b, nq, hq, d, device=dev, dtype=dtype)
    k_new = torch.randn(b, nq, hk, d, device=dev, dtype=dtype)
    v_new = torch.randn_like(k_new)
    kc = torch.randn(b, cache, hk, d, device=dev, dtype=dtype)
    vc = torch.randn_like(kc)
    # Paged: the same keys in pages of PAGE rows, placed in a shuffled order through the block table.
    blocks = b * cache // page
    table = torch.randperm(blocks, device=dev).to(torch.int32).view(b, cache // page)
    kp = torch.empty(blocks, page, hk, d, device=dev, dtype=dtype)
    vp = torch.empty_like(kp)
    kp[table.long().flatten()] = kc.reshape(blocks, page, hk, d)
    vp[table.long().flatten()] = vc.reshape(blocks, page, hk, d)
    route = _torch._ROUTE  # the mode flash_attn_with_kvcache's eager call passes
    qt, kt, vt = q.transpose(1, 2), kc.transpose(1, 2), vc.transpose(1, 2)
    tail = kc[:, cache - nq:]  # where "+ copy_ append" writes, as the append rows do
    vtail = vc[:, cache - nq:]
    rows = []
    for layout, k_cache, v_cache, bt in (("contig", kc, vc, None), (f"page{page}", kp, vp, table)):
        for append in (False, True):
            kn, vn = (k_new, v_new) if append else (None, None)
            # Appending fills rows cache-nq .. cache-1, so both modes attend over the whole cache.
            n = cache - nq if append else cache
            seqlens = torch.full((b,), n, dtype=torch.int32, device=dev)
            tag = f"decode {layout}{' +kv' if append else ''}"

            def c_entry(k_cache=k_cache, v_cache=v_cache, kn=kn, vn=vn, seqlens=seqlens, bt=bt):
                return _C.torch_kvcache_fwd(q, k_cache, v_cache, kn, vn, seqlens, None, bt, route, False, None, True,
                                            -1, -1, 0.0, 0)

            def eager(k_cache=k_cache, v_cache=v_cache, kn=kn, vn=vn, seqlens=seqlens, bt=bt, lse=False):
                return flashattn.flash_attn_with_kvcache(q, k_cache, v_cache, kn, vn, cache_seqlens=seqlens,
                                                         block_table=bt, causal=True, return_softmax_lse=lse)

            def op(k_cache=k_cache, v_cache=v_cache, kn=kn, vn=vn, seqlens=seqlens, bt=bt):
                return torch.ops.flashattn.kvcache_fwd(q, k_cache, v_cache, kn, vn, seqlens, None, bt, 0.0, True, -1,
                                                       -1, 0.0, 0)

            rows += [
                (f"{tag}: _C.torch_kvcache_fwd", c_entry),
                (f"{tag}: flash_attn_with_kvcache", eager),
                (f"{tag}: ... int seqlens", lambda eager=eager, n=n: eager(seqlens=n)),
                (f"{tag}: ... lse", lambda eager=eager: eager(lse=True)),
                (f"{tag}: torch.ops.flashattn.kvcache_fwd", op),
            ]
    rows += [
        ("decode contig: sdpa", lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=hq != hk)),
        ("decode contig +kv: sdpa + copy_ append",
         lambda: (tail.copy_(k_new), vtail.copy_(v_new), F.scaled_dot_product_attention(qt, kt, vt,
                                                                                         enable_gqa=hq != hk))),
    ]
    desc = f"decode: q={tuple(q.shape)} cache={tuple(kc.shape)} paged={tuple(kp.shape)} new={tuple(k_new.shape)}"
    return rows, desc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() and flashattn.cuda_built() else "cpu")
    ap.add_argument("--iters", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=200, help="calls per timed batch (keep below the launch queue)")
    ap.add_argument("--shape", default="1,1,16,2,128", help="batch,seqlen_q,seqlen_k,heads,head_dim")
    ap.add_argument("--host-bench", help="path of fa_host_overhead: run it and take the raw launch from it")
    ap.add_argument("--raw-us", type=float, help="host us of a raw kernel launch, if measured elsewhere")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU only: torch.set_num_threads (the torch layer passes it to the CPU backend); 1 keeps "
                         "thread wake-ups out of a per-call measurement")
    ap.add_argument("--cpu-time", action="store_true", help="host us from the thread's CPU clock (loaded machines)")
    ap.add_argument("--rows", choices=("all", "fwd", "decode"), default="all",
                    help="fwd: the forward/backward/alloc rows; decode: the KV-cache decode rows; all: both")
    ap.add_argument("--decode-shape", default="1,1,256,32,8,128,16",
                    help="batch,seqlen_q,cache_len,heads_q,heads_k,head_dim,page_size of the decode rows")
    ap.add_argument("--only", help="regex: keep only the rows whose name it matches (re.search)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure the rows round-robin this many times and print each row's median (and the "
                         "range): a loaded host's drift then spreads over every row alike")
    ap.add_argument("--ab-alloc", action="store_true",
                    help="add a twin of each flash_attn_func / _C.torch_fwd row with outputs allocated through "
                         "Python calls (_C.torch_shim_alloc(False)), measured in the same process")
    ap.add_argument("--ab-ws", action="store_true",
                    help="add a twin of each flash_attn_func / _C.torch_fwd / _C.torch_bwd row with the workspace "
                         "query made on every call (_C.torch_ws_memo(False)), measured in the same process")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    raw = args.raw_us
    if args.host_bench:
        raw = raw_from_host_bench(args.host_bench, args.shape, args.iters) or raw
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
    qtg, ktg, vtg = (x.transpose(1, 2) for x in (qg, kg, vg))
    g = torch.randn_like(q)
    gt = g.transpose(1, 2)
    one = torch.zeros(1, device=dev)
    causal = nq > 1
    threads = 0 if dev.type == "cuda" else torch.get_num_threads()
    out_ptr, lse_ptr = out.data_ptr(), lse.data_ptr()
    f32_template = torch.empty(0, dtype=torch.float32, device=dev)
    lse_shape = (b, h, nq)

    def via_ops():
        _torch._FORCE_OPS = True
        try:
            return flashattn.flash_attn_func(qg, kg, vg, causal=causal)
        finally:
            _torch._FORCE_OPS = False

    def fa_fwd_bwd():
        o = flashattn.flash_attn_func(qg, kg, vg, causal=causal)
        torch.autograd.grad(o, (qg, kg, vg), g)

    class EmptyFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return torch.empty_like(q)

        @staticmethod
        def backward(ctx, dout):
            q, k, v = ctx.saved_tensors
            return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def empty_fwd_bwd():
        o = EmptyFunction.apply(qg, kg, vg)
        torch.autograd.grad(o, (qg, kg, vg), g)

    def sdpa_fwd_bwd():
        o = F.scaled_dot_product_attention(qtg, ktg, vtg, is_causal=causal)
        torch.autograd.grad(o, (qtg, ktg, vtg), gt)

    rows = [
        ("_C.torch_forward_preallocated",
         lambda: _C.torch_forward_preallocated(q, k, v, out_ptr, lse_ptr, 0.0, causal, -1, -1, 0.0, False)),
        ("_C.forward (DLPack)", lambda: _C.forward(q, k, v, out, lse, 0.0, causal, -1, -1, 0.0, False, 0, 0, threads,
                                                   stream, None)),
        ("_C.torch_fwd", lambda: _C.torch_fwd(q, k, v, 0, True, 0.0, causal, -1, -1, 0.0, False)),
        ("_C.torch_bwd", lambda: _C.torch_bwd(False, g, q, k, v, out, lse, 0.0, causal, -1, -1, 0.0, False)),
        ("torch.ops.flashattn.fwd", lambda: torch.ops.flashattn.fwd(q, k, v, 0.0, causal, -1, -1, 0.0, False)),
        ("flash_attn_func", lambda: flashattn.flash_attn_func(q, k, v, causal=causal)),
        ("flash_attn_func lse", lambda: flashattn.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True)),
        ("flash_attn_func+grad", lambda: flashattn.flash_attn_func(qg, kg, vg, causal=causal)),
        ("flash_attn_func+grad via custom op", via_ops),
        ("flash_attn_func fwd+bwd", fa_fwd_bwd),
        ("empty Function fwd+bwd", empty_fwd_bwd),
        ("sdpa", lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)),
        ("sdpa+grad", lambda: F.scaled_dot_product_attention(qtg, ktg, vtg, is_causal=causal)),
        ("sdpa fwd+bwd", sdpa_fwd_bwd),
        ("torch x.add_(1)", lambda: one.add_(1)),
        ("torch.neg(q)", lambda: torch.neg(q)),
        ("flash_attn_func lse packed",
         lambda: flashattn.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True), PACK),
        ("flash_attn_func+grad packed", lambda: flashattn.flash_attn_func(qg, kg, vg, causal=causal), PACK),
        ("_C.torch_bwd packed", lambda: _C.torch_bwd(True, g, q, k, v, out, lse, 0.0, causal, -1, -1, 0.0, False),
         PACK),
        ("flash_attn_func fwd+bwd packed", fa_fwd_bwd, PACK),
        ("alloc out: torch.empty_like(q)", lambda: torch.empty_like(q)),
        ("alloc lse: template.new_empty", lambda: f32_template.new_empty(lse_shape)),
        ("alloc lse: torch.empty(kwargs)", lambda: torch.empty(lse_shape, dtype=torch.float32, device=dev)),
    ]
    if dev.type == "cuda":
        # An in-process raw launch, timed round-robin with the rows above (fa_host_overhead's raw
        # launch runs in another process at another moment, and this host's speed drifts by tens
        # of percent between rounds): torch's own binding of a one-thread spin kernel (no
        # dispatcher, no allocation), minus a binding call that launches nothing.
        rows += [("raw from Python: _C._cuda_sleep(0)", lambda: torch._C._cuda_sleep(0)),
                 ("binding only: _C._cuda_getCurrentRawStream", lambda: torch._C._cuda_getCurrentRawStream(0))]
    if args.rows == "decode":
        rows = []
    if args.rows != "fwd":
        extra, decode_desc = decode_rows(args.decode_shape, dev, dtype)
        rows += extra
    print(f"python_overhead: device={dev} dtype={dtype} q={tuple(q.shape)} k={tuple(k.shape)} causal={causal} "
          f"iters={args.iters} batch={args.batch} torch={torch.__version__}")
    if args.rows != "fwd":
        print(decode_desc)
    if args.only:
        rows = [r for r in rows if re.search(args.only, r[0])]
    def twin_rows(rows, switch, suffix, pattern):
        def switched_off(fn):
            def run():
                previous = switch(False)
                try:
                    return fn()
                finally:
                    switch(previous)
            return run
        # The twin toggles the switch around every call (two cheap extension calls, ~0.1 us, counted
        # against the twin): the A/B is conservative for the path switched off.
        return [t for r in rows for t in
                ([r, (r[0] + suffix, switched_off(r[1]), *r[2:])]
                 if re.match(pattern, r[0]) and not r[2:] and "[" not in r[0] else [r])]

    if args.ab_alloc:
        rows = twin_rows(rows, _C.torch_shim_alloc, " [alloc python]", r"(flash_attn_func|_C\.torch_fwd)")
    if args.ab_ws:
        rows = twin_rows(rows, _C.torch_ws_memo, " [no ws memo]", r"(flash_attn_func|_C\.torch_(fwd|bwd))")
    w = max(36, *(len(r[0]) for r in rows))
    clock = time.thread_time if args.cpu_time else time.perf_counter
    results = {r[0]: [] for r in rows}
    failed = {}
    for _ in range(max(1, args.repeat)):
        for name, fn, *pack in rows:
            if name in failed:
                continue
            previous = _C.torch_pack_bytes(pack[0]) if pack else None
            try:
                results[name].append(bench(fn, args.iters, args.batch, sync, clock))
            except Exception as e:  # one layer failing (e.g. an unsupported shape) must not hide the rest
                failed[name] = f"failed: {type(e).__name__}: {e}"
            finally:
                if pack:
                    _C.torch_pack_bytes(previous)
    spread = args.repeat > 1
    print(f"{'layer':{w}s} {'host us':>9s} {'wall us':>9s} {'over raw':>9s}" + ("  host range" if spread else ""))
    med = {}  # each measured row's median host us
    for name, *_ in rows:
        if name in failed:
            print(f"{name:{w}s} {failed[name]}")
            continue
        hosts = [h for h, _ in results[name]]
        host, wall = statistics.median(hosts), statistics.median(wl for _, wl in results[name])
        med[name] = host
        over = f"{host - raw:+9.2f}" if raw is not None else f"{'-':>9s}"
        print(f"{name:{w}s} {host:9.2f} {wall:9.2f} {over}" + (f"  {min(hosts):.2f}-{max(hosts):.2f}" if spread else ""))
    if spread:
        print(f"(medians over {args.repeat} round-robin repeats of every row)")
    launch, binding = med.get("raw from Python: _C._cuda_sleep(0)"), med.get("binding only: _C._cuda_getCurrentRawStream")
    if launch is not None and binding is not None:
        raw_in = launch - binding
        print(f"in-process raw launch: {raw_in:.2f} us (_cuda_sleep minus the binding call)")
        for name in ("flash_attn_func", "flash_attn_func lse", "torch.neg(q)"):
            if name in med:
                print(f"in-process over raw: {name} {med[name] - raw_in:+.2f} us")
    print(f"tensor read: {_C.torch_tensor_read()}")
    print(f"tensor alloc: {_C.torch_tensor_alloc()}")
    if raw is None:
        print("over raw: not computed (pass --host-bench PATH/TO/fa_host_overhead or --raw-us X)")
    else:
        print(f"over raw: host us minus {raw:.2f} us, the host cost of one raw empty-kernel launch (fa_host_overhead)")


if __name__ == "__main__":
    main()
