"""PyTorch integration: custom ops with fake kernels and autograd, and flash_attn's functions.

Why custom ops: torch.compile(fullgraph=True) can trace through them without a graph break (the
fake kernels give it shapes), and autograd is attached with register_autograd. Every output and
the workspace come from torch's allocator and the kernels run on torch's current stream, which is
what CUDA-graph capture needs: nothing inside a call allocates or synchronises on its own.
"""

from __future__ import annotations

import torch

from . import _C
from ._core import check_window, scale_arg

Tensor = torch.Tensor


def _last_dim_contiguous(x: Tensor) -> Tensor:
    # flash_attn's convention: only a non-contiguous last dimension forces a copy; other strides
    # (e.g. q/k/v sliced out of a packed qkv, or transformers' transposed heads) pass as they are.
    return x if x.stride(-1) == 1 else x.contiguous()


def _stream(x: Tensor) -> int:
    if x.device.type != "cuda":
        return 0
    return _raw_stream(x.device.index)


try:
    # The raw-pointer query inductor's generated code uses; a fraction of the cost of
    # torch.cuda.current_stream(), which builds a Stream object each call.
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - torch without CUDA support

    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


# Workspace sizes depend on shapes, dtype, device and options, not on data: cache them so a steady
# stream of same-shaped calls pays for one C call, not two. Bounded, since shapes can vary freely.
_ws_cache: dict = {}
_WS_CACHE_MAX = 4096


def _workspace(is_bwd, q, k, v, cu_q, cu_k, max_q, max_k, opts):
    key = (is_bwd, q.shape, k.shape, v.shape, q.dtype, q.device,
           None if cu_q is None else cu_q.shape[0], max_q, max_k, opts[:6])
    n = _ws_cache.get(key)
    if n is None:
        n = _C.workspace_size(is_bwd, q, k, v, cu_q, cu_k, None, max_q, max_k, *opts)
        if len(_ws_cache) >= _WS_CACHE_MAX:
            _ws_cache.clear()
        _ws_cache[key] = n
    return None if n == 0 else torch.empty(n, dtype=torch.uint8, device=q.device)


def _opts(x, scale, causal, window_left, window_right, softcap, deterministic):
    return (scale, causal, window_left, window_right, softcap, deterministic,
            _C.BACKEND_AUTO, _C.ALGO_AUTO, 0, _stream(x))


def _detach(x: Tensor) -> Tensor:
    # torch refuses to export a tensor that requires grad through DLPack; the ops are below
    # autograd, so the data is all they need.
    return x.detach() if x.requires_grad else x


# ------------------------------------------------------------------------------------------------
# Batch form
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::fwd", mutates_args=())
def _fwd(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_left: int,
         window_right: int, softcap: float, deterministic: bool) -> tuple[Tensor, Tensor]:
    q, k, v = (_detach(_last_dim_contiguous(t)) for t in (q, k, v))
    b, nq, h, _ = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((b, h, nq), dtype=torch.float32, device=q.device)
    opts = _opts(q, softmax_scale, causal, window_left, window_right, softcap, deterministic)
    ws = _workspace(False, q, k, v, None, None, 0, 0, opts + (None,))
    _C.forward(q, k, v, out, lse, *opts, ws)
    return out, lse


@_fwd.register_fake
def _(q, k, v, softmax_scale, causal, window_left, window_right, softcap, deterministic):
    b, nq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, nq), dtype=torch.float32)


@torch.library.custom_op("flashattn::bwd", mutates_args=())
def _bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float,
         causal: bool, window_left: int, window_right: int, softcap: float,
         deterministic: bool) -> tuple[Tensor, Tensor, Tensor]:
    # dout from autograd can be an expanded view (stride 0 everywhere, e.g. from .sum()).
    dout = _detach(dout.contiguous())
    q, k, v, out = (_detach(_last_dim_contiguous(t)) for t in (q, k, v, out))
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    opts = _opts(q, softmax_scale, causal, window_left, window_right, softcap, deterministic)
    ws = _workspace(True, q, k, v, None, None, 0, 0, opts + (None,))
    _C.backward(q, k, v, out, _detach(lse), dout, dq, dk, dv, *opts, ws)
    return dq, dk, dv


@_bwd.register_fake
def _(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, *ctx.options = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)


def _fwd_backward(ctx, dout, dlse):
    # Gradients do not flow through lse (as in flash_attn): it is returned for inspection.
    q, k, v, out, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashattn.bwd(dout, q, k, v, out, lse, *ctx.options)
    return dq, dk, dv, None, None, None, None, None, None


torch.library.register_autograd("flashattn::fwd", _fwd_backward, setup_context=_fwd_setup_context)


# ------------------------------------------------------------------------------------------------
# Varlen form
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::varlen_fwd", mutates_args=())
def _varlen_fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
                max_seqlen_k: int, softmax_scale: float, causal: bool, window_left: int, window_right: int,
                softcap: float, deterministic: bool) -> tuple[Tensor, Tensor]:
    q, k, v = (_detach(_last_dim_contiguous(t)) for t in (q, k, v))
    total_q, h, _ = q.shape
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((h, total_q), dtype=torch.float32, device=q.device)
    opts = _opts(q, softmax_scale, causal, window_left, window_right, softcap, deterministic)
    ws = _workspace(False, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, opts + (None,))
    _C.varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, None, max_seqlen_q, max_seqlen_k, out, lse, *opts, ws)
    return out, lse


@_varlen_fwd.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_left,
      window_right, softcap, deterministic):
    total_q, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((h, total_q), dtype=torch.float32)


@torch.library.custom_op("flashattn::varlen_bwd", mutates_args=())
def _varlen_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, cu_seqlens_q: Tensor,
                cu_seqlens_k: Tensor, max_seqlen_q: int, max_seqlen_k: int, softmax_scale: float, causal: bool,
                window_left: int, window_right: int, softcap: float,
                deterministic: bool) -> tuple[Tensor, Tensor, Tensor]:
    dout = _detach(dout.contiguous())
    q, k, v, out = (_detach(_last_dim_contiguous(t)) for t in (q, k, v, out))
    dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
    dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    opts = _opts(q, softmax_scale, causal, window_left, window_right, softcap, deterministic)
    ws = _workspace(True, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, opts + (None,))
    _C.varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, None, max_seqlen_q, max_seqlen_k, out, _detach(lse),
                       dout, dq, dk, dv, *opts, ws)
    return dq, dk, dv


@_varlen_bwd.register_fake
def _(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
      window_left, window_right, softcap, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _varlen_setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k, *ctx.options = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k)


def _varlen_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_q, cu_k = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashattn.varlen_bwd(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.options)
    return (dq, dk, dv) + (None,) * 10


torch.library.register_autograd("flashattn::varlen_fwd", _varlen_backward, setup_context=_varlen_setup_context)


# ------------------------------------------------------------------------------------------------
# flash_attn's public functions
# ------------------------------------------------------------------------------------------------
def _reject_unsupported(dropout_p, alibi_slopes):
    # Refuse rather than ignore: silently dropping dropout or ALiBi would change results.
    if dropout_p != 0.0:
        raise NotImplementedError(
            f"dropout_p={dropout_p} is not supported by flashattn (no dropout is implemented); pass dropout_p=0.0"
        )
    if alibi_slopes is not None:
        raise NotImplementedError("alibi_slopes is not supported by flashattn; pass alibi_slopes=None")


def _check_tensors(**tensors):
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_func: q (batch, seqlen_q, nheads, headdim), k/v (batch, seqlen_k,
    nheads_k, headdim), nheads % nheads_k == 0. Causal and windows are bottom-right aligned.

    Returns out, or (out, softmax_lse, None) with return_attn_probs=True: softmax_lse is
    (batch, nheads, seqlen_q) float32; the attention matrix is never formed, hence None.
    """
    _reject_unsupported(dropout_p, alibi_slopes)
    _check_tensors(q=q, k=k, v=v)
    left, right = check_window(window_size)
    out, lse = torch.ops.flashattn.fwd(q, k, v, scale_arg(softmax_scale), bool(causal), left, right, float(softcap),
                                       bool(deterministic))
    return (out, lse, None) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_varlen_func: q (total_q, nheads, headdim), k/v (total_k, nheads_k,
    headdim), cu_seqlens_q/k int32 (batch + 1,) on q's device.

    Returns out, or (out, softmax_lse, None) with return_attn_probs=True; softmax_lse is
    (nheads, total_q) float32.
    """
    _reject_unsupported(dropout_p, alibi_slopes)
    _check_tensors(q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k)
    left, right = check_window(window_size)
    out, lse = torch.ops.flashattn.varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q),
                                              int(max_seqlen_k), scale_arg(softmax_scale), bool(causal), left,
                                              right, float(softcap), bool(deterministic))
    return (out, lse, None) if return_attn_probs else out


def backward_args(dout, q, k, v, out, lse, softmax_scale, causal, window_size, softcap, deterministic):
    """Arguments of torch.ops.flashattn.bwd, for callers that drive the backward themselves."""
    left, right = check_window(window_size)
    return (dout, q, k, v, out, lse, scale_arg(softmax_scale), bool(causal), left, right, float(softcap),
            bool(deterministic))


def varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out, lse, dout,
                    softmax_scale, causal, window_size, softcap, deterministic):
    left, right = check_window(window_size)
    return tuple(torch.ops.flashattn.varlen_bwd(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                                                int(max_seqlen_q), int(max_seqlen_k), scale_arg(softmax_scale),
                                                bool(causal), left, right, float(softcap), bool(deterministic)))
