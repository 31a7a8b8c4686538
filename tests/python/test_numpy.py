"""flashattn.attention / attention_backward on NumPy arrays (CPU backend) vs the float64 reference."""

import numpy as np
import pytest
from reference import attention_ref, attention_ref_backward, check_close, varlen_ref

import flashattn

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim): odd lengths, Nq != Nk both ways,
# single-row decode, GQA and MQA.
SHAPES = [
    (2, 17, 17, 4, 4, 32),
    (1, 1, 33, 2, 1, 64),
    (2, 33, 17, 6, 2, 16),
    (1, 100, 129, 4, 1, 128),
    (1, 65, 64, 2, 2, 64),
]

# (causal, window, softcap, softmax_scale)
OPTIONS = {
    "plain": (False, (-1, -1), 0.0, None),
    "causal": (True, (-1, -1), 0.0, None),
    "window": (False, (8, 0), 0.0, None),
    "window_both": (False, (5, 3), 0.0, None),
    "causal_window": (True, (4, -1), 0.0, None),
    "softcap": (False, (-1, -1), 5.0, None),
    "causal_softcap_scale": (True, (-1, -1), 2.0, 0.3),
}


def _inputs(shape, dtype, seed=0):
    b, nq, nk, h, hk, d = shape
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((b, nq, h, d)).astype(dtype)
    k = rng.standard_normal((b, nk, hk, d)).astype(dtype)
    v = rng.standard_normal((b, nk, hk, d)).astype(dtype)
    return q, k, v


def _kw(opt):
    causal, window, softcap, scale = opt
    return dict(causal=causal, window=window, softcap=softcap, softmax_scale=scale)


def _api_kw(opt):
    causal, window, softcap, scale = opt
    return dict(causal=causal, window_size=window, softcap=softcap, softmax_scale=scale)


def _baseline_out(q, k, v, opt, dtype):
    # The naive computation in the inputs' precision: float32 math, output rounded to the dtype.
    out, lse = attention_ref(q, k, v, dtype=np.float32, **_kw(opt))
    return out.astype(dtype), lse


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("opt", list(OPTIONS), ids=list(OPTIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_forward_matches_reference(shape, opt, dtype):
    q, k, v = _inputs(shape, dtype)
    out, lse = flashattn.attention(q, k, v, return_lse=True, **_api_kw(OPTIONS[opt]))
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == (shape[0], shape[3], shape[1])
    ref_out, ref_lse = attention_ref(q, k, v, **_kw(OPTIONS[opt]))
    base_out, base_lse = _baseline_out(q, k, v, OPTIONS[opt], dtype)
    check_close(out, ref_out, base_out, "out")
    check_close(lse, ref_lse, base_lse, "lse")


@pytest.mark.parametrize("opt", list(OPTIONS), ids=list(OPTIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_backward_matches_reference(shape, opt):
    q, k, v = _inputs(shape, np.float32, seed=1)
    dout = np.random.default_rng(2).standard_normal(q.shape).astype(np.float32)
    out, lse = flashattn.attention(q, k, v, return_lse=True, **_api_kw(OPTIONS[opt]))
    grads = flashattn.attention_backward(q, k, v, out, lse, dout, **_api_kw(OPTIONS[opt]))
    refs = attention_ref_backward(q, k, v, dout, **_kw(OPTIONS[opt]))
    bases = attention_ref_backward(q, k, v, dout, dtype=np.float32, **_kw(OPTIONS[opt]))
    for name, g, x, r, bse in zip(("dq", "dk", "dv"), grads, (q, k, v), refs, bases):
        assert g.shape == x.shape and g.dtype == x.dtype, name
        check_close(g, r, bse, name)


def test_default_scale_is_inverse_sqrt_head_dim():
    q, k, v = _inputs((1, 9, 9, 2, 2, 64), np.float32)
    a = flashattn.attention(q, k, v)
    b = flashattn.attention(q, k, v, softmax_scale=64 ** -0.5)
    c = flashattn.attention(q, k, v, softmax_scale=0.5)
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-3  # the scale is really used


def test_row_that_sees_no_key_gives_zero_and_minus_inf():
    # Nq > Nk with a causal mask: bottom-right alignment leaves the first Nq - Nk rows empty.
    q, k, v = _inputs((1, 6, 2, 1, 1, 16), np.float32)
    out, lse = flashattn.attention(q, k, v, causal=True, return_lse=True)
    assert np.all(out[0, :4] == 0)
    assert np.all(np.isneginf(lse[0, 0, :4]))
    assert np.all(np.isfinite(lse[0, 0, 4:]))


def test_strided_inputs_are_read_in_place():
    # q, k, v as views into one packed (B, N, 3, H, D) buffer: inner strides differ from a
    # contiguous array, which the extension must pass through as element strides.
    rng = np.random.default_rng(3)
    qkv = rng.standard_normal((2, 19, 3, 4, 32)).astype(np.float32)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    assert not q.flags.c_contiguous
    out = flashattn.attention(q, k, v, causal=True)
    ref, _ = attention_ref(q, k, v, causal=True)
    base, _ = attention_ref(q, k, v, causal=True, dtype=np.float32)
    check_close(out, ref, base, "out")


def test_readonly_inputs_are_accepted():
    q, k, v = _inputs((1, 8, 8, 2, 2, 16), np.float32)
    for x in (q, k, v):
        x.flags.writeable = False
    out = flashattn.attention(q, k, v)
    ref, _ = attention_ref(q, k, v)
    base, _ = attention_ref(q, k, v, dtype=np.float32)
    check_close(out, ref, base, "out")


VARLEN_CASES = {
    # cu_seqlens_q, cu_seqlens_k: includes an empty query sequence and a sequence without keys.
    "mixed": ([0, 5, 5, 17, 18], [0, 9, 12, 12, 30]),
    "single": ([0, 33], [0, 40]),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", list(VARLEN_CASES))
def test_varlen_forward_backward(case, causal):
    cu_q, cu_k = (np.asarray(c, dtype=np.int32) for c in VARLEN_CASES[case])
    h, hk, d = 4, 2, 32
    rng = np.random.default_rng(4)
    q = rng.standard_normal((cu_q[-1], h, d)).astype(np.float32)
    k = rng.standard_normal((cu_k[-1], hk, d)).astype(np.float32)
    v = rng.standard_normal((cu_k[-1], hk, d)).astype(np.float32)
    dout = rng.standard_normal(q.shape).astype(np.float32)
    max_q, max_k = int(np.diff(cu_q).max()), int(np.diff(cu_k).max())
    out, lse = flashattn.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal, return_lse=True)
    assert lse.shape == (h, cu_q[-1])
    ref_out, ref_lse, ref_grads = varlen_ref(q, k, v, cu_q, cu_k, backward_dout=dout, causal=causal)
    base_out, base_lse, base_grads = varlen_ref(
        q.astype(np.float32), k, v, cu_q, cu_k, backward_dout=dout, causal=causal, dtype=np.float32
    )
    check_close(out, ref_out, base_out, "out")
    check_close(lse, ref_lse, base_lse, "lse")
    grads = flashattn.attention_varlen_backward(q, k, v, cu_q, cu_k, max_q, max_k, out, lse, dout, causal=causal)
    for name, g, r, bse in zip(("dq", "dk", "dv"), grads, ref_grads, base_grads):
        check_close(g, r, bse, name)


def test_deterministic_backward_is_bit_identical():
    q, k, v = _inputs((1, 40, 40, 4, 2, 32), np.float32, seed=5)
    dout = np.ones_like(q)
    out, lse = flashattn.attention(q, k, v, causal=True, return_lse=True)
    g1 = flashattn.attention_backward(q, k, v, out, lse, dout, causal=True, deterministic=True)
    g2 = flashattn.attention_backward(q, k, v, out, lse, dout, causal=True, deterministic=True)
    for a, b in zip(g1, g2):
        np.testing.assert_array_equal(a, b)


def test_build_queries():
    assert flashattn.__version__.count(".") == 2
    assert isinstance(flashattn.cuda_built(), bool)
    assert flashattn.cuda_device_count() >= 0
    assert flashattn.build_info()
