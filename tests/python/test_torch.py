"""The torch layer on CPU tensors: flash_attn signatures, autograd, custom-op registration.

Skips (visibly) where torch is not installed; the GPU half lives in test_torch_cuda.py.
"""

import os

import numpy as np
import pytest
from reference import attention_ref, attention_ref_backward, check_close, varlen_ref

torch = pytest.importorskip("torch", reason="torch is not installed: torch-layer tests skipped")

import flashattn  # noqa: E402


def _qkv(b=2, nq=19, nk=23, h=4, hk=2, d=32, dtype=torch.float32, requires_grad=True):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(s, generator=g, dtype=dtype).requires_grad_(requires_grad)
            for s in ((b, nq, h, d), (b, nk, hk, d), (b, nk, hk, d))]


@pytest.mark.parametrize("causal,window,softcap", [(False, (-1, -1), 0.0), (True, (-1, -1), 0.0),
                                                    (False, (6, 2), 0.0), (True, (-1, -1), 3.0)])
def test_autograd_matches_reference(causal, window, softcap):
    q, k, v = _qkv()
    out = flashattn.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=softcap)
    dout = torch.randn_like(out)
    out.backward(dout)
    npy = [x.detach().numpy() for x in (q, k, v)]
    kw = dict(causal=causal, window=window, softcap=softcap)
    ref, _ = attention_ref(*npy, **kw)
    base, _ = attention_ref(*npy, dtype=np.float32, **kw)
    check_close(out.detach().numpy(), ref, base, "out")
    refs = attention_ref_backward(*npy, dout.numpy(), **kw)
    bases = attention_ref_backward(*npy, dout.numpy(), dtype=np.float32, **kw)
    for name, x, r, bse in zip(("dq", "dk", "dv"), (q, k, v), refs, bases):
        check_close(x.grad.numpy(), r, bse, name)


def test_return_attn_probs_convention():
    q, k, v = _qkv(requires_grad=False)
    out, lse, probs = flashattn.flash_attn_func(q, k, v, return_attn_probs=True)
    assert probs is None
    assert lse.shape == (2, 4, 19) and lse.dtype == torch.float32
    _, ref_lse = attention_ref(*(x.numpy() for x in (q, k, v)))
    np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-5, atol=1e-5)


def test_softmax_scale_and_sum_backward():
    # .sum() hands the backward an expanded dout (all strides 0): it must be made contiguous.
    q, k, v = _qkv()
    flashattn.flash_attn_func(q, k, v, softmax_scale=0.25).sum().backward()
    npy = [x.detach().numpy() for x in (q, k, v)]
    dout = np.ones((2, 19, 4, 32), np.float32)
    refs = attention_ref_backward(*npy, dout, softmax_scale=0.25)
    bases = attention_ref_backward(*npy, dout, softmax_scale=0.25, dtype=np.float32)
    for name, x, r, bse in zip(("dq", "dk", "dv"), (q, k, v), refs, bases):
        check_close(x.grad.numpy(), r, bse, name)


def test_non_contiguous_last_dim_is_copied_like_flash_attn():
    q, k, v = _qkv(d=64, requires_grad=False)
    qs, ks, vs = q[..., ::2], k[..., ::2], v[..., ::2]
    out = flashattn.flash_attn_func(qs, ks, vs)
    ref = flashattn.flash_attn_func(qs.contiguous(), ks.contiguous(), vs.contiguous())
    torch.testing.assert_close(out, ref, rtol=0, atol=0)


def test_transposed_views_are_not_copied_and_give_the_same_result():
    # transformers hands (batch, heads, seq, dim); its transpose is a strided (b, s, h, d) view.
    q, k, v = _qkv(requires_grad=False)
    qt, kt, vt = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
    assert not qt.is_contiguous()
    torch.testing.assert_close(flashattn.flash_attn_func(qt, kt, vt), flashattn.flash_attn_func(q, k, v))


# Slices into a larger buffer: data pointers past the storage's start, strides of the buffer.
# Kept as source so a subprocess builds the same tensors.
_OFFSET_VIEWS = ("g = torch.Generator().manual_seed(1)\n"
                 "buf = torch.randn(3, 30, 5, 40, generator=g)\n"
                 "q, k, v = buf[1:, 3:22, 1:5, :32], buf[1:, 2:25, 2:4, 4:36], buf[:2, 5:28, 3:5, 8:40]\n")


def _offset_views():
    ns = {"torch": torch}
    exec(_OFFSET_VIEWS, ns)
    return ns["q"], ns["k"], ns["v"]


def _saved_by_subprocess(code, **env):
    """Runs code, which torch.saves its result to OUT, in a fresh interpreter with env added to the
    environment (the extension reads its switches at import); returns what it saved."""
    import subprocess
    import sys
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.pt")
        subprocess.run([sys.executable, "-c", code.replace("OUT", repr(path))], env=dict(os.environ, **env), check=True)
        return torch.load(path)


def test_views_with_storage_offsets_read_exactly():
    # Whichever way the extension reads tensors (TENSOR_READ), out must equal the contiguous call's.
    q, k, v = _offset_views()
    assert q.storage_offset() > 0 and not q.is_contiguous()
    out, lse, _ = flashattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    ref, ref_lse, _ = flashattn.flash_attn_func(q.contiguous(), k.contiguous(), v.contiguous(), causal=True,
                                                return_attn_probs=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=0)


def test_tensor_read_shim_is_on_where_torch_has_it():
    # The aoti shim path must pass its import-time probes on a torch that has the shim; otherwise a
    # silent fallback would hide a broken fast path. FLASHATTN_TENSOR_READ=attr turns it off.
    from flashattn import _torch
    if os.environ.get("FLASHATTN_TENSOR_READ") == "attr":
        assert _torch.TENSOR_READ.startswith("attr")
    elif not hasattr(getattr(torch._C, "_aoti", None), "unsafe_alloc_void_ptrs_from_tensors"):
        pytest.skip("this torch has no torch._C._aoti.unsafe_alloc_void_ptrs_from_tensors")
    else:
        assert _torch.TENSOR_READ == "shim", _torch.TENSOR_READ
        assert flashattn._C.torch_tensor_read().startswith("shim")


def test_tensor_read_paths_agree():
    # The same calls in a process that reads tensors through their attributes: bit-identical.
    code = (
        "import torch, flashattn\n"
        "from flashattn import _torch\n"
        "assert _torch.TENSOR_READ.startswith('attr'), _torch.TENSOR_READ\n"
        + _OFFSET_VIEWS +
        "torch.save(flashattn.flash_attn_func(q, k, v, causal=True), OUT)\n"
    )
    other = _saved_by_subprocess(code, FLASHATTN_TENSOR_READ="attr")
    q, k, v = _offset_views()
    torch.testing.assert_close(flashattn.flash_attn_func(q, k, v, causal=True), other, rtol=0, atol=0)


def test_tensor_alloc_shim_is_on_with_the_read_shim():
    # Outputs are allocated through the shim wherever it reads tensors (unless turned off), so a
    # broken allocation pair must fail here rather than fall back silently.
    from flashattn import _torch
    alloc = flashattn._C.torch_tensor_alloc()
    if not _torch.TENSOR_READ.startswith("shim"):
        assert alloc.startswith("python"), alloc
    elif os.environ.get("FLASHATTN_TENSOR_ALLOC") == "python":
        assert alloc == "python: FLASHATTN_TENSOR_ALLOC=python", alloc
    else:
        assert alloc.startswith("shim"), alloc


@pytest.mark.parametrize("make", [
    lambda x: x,  # contiguous: out takes q's strides, as torch.empty_like(q) does
    lambda x: x.transpose(1, 2).contiguous().transpose(1, 2),  # strided: out is contiguous
    # contiguous with an odd stride on a size-1 dimension, which empty_like keeps
    lambda x: x[:, :1].contiguous().as_strided((x.shape[0], 1) + x.shape[2:], (x.shape[2] * x.shape[3], 7, x.shape[3], 1)),
])
def test_outputs_are_plain_tensors_like_empty_like(make):
    q, k, v = _qkv(requires_grad=False)
    q = make(q)
    out, lse, _ = flashattn.flash_attn_func(q, k, v, return_attn_probs=True)
    want = torch.empty_like(q) if q.is_contiguous() else torch.empty_like(q, memory_format=torch.contiguous_format)
    assert type(out) is torch.Tensor and type(lse) is torch.Tensor
    assert (out.shape, out.stride(), out.dtype, out.device) == (want.shape, want.stride(), want.dtype, want.device)
    assert lse.shape == (q.shape[0], q.shape[2], q.shape[1]) and lse.dtype == torch.float32 and lse.is_contiguous()
    assert not out.requires_grad and out.grad_fn is None and out._base is None
    ref, ref_lse, _ = flashattn.flash_attn_func(q.contiguous(), k, v, return_attn_probs=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=0)
    out.add_(1)  # an ordinary tensor that owns its memory: writable, freed with the last reference
    del out, lse


def test_shim_alloc_switch_turns_off_and_back_on():
    # bench/python_overhead.py --ab-alloc flips this switch inside one process.
    q, k, v = _qkv(requires_grad=False)
    ref = flashattn.flash_attn_func(q, k, v)
    before = flashattn._C.torch_tensor_alloc()
    previous = flashattn._C.torch_shim_alloc(False)
    try:
        assert flashattn._C.torch_tensor_alloc().startswith("python"), flashattn._C.torch_tensor_alloc()
        torch.testing.assert_close(flashattn.flash_attn_func(q, k, v), ref, rtol=0, atol=0)
    finally:
        flashattn._C.torch_shim_alloc(previous)
    assert flashattn._C.torch_tensor_alloc() == before
    assert previous == before.startswith("shim")


def test_workspace_memo_queries_once_per_call_shape():
    # The extension asks the library for a call's workspace size once per (pass, shapes, strides,
    # dtypes, device, options) and reuses the answer: repeats hit, any change queries again, and
    # with the memo off every call queries. Results never depend on it.
    C = flashattn._C
    stats = C.torch_ws_memo_stats
    q, k, v = _qkv(requires_grad=False)
    previous = C.torch_ws_memo(True)
    try:
        ref = flashattn.flash_attn_func(q, k, v)
        h0, q0 = stats()
        torch.testing.assert_close(flashattn.flash_attn_func(q, k, v), ref, rtol=0, atol=0)
        assert stats() == (h0 + 1, q0), "a repeated call queried again"
        qc = q.clone()  # new data, same layout: still a hit
        flashattn.flash_attn_func(qc, k, v)
        assert stats() == (h0 + 2, q0)
        changes = [
            lambda: flashattn.flash_attn_func(q, k, v, causal=True),
            lambda: flashattn.flash_attn_func(q, k, v, softcap=2.0),
            lambda: flashattn.flash_attn_func(q, k, v, window_size=(4, 1)),
            lambda: flashattn.flash_attn_func(q, k, v, softmax_scale=0.5),
            lambda: flashattn.flash_attn_func(q[:, :7], k, v),  # shape
            lambda: flashattn.flash_attn_func(q, k.transpose(0, 1).contiguous().transpose(0, 1), v),  # strides
            lambda: flashattn.flash_attn_func(q.bfloat16(), k.bfloat16(), v.bfloat16()),  # dtype
        ]
        for i, call in enumerate(changes):
            flashattn.flash_attn_func(q, k, v)  # back to the first key
            h, n = stats()
            call()
            assert stats()[1] == n + 1, f"change {i} was answered from the memo"
        qg, kg, vg = _qkv()
        flashattn.flash_attn_func(qg, kg, vg).sum().backward()
        h, n = stats()
        qg.grad = kg.grad = vg.grad = None
        flashattn.flash_attn_func(qg, kg, vg).sum().backward()
        assert stats() == (h + 2, n), "forward and backward keep one entry each"
        C.torch_ws_memo(False)
        h, n = stats()
        flashattn.flash_attn_func(q, k, v)
        flashattn.flash_attn_func(q, k, v)
        assert stats() == (h, n + 2), "the switch did not turn the memo off"
    finally:
        C.torch_ws_memo(previous)


def test_tensor_alloc_paths_agree():
    # The same calls (forward, backward through autograd) in a process that allocates through
    # Python calls: bit-identical.
    code = (
        "import torch, flashattn\n"
        "assert flashattn._C.torch_tensor_alloc().startswith('python')\n"
        + _OFFSET_VIEWS +
        "q, k, v = (x.detach().requires_grad_() for x in (q, k, v))\n"
        "o = flashattn.flash_attn_func(q, k, v, causal=True)\n"
        "o.sum().backward()\n"
        "torch.save([o.detach(), q.grad, k.grad, v.grad], OUT)\n"
    )
    other = _saved_by_subprocess(code, FLASHATTN_TENSOR_ALLOC="python")
    q, k, v = (x.detach().requires_grad_() for x in _offset_views())
    o = flashattn.flash_attn_func(q, k, v, causal=True)
    o.sum().backward()
    for got, want in zip([o.detach(), q.grad, k.grad, v.grad], other):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("kwargs", [dict(dropout_p=0), dict(dropout_p=np.float64(0.0)), dict(window_size=[5, 1]),
                                    dict(window_size=(np.int64(5), 1)), dict(causal=1, softcap=2)])
def test_argument_forms_give_the_same_result(kwargs):
    # flash_attn's callers pass ints for floats, numpy scalars, lists for the window: same results.
    q, k, v = _qkv(requires_grad=False)
    plain = {key: (tuple(int(x) for x in val) if key == "window_size" else
                   float(val) if key in ("dropout_p", "softcap") else bool(val) if key == "causal" else val)
             for key, val in kwargs.items()}
    got, lse, _ = flashattn.flash_attn_func(q, k, v, return_attn_probs=True, **kwargs)
    ref, ref_lse, _ = flashattn.flash_attn_func(q, k, v, return_attn_probs=True, **plain)
    torch.testing.assert_close(got, ref, rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=0)


@pytest.mark.parametrize("window,match", [((1.5, 0), "window_size must hold ints"), ((1, 2, 3), "must be a pair"),
                                          (5, "must be a pair")])
def test_bad_window_is_refused(window, match):
    q, k, v = _qkv(requires_grad=False)
    with pytest.raises(ValueError, match=match):
        flashattn.flash_attn_func(q, k, v, window_size=window)


def test_dropout_is_refused():
    q, k, v = _qkv(requires_grad=False)
    with pytest.raises(NotImplementedError, match="dropout_p=0.1 is not supported"):
        flashattn.flash_attn_func(q, k, v, dropout_p=0.1)


def test_alibi_is_refused():
    q, k, v = _qkv(requires_grad=False)
    with pytest.raises(NotImplementedError, match="alibi_slopes is not supported"):
        flashattn.flash_attn_func(q, k, v, alibi_slopes=torch.ones(4))


def test_numpy_input_to_torch_function():
    q, k, v = (x.numpy() for x in _qkv(requires_grad=False))
    with pytest.raises(TypeError, match="q must be a torch.Tensor, got ndarray"):
        flashattn.flash_attn_func(q, k, v)


def test_library_error_type_through_torch():
    q, k, v = _qkv(h=3, hk=2, requires_grad=False)
    with pytest.raises(ValueError, match="q has 3 heads, not a multiple of k's 2"):
        flashattn.flash_attn_func(q, k, v)


def test_attention_on_torch_returns_torch():
    q, k, v = _qkv(requires_grad=False)
    out, lse = flashattn.attention(q, k, v, causal=True, return_lse=True)
    assert isinstance(out, torch.Tensor) and isinstance(lse, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), flashattn.attention(*(x.numpy() for x in (q, k, v)), causal=True))


def test_varlen_autograd():
    cu_q = torch.tensor([0, 7, 7, 20], dtype=torch.int32)
    cu_k = torch.tensor([0, 9, 15, 31], dtype=torch.int32)
    g = torch.Generator().manual_seed(1)
    q = torch.randn(20, 4, 32, generator=g).requires_grad_()
    k = torch.randn(31, 2, 32, generator=g).requires_grad_()
    v = torch.randn(31, 2, 32, generator=g).requires_grad_()
    out = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 13, 16, causal=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    npy = [x.detach().numpy() for x in (q, k, v)]
    ref, _, grads = varlen_ref(*npy, cu_q.numpy(), cu_k.numpy(), backward_dout=dout.numpy(), causal=True)
    base, _, bgrads = varlen_ref(*npy, cu_q.numpy(), cu_k.numpy(), backward_dout=dout.numpy(), causal=True,
                                 dtype=np.float32)
    check_close(out.detach().numpy(), ref, base, "out")
    for name, x, r, bse in zip(("dq", "dk", "dv"), (q, k, v), grads, bgrads):
        check_close(x.grad.numpy(), r, bse, name)


def test_opcheck_custom_ops():
    # Schema, fake (meta) kernels, autograd registration and dispatch consistency.
    q, k, v = _qkv(b=1, nq=9, nk=11, requires_grad=True)
    torch.library.opcheck(torch.ops.flashattn.fwd.default, (q, k, v, 0.0, True, -1, -1, 0.0, False))
    out, lse = torch.ops.flashattn.fwd(q.detach(), k.detach(), v.detach(), 0.0, True, -1, -1, 0.0, False)
    torch.library.opcheck(torch.ops.flashattn.bwd.default,
                          (torch.randn_like(out), q.detach(), k.detach(), v.detach(), out, lse, 0.0, True, -1, -1,
                           0.0, False))
    cu = torch.tensor([0, 4, 9], dtype=torch.int32)
    cuk = torch.tensor([0, 5, 11], dtype=torch.int32)
    qv, kv, vv = (x.detach()[0].clone().requires_grad_() for x in (q, k, v))
    torch.library.opcheck(torch.ops.flashattn.varlen_fwd.default, (qv, kv, vv, cu, cuk, 5, 6, 0.0, False, -1, -1,
                                                                    0.0, False))


def test_torch_compile_fullgraph_traces_the_ops():
    # aot_eager runs the fake kernels and the autograd registration through dynamo/AOTAutograd
    # without needing a compiler; a graph break would fail under fullgraph=True.
    q, k, v = _qkv()

    def f(q, k, v):
        return flashattn.flash_attn_func(q * 2, k, v, causal=True).square().mean()

    loss_c = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)
    grads_c = torch.autograd.grad(loss_c, (q, k, v))
    loss_e = f(q, k, v)
    grads_e = torch.autograd.grad(loss_e, (q, k, v))
    torch.testing.assert_close(loss_c, loss_e, rtol=0, atol=0)
    for gc, ge in zip(grads_c, grads_e):
        torch.testing.assert_close(gc, ge, rtol=0, atol=0)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "non-strict"])
def test_torch_export_records_the_custom_op(strict):
    # Strict export traces with dynamo (is_dynamo_compiling folds to True); non-strict export runs
    # the Python code eagerly on fake tensors under dispatch modes, which the extension's route
    # check sends to the custom op. Either way the exported graph holds flashattn.fwd.
    if not hasattr(torch, "export"):
        pytest.skip("torch.export is not available in this torch")

    class M(torch.nn.Module):
        def forward(self, q, k, v):
            return flashattn.flash_attn_func(q, k, v, causal=True)

    q, k, v = _qkv(requires_grad=False)
    ep = torch.export.export(M(), (q, k, v), strict=strict)
    assert "flashattn.fwd" in str(ep.graph), ep.graph
    torch.testing.assert_close(ep.module()(q, k, v), M()(q, k, v), rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# seqused_k through the torch ops
# ------------------------------------------------------------------------------------------------
def _varlen_case(seed=2):
    cu_q = torch.tensor([0, 7, 7, 20, 26], dtype=torch.int32)
    cu_k = torch.tensor([0, 9, 15, 31, 31], dtype=torch.int32)
    used = torch.tensor([5, 6, 0, 0], dtype=torch.int32)  # a prefix, all keys, none, an empty sequence
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(26, 4, 32, generator=g).requires_grad_()
    k = torch.randn(31, 2, 32, generator=g).requires_grad_()
    v = torch.randn(31, 2, 32, generator=g).requires_grad_()
    return q, k, v, cu_q, cu_k, used


@pytest.mark.parametrize("via_ops", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_seqused_k_forward_backward(via_ops, causal, monkeypatch):
    # via_ops: through the custom ops and register_autograd (what torch.compile runs) instead of
    # the eager direct path; both must honour seqused_k in the forward and the backward.
    from flashattn import _torch

    monkeypatch.setattr(_torch, "_FORCE_OPS", via_ops)
    q, k, v, cu_q, cu_k, used = _varlen_case()
    out, lse, _ = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 13, 16, causal=causal, seqused_k=used,
                                                   return_attn_probs=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    npy = [x.detach().numpy() for x in (q, k, v)]
    kw = dict(backward_dout=dout.numpy(), causal=causal, seqused_k=used.numpy())
    ref, ref_lse, grads = varlen_ref(*npy, cu_q.numpy(), cu_k.numpy(), **kw)
    base, _, bgrads = varlen_ref(*npy, cu_q.numpy(), cu_k.numpy(), dtype=np.float32, **kw)
    check_close(out.detach().numpy(), ref, base, "out")
    np.testing.assert_allclose(lse.detach().numpy(), ref_lse, rtol=1e-5, atol=1e-5)
    for name, x, r, bse in zip(("dq", "dk", "dv"), (q, k, v), grads, bgrads):
        check_close(x.grad.numpy(), r, bse, name)
    # Keys past seqused_k (sequence 0's keys 5..8, sequence 2's all) get exactly zero gradient.
    assert torch.count_nonzero(k.grad[5:9]) == 0 and torch.count_nonzero(v.grad[15:31]) == 0
    # And the unused keys do not influence the output: perturbing them changes nothing.
    with torch.no_grad():
        k2, v2 = k.detach().clone(), v.detach().clone()
        k2[5:9] += 100.0
        v2[15:31] -= 100.0
        out2 = flashattn.flash_attn_varlen_func(q.detach(), k2, v2, cu_q, cu_k, 13, 16, causal=causal, seqused_k=used)
    torch.testing.assert_close(out2, out.detach(), rtol=0, atol=0)


def test_seqused_k_framework_neutral_torch_entry():
    q, k, v, cu_q, cu_k, used = (x.detach() if x.dtype != torch.int32 else x for x in _varlen_case())
    out, lse = flashattn.attention_varlen(q, k, v, cu_q, cu_k, 13, 16, return_lse=True, seqused_k=used)
    dout = torch.randn_like(out)
    dq, dk, dv = flashattn.attention_varlen_backward(q, k, v, cu_q, cu_k, 13, 16, out, lse, dout, seqused_k=used)
    np_out = flashattn.attention_varlen(q.numpy(), k.numpy(), v.numpy(), cu_q.numpy(), cu_k.numpy(), 13, 16,
                                        seqused_k=used.numpy())
    np.testing.assert_array_equal(out.numpy(), np_out)
    npd = flashattn.attention_varlen_backward(q.numpy(), k.numpy(), v.numpy(), cu_q.numpy(), cu_k.numpy(), 13, 16,
                                              out.numpy(), lse.numpy(), dout.numpy(), seqused_k=used.numpy())
    for a, b in zip((dq, dk, dv), npd):
        np.testing.assert_array_equal(a.numpy(), b)


def test_seqused_k_wrong_shape_is_the_library_error():
    q, k, v, cu_q, cu_k, _ = _varlen_case()
    with pytest.raises(ValueError, match="seqused_k: expected shape \\[4\\]"):
        flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 13, 16, seqused_k=torch.zeros(3, dtype=torch.int32))
    with pytest.raises(ValueError, match="seqused_k\\[0\\] = 10 is outside \\[0, 9\\]"):
        flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 13, 16,
                                         seqused_k=torch.tensor([10, 0, 0, 0], dtype=torch.int32))


def test_opcheck_varlen_ops_with_seqused_k():
    q, k, v, cu_q, cu_k, used = _varlen_case()
    args = (q, k, v, cu_q, cu_k, 13, 16, 0.0, True, -1, -1, 0.0, False, used)
    torch.library.opcheck(torch.ops.flashattn.varlen_fwd.default, args)
    out, lse = torch.ops.flashattn.varlen_fwd(*(x.detach() if isinstance(x, torch.Tensor) else x for x in args))
    torch.library.opcheck(torch.ops.flashattn.varlen_bwd.default,
                          (torch.randn_like(out), q.detach(), k.detach(), v.detach(), out, lse, cu_q, cu_k, 13, 16,
                           0.0, True, -1, -1, 0.0, False, used))


def test_torch_compile_fullgraph_varlen_seqused_k():
    q, k, v, cu_q, cu_k, used = _varlen_case()

    def f(q, k, v):
        return flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 13, 16, causal=True, seqused_k=used).sum()

    loss_c = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)
    grads_c = torch.autograd.grad(loss_c, (q, k, v))
    loss_e = f(q, k, v)
    grads_e = torch.autograd.grad(loss_e, (q, k, v))
    torch.testing.assert_close(loss_c, loss_e, rtol=0, atol=0)
    for gc, ge in zip(grads_c, grads_e):
        torch.testing.assert_close(gc, ge, rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# The eager fast path and the custom ops: same results, and the ops where a tracer needs them
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal,window,softcap", [(False, (-1, -1), 0.0), (True, (4, 0), 2.0)])
def test_direct_path_matches_custom_ops_bitwise(causal, window, softcap, monkeypatch):
    from flashattn import _torch

    results = []
    for force in (False, True):
        monkeypatch.setattr(_torch, "_FORCE_OPS", force)
        q, k, v = _qkv()
        out, lse, _ = flashattn.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=softcap,
                                                return_attn_probs=True)
        out.backward(torch.ones_like(out) * 0.5)
        results.append([out.detach(), lse.detach(), q.grad, k.grad, v.grad])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # Inference without return_attn_probs skips the LSE; the output is the same.
    q, k, v = _qkv(requires_grad=False)
    torch.testing.assert_close(flashattn.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=softcap),
                               results[0][0], rtol=0, atol=0)


def test_c_level_function_apply_matches_function_apply():
    # The eager path calls _C._FunctionBase.apply bound to the Function class, skipping the Python
    # wrapper some torch versions put around it (_torch._c_apply); on every torch version that bound
    # C apply must record the same graph as Function.apply: same output, same gradients.
    from flashattn import _torch

    c_apply = torch._C._FunctionBase.__dict__["apply"].__get__(None, _torch._FlashAttnFunc)
    opts = (None, True, -1, -1, 0.0, False)
    results = []
    for apply in (_torch._FlashAttnFunc.apply, c_apply):
        q, k, v = _qkv()
        out = apply(q, k, v, opts, False)
        assert out.grad_fn is not None and type(out.grad_fn).__name__ == "_FlashAttnFuncBackward"
        out.backward(torch.ones_like(out))
        results.append([out.detach(), q.grad, k.grad, v.grad])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("via_ops", [False, True])
def test_packed_outputs_are_separate_tensors_with_the_same_values(via_ops, monkeypatch):
    # FLASHATTN_PACK_BYTES (_C.torch_pack_bytes): an eager call's outputs share one allocation.
    # They must be ordinary tensors -- not views, writable without touching each other -- with
    # the values and gradients of separate allocations; the custom ops never pack (their outputs
    # must not alias).
    from flashattn import _C, _torch

    monkeypatch.setattr(_torch, "_FORCE_OPS", via_ops)
    results = []
    for pack in (0, 1 << 20):
        previous = _C.torch_pack_bytes(pack)
        try:
            q, k, v = _qkv(nq=33, nk=17)
            out, lse, _ = flashattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
            out.backward(torch.ones_like(out))
            grads = (q.grad, k.grad, v.grad)
        finally:
            _C.torch_pack_bytes(previous)
        shared = out.untyped_storage().data_ptr() == lse.untyped_storage().data_ptr()
        assert shared == (pack > 0 and not via_ops)
        if not via_ops:  # the backward's dq, dk, dv, as the eager Function's backward asks for them
            previous = _C.torch_pack_bytes(pack)
            try:
                dq, dk, dv = _C.torch_bwd(True, torch.ones_like(out), q.detach(), k.detach(), v.detach(),
                                          out.detach(), lse, None, True, -1, -1, 0.0, False)
            finally:
                _C.torch_pack_bytes(previous)
            assert len({t.untyped_storage().data_ptr() for t in (dq, dk, dv)}) == (1 if pack else 3)
            for a, b in zip((dq, dk, dv), grads):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
        for t in (out, lse) + grads:
            assert t._base is None and t.is_contiguous() and t.data_ptr() % 16 == 0
        results.append([out.detach().clone(), lse.clone(), *grads])
        before = lse.clone()
        out.detach().fill_(7.0)  # the neighbour in the block is untouched
        torch.testing.assert_close(lse, before, rtol=0, atol=0)
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_dispatch_mode_sees_the_custom_op():
    # A TorchDispatchMode (profilers, FLOP counters, tracers) must see flashattn::fwd/bwd, not
    # the eager shortcut's internals.
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    q, k, v = _qkv()
    with Record():
        out = flashattn.flash_attn_func(q, k, v)
        out.sum().backward()
    assert any("flashattn.fwd" in s for s in seen), seen
    assert any("flashattn.bwd" in s for s in seen), seen


def test_forward_ad_is_refused_not_dropped():
    # Forward-mode AD is not implemented: a dual input must raise, never return an output whose
    # tangent was silently lost (the eager shortcut would not see the tangent at all).
    import torch.autograd.forward_ad as fwAD

    q, k, v = _qkv(requires_grad=False)
    with fwAD.dual_level():
        dq = fwAD.make_dual(q, torch.randn_like(q))
        try:
            out = flashattn.flash_attn_func(dq, k, v)
        except (RuntimeError, NotImplementedError):
            return  # refused: what we promise
        assert fwAD.unpack_dual(out).tangent is not None, "the tangent was dropped silently"


def test_torch_function_mode_sees_the_call():
    # A TorchFunctionMode active around the call routes it through the custom op, where modes
    # see it like any other torch call.
    from torch.overrides import TorchFunctionMode

    seen = []

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    q, k, v = _qkv(requires_grad=False)
    with Record():
        flashattn.flash_attn_func(q, k, v)
    assert any("flashattn" in s for s in seen), seen


@pytest.mark.parametrize("via_ops", [False, True])
def test_workspace_is_allocated_through_torch(via_ops, monkeypatch):
    # A call that needs scratch (every CUDA backward) gets it from torch's allocator inside the
    # same extension call. The CPU backend never needs scratch, so a test hook makes every call
    # take some; the results must not change and the hook must report the allocation.
    from flashattn import _C, _torch

    monkeypatch.setattr(_torch, "_FORCE_OPS", via_ops)
    q, k, v = _qkv()
    ref = flashattn.flash_attn_func(q, k, v, causal=True)
    ref.sum().backward()
    ref_grads = [x.grad.clone() for x in (q, k, v)]
    assert _C.torch_debug_workspace(0) == 0  # the last (backward) call allocated none
    q2, k2, v2 = (x.detach().clone().requires_grad_() for x in (q, k, v))
    _C.torch_debug_workspace(4096)
    try:
        out = flashattn.flash_attn_func(q2, k2, v2, causal=True)
        assert _C.torch_debug_workspace(4096) == 4096  # the forward's
        out.sum().backward()
        assert _C.torch_debug_workspace(0) == 4096  # the backward's
    finally:
        _C.torch_debug_workspace(0)
    assert torch.equal(out, ref)
    for g, r in zip((q2.grad, k2.grad, v2.grad), ref_grads):
        assert torch.equal(g, r)


@pytest.mark.parametrize("want_lse", [False, True])
def test_lse_output_materialises_no_gradient(want_lse):
    # lse carries no gradient: the backward gets None for it (no zeros are allocated), and a loss
    # that uses only lse does not run the backward at all.
    q, k, v = _qkv()
    r = flashattn.flash_attn_func(q, k, v, return_attn_probs=want_lse)
    out = r[0] if want_lse else r
    if want_lse:
        assert not r[1].requires_grad
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_non_contiguous_inputs_and_grad_output():
    # flash_attn's convention: a non-contiguous last dimension is copied; other strides pass as
    # they are; an expanded dout (stride 0 everywhere, from .sum()) is copied in the backward.
    # Results are bitwise those of contiguous inputs.
    q, k, v = _qkv(nq=23, hk=4)
    ref = flashattn.flash_attn_func(q, k, v)
    ref.sum().backward()
    qkv = torch.stack([q.detach(), k.detach(), v.detach()], dim=2).requires_grad_()  # packed: strided heads
    out = flashattn.flash_attn_func(*qkv.unbind(2))
    q_t = q.detach().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_()  # strided last dim
    k2, v2 = k.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()
    out_t = flashattn.flash_attn_func(q_t, k2, v2)
    for o in (out, out_t):
        assert o.is_contiguous()
        torch.testing.assert_close(o, ref, rtol=0, atol=0)
        o.sum().backward()
    for got, want in zip(qkv.grad.unbind(2), (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    for got, want in zip((q_t.grad, k2.grad, v2.grad), (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("grad", [False, True])
def test_torch_misuse_messages_on_the_direct_path(grad):
    q, k, v = _qkv(requires_grad=grad)
    with pytest.raises(TypeError, match="q: unsupported dtype float64"):
        flashattn.flash_attn_func(q.double(), k, v)
    with pytest.raises(TypeError, match="v: expected dtype float32, got float16"):
        flashattn.flash_attn_func(q, k, v.half())
    with pytest.raises(ValueError, match="q: expected rank 4, got 3"):
        flashattn.flash_attn_func(q[0], k, v)
    with pytest.raises(ValueError, match="k: unsupported device meta"):
        flashattn.flash_attn_func(q, k.to("meta"), v)
    with pytest.raises(TypeError, match="cu_seqlens_k: unsupported dtype int64"):
        flashattn.flash_attn_varlen_func(q[0], k[0], v[0], torch.tensor([0, 19], dtype=torch.int32),
                                         torch.tensor([0, 23]), 19, 23)


@pytest.mark.parametrize("via_ops", [False, True])
def test_double_backward_is_refused(via_ops, monkeypatch):
    # No second derivative is implemented; asking for one must fail, never return zeros.
    from flashattn import _torch

    monkeypatch.setattr(_torch, "_FORCE_OPS", via_ops)
    q, k, v = _qkv()
    (gq,) = torch.autograd.grad(flashattn.flash_attn_func(q, k, v).square().sum(), q, create_graph=True)
    with pytest.raises(RuntimeError):
        gq.sum().backward()


def _assert_same_call(got, want, leaves_got, leaves_want):
    """Outputs bitwise equal, then the same backward through both; gradients bitwise equal."""
    for g, w in zip(got, want):
        if w is None:
            assert g is None
        else:
            torch.testing.assert_close(g, w, rtol=0, atol=0)
    dout = torch.randn_like(want[0])
    got[0].backward(dout)
    want[0].backward(dout)
    for g, w in zip(leaves_got, leaves_want):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


@pytest.mark.parametrize("causal,window,softcap", [(False, (-1, -1), 0.0), (True, (-1, -1), 0.0),
                                                    (False, (5, 1), 2.0)])
def test_qkvpacked_is_flash_attn_func_on_its_views(causal, window, softcap):
    # One buffer (batch, seqlen, 3, nheads, headdim): the kernels read q, k, v in place (head
    # stride 3·nheads·headdim) and qkv.grad is one tensor of qkv's shape, as in flash_attn.
    q, k, v = _qkv(nq=21, nk=21, hk=4)
    qkv = torch.stack([x.detach() for x in (q, k, v)], dim=2).requires_grad_()
    kw = dict(causal=causal, window_size=window, softcap=softcap, return_attn_probs=True)
    got = flashattn.flash_attn_qkvpacked_func(qkv, **kw)
    want = flashattn.flash_attn_func(q, k, v, **kw)
    assert qkv.is_contiguous() and got[1].shape == (2, 4, 21)
    _assert_same_call(got, want, [None], [None])
    assert qkv.grad.shape == qkv.shape
    for g, w in zip(qkv.grad.unbind(2), (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_kvpacked_with_grouped_heads():
    q, k, v = _qkv(nq=19, nk=23, h=4, hk=2)
    kv = torch.stack([k.detach(), v.detach()], dim=2).requires_grad_()
    q2 = q.detach().clone().requires_grad_()
    got = (flashattn.flash_attn_kvpacked_func(q2, kv, causal=True),)
    want = (flashattn.flash_attn_func(q, k, v, causal=True),)
    _assert_same_call(got, want, [q2.grad], [q.grad])
    for g, w in zip(kv.grad.unbind(2), (k.grad, v.grad)):
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_varlen_packed_forms_are_flash_attn_varlen_func_on_their_views():
    g = torch.Generator().manual_seed(5)
    cu = torch.tensor([0, 7, 7, 20], dtype=torch.int32)
    qkv = torch.randn(20, 3, 4, 32, generator=g).requires_grad_()
    q, k, v = (x.detach().clone().requires_grad_() for x in qkv.unbind(1))
    got = flashattn.flash_attn_varlen_qkvpacked_func(qkv, cu, 13, causal=True, return_attn_probs=True)
    want = flashattn.flash_attn_varlen_func(q, k, v, cu, cu, 13, 13, causal=True, return_attn_probs=True)
    _assert_same_call(got, want, [], [])
    for gr, w in zip(qkv.grad.unbind(1), (q.grad, k.grad, v.grad)):
        torch.testing.assert_close(gr, w, rtol=0, atol=0)

    cu_k = torch.tensor([0, 9, 15, 31], dtype=torch.int32)
    kv = torch.randn(31, 2, 2, 32, generator=g).requires_grad_()
    k, v = (x.detach().clone().requires_grad_() for x in kv.unbind(1))
    q2 = q.detach().clone().requires_grad_()
    q3 = q.detach().clone().requires_grad_()
    got = (flashattn.flash_attn_varlen_kvpacked_func(q2, kv, cu, cu_k, 13, 16, window_size=(4, 0)),)
    want = (flashattn.flash_attn_varlen_func(q3, k, v, cu, cu_k, 13, 16, window_size=(4, 0)),)
    _assert_same_call(got, want, [q2.grad], [q3.grad])
    for gr, w in zip(kv.grad.unbind(1), (k.grad, v.grad)):
        torch.testing.assert_close(gr, w, rtol=0, atol=0)


def test_packed_forms_refuse_a_wrong_layout():
    q, k, v = _qkv(nq=21, nk=21, hk=4, requires_grad=False)
    with pytest.raises(ValueError, match=r"qkv: expected shape \(batch, seqlen, 3, nheads, headdim\), "
                                         r"got \(2, 21, 2, 4, 32\)"):
        flashattn.flash_attn_qkvpacked_func(torch.stack([q, k], dim=2))
    with pytest.raises(ValueError, match=r"kv: expected shape \(batch, seqlen_k, 2, nheads_k, headdim\)"):
        flashattn.flash_attn_kvpacked_func(q, torch.stack([k, v], dim=1))  # packed on the wrong dim
    with pytest.raises(ValueError, match=r"qkv: expected shape \(total, 3, nheads, headdim\)"):
        flashattn.flash_attn_varlen_qkvpacked_func(torch.stack([q, k, v], dim=2), torch.tensor([0, 21], dtype=torch.int32), 21)
    with pytest.raises(TypeError, match="kv must be a torch.Tensor"):
        flashattn.flash_attn_varlen_kvpacked_func(q[0], [k[0], v[0]], None, None, 21, 21)
    with pytest.raises(NotImplementedError, match="dropout_p"):
        flashattn.flash_attn_qkvpacked_func(torch.stack([q, k, v], dim=2), dropout_p=0.1)
