"""Misuse: every bad argument raises the documented exception type with the library's message."""

import numpy as np
import pytest

import flashattn
from flashattn import _C


def qkv(b=1, nq=8, nk=8, h=2, hk=2, d=16, dtype=np.float32):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((b, nq, h, d)).astype(dtype),
            rng.standard_normal((b, nk, hk, d)).astype(dtype),
            rng.standard_normal((b, nk, hk, d)).astype(dtype))


def test_float64_is_a_type_error():
    q, k, v = (x.astype(np.float64) for x in qkv())
    with pytest.raises(TypeError, match="q: unsupported dtype float64"):
        flashattn.attention(q, k, v)


def test_mixed_dtypes_name_the_tensor():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="k: expected dtype float32, got float16"):
        flashattn.attention(q, k.astype(np.float16), v)


def test_wrong_rank():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="q: expected rank 4, got 3"):
        flashattn.attention(q[0], k, v)


def test_head_dim_mismatch():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="k: head_dim 32 does not match q's"):
        flashattn.attention(q, np.zeros((1, 8, 2, 32), np.float32), v)


def test_heads_not_a_multiple_of_kv_heads():
    q, k, v = qkv(h=3, hk=2)
    with pytest.raises(ValueError, match="q has 3 heads, not a multiple of k's"):
        flashattn.attention(q, k, v)


def test_batch_mismatch():
    q, _, _ = qkv(b=2)
    _, k, v = qkv(b=3)
    with pytest.raises(ValueError, match="k: batch size 3 does not match q's"):
        flashattn.attention(q, k, v)


def test_v_shape_must_match_k():
    q, k, v = qkv(nk=8)
    with pytest.raises(ValueError, match="v: expected shape"):
        flashattn.attention(q, k, v[:, :5])


def test_non_contiguous_last_dim_is_refused_not_copied():
    q, k, v = qkv(d=32)
    with pytest.raises(ValueError, match="q: last dimension must be contiguous \\(stride 1\\), got stride 2"):
        flashattn.attention(q[..., ::2], k[..., ::2].copy(), v[..., ::2].copy())


def test_negative_stride():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="k: negative stride in dimension 1"):
        flashattn.attention(q, k[:, ::-1], v)


def test_unsupported_head_dim_is_not_implemented():
    q, k, v = qkv(d=264)
    with pytest.raises(NotImplementedError, match="head_dim 264"):
        flashattn.attention(q, k, v)


def test_bad_window_left():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="window_left must be -1 \\(unbounded\\) or >= 0, got -2"):
        flashattn.attention(q, k, v, window_size=(-2, 0))


def test_window_must_be_a_pair():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="window_size must be a pair"):
        flashattn.attention(q, k, v, window_size=(1, 2, 3))


def test_negative_softcap():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="softcap must be finite and >= 0"):
        flashattn.attention(q, k, v, softcap=-1.0)


def test_nan_scale():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="softmax_scale must be finite and >= 0"):
        flashattn.attention(q, k, v, softmax_scale=float("nan"))


def test_not_an_array():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="q must be a NumPy array, a torch tensor or another DLPack array, got list"):
        flashattn.attention(q.tolist(), k, v)


def _varlen(cu_q, cu_k, cu_dtype=np.int32):
    rng = np.random.default_rng(1)
    q = rng.standard_normal((12, 2, 16)).astype(np.float32)
    k = rng.standard_normal((12, 2, 16)).astype(np.float32)
    return q, k, k.copy(), np.asarray(cu_q, cu_dtype), np.asarray(cu_k, cu_dtype)


def test_varlen_cu_seqlens_must_start_at_zero():
    q, k, v, cu_q, cu_k = _varlen([1, 6, 12], [0, 6, 12])
    with pytest.raises(ValueError, match="cu_seqlens_q\\[0\\] must be 0, got 1"):
        flashattn.attention_varlen(q, k, v, cu_q, cu_k, 6, 6)


def test_varlen_cu_seqlens_must_not_decrease():
    q, k, v, cu_q, cu_k = _varlen([0, 6, 12], [0, 7, 5])
    with pytest.raises(ValueError, match="cu_seqlens_k must be non-decreasing"):
        flashattn.attention_varlen(q, k, v, cu_q, cu_k, 6, 7)


def test_varlen_cu_seqlens_dtype():
    q, k, v, cu_q, cu_k = _varlen([0, 6, 12], [0, 6, 12], cu_dtype=np.int64)
    with pytest.raises(TypeError, match="cu_seqlens_q: unsupported dtype int64"):
        flashattn.attention_varlen(q, k, v, cu_q, cu_k, 6, 6)


def test_backward_lse_shape():
    q, k, v = qkv()
    out, lse = flashattn.attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match="lse: expected shape"):
        flashattn.attention_backward(q, k, v, out, lse[:, :1], out)


def test_backward_dout_dtype():
    q, k, v = qkv()
    out, lse = flashattn.attention(q, k, v, return_lse=True)
    with pytest.raises(TypeError, match="dout: expected dtype float32, got float16"):
        flashattn.attention_backward(q, k, v, out, lse, out.astype(np.float16))


def test_bad_backend_option_through_the_extension():
    q, k, v = qkv()
    out = np.empty_like(q)
    with pytest.raises(ValueError, match="unknown backend 7"):
        _C.forward(q, k, v, out, None, 0.0, False, -1, -1, 0.0, False, 7, 0, 0, 0, None)


def test_failed_call_leaves_outputs_untouched():
    q, k, v = qkv(h=3, hk=2)
    out = np.full_like(q, 123.0)
    lse = np.full((1, 3, 8), 7.0, np.float32)
    with pytest.raises(ValueError):
        _C.forward(q, k, v, out, lse, 0.0, False, -1, -1, 0.0, False, 0, 0, 0, 0, None)
    assert np.all(out == 123.0) and np.all(lse == 7.0)


def test_cuda_backend_on_cpu_tensors():
    q, k, v = qkv()
    out = np.empty_like(q)
    with pytest.raises(ValueError, match="the CUDA backend was asked for but q is a CPU tensor"):
        _C.forward(q, k, v, out, None, 0.0, False, -1, -1, 0.0, False, _C.BACKEND_CUDA, 0, 0, 0, None)


TORCH_FUNCTIONS = ("flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func",
                   "flash_attn_kvpacked_func", "flash_attn_varlen_qkvpacked_func",
                   "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache", "flash_attn_fp8_func")


def test_every_torch_function_is_exported():
    assert set(TORCH_FUNCTIONS) <= set(flashattn.__all__)
    assert all(callable(getattr(flashattn, name)) for name in TORCH_FUNCTIONS)


def test_torch_functions_without_torch_say_so():
    # Without torch the package still imports; the torch functions exist and fail with a clear
    # ImportError (not an AttributeError at the call site).
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed: the no-torch stand-ins are not in use")
    for name in TORCH_FUNCTIONS:
        with pytest.raises(ImportError, match=f"flashattn.{name} needs PyTorch, which is not installed"):
            getattr(flashattn, name)(None)
