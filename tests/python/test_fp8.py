"""The FP8 (e4m3) forward from Python: flashattn.attention_fp8 (DLPack: NumPy on the CPU backend,
which CI runs) and flashattn.flash_attn_fp8_func (torch: CPU here, CUDA where an sm90 GPU is).

Bound (tests/cpu/test_fp8.cpp's 2x rule with quantisation as the "naive" error): with ref =
float64 attention on the ORIGINAL inputs and naive = float64 attention on the dequantised inputs,
  max|ours - ref| <= 2 max|naive - ref| + 1e-5   for out and lse.
The dequantised inputs come from quantise() below, written from the specification in
src/cpu/fp8.hpp (signs, Hadamard butterflies in float32, amax/448 block scales, e4m3 round to
nearest even with saturation), not from the library's workspace. The CPU backend computes in
float32 on exactly those values, so test_cpu_output_is_attention_on_the_specified_quantisation
holds it much tighter (the 2x rule against float32 attention on the dequantised inputs): a
quantiser that drifts from the specification fails there first. The GPU kernel also rounds P to
e4m3 before P.V, so its naive does too (as tests/cuda/test_fp8.cpp's), and the relative RMS
error against float64 SDPA is held to 1.25x the naive's (0.047-0.057 on these randn inputs: a
fixed 5% would fail correct output).
"""

import numpy as np
import pytest
from reference import attention_ref, check_close, visible

import flashattn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed: torch fp8 tests skipped")

# Block sizes of the quantiser's scales (src/core/fp8.hpp: kQBlock, kKBlock).
Q_BLOCK, K_BLOCK = 64, 128
DEFAULT_SEED = flashattn._C.FP8_DEFAULT_SEED


# ------------------------------------------------------------------------------------------------
# The quantisation, from its specification
# ------------------------------------------------------------------------------------------------
def e4m3(x):
    """Values of the e4m3 codes nearest x (round half to even, finite values saturate at 448)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    _, e = np.frexp(a)  # a = m 2^e, m in [0.5, 1): the binade's step is 2^(e - 1 - 3)
    step = np.exp2(np.maximum(e - 1, -6) - 3.0)  # below 2^-6: subnormal, steps of 2^-9
    return np.copysign(np.minimum(np.round(a / step) * step, 448.0), x)  # a/step is exact


def hadamard_signs(seed, d):
    """core::fp8::hadamard_sign for channels 0..d-1 (splitmix64 finaliser, low bit -> sign)."""
    with np.errstate(over="ignore"):
        x = np.uint64(seed) + np.uint64(0x9E3779B97F4A7C15) * (np.arange(d, dtype=np.uint64) + np.uint64(1))
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return np.where(x & np.uint64(1), np.float32(-1), np.float32(1))


def rotate(x, seed):
    """x (..., d) float32 times D H / sqrt(d): signs, in-place butterflies h = 1, 2, .., d/2, then
    the one float32 constant, every step a float32 operation as in the library."""
    d = x.shape[-1]
    y = (x * hadamard_signs(seed, d)).astype(np.float32)
    h = 1
    while h < d:
        z = y.reshape(y.shape[:-1] + (d // (2 * h), 2, h))
        a, b = z[..., 0, :], z[..., 1, :]
        y = np.stack((a + b, a - b), axis=-2).reshape(y.shape)
        h *= 2
    return y * np.float32(1.0 / np.sqrt(float(d)))


def quantise(x, rows, per_head, rotate_seed=None):
    """Dequantised float64 copy of x (B, N, H, d): one scale amax/448 per `rows` rows of each
    (sequence, head), or per (sequence, head) with per_head; codes e4m3(x * (448/amax))."""
    x = np.asarray(x, dtype=np.float32)
    if rotate_seed is not None:
        x = rotate(x, rotate_seed)
    b, n, h, d = x.shape
    blocks = max(1, -(-n // rows))
    pad = np.zeros((b, blocks * rows, h, d), np.float32)
    pad[:, :n] = x
    amax = np.abs(pad.reshape(b, blocks, rows, h, d)).max(axis=(2, 4))  # (b, blocks, h)
    if per_head:
        amax = np.broadcast_to(amax.max(axis=1, keepdims=True), amax.shape)
    amax = amax.astype(np.float32)
    zero = amax == 0
    scale = np.where(zero, np.float32(1), amax / np.float32(448)).astype(np.float32)
    inv = np.where(zero, np.float32(1), np.float32(448) / np.where(zero, np.float32(1), amax)).astype(np.float32)
    row_block = np.arange(n) // rows
    codes = e4m3((x * inv[:, row_block][..., None]).astype(np.float32))
    return codes * scale[:, row_block][..., None].astype(np.float64)


def dequantised(q, k, v, scaling="block", incoherent=True, seed=None):
    per_head = scaling == "per_head"
    s = (DEFAULT_SEED if seed is None else seed) if incoherent else None
    return (quantise(q, Q_BLOCK, per_head, s), quantise(k, K_BLOCK, per_head, s),
            quantise(v, max(1, v.shape[1]), True))  # V: one scale per (sequence, head)


def fp8_bound_check(out, lse, q, k, v, causal=False, window=(-1, -1), scale=None, out_dtype=np.float16, **fp8):
    """The 2x rule against attention on the dequantised inputs (see the module docstring)."""
    ref_o, ref_l = attention_ref(q, k, v, causal=causal, window=window, softmax_scale=scale)
    dq, dk, dv = dequantised(q, k, v, **fp8)
    nv_o, nv_l = attention_ref(dq, dk, dv, causal=causal, window=window, softmax_scale=scale)
    check_close(out, ref_o, round_to(nv_o, out_dtype), "out")
    check_close(lse, ref_l, nv_l, "lse")
    assert np.abs(round_to(nv_o, out_dtype) - ref_o).max() > 0, "quantisation should change the output"


def round_to(x, dtype):
    if dtype == "bfloat16":
        return torch.from_numpy(np.asarray(x, np.float32)).to(torch.bfloat16).double().numpy()
    return np.asarray(x).astype(dtype).astype(np.float64)


def make_qkv(shape, dtype=np.float16, seed=0, outliers=False):
    b, nq, nk, h, hk, d = shape
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((b, nq, h, d), (b, nk, hk, d), (b, nk, hk, d)))
    if outliers:  # 0.1% of the entries 10-100x larger (FA3 section 4.3): what incoherent processing is for
        for x in (q, k, v):
            hit = rng.random(x.shape) < 1e-3
            x[hit] *= rng.uniform(10, 100, hit.sum()).astype(np.float32)
    return tuple(x.astype(dtype) for x in (q, k, v))


# ------------------------------------------------------------------------------------------------
# The quantisation model itself (so the bounds below rest on a tested "naive")
# ------------------------------------------------------------------------------------------------
def test_e4m3_rounding():
    # Every finite positive code value rounds to itself; midpoints round to the even code.
    vals = np.array([m * 2.0**-9 for m in range(8)] + [(8 + m) * 2.0 ** (ex - 10) for ex in range(1, 16)
                                                        for m in range(8) if not (ex == 15 and m == 7)])
    np.testing.assert_array_equal(e4m3(vals), vals)
    assert vals.max() == 448 and len(np.unique(vals)) == 127
    assert e4m3(1.0 + 1 / 16) == 1.0 and e4m3(1.0 + 3 / 16) == 1.25  # ties to even mantissa
    assert e4m3(2.0**-10) == 0 and e4m3(3 * 2.0**-10) == 2 * 2.0**-9  # subnormal ties
    np.testing.assert_array_equal(e4m3([449.0, 470.0, 1e9, -1e9]), [448, 448, 448, -448])


def test_rotation_is_orthogonal_and_keeps_qkt():
    rng = np.random.default_rng(3)
    for d in (64, 128, 256):
        q, k = rng.standard_normal((2, 5, d)).astype(np.float32)
        rq, rk = rotate(q, 1234), rotate(k, 1234)
        np.testing.assert_allclose(rq @ rk.T, q.astype(np.float64) @ k.T, atol=1e-4)
        assert np.abs(rq - q).max() > 0.1  # it does move things
        signs = hadamard_signs(1234, d)
        assert d // 4 < (signs < 0).sum() < 3 * d // 4


# ------------------------------------------------------------------------------------------------
# NumPy (DLPack) on the CPU backend: carries CI's coverage
# ------------------------------------------------------------------------------------------------
# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim): odd lengths, Nq != Nk both ways,
# several Q and K scale blocks, single-row decode, GQA and MQA, every head dim.
SHAPES = [
    (1, 17, 130, 2, 1, 64),
    (2, 70, 70, 4, 2, 128),
    (1, 1, 33, 2, 1, 256),
    (1, 130, 300, 4, 1, 128),
]
# (causal, window)
MASKS = {"none": (False, (-1, -1)), "causal": (True, (-1, -1)), "window": (False, (20, 5))}
FP8 = {
    "block_incoherent": {"scaling": "block", "incoherent": True},
    "block": {"scaling": "block", "incoherent": False},
    "per_head_incoherent_seed": {"scaling": "per_head", "incoherent": True, "seed": 2**64 - 5},
}


@pytest.mark.parametrize("fp8", list(FP8))
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_numpy_forward_within_quantisation_error(shape, mask, fp8):
    causal, window = MASKS[mask]
    q, k, v = make_qkv(shape, seed=len(mask) + shape[1])
    out, lse = flashattn.attention_fp8(q, k, v, causal=causal, window_size=window, return_lse=True, **FP8[fp8])
    assert isinstance(out, np.ndarray) and out.dtype == np.float16 and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == (shape[0], shape[3], shape[1])
    fp8_bound_check(out, lse, q, k, v, causal=causal, window=window, **FP8[fp8])


@pytest.mark.parametrize("fp8", list(FP8))
def test_numpy_outliers_and_scale(fp8):
    q, k, v = make_qkv((2, 100, 200, 4, 2, 128), seed=5, outliers=True)
    out, lse = flashattn.attention_fp8(q, k, v, causal=True, softmax_scale=0.05, return_lse=True, **FP8[fp8])
    fp8_bound_check(out, lse, q, k, v, causal=True, scale=0.05, **FP8[fp8])


def test_cpu_output_is_attention_on_the_specified_quantisation():
    # The CPU backend is float32 attention on the dequantised inputs, so against float64 attention
    # on the dequantised inputs of the specification it obeys the ordinary 2x rule (float32
    # attention on those inputs, rounded to fp16, as the naive): a code or scale that differs
    # from the specification shows up as an error of a whole e4m3 step, far outside it.
    q, k, v = make_qkv((2, 130, 257, 4, 2, 64), seed=14)
    for fp8 in FP8.values():
        out, lse = flashattn.attention_fp8(q, k, v, causal=True, return_lse=True, **fp8)
        dq, dk, dv = dequantised(q, k, v, **fp8)
        ref_o, ref_l = attention_ref(dq, dk, dv, causal=True)
        base_o, base_l = attention_ref(dq, dk, dv, causal=True, dtype=np.float32)
        check_close(out, ref_o, base_o.astype(np.float16), f"out {fp8}")
        check_close(lse, ref_l, base_l, f"lse {fp8}")


def test_fully_masked_rows_give_zero_and_minus_inf():
    # Window (0, 0) with Nq > Nk: the first Nq - Nk rows see no key.
    q, k, v = make_qkv((1, 40, 20, 2, 1, 64), seed=6)
    out, lse = flashattn.attention_fp8(q, k, v, window_size=(0, 0), return_lse=True)
    assert np.all(out[:, :20] == 0) and np.all(np.isneginf(lse[:, :, :20]))
    fp8_bound_check(out, lse, q, k, v, window=(0, 0))


def test_seed_matters_only_with_incoherent_processing():
    q, k, v = make_qkv((1, 64, 128, 2, 2, 64), seed=7, outliers=True)
    a = flashattn.attention_fp8(q, k, v, seed=1)
    b = flashattn.attention_fp8(q, k, v, seed=2)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, flashattn.attention_fp8(q, k, v, seed=1))  # deterministic
    np.testing.assert_array_equal(flashattn.attention_fp8(q, k, v),
                                  flashattn.attention_fp8(q, k, v, seed=DEFAULT_SEED))
    np.testing.assert_array_equal(flashattn.attention_fp8(q, k, v, incoherent=False, seed=1),
                                  flashattn.attention_fp8(q, k, v, incoherent=False, seed=2))


def test_numpy_strided_inputs():
    # q/k/v sliced out of a packed qkv: only the last dimension must be contiguous.
    rng = np.random.default_rng(8)
    qkv = rng.standard_normal((2, 90, 3, 4, 64)).astype(np.float16)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    out = flashattn.attention_fp8(q, k, v, causal=True)
    np.testing.assert_array_equal(out, flashattn.attention_fp8(q.copy(), k.copy(), v.copy(), causal=True))


# ------------------------------------------------------------------------------------------------
# Misuse: the C ABI's message, the documented exception type
# ------------------------------------------------------------------------------------------------
def test_numpy_float32_is_a_type_error():
    q, k, v = (x.astype(np.float32) for x in make_qkv((1, 8, 8, 2, 2, 64)))
    with pytest.raises(TypeError, match=r"q: the fp8 forward takes float16 or bfloat16 inputs .*got float32"):
        flashattn.attention_fp8(q, k, v)


def test_numpy_head_dim_96_is_not_implemented():
    q, k, v = make_qkv((1, 8, 8, 2, 2, 96))
    with pytest.raises(NotImplementedError, match="head_dim 96 is not supported by the fp8 forward: it must be 64, "
                                                  "128 or 256"):
        flashattn.attention_fp8(q, k, v)


@pytest.mark.parametrize("scaling", ["tensor", "BLOCK", 0, None])
def test_bad_scaling(scaling):
    q, k, v = make_qkv((1, 8, 8, 2, 2, 64))
    with pytest.raises(ValueError, match="scaling must be 'block' or 'per_head', got"):
        flashattn.attention_fp8(q, k, v, scaling=scaling)


def test_bad_seed():
    q, k, v = make_qkv((1, 8, 8, 2, 2, 64))
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\), got -1"):
        flashattn.attention_fp8(q, k, v, seed=-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        flashattn.attention_fp8(q, k, v, seed=1.5)


def test_mismatched_k_names_the_tensor():
    q, _, v = make_qkv((1, 8, 8, 2, 2, 64))
    with pytest.raises(ValueError, match="k: head_dim 128 does not match q's"):
        flashattn.attention_fp8(q, np.zeros((1, 8, 2, 128), np.float16), v)


# ------------------------------------------------------------------------------------------------
# torch on the CPU backend
# ------------------------------------------------------------------------------------------------
def _torch_qkv(shape, dtype, seed=0, requires_grad=False):
    q, k, v = make_qkv(shape, dtype=np.float32, seed=seed)
    return tuple(torch.from_numpy(x).to(dtype).requires_grad_(requires_grad) for x in (q, k, v))


def _np64(t):
    return t.detach().double().cpu().numpy()


@needs_torch
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_torch_cpu_forward_within_quantisation_error(dtype):
    q, k, v = _torch_qkv((2, 100, 150, 4, 2, 128), getattr(torch, dtype), seed=1)
    out, lse, probs = flashattn.flash_attn_fp8_func(q, k, v, causal=True, window_size=(64, -1),
                                                    return_attn_probs=True)
    assert probs is None and out.dtype == q.dtype and out.shape == q.shape and lse.dtype == torch.float32
    assert lse.shape == (2, 4, 100)
    fp8_bound_check(_np64(out), _np64(lse), *(_np64(x) for x in (q, k, v)), causal=True, window=(64, -1),
                    out_dtype=dtype if dtype == "bfloat16" else np.float16)
    # The DLPack entry routes torch tensors here.
    torch.testing.assert_close(flashattn.attention_fp8(q, k, v, causal=True, window_size=(64, -1)), out,
                               rtol=0, atol=0)


@needs_torch
def test_torch_cpu_eager_direct_path_matches_custom_op(monkeypatch):
    from flashattn import _torch

    q, k, v = _torch_qkv((1, 70, 70, 2, 1, 64), torch.bfloat16, seed=2)
    res = []
    for force in (False, True):
        monkeypatch.setattr(_torch, "_FORCE_OPS", force)
        res.append(flashattn.flash_attn_fp8_func(q, k, v, causal=True, scaling="per_head", seed=2**64 - 1,
                                                 return_attn_probs=True))
    torch.testing.assert_close(res[0][0], res[1][0], rtol=0, atol=0)
    torch.testing.assert_close(res[0][1], res[1][1], rtol=0, atol=0)


@needs_torch
def test_torch_cpu_compile_fullgraph():
    q, k, v = _torch_qkv((1, 64, 96, 4, 2, 64), torch.bfloat16, seed=3)

    def f(q, k, v):
        return flashattn.flash_attn_fp8_func(q * 2, k, v, causal=True, seed=7).float().sum(-1)

    # aot_eager: the fake kernel and the op's schema are what fullgraph tracing needs; inductor's
    # code generation is exercised by the GPU test.
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)
    torch.testing.assert_close(got, f(q, k, v), rtol=0, atol=0)


@needs_torch
def test_torch_opcheck_custom_op():
    # Schema, fake kernel (also with dynamic shapes), and that the op carries no autograd silently.
    q, k, v = _torch_qkv((1, 96, 130, 4, 2, 64), torch.bfloat16, seed=4)
    torch.library.opcheck(torch.ops.flashattn.fp8_fwd.default, (q, k, v, 0.0, True, -1, -1, 0, True, -5))


@needs_torch
def test_torch_requires_grad_is_refused_naming_the_backward():
    q, k, v = _torch_qkv((1, 8, 8, 2, 2, 64), torch.bfloat16, requires_grad=True)
    with pytest.raises(NotImplementedError, match="flash_attn_fp8_func has no backward"):
        flashattn.flash_attn_fp8_func(q, k, v)
    with torch.no_grad():  # nothing to record: runs
        assert flashattn.flash_attn_fp8_func(q, k, v).shape == q.shape
    def f(q, k, v):
        return flashattn.flash_attn_fp8_func(q, k, v)

    with pytest.raises(NotImplementedError, match="flash_attn_fp8_func has no backward"):
        torch.compile(f, backend="aot_eager")(q, k, v)
    # fullgraph: dynamo reports the same refusal as an exception it cannot keep in a graph.
    with pytest.raises((NotImplementedError, torch._dynamo.exc.Unsupported),
                       match="flash_attn_fp8_func has no backward"):
        torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)


@needs_torch
def test_torch_misuse():
    q, k, v = _torch_qkv((1, 8, 8, 2, 2, 64), torch.float32)
    with pytest.raises(TypeError, match=r"q: the fp8 forward takes float16 or bfloat16 inputs .*got float32"):
        flashattn.flash_attn_fp8_func(q, k, v)
    q, k, v = _torch_qkv((1, 8, 8, 2, 2, 96), torch.bfloat16)
    with pytest.raises(NotImplementedError, match="head_dim 96 is not supported by the fp8 forward"):
        flashattn.flash_attn_fp8_func(q, k, v)
    with pytest.raises(ValueError, match="scaling must be 'block' or 'per_head', got 'tensor'"):
        flashattn.flash_attn_fp8_func(q, k, v, scaling="tensor")


# ------------------------------------------------------------------------------------------------
# CUDA (sm90): accuracy vs float64 SDPA, torch.compile, CUDA graphs
# ------------------------------------------------------------------------------------------------
def _cuda_reason():
    if torch is None:
        return "torch is not installed: GPU fp8 tests skipped"
    if not torch.cuda.is_available():
        return "no CUDA device: GPU fp8 tests skipped"
    if not flashattn.cuda_built():
        return "flashattn was built without CUDA: GPU fp8 tests skipped"
    return None


def _sm90_reason():
    r = _cuda_reason()
    if r is None and torch.cuda.get_device_capability() != (9, 0):
        r = f"the fp8 kernel needs sm90 (this GPU is sm{''.join(map(str, torch.cuda.get_device_capability()))})"
    return r


needs_sm90 = pytest.mark.skipif(_sm90_reason() is not None, reason=str(_sm90_reason()))


def _e4m3_torch(x):
    """e4m3() for torch float64 tensors (the P rounding of the kernel-like naive)."""
    a = x.abs()
    _, e = torch.frexp(a)
    step = torch.exp2((torch.clamp(e - 1, min=-6) - 3).double())
    return torch.copysign(torch.clamp(torch.round(a / step) * step, max=448.0), x)


def _mask(nq, nk, causal, window, device):
    """reference.visible as a torch bool tensor on device."""
    return torch.from_numpy(visible(nq, nk, causal, window)).to(device)


def _sdpa64(q, k, v, causal, window):
    """float64 SDPA in (b, s, h, d) layout, and the float64 lse (for rows that see keys)."""
    mask = _mask(q.shape[1], k.shape[1], causal, window, q.device)
    qt, kt, vt = (x.double().transpose(1, 2) for x in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, enable_gqa=True)
    rep = q.shape[2] // k.shape[2]
    s = (qt @ kt.repeat_interleave(rep, 1).transpose(-1, -2)) * q.shape[-1] ** -0.5
    return out.transpose(1, 2), torch.logsumexp(s.masked_fill(~mask, float("-inf")), dim=-1)


def _kernel_like_naive(dq, dk, dv, causal, window):
    """The fp8 kernel's arithmetic in float64 on the dequantised inputs: P = exp(S - rowmax) rounded
    to e4m3 before P.V, l summed unrounded (as tests/cuda/test_fp8.cpp's naive)."""
    rep = dq.shape[2] // dk.shape[2]
    qt, kt, vt = (x.transpose(1, 2) for x in (dq, dk.repeat_interleave(rep, 2), dv.repeat_interleave(rep, 2)))
    s = (qt @ kt.transpose(-1, -2)) * dq.shape[-1] ** -0.5
    s = s.masked_fill(~_mask(dq.shape[1], dk.shape[1], causal, window, dq.device), float("-inf"))
    m = s.amax(-1, keepdim=True)
    p = torch.exp(s - m)
    lsum = p.sum(-1, keepdim=True)
    return ((_e4m3_torch(p) @ vt) / lsum).transpose(1, 2), (m + torch.log(lsum))[..., 0]


# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim); every row sees a key (SDPA gives NaN
# for rows that see none).
GPU_SHAPES = [
    (2, 1024, 1024, 8, 8, 128),
    (1, 1000, 1000, 4, 1, 64),
    (2, 17, 4097, 4, 2, 256),
    (1, 257, 513, 6, 2, 128),
]
GPU_MASKS = {"none": (False, (-1, -1)), "causal": (True, (-1, -1)), "window": (True, (200, -1))}


@needs_sm90
@pytest.mark.parametrize("fp8", ["block_incoherent", "block", "per_head_incoherent_seed"])
@pytest.mark.parametrize("mask", list(GPU_MASKS))
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=[str(s) for s in GPU_SHAPES])
def test_cuda_forward_vs_float64_sdpa(shape, mask, fp8):
    causal, window = GPU_MASKS[mask]
    dtype = torch.bfloat16 if shape[-1] != 64 else torch.float16
    nq, d = shape[1], shape[-1]
    q, k, v = (x.cuda() for x in _torch_qkv(shape, dtype, seed=nq + d))
    out, lse, _ = flashattn.flash_attn_fp8_func(q, k, v, causal=causal, window_size=window, return_attn_probs=True,
                                                **FP8[fp8])
    ref, ref_lse = _sdpa64(q, k, v, causal, window)
    deq = (torch.from_numpy(x).cuda() for x in dequantised(*(_np64(x) for x in (q, k, v)), **FP8[fp8]))
    nv, nv_lse = _kernel_like_naive(*deq, causal, window)
    nv = nv.to(dtype).double()
    # The relative RMS error is about one element's e4m3 rounding error (O and its error both
    # shrink as rows average more V rows): 0.047-0.057 for the naive on these shapes, so it is held
    # to the naive's rather than to a fixed 5%. Over this many elements the RMS is stable and ours
    # has the naive's error model, so 1.25x (fa run --fp8's factor): the max rule alone let a 10%
    # scale error of the output through on the CPU backend.
    rel_rms = ((out.double() - ref).norm() / ref.norm()).item()
    nv_rms = ((nv - ref).norm() / ref.norm()).item()
    assert rel_rms <= 1.25 * nv_rms, f"relative RMS error {rel_rms:.4f} > 1.25 x the naive's {nv_rms:.4f}"
    for name, ours, r, base in (("out", out.double(), ref, nv), ("lse", lse.double(), ref_lse, nv_lse)):
        err = (ours - r).abs().max().item()
        bound = 2 * (base - r).abs().max().item() + 1e-5
        assert err <= bound, f"{name}: max error {err:.3g} > 2 x kernel-like naive + 1e-5 = {bound:.3g}"


@needs_sm90
def test_cuda_torch_compile_fullgraph():
    q, k, v = (torch.randn(2, 512, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def f(q, k, v):
        return flashattn.flash_attn_fp8_func(q * 2, k, v, causal=True, return_attn_probs=True)[:2]

    out_c, lse_c = torch.compile(f, fullgraph=True)(q, k, v)
    out_e, lse_e = f(q, k, v)
    torch.testing.assert_close(out_c, out_e, rtol=0, atol=0)
    torch.testing.assert_close(lse_c, lse_e, rtol=0, atol=0)


@needs_sm90
def test_cuda_graph_capture_and_replay():
    # The workspace (quantised q, k, v) and the outputs come from torch's allocator inside the
    # capture; replays quantise the new inputs.
    shape = (2, 512, 8, 128)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def step():
        return flashattn.flash_attn_fp8_func(q, k, v, causal=True, return_attn_probs=True)[:2]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    for seed in (1, 2):
        g = torch.Generator(device="cuda").manual_seed(seed)
        for x in (q, k, v):
            x.copy_(torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g))
        graph.replay()
        torch.cuda.synchronize()
        for s, e in zip(static, step()):
            torch.testing.assert_close(s, e, rtol=0, atol=0)


@needs_sm90
def test_cuda_runs_on_the_current_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        q, k, v = (torch.randn(4, 2048, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        out = flashattn.flash_attn_fp8_func(q, k, v, causal=True)
    s.synchronize()
    torch.testing.assert_close(out, flashattn.flash_attn_fp8_func(q, k, v, causal=True), rtol=0, atol=0)


@pytest.mark.skipif(_cuda_reason() is not None, reason=str(_cuda_reason()))
def test_cuda_other_archs_say_unsupported():
    if torch.cuda.get_device_capability() == (9, 0):
        pytest.skip("this GPU is sm90: the fp8 kernel runs here")
    q, k, v = (torch.randn(1, 64, 2, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with pytest.raises(NotImplementedError):
        flashattn.flash_attn_fp8_func(q, k, v)
