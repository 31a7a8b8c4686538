"""GPU tests through torch: accuracy vs float64 math with the 2x rule, torch.compile, CUDA graphs.

Rule (DEVELOPERS.md): max|ours - ref| <= 2 * max|torch_sdpa_lowp - ref| + 1e-5, where ref is the
float64 computation and torch_sdpa_lowp is PyTorch's SDPA in the inputs' dtype. Skips visibly
without torch, CUDA, or a flashattn built with CUDA.
"""

import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: GPU tests skipped")
import torch.nn.functional as F  # noqa: E402

import flashattn  # noqa: E402
from reference import visible  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: GPU tests skipped"),
    pytest.mark.skipif(not flashattn.cuda_built(), reason="flashattn was built without CUDA: GPU tests skipped"),
]


def _mask(nq, nk, causal, window, device):
    """reference.visible as a torch bool tensor on device."""
    return torch.from_numpy(visible(nq, nk, causal, window)).to(device)


def _torch_attention(q, k, v, causal, window, softcap, scale):
    """(b, s, h, d) layout in and out. SDPA where it can express the call; explicit math for softcap."""
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    mask = _mask(q.shape[1], k.shape[1], causal, window, q.device)
    if softcap == 0:
        out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale, enable_gqa=True)
        return out.transpose(1, 2)
    rep = q.shape[2] // k.shape[2]
    kt, vt = kt.repeat_interleave(rep, dim=1), vt.repeat_interleave(rep, dim=1)
    s = (qt @ kt.transpose(-1, -2)) * (scale if scale else q.shape[-1] ** -0.5)
    s = softcap * torch.tanh(s / softcap)
    p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    return (p @ vt).transpose(1, 2)


def _check(ours, ref, base, name):
    err = (ours.double() - ref).abs().max().item()
    bound = 2 * (base.double() - ref).abs().max().item() + 1e-5
    assert err <= bound, f"{name}: max error {err:.3g} > bound {bound:.3g}"


# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim), kept so no row is fully masked
# (SDPA returns NaN there) while still covering odd lengths, Nq != Nk and GQA/MQA.
SHAPES = [
    (2, 128, 128, 8, 8, 64),
    (1, 1000, 1000, 4, 1, 128),
    (2, 17, 4097, 4, 2, 64),
    (1, 113, 203, 6, 2, 96),
    (1, 257, 257, 2, 2, 256),
]
OPTIONS = {
    "plain": (False, (-1, -1), 0.0, None),
    "causal": (True, (-1, -1), 0.0, None),
    "window": (True, (64, -1), 0.0, None),
    "softcap": (True, (-1, -1), 30.0, 0.1),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("opt", list(OPTIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_forward_backward_vs_float64(shape, opt, dtype):
    causal, window, softcap, scale = OPTIONS[opt]
    b, nq, nk, h, hk, d = shape
    torch.manual_seed(0)
    q = torch.randn(b, nq, h, d, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(b, nk, hk, d, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(b, nk, hk, d, device="cuda", dtype=dtype, requires_grad=True)
    dout = torch.randn(b, nq, h, d, device="cuda", dtype=dtype)
    kw = dict(causal=causal, window=window, softcap=softcap, scale=scale)

    out = flashattn.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal, window_size=window, softcap=softcap)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)
    q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref = _torch_attention(q64, k64, v64, **kw)
    rq, rk, rv = torch.autograd.grad(ref, (q64, k64, v64), dout.double())
    base = _torch_attention(q, k, v, **kw)
    bq, bk, bv = torch.autograd.grad(base, (q, k, v), dout)

    _check(out, ref, base, "out")
    for name, ours, r, bse in (("dq", dq, rq, bq), ("dk", dk, rk, bk), ("dv", dv, rv, bv)):
        _check(ours, r, bse, name)


def test_lse_vs_float64():
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 300, 4, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    _, lse, _ = flashattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    s = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double()) / 8.0
    s = s.masked_fill(~_mask(300, 300, True, (-1, -1), "cuda"), float("-inf"))
    ref = torch.logsumexp(s, dim=-1)
    assert lse.shape == ref.shape and lse.dtype == torch.float32
    # lse is accumulated in fp32 from bf16 inputs: compare with the fp32 value of the same formula.
    s32 = torch.einsum("bqhd,bkhd->bhqk", q.float(), k.float()) / 8.0
    base = torch.logsumexp(s32.masked_fill(~_mask(300, 300, True, (-1, -1), "cuda"), float("-inf")), dim=-1)
    _check(lse, ref, base, "lse")


@pytest.mark.parametrize("form", ["qkvpacked", "kvpacked"])
def test_packed_forms_vs_float64(form):
    # The packed buffer is read in place (head stride 3·h·d or 2·hk·d, a TMA box of a strided
    # tensor on sm90) and its gradient is one tensor: the 2x rule on each of its slices.
    torch.manual_seed(3)
    b, n, h, hk, d = 2, 1000, 8, (8 if form == "qkvpacked" else 2), 128
    dt = torch.bfloat16
    if form == "qkvpacked":
        packed = torch.randn(b, n, 3, h, d, device="cuda", dtype=dt, requires_grad=True)
        out = flashattn.flash_attn_qkvpacked_func(packed, causal=True)
        q, k, v = packed.unbind(2)
    else:
        q = torch.randn(b, n, h, d, device="cuda", dtype=dt, requires_grad=True)
        packed = torch.randn(b, n, 2, hk, d, device="cuda", dtype=dt, requires_grad=True)
        out = flashattn.flash_attn_kvpacked_func(q, packed, causal=True)
        k, v = packed.unbind(2)
    dout = torch.randn_like(out)
    out.backward(dout)
    grads = (packed.grad.unbind(2) if form == "qkvpacked" else (q.grad,) + packed.grad.unbind(2))
    kw = dict(causal=True, window=(-1, -1), softcap=0.0, scale=None)
    leaves64 = [x.detach().double().requires_grad_() for x in (q, k, v)]
    ref = _torch_attention(*leaves64, **kw)
    refs = torch.autograd.grad(ref, leaves64, dout.double())
    leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
    base = _torch_attention(*leaves, **kw)
    bases = torch.autograd.grad(base, leaves, dout)
    _check(out, ref, base, "out")
    for name, ours, r, bse in zip(("dq", "dk", "dv"), grads, refs, bases):
        _check(ours, r, bse, name)


def _check_sequence_vs_dense(out, q, k, v, sq, eq, sk, ek):
    """Varlen sequence [sq, eq) with keys [sk, ek) against a dense call on that sequence alone:
    the same output exactly, gradients within bf16 rounding. Needs the
    varlen call's backward to have run (q.grad, k.grad, v.grad)."""
    qi, ki, vi = (x.detach()[s:e][None].requires_grad_() for x, s, e in ((q, sq, eq), (k, sk, ek), (v, sk, ek)))
    oi = flashattn.flash_attn_func(qi, ki, vi, causal=True)
    oi.float().square().sum().backward()
    torch.testing.assert_close(out[sq:eq], oi[0], rtol=0, atol=0)
    torch.testing.assert_close(q.grad[sq:eq], qi.grad[0], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(k.grad[sk:ek], ki.grad[0], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(v.grad[sk:ek], vi.grad[0], rtol=2e-2, atol=2e-2)


def test_varlen_vs_per_sequence_dense():
    torch.manual_seed(2)
    lens_q, lens_k = [5, 0, 130, 1], [9, 4, 130, 200]
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), dtype=torch.int32, device="cuda")
    q = torch.randn(sum(lens_q), 8, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(sum(lens_k), 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(sum(lens_k), 2, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True)
    out.float().square().sum().backward()
    for i in range(len(lens_q)):
        sq, eq, sk, ek = cu_q[i].item(), cu_q[i + 1].item(), cu_k[i].item(), cu_k[i + 1].item()
        if eq > sq:
            _check_sequence_vs_dense(out, q, k, v, sq, eq, sk, ek)


@pytest.mark.parametrize("via_ops", [False, True], ids=["eager-direct", "custom-op"])
def test_varlen_seqused_k_vs_per_sequence_dense(via_ops, monkeypatch):
    # Sequence i attends to its first used[i] keys only: the same as a dense call on those keys;
    # the other keys get zero gradients. Both the eager direct path and the custom ops.
    from flashattn import _torch

    monkeypatch.setattr(_torch, "_FORCE_OPS", via_ops)
    torch.manual_seed(9)
    lens_q, lens_k, used = [5, 0, 130, 1, 64], [9, 4, 130, 200, 64], [3, 4, 77, 0, 64]
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0)), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0)), dtype=torch.int32, device="cuda")
    seqused = torch.tensor(used, dtype=torch.int32, device="cuda")
    q = torch.randn(sum(lens_q), 8, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(sum(lens_k), 2, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(sum(lens_k), 2, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True,
                                           seqused_k=seqused)
    out.float().square().sum().backward()
    for i in range(len(lens_q)):
        sq, eq, sk = cu_q[i].item(), cu_q[i + 1].item(), cu_k[i].item()
        ek, end = sk + used[i], cu_k[i + 1].item()
        assert torch.count_nonzero(k.grad[ek:end]) == 0 and torch.count_nonzero(v.grad[ek:end]) == 0
        if eq == sq:
            continue
        if ek == sk:  # no keys used: output 0
            assert torch.count_nonzero(out[sq:eq]) == 0
            continue
        _check_sequence_vs_dense(out, q, k, v, sq, eq, sk, ek)


def test_eager_direct_path_matches_custom_op(monkeypatch):
    from flashattn import _torch

    torch.manual_seed(10)
    q, k, v = (torch.randn(2, 300, 8, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    res = []
    for force in (False, True):
        monkeypatch.setattr(_torch, "_FORCE_OPS", force)
        out, lse, _ = flashattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
        grads = torch.autograd.grad(out.float().square().sum(), (q, k, v))
        res.append((out, lse) + grads)
    torch.testing.assert_close(res[0][0], res[1][0], rtol=0, atol=0)
    torch.testing.assert_close(res[0][1], res[1][1], rtol=0, atol=0)
    for a, b in zip(res[0][2:], res[1][2:]):  # dQ accumulation order may differ run to run
        torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-2)


def test_cuda_graph_capture_of_autograd_forward_and_backward():
    # The eager direct path under autograd (autograd.Function), captured whole: the backward's
    # workspace comes from torch's allocator inside the capture, nothing synchronises.
    torch.manual_seed(11)
    shape = (2, 256, 8, 128)
    q, k, v, dout = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))

    def step():
        out = flashattn.flash_attn_func(qg, kg, vg, causal=True)
        return (out,) + torch.autograd.grad(out, (qg, kg, vg), dout)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    g = torch.Generator(device="cuda").manual_seed(12)
    with torch.no_grad():
        for x in (qg, kg, vg, dout):
            x.copy_(torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g))
    graph.replay()
    torch.cuda.synchronize()
    eager = step()
    torch.testing.assert_close(static[0], eager[0], rtol=0, atol=0)
    for s, e in zip(static[1:], eager[1:]):
        torch.testing.assert_close(s, e, rtol=1e-2, atol=1e-2)


def test_torch_compile_fullgraph_forward_and_backward():
    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 256, 8, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))

    def f(q, k, v):
        return flashattn.flash_attn_func(q * 2, k, v, causal=True).float().square().mean()

    compiled = torch.compile(f, fullgraph=True)
    loss_c = compiled(q, k, v)
    grads_c = torch.autograd.grad(loss_c, (q, k, v))
    loss_e = f(q, k, v)
    grads_e = torch.autograd.grad(loss_e, (q, k, v))
    torch.testing.assert_close(loss_c, loss_e)
    for gc, ge in zip(grads_c, grads_e):
        torch.testing.assert_close(gc, ge, rtol=1e-2, atol=1e-2)


def test_torch_compile_varlen_fullgraph():
    torch.manual_seed(4)
    cu = torch.tensor([0, 100, 300], dtype=torch.int32, device="cuda")
    q, k, v = (torch.randn(300, 4, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    f = torch.compile(lambda q, k, v: flashattn.flash_attn_varlen_func(q, k, v, cu, cu, 200, 200, causal=True),
                      fullgraph=True)
    torch.testing.assert_close(f(q, k, v), flashattn.flash_attn_varlen_func(q, k, v, cu, cu, 200, 200, causal=True))


def test_cuda_graph_capture_and_replay():
    torch.manual_seed(5)
    shape = (2, 512, 8, 128)
    q, k, v, dout = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(4))

    def step():
        out, lse, _ = flashattn.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
        return (out,) + tuple(torch.ops.flashattn.bwd(dout, q, k, v, out, lse, 0.0, True, -1, -1, 0.0, False))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as torch's docs require
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    for seed in (6, 7):
        g = torch.Generator(device="cuda").manual_seed(seed)
        for x in (q, k, v, dout):
            x.copy_(torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g))
        graph.replay()
        torch.cuda.synchronize()
        eager = step()
        for s, e in zip(static, eager):
            torch.testing.assert_close(s, e, rtol=0, atol=0)


def test_runs_on_the_current_stream():
    # Work queued on a side stream must see inputs written on that stream, without syncs.
    torch.manual_seed(8)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        q, k, v = (torch.randn(4, 2048, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = flashattn.flash_attn_func(q, k, v, causal=True)
    s.synchronize()
    torch.testing.assert_close(out, flashattn.flash_attn_func(q, k, v, causal=True), rtol=0, atol=0)


def test_side_stream_work_is_ordered_before_the_call():
    # q is written on a side stream behind ~tens of ms of spinning; a call on that stream must see
    # the write. Launched on any other stream (torch's streams do not wait on the legacy default
    # stream) it would read q's old zeros. Covers both ways of asking torch for the stream.
    torch.manual_seed(10)
    q, k, v = (torch.randn(2, 512, 4, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    want = flashattn.flash_attn_func(q, k, v)
    q2 = torch.zeros_like(q)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        q2.copy_(q)
        got = flashattn.flash_attn_func(q2, k, v)
    side.synchronize()
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_tensor_read_and_stream_through_the_shim():
    from flashattn import _torch
    q = torch.randn(1, 16, 2, 64, device="cuda", dtype=torch.float16)
    flashattn.flash_attn_func(q, q, q)
    read = flashattn._C.torch_tensor_read()
    if not _torch.TENSOR_READ.startswith("shim"):
        pytest.skip(f"tensor reads through attributes here: {read}")
    # After a CUDA call the shim's stream query has been checked against torch's: it either agreed
    # (used from then on) or was dropped, which on a torch that has it means a broken shim.
    assert read in ("shim; stream from the shim", "shim; stream from Python"), read
    import ctypes
    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")
    if os.path.exists(lib) and hasattr(ctypes.CDLL(lib), "aoti_torch_get_current_cuda_stream"):
        assert read == "shim; stream from the shim", read


def test_outputs_allocated_through_the_shim_on_cuda():
    # After a CUDA call the shim's CUDA allocation has been read back once: it either matched
    # (used from then on) or was turned off, which where the read shim is on means a broken pair.
    from flashattn import _torch
    q = torch.randn(2, 16, 2, 64, device="cuda", dtype=torch.bfloat16)
    out, lse, _ = flashattn.flash_attn_func(q, q, q, return_attn_probs=True)
    alloc = flashattn._C.torch_tensor_alloc()
    if not _torch.TENSOR_READ.startswith("shim") or os.environ.get("FLASHATTN_TENSOR_ALLOC") == "python":
        pytest.skip(f"outputs allocated through Python here: {alloc}")
    assert alloc == "shim; CUDA checked", alloc
    assert out.device == q.device and out.stride() == q.stride() and lse.device == q.device
    # The caching allocator serves them on the current stream, as for torch.empty_like.
    before = torch.cuda.memory_allocated()
    del out, lse
    assert torch.cuda.memory_allocated() < before


def test_attention_with_cupy_and_jax_arrays():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    torch.manual_seed(9)
    q, k, v = (torch.randn(1, 64, 4, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    want = flashattn.flash_attn_func(q, k, v, causal=True)
    cq, ck, cv = (cupy.from_dlpack(x) for x in (q, k, v))
    got = flashattn.attention(cq, ck, cv, causal=True)
    assert isinstance(got, cupy.ndarray)
    torch.testing.assert_close(torch.from_dlpack(got), want, rtol=0, atol=0)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        pytest.skip("jax is not installed: JAX half skipped")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax sees no GPU")
    jq, jk, jv = (jnp.asarray(cupy.asnumpy(x)) for x in (cq, ck, cv))
    jout = flashattn.attention(jq, jk, jv, causal=True)
    assert isinstance(jout, jax.Array)
    torch.testing.assert_close(torch.from_numpy(jax.device_get(jout).copy()).cuda(), want, rtol=0, atol=0)
