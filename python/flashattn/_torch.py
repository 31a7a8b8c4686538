"""PyTorch integration: custom ops with fake kernels and autograd, and flash_attn's functions.

Two paths to the same implementation functions (_fwd_impl, _bwd_impl, _varlen_*_impl):
- traced (torch.compile, torch.export, fake tensors, dispatch modes, functorch transforms): the
  public functions call the torch.library custom ops flashattn::fwd/bwd/varlen_fwd/varlen_bwd
  (and kvcache_fwd, fp8_fwd, which have no autograd),
  whose fake kernels give shapes to the tracer and whose register_autograd attaches the backward,
  so torch.compile(fullgraph=True) has no graph break;
- eager: the public functions call the implementations directly (under a torch.autograd.Function
  when a gradient is needed). The custom-op dispatcher costs tens of microseconds per call, more
  than the kernel at small shapes; skipping it in eager changes nothing observable: same
  implementation, same allocator, same stream.
Either way every output and the workspace come from torch's allocator and the kernels run on
torch's current stream, which is what CUDA-graph capture needs: nothing inside a call allocates
or synchronises on its own. Tensors reach the extension as themselves, read through their
attributes in C++, not through DLPack, and one extension call does an eager call's whole host
side: route decision, contiguity copies, allocation of outputs and workspace (through torch's
functions) and the launch (see flashattn_ext.cpp). FLASHATTN_EAGER_OPS=1 routes eager calls
through the custom ops too (for A/B measurements of what the direct path saves).
"""

from __future__ import annotations

import os
from typing import Optional

import torch

from . import _C
from ._core import check_window, fp8_scaling_code, fp8_seed, scale_arg

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


# Dynamo folds this to True while it traces, so a compiled call takes the custom-op branch and
# traces nothing past it. is_dynamo_compiling is one frame where is_compiling is two (it also asks
# torch.jit.is_scripting); non-strict torch.export, which only is_compiling reports, runs under
# dispatch modes on fake tensors, and the extension's route check sends that to the custom ops.
_is_compiling = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)
_grad_enabled = torch.is_grad_enabled

# Anything that must see the custom ops rather than the direct path: each answers truthy when
# active. Called by the extension on every eager call, so only builtins (no Python frame); an
# active forward-AD level, the last blocker, is read by the extension from the module itself.
_BLOCKERS = tuple(
    f
    for f in (
        getattr(torch._C, "_len_torch_dispatch_stack", None),  # TorchDispatchMode (fake tensors, profilers)
        getattr(torch._C, "_are_functorch_transforms_active", None),  # vmap, grad, functionalize
        torch._C._get_tracing_state,  # torch.jit.trace
        getattr(torch._C, "_is_torch_function_mode_enabled", None),  # TorchFunctionMode
    )
    if f is not None
)

# The CPU backend runs with torch's intra-op thread count (torch.set_num_threads governs both).
_C.torch_setup(_FA_DTYPE, _raw_stream, torch.get_num_threads, Tensor, torch.empty_like, torch.empty, torch.device,
               torch.contiguous_format, torch.uint8, torch.float32, _grad_enabled, _BLOCKERS,
               torch.autograd.forward_ad)

# Tensor reads through torch's stable C shim (see flashattn_ext.cpp, AtenShim): on only if it
# reads these probes (views with offsets and strides, each dtype class) exactly as the attribute
# path does. FLASHATTN_TENSOR_READ=attr keeps the attribute path (A/B measurements). With the
# shim on, outputs are allocated through it too unless FLASHATTN_TENSOR_ALLOC=python
# (_C.torch_tensor_alloc() says which).
def _setup_tensor_read():
    if os.environ.get("FLASHATTN_TENSOR_READ", "") == "attr":
        return "attr: FLASHATTN_TENSOR_READ=attr"
    probes = [torch.empty(2, 3, 4, dtype=torch.bfloat16)[:, 1:, ::2], torch.empty(5),
              torch.empty(3, 2, dtype=torch.int32).t(), torch.empty(1, 4, 1, 8, dtype=torch.float16)[..., 3:]]
    to_handles = getattr(getattr(torch._C, "_aoti", None), "unsafe_alloc_void_ptrs_from_tensors", None)
    try:
        return _C.torch_setup_shim(probes, to_handles, os.path.join(os.path.dirname(torch.__file__), "lib"),
                                   os.environ.get("FLASHATTN_TENSOR_ALLOC", "") != "python")
    except Exception as e:  # pragma: no cover - a torch whose shim misbehaves: attribute reads
        return f"attr: {type(e).__name__}: {e}"


TENSOR_READ = _setup_tensor_read()

# Bound once: a module attribute lookup per call is a measurable share of a small call.
_c_fwd = _C.torch_fwd
_c_bwd = _C.torch_bwd
_c_varlen_fwd = _C.torch_varlen_fwd
_c_varlen_bwd = _C.torch_varlen_bwd
_c_kvcache = _C.torch_kvcache_fwd
_c_fp8 = _C.torch_fp8_fwd
# torch_fwd/torch_varlen_fwd's mode: a custom-op implementation (outputs never share a storage:
# custom ops must not return aliasing outputs), the public functions' eager call (route decided in
# the same crossing), the eager autograd.Function's forward.
_PLAIN, _ROUTE, _EAGER = 0, 1, 2

# FLASHATTN_PACK_BYTES=N: an eager call whose outputs total at most N bytes gets them from one
# torch allocation (they share its storage; see try_pack in flashattn_ext.cpp). 0 (default): off.
_C.torch_pack_bytes(int(os.environ.get("FLASHATTN_PACK_BYTES", "0") or 0))


# ------------------------------------------------------------------------------------------------
# Implementations (shared by the custom ops and the eager fast path). The extension makes
# flash_attn's contiguity copies (only a non-contiguous last dimension forces one; a
# non-contiguous dout is always copied), allocates out/lse or dq/dk/dv and any workspace through
# torch, and runs on torch's current stream.
# ------------------------------------------------------------------------------------------------
def _fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right, softcap, deterministic, want_lse=True):
    # want_lse=False (inference without return_attn_probs) saves an allocation; lse is then None.
    r = _c_fwd(q, k, v, _PLAIN, want_lse, softmax_scale, causal, window_left, window_right, softcap, deterministic)
    return r if want_lse else (r, None)


def _bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap, deterministic):
    return _c_bwd(False, dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right, softcap,
                  deterministic)


def _varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                     window_left, window_right, softcap, deterministic, seqused_k, want_lse=True):
    r = _c_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, () if seqused_k is None else seqused_k, max_seqlen_q,
                      max_seqlen_k, _PLAIN, want_lse, softmax_scale, causal, window_left, window_right, softcap,
                      deterministic)
    return r if want_lse else (r, None)


def _varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale,
                     causal, window_left, window_right, softcap, deterministic, seqused_k):
    return _c_varlen_bwd(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k,
                         () if seqused_k is None else seqused_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                         window_left, window_right, softcap, deterministic)


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
# Custom op: KV-cache decode (flash_attn_with_kvcache). No autograd, as in flash_attn. The caches
# are declared mutated (k/v are appended to them in place), so functionalization under
# torch.compile orders the call against other uses of the caches and keeps the write.
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::kvcache_fwd", mutates_args=("k_cache", "v_cache"))
def _kvcache_fwd(q: Tensor, k_cache: Tensor, v_cache: Tensor, k: Optional[Tensor], v: Optional[Tensor],
                 cache_seqlens: Optional[Tensor], cache_batch_idx: Optional[Tensor], block_table: Optional[Tensor],
                 softmax_scale: float, causal: bool, window_left: int, window_right: int, softcap: float,
                 num_splits: int) -> tuple[Tensor, Tensor]:
    return _c_kvcache(q, k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, block_table, _PLAIN, True,
                      softmax_scale, causal, window_left, window_right, softcap, num_splits)


@_kvcache_fwd.register_fake
def _(q, k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, block_table, softmax_scale, causal, window_left,
      window_right, softcap, num_splits):
    b, nq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, nq), dtype=torch.float32)


# ------------------------------------------------------------------------------------------------
# Custom op: the FP8 forward. No autograd: there is no fp8 backward, and flash_attn_fp8_func refuses
# inputs that would need one before reaching the op. seed is fa_fp8's uint64 passed as the int64
# with the same bits (the schema has no unsigned type); scaling is fa_fp8_scaling's value.
# ------------------------------------------------------------------------------------------------
@torch.library.custom_op("flashattn::fp8_fwd", mutates_args=())
def _fp8_fwd(q: Tensor, k: Tensor, v: Tensor, softmax_scale: float, causal: bool, window_left: int,
             window_right: int, scaling: int, incoherent: bool, seed: int) -> tuple[Tensor, Tensor]:
    return _c_fp8(q, k, v, _PLAIN, True, softmax_scale, causal, window_left, window_right, scaling, incoherent, seed)


@_fp8_fwd.register_fake
def _(q, k, v, softmax_scale, causal, window_left, window_right, scaling, incoherent, seed):
    b, nq, h, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h, nq), dtype=torch.float32)


# ------------------------------------------------------------------------------------------------
# Eager fast path
# ------------------------------------------------------------------------------------------------
class _FlashAttnFunc(torch.autograd.Function):
    """Same saved tensors and backward as the custom op's register_autograd, without the dispatcher.

    apply(q, k, v, opts, want_lse): opts are flash_attn_func's option arguments as given (the
    extension converts them); returns out, or (out, lse) with want_lse. lse is saved either way but
    returned only when asked: a second differentiable output makes autograd materialise a zero
    gradient for it in every backward (an allocation and a fill kernel); when it is returned it is
    marked non-differentiable and materialisation is off.
    """

    @staticmethod
    def forward(ctx, q, k, v, opts, want_lse):
        out, lse = _c_fwd(q, k, v, _EAGER, True, *opts)
        ctx.opts = opts
        ctx.save_for_backward(q, k, v, out, lse)
        if not want_lse:
            return out
        ctx.mark_non_differentiable(lse)
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx, dout, *_):
        if dout is None:  # only lse reached the loss; it carries no gradient
            return None, None, None, None, None
        if _grad_enabled():  # create_graph=True: refuse a double backward, as the custom op does
            return _FlashAttnFunc._backward_once(ctx, dout)
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _c_bwd(True, dout, q, k, v, out, lse, *ctx.opts)
        return dq, dk, dv, None, None

    @staticmethod
    @torch.autograd.function.once_differentiable
    def _backward_once(ctx, dout):
        # once_differentiable's wrapper (a no_grad block, output checks) costs microseconds per
        # backward; it is only needed when the backward itself is being recorded.
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = _c_bwd(True, dout, q, k, v, out, lse, *ctx.opts)
        return dq, dk, dv, None, None


class _FlashAttnVarlenFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, seqused_k, options):
        out, lse = _varlen_fwd_impl(q, k, v, cu_q, cu_k, *options, seqused_k)
        ctx.options = options
        ctx.has_seqused = seqused_k is not None
        ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, *((seqused_k,) if ctx.has_seqused else ()))
        ctx.mark_non_differentiable(lse)
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout, dlse):
        if dout is None:
            return (None,) * 7
        q, k, v, out, lse, cu_q, cu_k, *used = ctx.saved_tensors
        dq, dk, dv = _varlen_bwd_impl(dout, q, k, v, out, lse, cu_q, cu_k, *ctx.options,
                                      used[0] if ctx.has_seqused else None)
        return (dq, dk, dv) + (None,) * 4


def _c_apply(cls):
    """cls.apply without the Python layer some torch versions put around the C one.

    There (torch <= 2.11 at least) Function.apply is a Python classmethod that binds default
    arguments for Functions with a separate setup_context, sends the call to functorch when a
    transform is active, and unwraps functorch wrappers left over from finished transforms, then
    calls _C._FunctionBase.apply: several frames and a generator per call, microseconds on a small
    call. None of it applies to these Functions on the eager path: no setup_context, and the
    extension's route check has already sent functorch transforms (like every other tracer) to the
    custom ops. Where apply is already the C one (newer torch), it is returned unchanged.
    """
    c_apply = getattr(torch._C._FunctionBase, "__dict__", {}).get("apply")
    if c_apply is None or torch.autograd.Function.__dict__.get("apply") is c_apply:
        return cls.apply
    return c_apply.__get__(None, cls)


_flash_apply = _c_apply(_FlashAttnFunc)
_flash_varlen_apply = _c_apply(_FlashAttnVarlenFunc)

_FORCE_OPS = os.environ.get("FLASHATTN_EAGER_OPS", "0") not in ("", "0")


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


def _refuse_forward_ad(*tensors):
    # Forward-mode AD has no formula here, and neither the extension nor the custom op would carry
    # a tangent: refuse instead of returning an output whose tangent is silently missing. Reached
    # only on the custom-op route, which an active forward-AD level forces (_BLOCKERS).
    if torch.autograd.forward_ad._current_level >= 0:
        for t in tensors:
            if isinstance(t, Tensor) and torch.autograd.forward_ad.unpack_dual(t).tangent is not None:
                raise NotImplementedError("forward-mode AD (torch.autograd.forward_ad) is not supported by flashattn")


def _check_tensor(t, name):
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_func: q (batch, seqlen_q, nheads, headdim), k/v (batch, seqlen_k,
    nheads_k, headdim), nheads % nheads_k == 0. Causal and windows are bottom-right aligned.

    Returns out, or (out, softmax_lse, None) with return_attn_probs=True: softmax_lse is
    (batch, nheads, seqlen_q) float32; the attention matrix is never formed, hence None.
    """
    # An eager call without grad is these lines and one extension call: each Python operation
    # here is a measurable share of a small call's host time (bench/python_overhead.py).
    if dropout_p != 0.0 or alibi_slopes is not None:
        _reject_unsupported(dropout_p, alibi_slopes)
    # The default (no window) skips check_window's validation work.
    left, right = (-1, -1) if window_size == (-1, -1) else check_window(window_size)
    if not (_is_compiling() or _FORCE_OPS):
        # Also decides the route: None = autograd must record the call, NotImplemented = custom ops.
        r = _c_fwd(q, k, v, _ROUTE, return_attn_probs, softmax_scale, causal, left, right, softcap, deterministic)
        if r is None:
            r = _flash_apply(q, k, v, (softmax_scale, causal, left, right, softcap, deterministic),
                             bool(return_attn_probs))
        if r is not NotImplemented:
            return (r[0], r[1], None) if return_attn_probs else r
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    _check_tensor(v, "v")
    _refuse_forward_ad(q, k, v)
    out, lse = torch.ops.flashattn.fwd(q, k, v, scale_arg(softmax_scale), bool(causal), left, right, float(softcap),
                                       bool(deterministic))
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
    left, right = (-1, -1) if window_size == (-1, -1) else check_window(window_size)
    max_q, max_k = int(max_seqlen_q), int(max_seqlen_k)
    opts = (scale_arg(softmax_scale), bool(causal), left, right, float(softcap), bool(deterministic))
    if not (_is_compiling() or _FORCE_OPS):
        r = _c_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, () if seqused_k is None else seqused_k, max_q, max_k,
                          _ROUTE, return_attn_probs, *opts)
        if r is None:
            out, lse = _flash_varlen_apply(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_k, (max_q, max_k) + opts)
            return (out, lse, None) if return_attn_probs else out
        if r is not NotImplemented:
            return (r[0], r[1], None) if return_attn_probs else r
    _refuse_forward_ad(q, k, v)
    out, lse = torch.ops.flashattn.varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_q, max_k, *opts, seqused_k)
    return (out, lse, None) if return_attn_probs else out


def _unpack(x, name, layout, dim):
    """The views of x along its packed dimension `dim` (layout[dim] of them): no copy, so the
    kernels read the packed buffer in place (the head stride passes as it is) and autograd gathers
    the views' gradients into one tensor of x's shape, as flash_attn's packed functions return."""
    _check_tensor(x, name)
    if x.dim() != len(layout) or x.shape[dim] != int(layout[dim]):
        raise ValueError(f"{name}: expected shape ({', '.join(layout)}), got {tuple(x.shape)}")
    return x.unbind(dim)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_qkvpacked_func: qkv (batch, seqlen, 3, nheads, headdim). The same
    options and returns as flash_attn_func; qkv.grad has qkv's shape."""
    q, k, v = _unpack(qkv, "qkv", ("batch", "seqlen", "3", "nheads", "headdim"), 2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_kvpacked_func: q (batch, seqlen_q, nheads, headdim), kv (batch,
    seqlen_k, 2, nheads_k, headdim), nheads % nheads_k == 0. As flash_attn_func otherwise."""
    k, v = _unpack(kv, "kv", ("batch", "seqlen_k", "2", "nheads_k", "headdim"), 2)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                           deterministic, return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """flash_attn.flash_attn_varlen_qkvpacked_func: qkv (total, 3, nheads, headdim), cu_seqlens
    int32 (batch + 1,) for queries and keys alike. As flash_attn_varlen_func otherwise."""
    q, k, v = _unpack(qkv, "qkv", ("total", "3", "nheads", "headdim"), 1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn.flash_attn_varlen_kvpacked_func: q (total_q, nheads, headdim), kv (total_k, 2,
    nheads_k, headdim). As flash_attn_varlen_func otherwise."""
    k, v = _unpack(kv, "kv", ("total_k", "2", "nheads_k", "headdim"), 1)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p,
                                  softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False):
    """flash_attn.flash_attn_with_kvcache: attention of q over a KV cache, appending k/v first.

    q (batch, seqlen_q, nheads, headdim). k_cache/v_cache: (batch_cache, seqlen_cache, nheads_k,
    headdim), or with block_table (batch, max_num_blocks_per_seq) int32 a paged cache
    (num_blocks, page_block_size, nheads_k, headdim) (any page size >= 1). k/v (batch, seqlen_new,
    nheads_k, headdim), optional: written into the cache in place at rows cache_seqlens[b] ..
    (cache_seqlens required). cache_seqlens: int32 (batch,) or an int. cache_batch_idx: int32
    (batch,), which cache entry each sequence uses (contiguous cache only). Sequence b attends over
    cache_seqlens[b] + seqlen_new keys (the whole cache without cache_seqlens), causal/windows
    bottom-right aligned. num_splits: split-KV on CUDA (0 = heuristic, 1 = off; ignored on the CPU).
    On CUDA, index values are not checked (that would synchronise): lengths past the cache are
    clamped; on the CPU they are checked (ValueError).

    rotary_cos/rotary_sin (with rotary_interleaved), cache_leftpad and alibi_slopes are not
    implemented (NotImplementedError). No autograd, as in flash_attn.
    Returns out, or (out, softmax_lse) with return_softmax_lse (lse (batch, nheads, seqlen_q) float32).
    """
    if rotary_cos is not None or rotary_sin is not None:
        raise NotImplementedError(
            "rotary_cos/rotary_sin are not supported by flashattn (no fused rotary embedding); apply the rotary "
            "embedding to q and k before the call and pass rotary_cos=None, rotary_sin=None"
        )
    if cache_leftpad is not None:
        raise NotImplementedError("cache_leftpad is not supported by flashattn; pass cache_leftpad=None")
    if alibi_slopes is not None:
        raise NotImplementedError("alibi_slopes is not supported by flashattn; pass alibi_slopes=None")
    left, right = (-1, -1) if window_size == (-1, -1) else check_window(window_size)
    if isinstance(cache_seqlens, int):
        _check_tensor(q, "q")
        cache_seqlens = torch.full((q.shape[0],), cache_seqlens, dtype=torch.int32, device=q.device)
    if not (_is_compiling() or _FORCE_OPS):
        r = _c_kvcache(q, k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, block_table, _ROUTE,
                       return_softmax_lse, softmax_scale, causal, left, right, softcap, int(num_splits))
        if r is not NotImplemented:
            return r
    for t, name in ((q, "q"), (k_cache, "k_cache"), (v_cache, "v_cache")):
        _check_tensor(t, name)
    for t, name in ((k, "k"), (v, "v"), (cache_seqlens, "cache_seqlens"), (cache_batch_idx, "cache_batch_idx"),
                    (block_table, "block_table")):
        if t is not None:
            _check_tensor(t, name)
    _refuse_forward_ad(q, k_cache, v_cache, k, v)
    out, lse = torch.ops.flashattn.kvcache_fwd(q, k_cache, v_cache, k, v, cache_seqlens, cache_batch_idx, block_table,
                                               scale_arg(softmax_scale), bool(causal), left, right, float(softcap),
                                               int(num_splits))
    return (out, lse) if return_softmax_lse else out


def _refuse_fp8_grad():
    raise NotImplementedError(
        "flash_attn_fp8_func has no backward (the fp8 forward is inference-only; no fp8 backward is "
        "implemented): call it under torch.no_grad() / torch.inference_mode(), or on tensors that do not "
        "require grad"
    )


def flash_attn_fp8_func(q, k, v, softmax_scale=None, causal=False, window_size=(-1, -1), incoherent=True,
                        scaling="block", seed=None, return_attn_probs=False):
    """FlashAttention-3's FP8 (e4m3) forward, inference only, in flash_attn_func's layout.

    q (batch, seqlen_q, nheads, headdim), k/v (batch, seqlen_k, nheads_k, headdim), float16 or
    bfloat16: the call quantises them to e4m3 itself (into a workspace from torch's allocator).
    headdim 64, 128 or 256; causal and windows bottom-right aligned; GQA/MQA. scaling: "block"
    (one scale per 64 query rows / 128 keys, V per head) or "per_head". incoherent: random signs
    and a Hadamard transform on q and k before quantising (QK^T unchanged; spreads outlier
    channels); seed: of the signs (None = the library's default). CUDA needs an sm90 GPU
    (NotImplementedError elsewhere); CPU tensors run on the CPU backend, which quantises the same
    way and computes in float32.

    Returns out (q's dtype), or (out, softmax_lse, None) with return_attn_probs=True (lse
    (batch, nheads, seqlen_q) float32). No backward: an input that requires grad while grad mode
    is on raises NotImplementedError.
    """
    left, right = (-1, -1) if window_size == (-1, -1) else check_window(window_size)
    code, bits = fp8_scaling_code(scaling), fp8_seed(seed)
    if not (_is_compiling() or _FORCE_OPS):
        r = _c_fp8(q, k, v, _ROUTE, return_attn_probs, softmax_scale, causal, left, right, code, incoherent, bits)
        if r is None:  # autograd would have to record the call
            _refuse_fp8_grad()
        if r is not NotImplemented:
            return (r[0], r[1], None) if return_attn_probs else r
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    _check_tensor(v, "v")
    if _grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        _refuse_fp8_grad()
    _refuse_forward_ad(q, k, v)
    out, lse = torch.ops.flashattn.fp8_fwd(q, k, v, scale_arg(softmax_scale), bool(causal), left, right, code,
                                           bool(incoherent), bits - (1 << 64) if bits >= 1 << 63 else bits)
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
