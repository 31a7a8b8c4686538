"""Framework-neutral entry points: any DLPack array in, the same kind of array out.

The extension only reads DLPack descriptors and writes into arrays it is given, so this layer's
job is to allocate outputs of the caller's kind (NumPy with NumPy, CuPy with CuPy, ...) and to hand
the library the stream that kind computes on. torch tensors are routed to the torch ops instead,
so they keep autograd and torch.compile support.
"""

from __future__ import annotations

import sys

import numpy as np

from . import _C

# DLPack device types (dlpack.h: kDLCPU, kDLCUDA).
_DL_CPU = 1
_DL_CUDA = 2


def check_window(window_size) -> tuple[int, int]:
    """flash_attn's (left, right) window, -1 meaning unbounded on that side."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError(
            f"window_size must be a pair (left, right) of ints, -1 for unbounded; got {window_size!r}"
        ) from None
    if int(left) != left or int(right) != right:
        raise ValueError(f"window_size must hold ints, got {window_size!r}")
    return int(left), int(right)


def scale_arg(softmax_scale) -> float:
    # The library takes 0 as "1/sqrt(head_dim)"; resolving it there keeps torch.compile from
    # having to trace a symbolic float when head_dim is dynamic.
    return 0.0 if softmax_scale is None else float(softmax_scale)


_FP8_SCALING = {"block": _C.FP8_SCALING_BLOCK, "per_head": _C.FP8_SCALING_PER_HEAD}
_FP8_DEFAULT_SEED = _C.FP8_DEFAULT_SEED


def fp8_scaling_code(scaling) -> int:
    """fa_fp8_scaling's value of a scaling name: "block" (one scale per 64 query rows / 128 keys)
    or "per_head" (one per sequence and head: the per-tensor baseline)."""
    code = _FP8_SCALING.get(scaling) if isinstance(scaling, str) else None
    if code is None:
        raise ValueError(f"scaling must be 'block' or 'per_head', got {scaling!r}")
    return code


def fp8_seed(seed) -> int:
    """The incoherent-processing sign seed as the C ABI's uint64; None: fa_fp8_init's default."""
    if seed is None:
        return _FP8_DEFAULT_SEED
    if type(seed) is not int:  # the common case first: torch.compile traces this function
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int in [0, 2**64) or None, got {type(seed).__name__}")
        seed = int(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def _is_torch(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


class _Arrays:
    """Allocates outputs of the same kind (and device) as `like` and knows the stream to use."""

    def __init__(self, like):
        self.stream = 0
        self._back = None  # converts an output allocated here into the caller's kind
        if isinstance(like, np.ndarray):
            self._np = True
            return
        self._np = False
        if not hasattr(like, "__dlpack_device__"):
            raise TypeError(
                f"q must be a NumPy array, a torch tensor or another DLPack array, got {type(like).__name__}"
            )
        dev_type, dev_id = like.__dlpack_device__()
        dev_type, self._dev_id = int(dev_type), int(dev_id)
        # JAX dispatches asynchronously; its buffers must be complete before another library
        # reads them on a stream JAX does not know about.
        if hasattr(like, "block_until_ready"):
            like.block_until_ready()
        module = type(like).__module__.split(".")[0]
        if module == "cupy":
            import cupy

            self._cupy = cupy
            with cupy.cuda.Device(self._dev_id):
                self.stream = cupy.cuda.get_current_stream().ptr
            self._alloc = self._alloc_cupy
            return
        # Any other producer (JAX, ...): allocate where a mutable array can be had, then hand the
        # result over through DLPack. JAX arrays are immutable, so writing into one is not an option.
        ns = getattr(like, "__array_namespace__", None)
        xp = ns() if ns is not None else None
        if xp is not None and hasattr(xp, "from_dlpack"):
            self._back = xp.from_dlpack
        if dev_type == _DL_CPU:
            self._np = True
        elif dev_type == _DL_CUDA:
            self._alloc = self._alloc_cuda_foreign
        else:
            raise ValueError(f"q: unsupported DLPack device type {dev_type} (flashattn takes CPU or CUDA memory)")

    def empty(self, shape, dtype):
        if self._np:
            return np.empty(tuple(shape), dtype=dtype)
        return self._alloc(tuple(shape), dtype)

    def _alloc_cupy(self, shape, dtype):
        with self._cupy.cuda.Device(self._dev_id):
            return self._cupy.empty(shape, dtype=dtype)

    def _alloc_cuda_foreign(self, shape, dtype):
        # torch first: it has bfloat16, which CuPy lacks. Both run on the legacy default stream
        # unless told otherwise, and the consumer's from_dlpack orders its stream after it.
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
        try:
            import torch

            return torch.empty(shape, dtype=getattr(torch, name), device=f"cuda:{self._dev_id}")
        except ImportError:
            pass
        try:
            import cupy

            with cupy.cuda.Device(self._dev_id):
                return cupy.empty(shape, dtype=name)
        except ImportError:
            raise RuntimeError("allocating CUDA outputs for a foreign DLPack array needs torch or cupy") from None

    def finish(self, x):
        return self._back(x) if self._back is not None else x


def _dtype_of(x):
    # JAX and CuPy expose NumPy-compatible dtypes; bfloat16 (ml_dtypes) keeps its name.
    return x.dtype


def _opts(softmax_scale, causal, window_size, softcap, deterministic, stream):
    left, right = check_window(window_size)
    return (
        scale_arg(softmax_scale),
        bool(causal),
        left,
        right,
        float(softcap),
        bool(deterministic),
        _C.BACKEND_AUTO,
        _C.ALGO_AUTO,
        0,
        stream,
        None,
    )


def _rank(x, want, name):
    if len(x.shape) != want:
        raise ValueError(f"{name}: expected rank {want}, got {len(x.shape)} (shape {tuple(x.shape)})")


def attention(q, k, v, causal=False, softmax_scale=None, window_size=(-1, -1), softcap=0.0, return_lse=False):
    """Exact attention on any DLPack arrays, returned in the inputs' kind.

    q (batch, seqlen_q, heads, head_dim); k, v (batch, seqlen_k, heads_kv, head_dim). Returns out
    with q's shape and dtype, and with return_lse=True also lse (batch, heads, seqlen_q) float32.
    Arrays are not copied: the last dimension must be contiguous (ValueError otherwise).
    """
    if _is_torch(q):
        from ._torch import flash_attn_func

        out, lse, _ = flash_attn_func(
            q, k, v, softmax_scale=softmax_scale, causal=causal, window_size=window_size,
            softcap=softcap, return_attn_probs=True,
        )
        return (out, lse) if return_lse else out
    arrays = _Arrays(q)  # first: it rejects non-arrays with a TypeError
    _rank(q, 4, "q")
    b, nq, h, _ = q.shape
    out = arrays.empty(q.shape, _dtype_of(q))
    lse = arrays.empty((b, h, nq), "float32")
    _C.forward(q, k, v, out, lse, *_opts(softmax_scale, causal, window_size, softcap, False, arrays.stream))
    out = arrays.finish(out)
    return (out, arrays.finish(lse)) if return_lse else out


def attention_backward(q, k, v, out, lse, dout, causal=False, softmax_scale=None, window_size=(-1, -1),
                       softcap=0.0, deterministic=False):
    """Gradients (dq, dk, dv) of attention() given its out and lse and the output gradient dout.

    The options must be those of the forward call. dk/dv have k/v's shapes (for GQA, summed over
    each KV head's query group).
    """
    if _is_torch(q):
        import torch

        from ._torch import backward_args

        return tuple(torch.ops.flashattn.bwd(*backward_args(
            dout, q, k, v, out, lse, softmax_scale, causal, window_size, softcap, deterministic)))
    arrays = _Arrays(q)
    dq = arrays.empty(q.shape, _dtype_of(q))
    dk = arrays.empty(k.shape, _dtype_of(k))
    dv = arrays.empty(v.shape, _dtype_of(v))
    _C.backward(q, k, v, out, lse, dout, dq, dk, dv,
                *_opts(softmax_scale, causal, window_size, softcap, deterministic, arrays.stream))
    return arrays.finish(dq), arrays.finish(dk), arrays.finish(dv)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                     softmax_scale=None, window_size=(-1, -1), softcap=0.0, return_lse=False, seqused_k=None):
    """Variable-length attention: q (total_q, heads, head_dim), k/v (total_k, heads_kv, head_dim),
    cu_seqlens_q/k int32 (batch + 1,). Returns out (and lse (heads, total_q) float32)."""
    if _is_torch(q):
        from ._torch import flash_attn_varlen_func

        out, lse, _ = flash_attn_varlen_func(
            q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale=softmax_scale,
            causal=causal, window_size=window_size, softcap=softcap, return_attn_probs=True, seqused_k=seqused_k,
        )
        return (out, lse) if return_lse else out
    arrays = _Arrays(q)
    _rank(q, 3, "q")
    total_q, h, _ = q.shape
    out = arrays.empty(q.shape, _dtype_of(q))
    lse = arrays.empty((h, total_q), "float32")
    _C.varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, int(max_seqlen_q), int(max_seqlen_k),
                      out, lse, *_opts(softmax_scale, causal, window_size, softcap, False, arrays.stream))
    out = arrays.finish(out)
    return (out, arrays.finish(lse)) if return_lse else out


def attention_varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out, lse, dout,
                              causal=False, softmax_scale=None, window_size=(-1, -1), softcap=0.0,
                              deterministic=False, seqused_k=None):
    """Gradients (dq, dk, dv) of attention_varlen()."""
    if _is_torch(q):
        from ._torch import varlen_backward

        return varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out, lse, dout,
                               softmax_scale, causal, window_size, softcap, deterministic, seqused_k)
    arrays = _Arrays(q)
    dq = arrays.empty(q.shape, _dtype_of(q))
    dk = arrays.empty(k.shape, _dtype_of(k))
    dv = arrays.empty(v.shape, _dtype_of(v))
    _C.varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, int(max_seqlen_q), int(max_seqlen_k),
                       out, lse, dout, dq, dk, dv,
                       *_opts(softmax_scale, causal, window_size, softcap, deterministic, arrays.stream))
    return arrays.finish(dq), arrays.finish(dk), arrays.finish(dv)


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, cache_seqlens=None, cache_batch_idx=None,
                           block_table=None, causal=False, softmax_scale=None, window_size=(-1, -1), softcap=0.0,
                           num_splits=0, return_lse=False):
    """KV-cache attention (flash_attn_with_kvcache's semantics) on any DLPack arrays.

    q (batch, seqlen_q, heads, head_dim). The cache is contiguous, k_cache/v_cache (batch_cache,
    capacity, heads_kv, head_dim) with an optional cache_batch_idx (batch,) int32, or paged,
    (num_pages, page_size, heads_kv, head_dim) with block_table (batch, pages_per_seq) int32.
    k/v (batch, seqlen_new, heads_kv, head_dim), optional, are written into the cache IN PLACE at
    rows cache_seqlens[b] ..; sequence b then attends over cache_seqlens[b] + seqlen_new keys
    (the whole capacity without cache_seqlens). cache_seqlens: int32 (batch,) or, for NumPy
    inputs, an int. Returns out (and lse (batch, heads, seqlen_q) float32 with return_lse).
    torch tensors go to flashattn.flash_attn_with_kvcache.
    """
    if _is_torch(q):
        from ._torch import flash_attn_with_kvcache

        r = flash_attn_with_kvcache(
            q, k_cache, v_cache, k=k, v=v, cache_seqlens=cache_seqlens, cache_batch_idx=cache_batch_idx,
            block_table=block_table, softmax_scale=softmax_scale, causal=causal, window_size=window_size,
            softcap=softcap, num_splits=num_splits, return_softmax_lse=return_lse,
        )
        return r
    arrays = _Arrays(q)
    _rank(q, 4, "q")
    b, nq, h, _ = q.shape
    if isinstance(cache_seqlens, (int, np.integer)):
        if not arrays._np:
            raise TypeError(
                "cache_seqlens: an int is accepted for NumPy inputs only; pass an int32 array on q's device"
            )
        cache_seqlens = np.full((b,), int(cache_seqlens), dtype=np.int32)
    out = arrays.empty(q.shape, _dtype_of(q))
    lse = arrays.empty((b, h, nq), "float32")
    _C.kvcache_forward(q, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx, k, v, int(num_splits), out,
                       lse, *_opts(softmax_scale, causal, window_size, softcap, False, arrays.stream))
    out = arrays.finish(out)
    return (out, arrays.finish(lse)) if return_lse else out


def attention_fp8(q, k, v, causal=False, softmax_scale=None, window_size=(-1, -1), incoherent=True, scaling="block",
                  seed=None, return_lse=False):
    """The FP8 (e4m3) forward on any DLPack arrays, returned in the inputs' kind. Forward only.

    q (batch, seqlen_q, heads, head_dim), k/v (batch, seqlen_k, heads_kv, head_dim), float16 or
    bfloat16 (the call quantises them itself); head_dim 64, 128 or 256. scaling "block" or
    "per_head"; incoherent=True applies random signs and a Hadamard transform to q and k first
    (seed: of the signs; None = the library's default). Returns out (q's dtype), and with
    return_lse=True also lse (batch, heads, seqlen_q) float32. CUDA needs an sm90 GPU; the CPU
    backend quantises the same way and computes in float32. The workspace holding the quantised
    copies is allocated here, in the inputs' kind. torch tensors go to flash_attn_fp8_func.
    """
    if _is_torch(q):
        from ._torch import flash_attn_fp8_func

        out, lse, _ = flash_attn_fp8_func(
            q, k, v, softmax_scale=softmax_scale, causal=causal, window_size=window_size, incoherent=incoherent,
            scaling=scaling, seed=seed, return_attn_probs=True,
        )
        return (out, lse) if return_lse else out
    arrays = _Arrays(q)
    _rank(q, 4, "q")
    code, bits = fp8_scaling_code(scaling), fp8_seed(seed)
    opts = _opts(softmax_scale, causal, window_size, 0.0, False, arrays.stream)
    # Asked first: a rejected call is reported before anything is allocated.
    need = _C.fp8_workspace_size(q, k, v, code, bool(incoherent), bits, *opts)
    workspace = arrays.empty((need,), "uint8") if need > 0 else None
    b, nq, h, _ = q.shape
    out = arrays.empty(q.shape, _dtype_of(q))
    lse = arrays.empty((b, h, nq), "float32")
    _C.fp8_forward(q, k, v, out, lse, code, bool(incoherent), bits, *opts[:-1], workspace)
    out = arrays.finish(out)
    return (out, arrays.finish(lse)) if return_lse else out
