#!/usr/bin/env python3
"""Side-by-side attention benchmark: flashattn's CUDA kernels (through the C ABI, via ctypes)
against PyTorch SDPA's FLASH_ATTENTION (FlashAttention-2), CUDNN_ATTENTION and
EFFICIENT_ATTENTION backends, and optionally FlexAttention (--peers ...,flex: torch.compile'd
flex_attention, a causal BlockMask), in one process, on the FlashAttention-3 paper's grid:
16k tokens per batch (B = 16384 / N, H = 2048 / d), d in {64, 128, 256},
N in {512, ..., 16384}, causal and not, bf16 (--dtype fp16).

Method (printed with the results):
  * CUDA events around each call on the current stream; warm-up first (--warmup calls and at
    least --warmup-ms, 500, of calls), and for the first backend timed after a shape's inputs are
    allocated (a pause) --settle-ms, 2500, more: the board runs above the clock it can sustain
    for a while after a pause, longer than 0.5 s (session 35: with 0.5 s the peer, timed first,
    measured 5-8% faster at N512 than with 3 s; ours, timed after it, the same), so every backend
    is timed at the clock it sustains; the median of --iters (>= 20) timed calls.
  * --rounds R (default 1): every backend of a shape is timed R times on the same inputs, the
    order reversed each round (peers then ours, ours then peers, ...), and the median of the R
    medians is reported (each round's in "ms_rounds"). One round per shape read ±2-9% apart on
    one H100 between two whole-grid runs minutes apart (session 40); alternated rounds put the
    peers and ours through the same stretch of the board's clock.
  * Inputs rotate over >= 3 buffer sets (more when a set is small) so that the sets together
    exceed the 60 MB L2 and a timed call does not find its inputs in cache.
  * Ours: fa_forward / fa_backward with preallocated outputs and workspace (fa_*_workspace_size),
    on torch's current stream. The backward is timed alone: our forward runs once per buffer set
    beforehand to produce out and lse.
  * SDPA: q, k, v are (B, N, H, D) tensors passed as .transpose(1, 2) views (what a user with
    flash_attn-layout tensors passes). Backward: the forward graph is built once per buffer set,
    and only torch.autograd.grad(out, (q, k, v), dout, retain_graph=True) is timed, so the
    number covers SDPA's backward kernels plus autograd's per-call host work, not the forward.
  * FlexAttention (peer "flex"): torch.compile(flex_attention) with its default options (what a
    user writes), on the same transpose views; causal = a BlockMask of q_idx >= kv_idx (N_q = N_k
    here, so top-left and bottom-right agree), built once per shape outside the timing. Each
    shape compiles once (in the warm-up, not timed; seconds per shape), so dynamo's recompile
    limit is raised for the grid. Backward as SDPA's: autograd.grad on a retained graph.
  * FLOPs: forward 4 * B * H * Nq * Nk * d (halved when causal), backward 2.5x forward.
  * FP8 (forward only; --algos fa3fp8,fa3fp8q): fa_fp8_forward (BLOCK scales, incoherent
    processing, the library's defaults) with each buffer set owning its workspace.
    fa3fp8: the kernel alone (one full call per set first, then reuse_quantized = 1 timed);
    fa3fp8q: quantisation included (reuse_quantized = 0). Same FLOP count as bf16.

Usage:
  python3 bench/compare.py [--lib build/libflashattn.so] [--algos auto,fa2,fa3,fa3fp8,fa3fp8q] [--pass both]
                           [--hdims 64,128,256] [--seqlens 512,...] [--dtype bf16] [--quick]
                           [--ceilings] [--ablation] [--plot-grid] [--rounds R] [--out DIR]
Ablations: kernels read env-var switches at launch; add yours to ABLATIONS below.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

# ---------------------------------------------------------------------------------------------
# Ablation configurations: (label, algo, env vars for that run). Kernel authors: add the switches
# your kernel reads. Each entry runs in its own child process with exactly its env vars set
# (some switches are read once per process, e.g. sm80's FwdSwitches), at d128, N 8192 (B 2, H 16; --ablation-n),
# causal and not. Ratios are printed against the first entry of the same algo.
# ---------------------------------------------------------------------------------------------
ABLATIONS = [
    ("fa3 default", "fa3", {}),
    ("fa3 no ping-pong", "fa3", {"FA_SM90_FWD_ABLATE": "no_pingpong"}),
    ("fa3 no intra-WG overlap", "fa3", {"FA_SM90_FWD_ABLATE": "no_overlap"}),
    ("fa3 plain (neither)", "fa3", {"FA_SM90_FWD_ABLATE": "plain"}),
    ("fa3 no persistent scheduler", "fa3", {"FA_SM90_FWD_ABLATE": "no_persistent"}),
    ("fa3 no TMA-store epilogue", "fa3", {"FA_SM90_FWD_ABLATE": "no_tma_store"}),
    ("fa3 cp.async loads (no TMA)", "fa3", {"FA_SM90_FWD_ABLATE": "no_tma_load"}),
    ("fa3 no warp specialisation", "fa3", {"FA_SM90_FWD_ABLATE": "no_ws"}),
    # Non-causal tile walk in 32 MB L2 sections (session 4) instead of the head-dim/N rule (4 MB here).
    ("fa3 L2 sections of 32 MB", "fa3", {"FA_SM90_FWD_L2_BUDGET_MB": "32"}),
    # Causal walk with each L2 section's snake rotated (session 27, off by default): a switch-on
    # row; its effect is at causal N1k-2k (--ablation-n 1024), ~0 at N8k (scripts/sched_balance.py).
    ("fa3 rotated causal L2 sections", "fa3", {"FA_SM90_FWD_SECTION_ROTATE": "1"}),
    # Causal L2 sections by the 32 MB budget alone, without the two-round cap (session 36): the
    # cap's effect is at short causal N (--ablation-n 512: 3.9 rounds per section at d128).
    ("fa3 causal sections uncapped", "fa3", {"FA_SM90_FWD_CAUSAL_SECTION_ROUNDS": "0"}),
    # One round per causal section, the snake alternating across sections (session 36, an
    # experiment, off by default): a switch-on row, its effect expected at causal N512 (--ablation-n 512).
    ("fa3 causal sections of one round", "fa3", {"FA_SM90_FWD_CAUSAL_SECTION_ROUNDS": "1"}),
    # O by direct stores from registers instead of the TMA-store epilogue, at run time (session 28):
    # the same comparison as "no TMA-store epilogue" at any head dim, without an extra instance.
    ("fa3 direct O stores (run time)", "fa3", {"FA_SM90_FWD_TMA_STORE": "0"}),
    ("fa2 default", "fa2", {}),
    ("fa2 in-order M blocks", "fa2", {"FA_FWD_REVERSE_M": "0"}),
    ("fa2 mask every block", "fa2", {"FA_FWD_MASK_EVERY_BLOCK": "1"}),
    ("fa1 default", "fa1", {}),
]

# Backward-only ablations (skipped in the forward pass), appended to ABLATIONS for indexing.
# FA_SM90_BWD_ABLATE picks an sm90 backward variant (src/cuda/sm90/flash_bwd.cuh, bf16 d128 only);
# FA_BENCH_DETERMINISTIC=1 is read by this script, not the library: ours runs with
# fa_options.deterministic = 1 (its cost against "fa3 default" is the issue's <= 15% target).
ABLATIONS_BWD = [
    ("fa3 bwd dQ by RED.v4 atomics", "fa3", {"FA_SM90_BWD_ABLATE": "dq_atomic"}),
    ("fa3 bwd 2 stages", "fa3", {"FA_SM90_BWD_ABLATE": "stages2"}),
    ("fa3 bwd 1 stage", "fa3", {"FA_SM90_BWD_ABLATE": "stages1"}),
    ("fa3 bwd split-D 64-key tile", "fa3", {"FA_SM90_BWD_ABLATE": "split_d"}),
    ("fa3 bwd mask test in every tile", "fa3", {"FA_SM90_BWD_ABLATE": "mask_inline"}),
    ("fa3 bwd dS^T by generic stores", "fa3", {"FA_SM90_BWD_ABLATE": "ds_copy"}),
    ("fa3 bwd next-S^T prefetch (opt-in, d64)", "fa3", {"FA_SM90_BWD_ABLATE": "prefetch_s"}),
    ("fa3 bwd deterministic", "fa3", {"FA_BENCH_DETERMINISTIC": "1"}),
    ("fa3 bwd deterministic, atomics", "fa3", {"FA_BENCH_DETERMINISTIC": "1", "FA_SM90_BWD_ABLATE": "dq_atomic"}),
    ("fa3 bwd scalar pre/post passes", "fa3", {"FA_SM90_BWD_PREPOST": "scalar"}),
    # The first adder of a dQ block stores instead of reduce-adding into a zeroed buffer (by default
    # at every length without a right-bounded mask since session 18), here off: the zeroing pass;
    # and the in-order (unrotated) query blocks.
    ("fa3 bwd no first-adder dQ store (zeroing pass)", "fa3", {"FA_SM90_BWD_DQ_STORE": "0"}),
    ("fa3 bwd in-order query blocks", "fa3", {"FA_SM90_BWD_ROTATE_M": "0"}),
    # d128 without a mask takes an 80-query tile (m64n80 wgmmas); 64 = the previous tile.
    ("fa3 bwd 64-query tile (d128 no mask)", "fa3", {"FA_SM90_BWD_D128_NC_BLOCK_M": "64"}),
    ("fa3 bwd plain launches (no PDL)", "fa3", {"FA_SM90_BWD_PDL": "0"}),
    ("fa3 bwd dQ conversion after the main grid", "fa3", {"FA_SM90_BWD_CONVERT_FOLLOW": "0"}),
    # The partial last wave's key blocks walked by several CTAs each (bwd_workspace.hpp).
    ("fa3 bwd no tail split", "fa3", {"FA_SM90_BWD_TAIL_SPLIT": "0"}),
    ("fa2 bwd in-order query blocks", "fa2", {"FA_SM80_BWD_ROTATE_M": "0"}),
    ("fa2 bwd deterministic", "fa2", {"FA_BENCH_DETERMINISTIC": "1"}),
]


def ablation_entries(pas, label_regex=None):
    """(index into ABLATIONS + ABLATIONS_BWD, entry) for one pass, labels matching label_regex."""
    import re
    for idx, e in enumerate(ABLATIONS + ABLATIONS_BWD):
        if label_regex and not re.search(label_regex, e[0]):
            continue
        if idx < len(ABLATIONS) or pas == "bwd":
            yield idx, e


# ---------------------------------------------------------------------------------------------
# The C ABI, declared exactly as include/flashattn/flashattn.h
# ---------------------------------------------------------------------------------------------
FA_MAX_RANK = 4
FA_OK, FA_ERROR_UNSUPPORTED = 0, 2
FA_DTYPE = {"float32": 0, "float16": 1, "bfloat16": 2}
FA_DEVICE_CUDA = 1
FA_BACKEND_CUDA = 2
FA_ALGO = {"auto": 0, "fa1": 1, "fa2": 2, "fa3": 3}
# FP8 forward "algos": fa_fp8_forward, the kernel alone (reuse_quantized = 1) or with quantisation.
FP8_ALGOS = {"fa3fp8": 1, "fa3fp8q": 0}  # -> reuse_quantized of the timed calls


class FaTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),  # fa_dtype (a C enum: int-sized)
        ("device", ctypes.c_int),  # fa_device
        ("device_id", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * FA_MAX_RANK),
        ("strides", ctypes.c_int64 * FA_MAX_RANK),
    ]


class FaOptions(ctypes.Structure):
    _fields_ = [
        ("softmax_scale", ctypes.c_float),
        ("causal", ctypes.c_int),
        ("window_left", ctypes.c_int),
        ("window_right", ctypes.c_int),
        ("softcap", ctypes.c_float),
        ("deterministic", ctypes.c_int),
        ("backend", ctypes.c_int),  # fa_backend
        ("algo", ctypes.c_int),  # fa_algo
        ("num_threads", ctypes.c_int),
        ("stream", ctypes.c_void_p),
        ("workspace", ctypes.c_void_p),
        ("workspace_bytes", ctypes.c_size_t),
    ]


class FaFp8(ctypes.Structure):
    _fields_ = [
        ("scaling", ctypes.c_int),  # fa_fp8_scaling
        ("incoherent", ctypes.c_int),
        ("seed", ctypes.c_uint64),
        ("reuse_quantized", ctypes.c_int),
    ]


class FaVarlen(ctypes.Structure):
    _fields_ = [
        ("cu_seqlens_q", ctypes.POINTER(FaTensor)),
        ("cu_seqlens_k", ctypes.POINTER(FaTensor)),
        ("seqused_k", ctypes.POINTER(FaTensor)),
        ("max_seqlen_q", ctypes.c_int64),
        ("max_seqlen_k", ctypes.c_int64),
    ]


def load_library(path):
    if os.path.isdir(path):
        path = os.path.join(path, "libflashattn.so")
    lib = ctypes.CDLL(os.path.abspath(path))
    T, O, V = ctypes.POINTER(FaTensor), ctypes.POINTER(FaOptions), ctypes.POINTER(FaVarlen)
    sigs = {
        "fa_options_init": (None, [O]),
        "fa_last_error": (ctypes.c_char_p, []),
        "fa_build_info": (ctypes.c_char_p, []),
        "fa_cuda_device_count": (ctypes.c_int, []),
        "fa_forward": (ctypes.c_int, [T, T, T, T, T, O]),
        "fa_backward": (ctypes.c_int, [T, T, T, T, T, T, T, T, T, O]),
        "fa_forward_workspace_size": (ctypes.c_int, [T, T, T, V, O, ctypes.POINTER(ctypes.c_size_t)]),
        "fa_backward_workspace_size": (ctypes.c_int, [T, T, T, V, O, ctypes.POINTER(ctypes.c_size_t)]),
    }
    F8 = ctypes.POINTER(FaFp8)
    fp8_sigs = {  # optional: a library older than the fp8 forward still serves the other algos
        "fa_fp8_init": (None, [F8]),
        "fa_fp8_forward": (ctypes.c_int, [T, T, T, F8, T, T, O]),
        "fa_fp8_workspace_size": (ctypes.c_int, [T, T, T, F8, O, ctypes.POINTER(ctypes.c_size_t)]),
    }
    for name, (res, args) in list(sigs.items()) + list(fp8_sigs.items()):
        f = getattr(lib, name, None)
        if f is None and name in fp8_sigs:
            continue
        f.restype, f.argtypes = res, args
    return lib


class Unsupported(Exception):
    pass


def check_status(lib, st):
    """Raises Unsupported (the call cannot be served here) or RuntimeError unless st is FA_OK."""
    if st == FA_OK:
        return
    msg = lib.fa_last_error().decode()
    if st == FA_ERROR_UNSUPPORTED:
        raise Unsupported(msg)
    raise RuntimeError(f"flashattn status {st}: {msg}")


def tensor_desc(t):
    d = FaTensor()
    d.data = t.data_ptr()
    d.dtype = FA_DTYPE[str(t.dtype).replace("torch.", "")]
    d.device = FA_DEVICE_CUDA
    d.device_id = t.device.index or 0
    d.rank = t.dim()
    for i in range(t.dim()):
        d.shape[i] = t.shape[i]
        d.strides[i] = t.stride(i)
    return d


class Ours:
    """One (algo, shape) configuration of our kernels with descriptors built once, so the timed
    call is one ctypes call (host overhead close to what a C++ caller pays)."""

    def __init__(self, lib, torch, algo, causal, sets, backward, deterministic=False):
        self.lib, self.torch = lib, torch
        self.opt = FaOptions()
        lib.fa_options_init(ctypes.byref(self.opt))
        self.opt.causal = int(causal)
        self.opt.deterministic = int(deterministic)
        self.opt.backend = FA_BACKEND_CUDA
        self.opt.algo = FA_ALGO[algo]
        self.opt.stream = torch.cuda.current_stream().cuda_stream
        self.sets = []
        for s in sets:
            self.sets.append({k: tensor_desc(v) for k, v in s.items()})
        d0 = self.sets[0]
        size = ctypes.c_size_t(0)
        fn = lib.fa_backward_workspace_size if backward else lib.fa_forward_workspace_size
        self.check(fn(ctypes.byref(d0["q"]), ctypes.byref(d0["k"]), ctypes.byref(d0["v"]), None,
                      ctypes.byref(self.opt), ctypes.byref(size)))
        self.ws = torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda")
        self.opt.workspace = self.ws.data_ptr() if size.value else None
        self.opt.workspace_bytes = size.value
        self.workspace_bytes = size.value

    def check(self, st):
        check_status(self.lib, st)

    def forward(self, i):
        d = self.sets[i]
        self.check(self.lib.fa_forward(ctypes.byref(d["q"]), ctypes.byref(d["k"]), ctypes.byref(d["v"]),
                                       ctypes.byref(d["out"]), ctypes.byref(d["lse"]), ctypes.byref(self.opt)))

    def backward(self, i):
        d = self.sets[i]
        self.check(self.lib.fa_backward(
            ctypes.byref(d["q"]), ctypes.byref(d["k"]), ctypes.byref(d["v"]), ctypes.byref(d["out"]),
            ctypes.byref(d["lse"]), ctypes.byref(d["dout"]), ctypes.byref(d["dq"]), ctypes.byref(d["dk"]),
            ctypes.byref(d["dv"]), ctypes.byref(self.opt)))


class OursFp8:
    """fa_fp8_forward for one shape: every buffer set gets its own workspace, so that with
    reuse_quantized = 1 each timed call reads the quantised copies of its own inputs."""

    def __init__(self, lib, torch, algo, causal, sets):
        if not hasattr(lib, "fa_fp8_forward"):
            raise Unsupported("this libflashattn has no fa_fp8_forward")
        self.lib = lib
        self.opt = FaOptions()
        lib.fa_options_init(ctypes.byref(self.opt))
        self.opt.causal = int(causal)
        self.opt.backend = FA_BACKEND_CUDA
        self.opt.stream = torch.cuda.current_stream().cuda_stream
        self.f = FaFp8()
        lib.fa_fp8_init(ctypes.byref(self.f))
        self.sets = [{k: tensor_desc(v) for k, v in s.items()} for s in sets]
        d0 = self.sets[0]
        size = ctypes.c_size_t(0)
        check_status(lib, lib.fa_fp8_workspace_size(ctypes.byref(d0["q"]), ctypes.byref(d0["k"]), ctypes.byref(d0["v"]),
                                                     ctypes.byref(self.f), ctypes.byref(self.opt), ctypes.byref(size)))
        self.workspace_bytes = size.value
        self.ws = [torch.empty(max(size.value, 1), dtype=torch.uint8, device="cuda") for _ in sets]
        # One full call per set fills its workspace (and checks the call is served here).
        for i in range(len(sets)):
            self.forward(i)
        self.f.reuse_quantized = FP8_ALGOS[algo]

    def forward(self, i):
        d = self.sets[i]
        self.opt.workspace = self.ws[i].data_ptr()
        self.opt.workspace_bytes = self.workspace_bytes
        check_status(self.lib, self.lib.fa_fp8_forward(
            ctypes.byref(d["q"]), ctypes.byref(d["k"]), ctypes.byref(d["v"]), ctypes.byref(self.f),
            ctypes.byref(d["out"]), ctypes.byref(d["lse"]), ctypes.byref(self.opt)))


# Warm-up length in milliseconds of back-to-back calls (--warmup-ms), on top of --warmup calls.
# Why: from a pause (allocating the next shape's inputs, building SDPA's graph) the H200 boosts its
# SM clock, and the first ~100-150 ms of a d128 backward ran 8-13% faster than the rate it then
# sustains (LOG, session 16: ours 605 -> 545 TFLOP/s, cuDNN 572 -> 518 at N4k). With a fixed 5-call
# warm-up the backend timed first after the pause (the peers) got the boost and the one after it
# did not; after this warm-up every backend is timed at the clock it sustains, as in training.
WARMUP_MS = 500.0
# Extra warm-up (--settle-ms) for the first time_calls after make_sets: the pause of allocating a
# shape's inputs lets the board boost again, and 0.5 s of calls did not bring it back to the
# clock it sustains (H200, session 35, warm-up 500 against 3000 ms, two alternations: cuDNN at
# d128 / d256 / d64-causal N512 489 / 501 / 260 against 450-462 / 472-480 / 239-245 TFLOP/s,
# ours, timed after it, 452 / 452-454 / 214-225 against 448-453 / 451-456 / 225-229).
SETTLE_MS = 2500.0
_settle_pending = False


def time_calls(torch, fns, warmup, iters):
    """Median milliseconds of iters calls rotating over fns, each bracketed by CUDA events, after
    warmup calls and at least WARMUP_MS of calls (+ SETTLE_MS after make_sets)."""
    global _settle_pending
    n = len(fns)
    for i in range(warmup):
        fns[i % n]()
    torch.cuda.synchronize()
    warm_ms = WARMUP_MS + (SETTLE_MS if _settle_pending else 0.0)
    _settle_pending = False
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < warm_ms:
        for f in fns:
            f()
        torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        fns[i % n]()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def flops(pas, b, h, n, d, causal):
    f = 4.0 * b * h * n * n * d
    if causal:
        f /= 2
    return f * (2.5 if pas == "bwd" else 1.0)


def make_sets(torch, b, n, h, d, dtype, backward, l2_bytes=60e6):
    global _settle_pending
    _settle_pending = True
    per = b * n * h * d * dtype.itemsize * (8 if backward else 4)
    count = max(3, math.ceil(2 * l2_bytes / per))
    sets = []
    for _ in range(count):
        s = {}
        for name in ("q", "k", "v", "dout"):
            s[name] = torch.randn(b, n, h, d, device="cuda", dtype=dtype)
        s["out"] = torch.empty_like(s["q"])
        s["lse"] = torch.empty(b, h, n, device="cuda", dtype=torch.float32)
        if backward:
            for name in ("dq", "dk", "dv"):
                s[name] = torch.empty_like(s["q"])
        else:
            del s["dout"]
        sets.append(s)
    return sets


SDPA_BACKENDS = {"sdpa_flash": "FLASH_ATTENTION", "sdpa_cudnn": "CUDNN_ATTENTION",
                 "sdpa_efficient": "EFFICIENT_ATTENTION"}


def sdpa_backend(peer):
    """The sdpa_kernel context that restricts SDPA to the peer's backend."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([getattr(SDPBackend, SDPA_BACKENDS[peer])])


def attention_fns(torch, sets, pas, attn):
    """One timed callable per buffer set for a peer's attn(q, k, v) on (B, H, N, D) views. Forward:
    call them under torch.no_grad(). Backward: the graphs are built here (so a peer's backend
    context must be open around this call too), and the timed call is autograd.grad on them."""
    if pas == "fwd":
        views = [(s["q"].transpose(1, 2), s["k"].transpose(1, 2), s["v"].transpose(1, 2)) for s in sets]
        return [lambda t=t: attn(*t) for t in views]
    graphs = []
    for s in sets:
        # Leaves in (B, N, H, D); the peer sees their transposes. The transposes' backward is a
        # view (no kernel), so the timed grad call is the peer's backward plus autograd.
        leaves = tuple(s[x].detach().requires_grad_() for x in ("q", "k", "v"))
        out = attn(*(t.transpose(1, 2) for t in leaves))
        graphs.append((out, leaves, s["dout"].transpose(1, 2)))
    return [lambda g=g: torch.autograd.grad(g[0], g[1], g[2], retain_graph=True) for g in graphs]


def time_fns(torch, fns, pas, warmup, iters):
    """(ms, the forward's output of set 0, None for the backward) of a peer's callables."""
    if pas == "fwd":
        with torch.no_grad():
            return time_calls(torch, fns, warmup, iters), fns[0]()
    ms = time_calls(torch, fns, warmup, iters)
    del fns  # the only reference (callers pass the list in): the backward's graphs are freed now
    return ms, None


def time_sdpa(torch, peer, sets, causal, pas, warmup, iters):
    F = torch.nn.functional
    attn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    with sdpa_backend(peer):
        return time_fns(torch, attention_fns(torch, sets, pas, attn), pas, warmup, iters)


_flex = None


def flex_compiled(torch):
    """torch.compile(flex_attention), once per process: every shape of the grid recompiles it
    (static shapes), so dynamo's recompile limit (8 by default; past it dynamo runs the unfused
    eager path, which would time something else) is raised first."""
    global _flex
    if _flex is None:
        import torch._dynamo
        from torch.nn.attention.flex_attention import flex_attention
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 4096))
        _flex = torch.compile(flex_attention)
    return _flex


def time_flex(torch, sets, causal, pas, warmup, iters):
    from torch.nn.attention.flex_attention import create_block_mask
    flex = flex_compiled(torch)
    n = sets[0]["q"].shape[1]  # (B, N, H, D) buffers
    mask = None
    if causal:
        mask = create_block_mask(lambda b_, h_, q_idx, kv_idx: q_idx >= kv_idx, B=None, H=None,
                                 Q_LEN=n, KV_LEN=n, device=sets[0]["q"].device)
    attn = lambda q, k, v: flex(q, k, v, block_mask=mask)  # noqa: E731
    return time_fns(torch, attention_fns(torch, sets, pas, attn), pas, warmup, iters)


def time_peer(torch, peer, sets, causal, pas, warmup, iters):
    if peer == "flex":
        return time_flex(torch, sets, causal, pas, warmup, iters)
    return time_sdpa(torch, peer, sets, causal, pas, warmup, iters)


def time_rounds(rows, retime, rounds, fl):
    """Rounds 2..rounds of a shape (round 1 is the rows' own ms): each row whose backend timed
    (retime[i] not None) is timed again, in reverse order on even rounds, so that no backend is
    always the one timed first or last; its ms becomes the median over the rounds."""
    timed = [(rec, again) for rec, again in zip(rows, retime) if again is not None]
    for rec, _ in timed:
        rec["ms_rounds"] = [rec["ms"]]
    for r in range(1, rounds):
        for rec, again in (reversed(timed) if r % 2 else timed):
            rec["ms_rounds"].append(again())
    for rec, _ in timed:
        rec["ms"] = statistics.median(rec["ms_rounds"])
        rec["tflops"] = fl / rec["ms"] / 1e9


def check_peer_output(rec, out, ref_out, ref_peer):
    """Record a peer's largest difference from the first peer's output (both (B, H, N, D));
    a warning where it is not below 0.05 (bf16/fp16 outputs of randn inputs agree to ~1e-2)."""
    diff = (out.float() - ref_out.float()).abs().max().item()
    rec["max_abs_diff_vs_" + ref_peer] = diff
    if not diff < 0.05:
        rec["warning"] = f"output differs from {ref_peer} by {diff:.3g}"


def run_shape(torch, lib, args, algos, peers, pas, d, n, causal, dtype):
    b, h = max(1, 16384 // n), max(1, 2048 // d)
    sets = make_sets(torch, b, n, h, d, dtype, pas == "bwd")
    fl = flops(pas, b, h, n, d, causal)
    rows = []
    retime = []  # per row: a callable that times the row's backend again (None: it failed)
    ref_out = None
    for peer in peers:
        rec = dict(pass_=pas, causal=causal, d=d, n=n, b=b, h=h, backend=peer)
        again = None
        try:
            ms, out = time_peer(torch, peer, sets, causal, pas, args.warmup, args.iters)
            rec.update(ms=ms, tflops=fl / ms / 1e9)
            again = lambda peer=peer: time_peer(torch, peer, sets, causal, pas, args.warmup, args.iters)[0]
            if out is not None:
                if ref_out is None:
                    ref_out, ref_peer = out, peer
                else:
                    # Every peer computes the same attention as the first: a FlexAttention mask
                    # that did not apply, or a backend that returned garbage, shows here.
                    check_peer_output(rec, out, ref_out, ref_peer)
        except Exception as e:  # a backend that refuses a shape (e.g. efficient at d256 bwd)
            rec.update(ms=None, tflops=None, error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        rows.append(rec)
        retime.append(again)
        torch.cuda.empty_cache()
    dets = {"0": [False], "1": [True], "both": [False, True]}[args.deterministic] if pas == "bwd" else [False]
    for algo, det in [(a, x) for a in algos for x in dets]:
        if algo in FP8_ALGOS and pas != "fwd":
            continue  # the fp8 path is forward only
        suffix = "_det" if det and args.deterministic == "both" else ""
        rec = dict(pass_=pas, causal=causal, d=d, n=n, b=b, h=h, backend=f"ours_{algo}{suffix}", deterministic=det)
        again = None
        try:
            if algo in FP8_ALGOS:
                o = OursFp8(lib, torch, algo, causal, sets)
            else:
                o = Ours(lib, torch, algo, causal, sets, pas == "bwd", deterministic=det)
            if pas == "bwd":
                for i in range(len(sets)):
                    o.forward(i)
                fns = [lambda i=i, o=o: o.backward(i) for i in range(len(sets))]
            else:
                fns = [lambda i=i, o=o: o.forward(i) for i in range(len(sets))]
            ms = time_calls(torch, fns, args.warmup, args.iters)
            rec.update(ms=ms, tflops=fl / ms / 1e9, workspace_bytes=o.workspace_bytes)
            again = lambda fns=fns: time_calls(torch, fns, args.warmup, args.iters)
            if pas == "fwd":
                # Sanity: we time a kernel that computes attention (vs the first SDPA output).
                o.forward(0)
                torch.cuda.synchronize()
                if ref_out is not None:
                    ours_out, sdpa_out = sets[0]["out"].float(), ref_out.transpose(1, 2).float()
                    diff = (ours_out - sdpa_out).abs().max().item()
                    rec["max_abs_diff_vs_sdpa"] = diff
                    if algo in FP8_ALGOS:
                        # e4m3 keeps 3 mantissa bits, so single elements can be far off where few
                        # V rows are averaged (early causal rows: 0.27 at d128 N1024 on the H200);
                        # the relative RMS error over the whole output is what says "attention".
                        # On randn inputs it is about the e4m3 rounding error of one element: the
                        # kernel's arithmetic in float64 on the quantised inputs gives 0.047
                        # (d128 N1024 causal) to 0.057 (d64 N1000), so 0.05 would flag correct
                        # output; garbage is ~1.
                        rel = ((ours_out - sdpa_out).norm() / sdpa_out.norm()).item()
                        rec["rel_rms_vs_sdpa"] = rel
                        if not rel < 0.10:
                            rec["warning"] = f"output differs from SDPA by relative RMS {rel:.3g}"
                    elif not diff < 0.05:
                        rec["warning"] = f"output differs from SDPA by {diff:.3g}"
        except Unsupported as e:
            rec.update(ms=None, tflops=None, error=f"unsupported: {e}")
        except Exception as e:
            rec.update(ms=None, tflops=None, error=f"{type(e).__name__}: {e}")
        rows.append(rec)
        retime.append(again)
    if args.rounds > 1:
        time_rounds(rows, retime, args.rounds, fl)
    del sets, ref_out, retime
    torch.cuda.empty_cache()
    return rows


def deterministic_cost_lines(results, algos):
    """--deterministic both: ours with fa_options.deterministic = 1 against the default, per shape."""
    lines = ["", "## Deterministic backward: cost against the default", "",
             "| algo | d | causal | N | default TFLOP/s | deterministic | det/default |", "|---|---|---|---|---|---|---|"]
    for a in algos:
        for r in results:
            if r["pass_"] != "bwd" or r["backend"] != f"ours_{a}":
                continue
            dr = next((x for x in results if x["backend"] == f"ours_{a}_det" and x["pass_"] == "bwd" and
                       (x["d"], x["causal"], x["n"]) == (r["d"], r["causal"], r["n"])), None)
            t0, t1 = r.get("tflops"), dr.get("tflops") if dr else None
            ratio = t1 / t0 if t0 and t1 else None
            lines.append(f"| {a} | {r['d']} | {'yes' if r['causal'] else 'no'} | {r['n']} | {fmt(t0)} | {fmt(t1)} | "
                         f"{fmt(ratio, 3)} |")
    return lines


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def ours_value(recs_by_backend, algos):
    """Our 16-bit number for the ratio columns (the fp8 columns are reported, not compared)."""
    if "auto" in algos and recs_by_backend.get("ours_auto"):
        return recs_by_backend["ours_auto"]
    vals = [recs_by_backend.get(f"ours_{a}") for a in algos if a not in FP8_ALGOS]
    vals = [v for v in vals if v]
    return max(vals) if vals else None


def fmt(x, digits=0):
    return "—" if x is None else f"{x:.{digits}f}"


def write_markdown(path, results, algos, peers, meta):
    lines = [f"# flashattn vs PyTorch SDPA — {meta['device']}, {meta['dtype']}", "",
             f"torch {meta['torch']}, cuDNN {meta['cudnn']}, {meta['date']}. TFLOP/s (higher is better).", "",
             "Method: " + meta.get("method", METHOD), ""]
    if meta.get("ceilings"):
        c = meta["ceilings"]
        lines += [f"Ceilings measured in this run: cuBLAS {meta['dtype']} GEMM 8192³ "
                  f"{fmt(c.get('gemm_tflops'))} TFLOP/s, device-to-device copy {fmt(c.get('copy_gbs'))} GB/s.", ""]
    backends = peers + [f"ours_{a}" for a in algos]
    flex = "flex" in peers  # an ours/Flex column only where FlexAttention was timed
    summary = []
    for pas in ("fwd", "bwd"):
        rs = [r for r in results if r["pass_"] == pas]
        if not rs:
            continue
        shapes = sorted({(r["d"], r["causal"], r["n"]) for r in rs})
        lines += [f"## {'Forward' if pas == 'fwd' else 'Backward'}", "",
                  "| d | causal | N | B×H | " + " | ".join(backends) + " | ours/FA2 | ours/cuDNN |" +
                  (" ours/Flex |" if flex else ""),
                  "|" + "---|" * (len(backends) + 6 + flex)]
        ratios_fa2, ratios_cudnn, ratios_flex, cols = [], [], [], {bk: [] for bk in backends}
        for d, causal, n in shapes:
            by = {r["backend"]: r.get("tflops") for r in rs if (r["d"], r["causal"], r["n"]) == (d, causal, n)}
            bh = next(f"{r['b']}×{r['h']}" for r in rs if (r["d"], r["causal"], r["n"]) == (d, causal, n))
            ours = ours_value(by, algos)
            rf = ours / by["sdpa_flash"] if ours and by.get("sdpa_flash") else None
            rc = ours / by["sdpa_cudnn"] if ours and by.get("sdpa_cudnn") else None
            rx = ours / by["flex"] if ours and by.get("flex") else None
            ratios_fa2.append(rf)
            ratios_cudnn.append(rc)
            ratios_flex.append(rx)
            for bk in backends:
                cols[bk].append(by.get(bk))
            lines.append(f"| {d} | {'yes' if causal else 'no'} | {n} | {bh} | " +
                         " | ".join(fmt(by.get(bk)) for bk in backends) + f" | {fmt(rf, 2)} | {fmt(rc, 2)} |" +
                         (f" {fmt(rx, 2)} |" if flex else ""))
        gm = {bk: geomean(cols[bk]) for bk in backends}
        gf, gc, gx = geomean(ratios_fa2), geomean(ratios_cudnn), geomean(ratios_flex)
        mf = min((x for x in ratios_fa2 if x), default=None)
        mc = min((x for x in ratios_cudnn if x), default=None)
        mx = min((x for x in ratios_flex if x), default=None)
        lines.append(f"| **geomean** | | | | " + " | ".join(fmt(gm[bk]) for bk in backends) +
                     f" | {fmt(gf, 2)} | {fmt(gc, 2)} |" + (f" {fmt(gx, 2)} |" if flex else ""))
        lines.append(f"| **min ratio** | | | | " + " | ".join("" for _ in backends) +
                     f" | {fmt(mf, 2)} | {fmt(mc, 2)} |" + (f" {fmt(mx, 2)} |" if flex else ""))
        lines.append("")
        summary.append(dict(pass_=pas, geomean=gm, geomean_ours_over_fa2=gf, geomean_ours_over_cudnn=gc,
                            min_ours_over_fa2=mf, min_ours_over_cudnn=mc))
        if flex:
            summary[-1].update(geomean_ours_over_flex=gx, min_ours_over_flex=mx)
    errors = [r for r in results if r.get("error") or r.get("warning")]
    if errors:
        lines += ["## Not measured / warnings", ""]
        seen = set()
        for r in errors:
            key = (r["backend"], r.get("error", r.get("warning")))
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"- {r['backend']} ({r['pass_']} d{r['d']} N{r['n']}{' causal' if r['causal'] else ''}): "
                         f"{r.get('error') or r.get('warning')}")
        lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return summary


def plot(results, algos, peers, out_dir, grid):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("compare: matplotlib not available, no plots")
        return []
    backends = peers + [f"ours_{a}" for a in algos]
    panels = sorted({(r["pass_"], r["causal"]) for r in results}, key=lambda x: (x[0] != "fwd", x[1]))
    hdims = sorted({r["d"] for r in results})
    written = []

    def draw(ax, pas, causal, d):
        for bk in backends:
            pts = sorted((r["n"], r["tflops"]) for r in results
                         if r["pass_"] == pas and r["causal"] == causal and r["d"] == d and r["backend"] == bk
                         and r.get("tflops"))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        linewidth=2.2 if bk.startswith("ours") else 1.2, label=bk)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{pas} {'causal' if causal else 'non-causal'} d{d}", fontsize=9)
        ax.set_xlabel("N")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)

    if grid:
        fig, axes = plt.subplots(len(panels), len(hdims), figsize=(4.2 * len(hdims), 3.2 * len(panels)),
                                 squeeze=False)
        for r_i, (pas, causal) in enumerate(panels):
            for c_i, d in enumerate(hdims):
                draw(axes[r_i][c_i], pas, causal, d)
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        p = os.path.join(out_dir, "compare.png")
        fig.savefig(p, dpi=90)
        written.append(p)
    else:
        for pas, causal in panels:
            fig, axes = plt.subplots(1, len(hdims), figsize=(4.5 * len(hdims), 3.6), squeeze=False)
            for c_i, d in enumerate(hdims):
                draw(axes[0][c_i], pas, causal, d)
            axes[0][0].legend(fontsize=7)
            fig.tight_layout()
            p = os.path.join(out_dir, f"compare_{pas}_{'causal' if causal else 'noncausal'}.png")
            fig.savefig(p, dpi=90)
            written.append(p)
    plt.close("all")
    return written


def ceilings(torch, dtype):
    a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    ms = time_calls(torch, [lambda: torch.matmul(a, b)], 5, 20)
    gemm = 2 * 8192 ** 3 / ms / 1e9
    src = torch.empty(2 * 1024 ** 3, device="cuda", dtype=torch.uint8).random_()
    dst = torch.empty_like(src)
    ms_c = time_calls(torch, [lambda: dst.copy_(src)], 3, 20)
    copy = 2 * src.numel() / ms_c / 1e6
    del a, b, src, dst
    torch.cuda.empty_cache()
    return dict(gemm_tflops=gemm, copy_gbs=copy)


def ablation_child(torch, lib, args, dtype, index, pas):
    """One ABLATIONS entry in this (child) process: prints one JSON line per causal setting."""
    label, algo, env = (ABLATIONS + ABLATIONS_BWD)[index]
    det = env.get("FA_BENCH_DETERMINISTIC") == "1"
    d, n = args.ablation_d, args.ablation_n
    b, h = max(1, 16384 // n), 2048 // d
    for causal in (False, True):
        sets = make_sets(torch, b, n, h, d, dtype, pas == "bwd")
        rec = dict(label=label, algo=algo, env=env, pass_=pas, causal=causal, d=d, n=n, b=b, h=h)
        try:
            o = Ours(lib, torch, algo, causal, sets, pas == "bwd", deterministic=det)
            if pas == "bwd":
                for i in range(len(sets)):
                    o.forward(i)
            call = o.backward if pas == "bwd" else o.forward
            ms = time_calls(torch, [lambda i=i: call(i) for i in range(len(sets))], args.warmup, args.iters)
            rec.update(ms=ms, tflops=flops(pas, b, h, n, d, causal) / ms / 1e9)
        except Exception as e:
            rec.update(ms=None, tflops=None, error=str(e)[:200])
        print("ABLATION " + json.dumps(rec), flush=True)
        del sets
        torch.cuda.empty_cache()


def run_ablation(args, passes):
    import subprocess
    known_vars = sorted({k for _, _, env in ABLATIONS + ABLATIONS_BWD for k in env})
    out = []
    for pas in passes:
        for idx, (label, algo, env) in ablation_entries(pas, args.ablation_filter):
            child_env = {k: v for k, v in os.environ.items() if k not in known_vars}
            child_env.update(env)
            # No settle: the variants are all ours, each the first call in its own process, so each
            # gets the same warm-up (as in the ablation tables before session 35).
            cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--dtype", args.dtype,
                   "--warmup", str(args.warmup), "--warmup-ms", str(args.warmup_ms), "--settle-ms", "0",
                   "--iters", str(args.iters),
                   "--_ablation-child", str(idx),
                   "--ablation-n", str(args.ablation_n), "--ablation-d", str(args.ablation_d),
                   "--pass", pas]
            try:
                p = subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=300)
                recs = [json.loads(l[len("ABLATION "):]) for l in p.stdout.splitlines() if l.startswith("ABLATION ")]
                if not recs:
                    recs = [dict(label=label, algo=algo, env=env, pass_=pas, causal=None, tflops=None,
                                 error=(p.stderr.strip().splitlines() or ["child failed"])[-1][:200])]
            except subprocess.TimeoutExpired:
                recs = [dict(label=label, algo=algo, env=env, pass_=pas, causal=None, tflops=None, error="timeout")]
            out += recs
    base = {}
    print(f"\nAblation, d{args.ablation_d} N{args.ablation_n}, TFLOP/s (ratio to the algo's first entry):")
    for r in out:
        key = (r["algo"], r["pass_"], r["causal"])
        if r.get("tflops") and key not in base:
            base[key] = r["tflops"]
        ratio = r["tflops"] / base[key] if r.get("tflops") and base.get(key) else None
        cz = {True: "causal", False: "noncausal", None: "?"}[r["causal"]]
        print(f"  {r['pass_']} {cz:9s} {r['label']:30s} {fmt(r.get('tflops'), 1):>7}  x{fmt(ratio, 3)}  "
              f"{' '.join(f'{k}={v}' for k, v in r['env'].items())} {r.get('error', '')}")
    return out


# ---------------------------------------------------------------------------------------------
# --gqa-decode: short queries against long keys with GQA (B 8, Hq 32, Hk 4, d128, Nk 8192 by
# default), ours with FA_SM90_PACK_GQA = 0 / 1 / auto (sm90 forward head packing; read once per
# process, so each value runs in its own child process), and SDPA flash with enable_gqa
# (non-causal only: SDPA's causal mask is top-left aligned when Nq != Nk, ours bottom-right).
# Reported: microseconds per call and K/V bytes read once / time (decode is bandwidth-bound).
# ---------------------------------------------------------------------------------------------
GQA_PACK_MODES = ["0", "1", "auto"]


def gqa_decode_sets(torch, b, nq, nk, hq, hk, d, dtype, l2_bytes=60e6):
    per = (2 * b * nk * hk + 2 * b * nq * hq) * d * dtype.itemsize
    sets = []
    for _ in range(max(3, math.ceil(2 * l2_bytes / per))):
        s = dict(q=torch.randn(b, nq, hq, d, device="cuda", dtype=dtype),
                 k=torch.randn(b, nk, hk, d, device="cuda", dtype=dtype),
                 v=torch.randn(b, nk, hk, d, device="cuda", dtype=dtype))
        s["out"] = torch.empty_like(s["q"])
        s["lse"] = torch.empty(b, hq, nq, device="cuda", dtype=torch.float32)
        sets.append(s)
    return sets


def gqa_decode_shapes(args):
    b, hq, hk, nk = (int(x) for x in args.gqa_shape.split(","))
    nqs = [int(x) for x in args.gqa_nq.split(",")]
    d = int(args.hdims.split(",")[0]) if "--hdims" in sys.argv else 128
    return b, hq, hk, nk, d, nqs


def gqa_decode_child(torch, lib, args, dtype, mode, algos, causals):
    """Ours at every --gqa-decode shape in this (child) process: one JSON line per measurement."""
    b, hq, hk, nk, d, nqs = gqa_decode_shapes(args)
    for causal in causals:
        for nq in nqs:
            sets = gqa_decode_sets(torch, b, nq, nk, hq, hk, d, dtype)
            kv_bytes = 2 * b * nk * hk * d * dtype.itemsize
            for algo in algos:
                rec = dict(mode=mode, algo=algo, b=b, hq=hq, hk=hk, nq=nq, nk=nk, d=d, causal=causal)
                try:
                    o = Ours(lib, torch, algo, causal, sets, False)
                    ms = time_calls(torch, [lambda i=i: o.forward(i) for i in range(len(sets))],
                                    args.warmup, args.iters)
                    rec.update(us=ms * 1e3, kv_gbs=kv_bytes / ms / 1e6)
                except Exception as e:
                    rec.update(us=None, kv_gbs=None, error=str(e)[:200])
                print("GQA " + json.dumps(rec), flush=True)
            del sets
            torch.cuda.empty_cache()


def run_gqa_decode(torch, args, dtype, algos, causals):
    import subprocess
    b, hq, hk, nk, d, nqs = gqa_decode_shapes(args)
    out = []
    for mode in GQA_PACK_MODES:
        env = dict(os.environ, FA_SM90_PACK_GQA=mode)
        cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--dtype", args.dtype,
               "--warmup", str(args.warmup), "--warmup-ms", str(args.warmup_ms), "--settle-ms", str(args.settle_ms),
               "--iters", str(args.iters),
               "--algos", ",".join(algos),
               "--causal", args.causal, "--gqa-shape", args.gqa_shape, "--gqa-nq", args.gqa_nq,
               "--hdims", args.hdims, "--_gqa-child", mode]
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
            recs = [json.loads(l[4:]) for l in p.stdout.splitlines() if l.startswith("GQA ")]
            if not recs:
                print(f"gqa-decode: child FA_SM90_PACK_GQA={mode} failed: {p.stderr.strip()[-300:]}")
        except subprocess.TimeoutExpired:
            recs = []
            print(f"gqa-decode: child FA_SM90_PACK_GQA={mode} timed out")
        out += recs
    # The peer, in this process: SDPA flash with enable_gqa, non-causal.
    F = torch.nn.functional
    if False in causals:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for nq in nqs:
            sets = gqa_decode_sets(torch, b, nq, nk, hq, hk, d, dtype)
            rec = dict(mode="-", algo="sdpa_flash", b=b, hq=hq, hk=hk, nq=nq, nk=nk, d=d, causal=False)
            try:
                views = [tuple(s[x].transpose(1, 2) for x in ("q", "k", "v")) for s in sets]
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION]), torch.no_grad():
                    ms = time_calls(torch, [lambda t=t: F.scaled_dot_product_attention(*t, enable_gqa=True)
                                            for t in views], args.warmup, args.iters)
                rec.update(us=ms * 1e3, kv_gbs=2 * b * nk * hk * d * dtype.itemsize / ms / 1e6)
            except Exception as e:
                rec.update(us=None, kv_gbs=None, error=f"{type(e).__name__}: {str(e).splitlines()[0][:150]}")
            out.append(rec)
            del sets
            torch.cuda.empty_cache()
    print(f"\nGQA decode, B {b} Hq {hq} Hk {hk} d{d} Nk {nk}: microseconds (K/V GB/s); "
          f"pack/unpack = FA_SM90_PACK_GQA 1 time / 0 time")
    for algo in algos:
        for causal in causals:
            print(f"  {algo} {'causal' if causal else 'noncausal'}")
            for nq in nqs:
                cell = {r["mode"]: r for r in out if r["algo"] == algo and r["causal"] == causal and r["nq"] == nq}
                peer = next((r for r in out if r["algo"] == "sdpa_flash" and r["nq"] == nq and not causal), None)
                u0, u1 = (cell.get(m, {}).get("us") for m in ("0", "1"))
                line = "  ".join(f"{m}={fmt(cell.get(m, {}).get('us'), 1)} ({fmt(cell.get(m, {}).get('kv_gbs'), 0)})"
                                 for m in GQA_PACK_MODES)
                ratio = u1 / u0 if u0 and u1 else None
                sd = f"  sdpa_flash={fmt(peer.get('us'), 1)}" if peer else ""
                print(f"    Nq {nq:<4} {line}  pack/unpack x{fmt(ratio, 3)}{sd}")
    return out


METHOD = ("CUDA events around each call, median of the timed calls after a warm-up of >= 0.5 s of calls, +2.5 s "
          "for the first backend after a shape's allocation (the clock the GPU sustains, not its boost after a "
          "pause), inputs rotated over "
          ">= 3 buffer sets (> 60 MB L2 together). SDPA gets (B,H,N,D) transpose views of (B,N,H,D) data. "
          "Backward: ours = fa_backward alone (forward run beforehand); SDPA = torch.autograd.grad on a "
          "retained forward graph (backward kernels + autograd host work, no forward). "
          "FLOPs: fwd 4·B·H·N²·d (/2 causal), bwd 2.5× fwd. FP8 (fa3fp8*): fa_fp8_forward, BLOCK scales + "
          "incoherent processing, one workspace per buffer set; fa3fp8 = kernel alone (reuse_quantized 1), "
          "fa3fp8q = quantisation included; same FLOP count.")
METHOD_FLEX = (" FlexAttention: torch.compile(flex_attention), default options, on the same transpose views; "
               "causal = a BlockMask (q_idx >= kv_idx) built per shape outside the timing; compiled in the "
               "warm-up.")
METHOD_ROUNDS = (" Rounds: each shape's backends timed {r} times on the same inputs, the order reversed each "
                 "round; the median of the {r} medians.")


def main():
    global WARMUP_MS, SETTLE_MS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.environ.get("FLASHATTN_LIB", "build/libflashattn.so"))
    ap.add_argument("--algos", default="auto,fa2,fa3",
                    help="comma list of auto,fa1,fa2,fa3 and the fp8 forward's fa3fp8 (kernel alone), "
                         "fa3fp8q (quantisation included)")
    ap.add_argument("--peers", default="sdpa_flash,sdpa_cudnn,sdpa_efficient",
                    help="comma list of sdpa_flash, sdpa_cudnn, sdpa_efficient and flex (FlexAttention, "
                         "torch.compile'd: seconds of compilation per shape, outside the timing)")
    ap.add_argument("--pass", dest="passes", default="both", choices=["fwd", "bwd", "both"])
    ap.add_argument("--hdims", default="64,128,256")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--causal", default="both", choices=["yes", "no", "both"])
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup-ms", type=float, default=WARMUP_MS,
                    help="warm-up of at least this many ms of calls before timing (0: --warmup calls only)")
    ap.add_argument("--settle-ms", type=float, default=SETTLE_MS,
                    help="more warm-up for the first backend timed after a shape's inputs are allocated")
    ap.add_argument("--quick", action="store_true", help="d 64,128 x N 1024,4096: a smoke run")
    ap.add_argument("--ceilings", action="store_true", help="also time cuBLAS 8192^3 GEMM and a D2D copy")
    ap.add_argument("--ablation", action="store_true", help="run the ABLATIONS list (d128 N8k) only")
    ap.add_argument("--ablation-filter", default=None,
                    help="regex: run only the ablation entries whose label matches (keep the defaults for ratios)")
    ap.add_argument("--ablation-d", type=int, default=128,
                    help="head dim of --ablation (H = 2048/d); the sm90 backward's mask_inline and ds_copy "
                         "variants exist at 64 and 128, prefetch_s at 64, the others at 128 only")
    ap.add_argument("--ablation-n", type=int, default=8192,
                    help="sequence length of --ablation (B = 16384/N, H 16); e.g. 1024 for the persistent scheduler")
    ap.add_argument("--deterministic", default="0", choices=["0", "1", "both"],
                    help="backward of ours with fa_options.deterministic = 1 (both: also the default, and a cost table)")
    ap.add_argument("--plot-grid", action="store_true", help="one PNG with every panel instead of one per pass/causal")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every backend of a shape this many times, order reversed each round; report the median")
    ap.add_argument("--out", default=None, help="directory for compare.json, compare.md and PNGs")
    ap.add_argument("--_ablation-child", dest="ablation_child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gqa-decode", action="store_true",
                    help="short-query GQA shapes only, ours with FA_SM90_PACK_GQA=0/1/auto (sm90 head packing) "
                         "and SDPA flash (enable_gqa, non-causal); --algos (default fa3), --causal, --hdims (first)")
    ap.add_argument("--gqa-shape", default="8,32,4,8192", help="B,Hq,Hk,Nk of --gqa-decode")
    ap.add_argument("--gqa-nq", default="1,2,4,8,16,32,64,128", help="query lengths of --gqa-decode")
    ap.add_argument("--_gqa-child", dest="gqa_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    WARMUP_MS = args.warmup_ms
    SETTLE_MS = args.settle_ms
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.iters < 20:
        print("compare: --iters below 20 does not meet the timing method; using 20")
        args.iters = 20

    import torch
    if not torch.cuda.is_available():
        print("compare: no CUDA device visible to torch; nothing to measure")
        return 0
    lib = load_library(args.lib)
    if lib.fa_cuda_device_count() == 0:
        print("compare: libflashattn sees no CUDA device")
        return 1
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    algos = [a for a in args.algos.split(",") if a]
    for a in algos:
        if a not in FA_ALGO and a not in FP8_ALGOS:
            ap.error(f"unknown algo {a}")
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in SDPA_BACKENDS and p != "flex":
            ap.error(f"unknown peer {p} (sdpa_flash, sdpa_cudnn, sdpa_efficient, flex)")
    passes = ["fwd", "bwd"] if args.passes == "both" else [args.passes]
    hdims = [int(x) for x in args.hdims.split(",")]
    seqlens = [int(x) for x in args.seqlens.split(",")]
    if args.quick:
        hdims, seqlens = [64, 128], [1024, 4096]
    causals = {"yes": [True], "no": [False], "both": [False, True]}[args.causal]
    meta = dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                cudnn=torch.backends.cudnn.version(), dtype=args.dtype,
                date=time.strftime("%Y-%m-%d %H:%M"), algos=algos, peers=peers, rounds=args.rounds,
                method=METHOD + (METHOD_FLEX if "flex" in peers else "") +
                (METHOD_ROUNDS.format(r=args.rounds) if args.rounds > 1 else ""),
                library=lib.fa_build_info().decode())
    print(f"compare: {meta['device']}, torch {meta['torch']}, cuDNN {meta['cudnn']}, {args.dtype}")
    print("method: " + meta["method"], flush=True)
    if args.out:
        os.makedirs(args.out, exist_ok=True)

    if args.ceilings:
        meta["ceilings"] = ceilings(torch, dtype)
        print(f"ceilings: GEMM 8192^3 {meta['ceilings']['gemm_tflops']:.0f} TFLOP/s, "
              f"D2D copy {meta['ceilings']['copy_gbs']:.0f} GB/s", flush=True)

    if args.ablation_child is not None:
        ablation_child(torch, lib, args, dtype, args.ablation_child, passes[0])
        return 0
    if args.gqa_child is not None or args.gqa_decode:
        gqa_algos = algos if "--algos" in sys.argv else ["fa3"]
        if args.gqa_child is not None:
            gqa_decode_child(torch, lib, args, dtype, args.gqa_child, gqa_algos, causals)
            return 0
        res = run_gqa_decode(torch, args, dtype, gqa_algos, causals)
        if args.out:
            with open(os.path.join(args.out, "gqa_decode.json"), "w") as f:
                json.dump(dict(meta=meta, gqa_decode=res), f, indent=1)
        return 0
    if args.ablation:
        abl = run_ablation(args, passes)
        if args.out:
            with open(os.path.join(args.out, "ablation.json"), "w") as f:
                json.dump(dict(meta=meta, ablation=abl), f, indent=1)
        return 0

    results = []
    t0 = time.time()
    for pas in passes:
        for causal in causals:
            for d in hdims:
                for n in seqlens:
                    rows = run_shape(torch, lib, args, algos, peers, pas, d, n, causal, dtype)
                    results += rows
                    cells = "  ".join(f"{r['backend']}={fmt(r.get('tflops'))}" for r in rows)
                    print(f"{pas} {'causal' if causal else 'noncaus'} d{d:<3} N{n:<6} {cells}", flush=True)
    print(f"compare: {len(results)} measurements in {time.time() - t0:.0f} s")

    out_dir = args.out or "."
    summary = write_markdown(os.path.join(out_dir, "compare.md"), results, algos, peers, meta)
    if args.deterministic == "both":
        with open(os.path.join(out_dir, "compare.md"), "a") as f:
            f.write("\n".join(deterministic_cost_lines(results, algos)) + "\n")
    pngs = plot(results, algos, peers, out_dir, args.plot_grid)
    with open(os.path.join(out_dir, "compare.json"), "w") as f:
        json.dump(dict(meta=meta, results=results, summary=summary), f, indent=1)
    print(open(os.path.join(out_dir, "compare.md")).read())
    for s in summary:
        print(f"SUMMARY {s['pass_']}: geomean ours/FA2 {fmt(s['geomean_ours_over_fa2'], 2)}, "
              f"ours/cuDNN {fmt(s['geomean_ours_over_cudnn'], 2)}, min ours/FA2 {fmt(s['min_ours_over_fa2'], 2)}, "
              f"min ours/cuDNN {fmt(s['min_ours_over_cudnn'], 2)}" +
              (f", geomean ours/Flex {fmt(s['geomean_ours_over_flex'], 2)}, min ours/Flex "
               f"{fmt(s['min_ours_over_flex'], 2)}" if "geomean_ours_over_flex" in s else ""))
    print("wrote: " + ", ".join([os.path.join(out_dir, "compare.json"), os.path.join(out_dir, "compare.md")] + pngs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
