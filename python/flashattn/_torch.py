"""PyTorch integration: custom ops with fake kernels and autograd, and flash_attn's functions.

Two paths to the same implementation functions (_fwd_impl, _bwd_impl, _varlen_*_impl):
- traced (torch.compile, torch.export, fake tensors, dispatch modes, functorch transforms): the
  public functions call the torch.library custom ops flashattn::fwd/bwd/varlen_fwd/varlen_bwd,
  whose fake kernels give shapes to the tracer and whose register_autograd attaches the backward,
  so torch.compile(fullgraph=True) has no graph break;
- eager: the public functions call the implementations directly (under a torch.autograd.Function
  when a gradient is needed). The custom-op dispatcher costs tens of microseconds per call, more
  than the kernel at small shapes; skipping it in eager changes nothing observable: same
  implementation, same allocator, same stream.
Either way every output and the workspace come from torch's allocator and the kernels run on
torch's current stream, which is what CUDA-graph capture needs: nothing inside a call allocates
or synchronises on its own. Tensors reach the extension as themselves, read through their
attributes in C++, not through DLPack (see flashattn_ext.cpp); FLASHATTN_EAGER_OPS=1 routes eager calls through the custom ops too (for
A/B measurements of what the direct path saves).
"""

from __future__ import annotations

import os
from typing import Optional

import torch

from . import _C
from ._core import check_window, scale_arg

Tensor = torch.Tensor

# fa_dtype codes (flashattn.h), and the torch objects the extension reads tensors with.
_FA_DTYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 4}
if hasattr(torch, "float8_e4m3fn"):
    _FA_DTYPE[torch.float8_e4m3fn] = 3

try:
    # The raw-pointer query inductor's generated code uses; a fraction of the cost of
    # torch.cuda.current_stream(), which builds a Stream object each call.
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - torch without CUDA support

    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


# The CPU backend runs with torch's intra-op thread count (torch.set_num_threads governs both).
_C.torch_setup(_FA_DTYPE, _raw_stream, torch.get_num_threads)


def _last_dim_contiguous(x: Tensor) -> Tensor:
    # flash_attn's convention: only a non-contiguous last dimension forces a copy; other strides
    # (e.g. q/k/v sliced out of a packed qkv, or transformers' transposed heads) pass as they are.
    # is_contiguous() first: the common case, and cheaper than stride(-1).
    return x if x.is_contiguous() or x.stride(-1) == 1 else x.contiguous()


def _check_rank(x: Tensor, want: int, name: str):
    if x.dim() != want:
        raise ValueError(f"{name}: expected rank {want}, got {x.dim()}")


def _empty_like(x: Tensor) -> Tensor:
    # Contiguous, x's shape, dtype and device; cheaper than torch.empty(x.shape, dtype=..., device=...).
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _workspace(need: int, like: Tensor) -> Tensor:
    return torch.empty(need, dtype=torch.uint8, device=like.device)


# ------------------------------------------------------------------------------------------------
# Implementations (shared by the custom ops and the eager fast path)
# ------------------------------------------------------------------------------------------------
def _fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right, softcap, deterministic, want_lse=True):
    # want_lse=False (inference without return_attn_probs) saves an allocation; lse is then None.
    # Without lse the library's validation reports a wrong rank (same message).
    q, k, v = _last_dim_contiguous(q), _last_dim_contiguous(k), _last_dim_contiguous(v)
    out = _empty_like(q)
    if want_lse:
        _check_rank(q, 4, "q")
        b, nq, h, _ = q.shape
        lse = q.new_empty((b, h, nq), dtype=torch.float32)
    else:
        lse = None
    args = (q, k, v, out.data_ptr(), 0 if lse is None else lse.data_ptr(), softmax_scale, causal, window_left,
            window_right, softcap, deterministic)
    need = _C.torch_forward(*args, 0, 0)
    if need:  # the call did not run: it needs this much scratch, from torch's allocator
        ws = _workspace(need, q)
        _C.torch_forward(*args, ws.data_ptr(), need)
    return out, lse


def _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap, deterministic):
    # dout from autograd can be an expanded view (stride 0 everywhere, e.g. from .sum()).
    dout = dout.contiguous()
    q, k, v, out = (_last_dim_contiguous(q), _last_dim_contiguous(k), _last_dim_contiguous(v),
                    _last_dim_contiguous(out))
    dq, dk, dv = _empty_like(q), _empty_like(k), _empty_like(v)
    args = (q, k, v, out, lse, dout, dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), softmax_scale, causal,
            window_left, window_right, softcap, deterministic)
    need = _C.torch_backward(*args, 0, 0)
    if need:
        ws = _workspace(need, q)
        _C.torch_backward(*args, ws.data_ptr(), need)
    return dq, dk, dv


def _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                     window_left, window_right, softcap, deterministic, seqused_k, want_lse=True):
    q, k, v = _last_dim_contiguous(q), _last_dim_contiguous(k), _last_dim_contiguous(v)
    out = _empty_like(q)
    if want_lse:
        _check_rank(q, 3, "q")
        total_q, h, _ = q.shape
        lse = q.new_empty((h, total_q), dtype=torch.float32)
    else:
        lse = None
    args = (q, k, v, cu_seqlens_q, cu_seqlens_k, () if seqused_k is None else seqused_k, max_seqlen_q,
            max_seqlen_k, out.data_ptr(), 0 if lse is None else lse.data_ptr(), softmax_scale, causal, window_left,
            window_right, softcap, deterministic)
    need = _C.torch_varlen_forward(*args, 0, 0)
    if need:
        ws = _workspace(need, q)
        _C.torch_varlen_forward(*args, ws.data_ptr(), need)
    return out, lse


def _varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                     causal, window_left, window_right, softcap, deterministic, seqused_k):
    dout = dout.contiguous()
    q, k, v, out = (_last_dim_contiguous(q), _last_dim_contiguous(k), _last_dim_contiguous(v),
                    _last_dim_contiguous(out))
    dq, dk, dv = _empty_like(q), _empty_like(k), _empty_like(v)
    args = (q, k, v, cu_seqlens_q, cu_seqlens_k, () if seqused_k is None else seqused_k, max_seqlen_q,
            max_seqlen_k, out, lse, dout, dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), softmax_scale, causal,
            window_left, window_right, softcap, deterministic)
    need = _C.torch_varlen_backward(*args, 0, 0)
    if need:
        ws = _workspace(need, q)
        _C.torch_varlen_backward(*args, ws.data_ptr(), need)
    return dq, dk, dv


# ------------------------------------------------------------------------------------------------
# Custom ops: batch form
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::fwd", mutates_args=())
def _fwd(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_left: int,
         window_right: int, softcap: float, deterministic: bool) -> tuple[Tensor, Tensor]:
    return _fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right, softcap, deterministic)


@_fwd.register_fake
def _(q, k, v, softmax_scale, causal, window_left, window_right, softcap, deterministic):
    b, nq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, nq), dtype=torch.float32)


@torch.library.custom_op("flashattn::bwd", mutates_args=())
def _bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, softmax_scale: float,
         causal: bool, window_left: int, window_right: int, softcap: float,
         deterministic: bool) -> tuple[Tensor, Tensor, Tensor]:
    return _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap,
                     deterministic)


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
# Custom ops: varlen form
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::varlen_fwd", mutates_args=())
def _varlen_fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
                max_seqlen_k: int, softmax_scale: float, causal: bool, window_left: int, window_right: int,
                softcap: float, deterministic: bool, seqused_k: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
    return _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                            window_left, window_right, softcap, deterministic, seqused_k)


@_varlen_fwd.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal, window_left,
      window_right, softcap, deterministic, seqused_k=None):
    total_q, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((h, total_q), dtype=torch.float32)


@torch.library.custom_op("flashattn::varlen_bwd", mutates_args=())
def _varlen_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, cu_seqlens_q: Tensor,
                cu_seqlens_k: Tensor, max_seqlen_q: int, max_seqlen_k: int, softmax_scale: float, causal: bool,
                window_left: int, window_right: int, softcap: float, deterministic: bool,
                seqused_k: Optional[Tensor] = None) -> tuple[Tensor, Tensor, Tensor]:
    return _varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                            softmax_scale, causal, window_left, window_right, softcap, deterministic, seqused_k)


@_varlen_bwd.register_fake
def _(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
      window_left, window_right, softcap, deterministic, seqused_k=None):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _varlen_setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k, *options = inputs
    # 8 options, then seqused_k unless the caller left the defaulted argument out.
    ctx.options, seqused_k = options[:8], (options[8] if len(options) > 8 else None)
    out, lse = output
    ctx.has_seqused = seqused_k is not None
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, *((seqused_k,) if ctx.has_seqused else ()))


def _varlen_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_q, cu_k, *used = ctx.saved_tensors
    seqused_k = used[0] if ctx.has_seqused else None
    dq, dk, dv = torch.ops.flashattn.varlen_bwd(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.options, seqused_k)
    return (dq, dk, dv) + (None,) * 11


torch.library.register_autograd("flashattn::varlen_fwd", _varlen_backward, setup_context=_varlen_setup_context)


# ------------------------------------------------------------------------------------------------
# Eager fast path
# ------------------------------------------------------------------------------------------------
class _FlashAttnFunc(torch.autograd.Function):
    # Same saved tensors and backward as the custom op's register_autograd, without the dispatcher.
    @staticmethod
    def forward(ctx, q, k, v, *options):
        out, lse = _fwd_impl(q, k, v, *options)
        ctx.options = options
        ctx.save_for_backward(q, k, v, out, lse)
        return out, lse

    @staticmethod
    @torch.autograd.function.once_differentiable  # like the custom op: no double backward
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _bwd_impl(dout, q, k, v, out, lse, *ctx.options)
        return dq, dk, dv, None, None, None, None, None, None


class _FlashAttnVarlenFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, seqused_k, *options):
        out, lse = _varlen_fwd_impl(q, k, v, cu_q, cu_k, *options, seqused_k)
        ctx.options = options
        ctx.has_seqused = seqused_k is not None
        ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, *((seqused_k,) if ctx.has_seqused else ()))
        return out, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout, dlse):
        q, k, v, out, lse, cu_q, cu_k, *used = ctx.saved_tensors
        dq, dk, dv = _varlen_bwd_impl(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.options,
                                      used[0] if ctx.has_seqused else None)
        return (dq, dk, dv) + (None,) * 11


_is_compiling = torch.compiler.is_compiling
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
_jit_tracing = torch._C._get_tracing_state
_FORCE_OPS = os.environ.get("FLASHATTN_EAGER_OPS", "0") not in ("", "0")


def _direct(q, k, v) -> bool:
    """True when the call may bypass the custom ops: plain eager tensors, no tracer, no transform,
    no dispatch mode that expects to see the op."""
    # is_compiling first: under dynamo it is a constant True and nothing after it gets traced.
    return (not _is_compiling() and type(q) is Tensor and type(k) is Tensor and type(v) is Tensor
            and not _FORCE_OPS and not _dispatch_modes() and not _functorch_active() and not _jit_tracing())


def _needs_grad(q, k, v) -> bool:
    return (q.requires_grad or k.requires_grad or v.requires_grad) and torch.is_grad_enabled()


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


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")


def _window(window_size):
    # The default (no window) skips check_window's validation work.
    if window_size == (-1, -1):
        return -1, -1
    return check_window(window_size)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_func: q (batch, seqlen_q, nheads, headdim), k/v (batch, seqlen_k,
    nheads_k, headdim), nheads % nheads_k == 0. Causal and windows are bottom-right aligned.

    Returns out, or (out, softmax_lse, None) with return_attn_probs=True: softmax_lse is
    (batch, nheads, seqlen_q) float32; the attention matrix is never formed, hence None.
    """
    if dropout_p != 0.0 or alibi_slopes is not None:
        _reject_unsupported(dropout_p, alibi_slopes)
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    _check_tensor(v, "v")
    left, right = _window(window_size)
    opts = (scale_arg(softmax_scale), bool(causal), left, right, float(softcap), bool(deterministic))
    if not _direct(q, k, v):
        out, lse = torch.ops.flashattn.fwd(q, k, v, *opts)
    elif _needs_grad(q, k, v):
        out, lse = _FlashAttnFunc.apply(q, k, v, *opts)
    else:
        out, lse = _fwd_impl(q, k, v, *opts, want_lse=bool(return_attn_probs))
    return (out, lse, None) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, seqused_k=None):
    """flash_attn.flash_attn_varlen_func: q (total_q, nheads, headdim), k/v (total_k, nheads_k,
    headdim), cu_seqlens_q/k int32 (batch + 1,) on q's device.

    seqused_k (optional, int32 (batch,), as in FlashAttention-3's varlen interface): sequence b
    attends to its first seqused_k[b] keys only (cu_seqlens_k still gives where its keys start);
    the gradients of the unused keys are zero.

    Returns out, or (out, softmax_lse, None) with return_attn_probs=True; softmax_lse is
    (nheads, total_q) float32.
    """
    if dropout_p != 0.0 or alibi_slopes is not None:
        _reject_unsupported(dropout_p, alibi_slopes)
    for t, name in ((q, "q"), (k, "k"), (v, "v"), (cu_seqlens_q, "cu_seqlens_q"), (cu_seqlens_k, "cu_seqlens_k")):
        _check_tensor(t, name)
    if seqused_k is not None:
        _check_tensor(seqused_k, "seqused_k")
    left, right = _window(window_size)
    opts = (int(max_seqlen_q), int(max_seqlen_k), scale_arg(softmax_scale), bool(causal), left, right,
            float(softcap), bool(deterministic))
    if not _direct(q, k, v):
        out, lse = torch.ops.flashattn.varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, *opts, seqused_k)
    elif _needs_grad(q, k, v):
        out, lse = _FlashAttnVarlenFunc.apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, *opts)
    else:
        out, lse = _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, *opts, seqused_k,
                                    want_lse=bool(return_attn_probs))
    return (out, lse, None) if return_attn_probs else out


def backward_args(dout, q, k, v, out, lse, softmax_scale, causal, window_size, softcap, deterministic):
    """Arguments of torch.ops.flashattn.bwd, for callers that drive the backward themselves."""
    left, right = check_window(window_size)
    return (dout, q, k, v, out, lse, scale_arg(softmax_scale), bool(causal), left, right, float(softcap),
            bool(deterministic))


def varlen_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out, lse, dout,
                    softmax_scale, causal, window_size, softcap, deterministic, seqused_k=None):
    left, right = check_window(window_size)
    return tuple(torch.ops.flashattn.varlen_bwd(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                                                int(max_seqlen_q), int(max_seqlen_k), scale_arg(softmax_scale),
                                                bool(causal), left, right, float(softcap), bool(deterministic),
                                                seqused_k))
