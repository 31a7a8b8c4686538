"""KV-cache decode: flashattn.attention_with_kvcache (NumPy, CPU backend; runs without torch) and
flashattn.flash_attn_with_kvcache (torch CPU tensors; CUDA when available) against a float64
reference computed on the cache gathered per sequence, with the project's 2x rule.

Cases: contiguous and paged caches (page sizes 1, 3, 16, 64 with lengths that are not multiples,
shuffled block tables with spare pages), cache_batch_idx, in-place append of k/v (the written
rows must hold k/v exactly, every other cache entry must be unchanged), GQA, Nq 1 and 5, causal,
windows, softcap, an empty sequence (out 0, lse -inf), int cache_seqlens, misuse messages. GPU
cases (skip without CUDA) also force split-KV counts and run torch.compile(fullgraph=True).
"""

import zlib

import numpy as np
import pytest
from reference import attention_ref, check_close

import flashattn

# ------------------------------------------------------------------------------------------------
# Cases and the reference
# ------------------------------------------------------------------------------------------------


def make_case(seed, b=2, nq=1, hq=4, hk=2, d=64, capacity=100, seqlens=(37, 60), nnew=0, page_size=0,
              batch_idx=False, dtype=np.float32):
    """Random inputs of one call as NumPy arrays (dict). seqlens None: no cache_seqlens."""
    rng = np.random.default_rng(seed)
    c = dict(page_size=page_size)
    if page_size:
        pps = -(-capacity // page_size)
        pages = b * pps + 2  # two spare pages no sequence uses
        c["block_table"] = rng.permutation(pages)[: b * pps].reshape(b, pps).astype(np.int32)
        cache_shape = (pages, page_size, hk, d)
        c["capacity"] = pps * page_size
    else:
        entries = b + 2 if batch_idx else b
        cache_shape = (entries, capacity, hk, d)
        c["capacity"] = capacity
        if batch_idx:
            c["cache_batch_idx"] = rng.permutation(entries)[:b].astype(np.int32)
    c["q"] = rng.standard_normal((b, nq, hq, d)).astype(dtype)
    c["k_cache"] = rng.standard_normal(cache_shape).astype(dtype)
    c["v_cache"] = rng.standard_normal(cache_shape).astype(dtype)
    if nnew:
        c["k"] = rng.standard_normal((b, nnew, hk, d)).astype(dtype)
        c["v"] = rng.standard_normal((b, nnew, hk, d)).astype(dtype)
    if seqlens is not None:
        c["cache_seqlens"] = np.asarray(seqlens, dtype=np.int32)
    return c


def _cache_rows(c, cache, b, n):
    """Rows 0..n-1 of sequence b's cache (n, hk, d)."""
    if c.get("block_table") is not None:
        ps = c["page_size"]
        j = np.arange(n)
        return cache[c["block_table"][b, j // ps], j % ps]
    e = c["cache_batch_idx"][b] if c.get("cache_batch_idx") is not None else b
    return cache[e, :n]


def kvcache_ref(c, causal=False, window=(-1, -1), softcap=0.0, softmax_scale=None, dtype=np.float64):
    """out (B,Nq,H,D), lse (B,H,Nq) from the inputs as they were before the call (c's arrays)."""
    q = c["q"]
    b, nq, h, d = q.shape
    out = np.zeros((b, nq, h, d), dtype=dtype)
    lse = np.full((b, h, nq), -np.inf)
    nnew = c["k"].shape[1] if c.get("k") is not None else 0
    for i in range(b):
        old = int(c["cache_seqlens"][i]) if c.get("cache_seqlens") is not None else c["capacity"]
        ks = [_cache_rows(c, c["k_cache"], i, old)]
        vs = [_cache_rows(c, c["v_cache"], i, old)]
        if nnew:
            ks.append(c["k"][i])
            vs.append(c["v"][i])
        kb, vb = np.concatenate(ks)[None], np.concatenate(vs)[None]
        if kb.shape[1] == 0:
            continue  # no key: out 0, lse -inf
        o, l_ = attention_ref(q[i : i + 1], kb, vb, causal=causal, window=window, softcap=softcap,
                              softmax_scale=softmax_scale, dtype=dtype)
        out[i], lse[i] = o[0], l_[0]
    return out, lse


def expected_cache(c, name):
    """The cache after the call: the old one with k (or v) written at rows cache_seqlens[b] ..."""
    cache = c[name].copy()
    new = c.get("k" if name == "k_cache" else "v")
    if new is None:
        return cache
    for b in range(new.shape[0]):
        for i in range(new.shape[1]):
            j = int(c["cache_seqlens"][b]) + i
            if c.get("block_table") is not None:
                ps = c["page_size"]
                cache[c["block_table"][b, j // ps], j % ps] = new[b, i]
            else:
                e = c["cache_batch_idx"][b] if c.get("cache_batch_idx") is not None else b
                cache[e, j] = new[b, i]
    return cache


def _copy_case(c):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in c.items()}


# ------------------------------------------------------------------------------------------------
# NumPy (DLPack) path: CPU backend, no torch needed
# ------------------------------------------------------------------------------------------------
_ARGS = ("k", "v", "cache_seqlens", "cache_batch_idx", "block_table")


def run_numpy(c, **opts):
    """Calls attention_with_kvcache on copies of the caches; returns (out, lse, k_cache, v_cache)."""
    kc, vc = c["k_cache"].copy(), c["v_cache"].copy()
    out, lse = flashattn.attention_with_kvcache(c["q"], kc, vc, return_lse=True,
                                                **{a: c.get(a) for a in _ARGS}, **opts)
    return out, lse, kc, vc


def check_numpy(c, causal=False, window=(-1, -1), softcap=0.0, softmax_scale=None):
    opts = dict(causal=causal, window_size=window, softcap=softcap, softmax_scale=softmax_scale)
    out, lse, kc, vc = run_numpy(c, **opts)
    dt = c["q"].dtype
    assert out.dtype == dt and out.shape == c["q"].shape
    assert lse.dtype == np.float32 and lse.shape == (c["q"].shape[0], c["q"].shape[2], c["q"].shape[1])
    ref_kw = dict(causal=causal, window=window, softcap=softcap, softmax_scale=softmax_scale)
    ref_out, ref_lse = kvcache_ref(c, **ref_kw)
    base_out, base_lse = kvcache_ref(c, dtype=np.float32, **ref_kw)
    check_close(out, ref_out, base_out.astype(dt), "out")
    check_close(lse, ref_lse, base_lse, "lse")
    np.testing.assert_array_equal(kc, expected_cache(c, "k_cache"))
    np.testing.assert_array_equal(vc, expected_cache(c, "v_cache"))
    return out, lse


@pytest.mark.parametrize("nq", [1, 5])
@pytest.mark.parametrize("page_size", [0, 1, 3, 16, 64])
def test_numpy_paged_and_contiguous(page_size, nq):
    c = make_case(10 + page_size + nq, b=3, nq=nq, hq=8, hk=2, capacity=150, seqlens=(1, 150, 63),
                  page_size=page_size)
    check_numpy(c)
    check_numpy(c, causal=True)


@pytest.mark.parametrize("page_size", [0, 1, 16])
@pytest.mark.parametrize("nnew", [1, 4])
def test_numpy_append(page_size, nnew):
    c = make_case(20 + nnew + page_size, b=3, nq=nnew, hq=4, hk=2, capacity=67, seqlens=(0, 30, 67 - nnew),
                  nnew=nnew, page_size=page_size)
    check_numpy(c, causal=True)


def test_numpy_cache_batch_idx():
    c = make_case(30, b=3, nq=2, capacity=50, seqlens=(50, 0, 17), nnew=0, batch_idx=True)
    check_numpy(c, causal=True)
    c = make_case(31, b=2, nq=2, capacity=50, seqlens=(20, 44), nnew=2, batch_idx=True)
    check_numpy(c, causal=True)


@pytest.mark.parametrize("group", [1, 4, 8])
def test_numpy_gqa(group):
    c = make_case(40 + group, b=2, nq=5, hq=2 * group, hk=2, capacity=90, seqlens=(90, 33), page_size=16, nnew=1)
    check_numpy(c, causal=True)


@pytest.mark.parametrize("window", [(16, 0), (5, 2), (-1, 3), (30, -1)])
def test_numpy_windows(window):
    c = make_case(50, b=2, nq=5, hq=4, hk=1, capacity=100, seqlens=(99, 40), page_size=3, nnew=1)
    check_numpy(c, window=window)


def test_numpy_softcap_and_scale():
    c = make_case(60, b=2, nq=3, capacity=80, seqlens=(80, 21))
    check_numpy(c, softcap=2.0, softmax_scale=0.3)
    check_numpy(c, causal=True, softcap=5.0)


def test_numpy_no_cache_seqlens_uses_the_whole_cache():
    c = make_case(70, b=2, nq=1, capacity=33, seqlens=None, page_size=8)
    check_numpy(c)


def test_numpy_empty_sequence_gives_zero_and_minus_inf():
    c = make_case(80, b=3, nq=1, capacity=40, seqlens=(0, 40, 0))
    out, lse = check_numpy(c)
    assert np.all(out[0] == 0) and np.all(out[2] == 0)
    assert np.all(np.isneginf(lse[0])) and np.all(np.isneginf(lse[2])) and np.all(np.isfinite(lse[1]))


@pytest.mark.parametrize("d", [64, 128])
def test_numpy_float16(d):
    c = make_case(90 + d, b=2, nq=5, hq=8, hk=2, d=d, capacity=129, seqlens=(120, 7), nnew=5, page_size=16,
                  dtype=np.float16)
    check_numpy(c, causal=True)


def test_numpy_int_cache_seqlens():
    c = make_case(100, b=2, nq=1, capacity=40, seqlens=(25, 25))
    out_arr, _, _, _ = run_numpy(c)
    kc, vc = c["k_cache"].copy(), c["v_cache"].copy()
    out_int = flashattn.attention_with_kvcache(c["q"], kc, vc, cache_seqlens=25)
    np.testing.assert_array_equal(out_arr, out_int)


def test_numpy_return_convention():
    c = make_case(110, b=1, nq=1, capacity=10, seqlens=(4,))
    out = flashattn.attention_with_kvcache(c["q"], c["k_cache"], c["v_cache"], cache_seqlens=c["cache_seqlens"])
    assert isinstance(out, np.ndarray)


def test_numpy_misuse_messages_and_untouched_cache():
    c = make_case(120, b=2, nq=1, capacity=20, seqlens=(5, 19), nnew=2, page_size=4)
    kc, vc = c["k_cache"].copy(), c["v_cache"].copy()
    call = flashattn.attention_with_kvcache
    with pytest.raises(ValueError, match=r"cache_seqlens\[1\] = 19 plus 2 new keys exceeds the cache capacity 20"):
        call(c["q"], kc, vc, k=c["k"], v=c["v"], cache_seqlens=c["cache_seqlens"], block_table=c["block_table"])
    with pytest.raises(ValueError, match="k_new is given without v_new"):
        call(c["q"], kc, vc, k=c["k"], cache_seqlens=c["cache_seqlens"], block_table=c["block_table"])
    with pytest.raises(ValueError, match="k_new/v_new need cache_seqlens"):
        call(c["q"], kc, vc, k=c["k"], v=c["v"], block_table=c["block_table"])
    with pytest.raises(ValueError, match="cache_batch_idx cannot be combined with block_table"):
        call(c["q"], kc, vc, cache_seqlens=c["cache_seqlens"], block_table=c["block_table"],
             cache_batch_idx=np.zeros(2, np.int32))
    bad_table = c["block_table"].copy()
    bad_table[0, 1] = 99
    with pytest.raises(ValueError, match=r"block_table\[0, 1\] = 99 is outside \[0, "):
        call(c["q"], kc, vc, cache_seqlens=c["cache_seqlens"], block_table=bad_table)
    with pytest.raises(TypeError, match="k_cache: expected dtype float32, got float16"):
        call(c["q"], kc.astype(np.float16), vc, cache_seqlens=c["cache_seqlens"], block_table=c["block_table"])
    with pytest.raises(TypeError, match="block_table: expected dtype int32"):
        call(c["q"], kc, vc, cache_seqlens=c["cache_seqlens"], block_table=c["block_table"].astype(np.float32))
    with pytest.raises(ValueError, match=r"k_new: expected shape \[2, 2, 2, 64\]"):
        call(c["q"], kc, vc, k=c["k"][:, :, :1], v=c["v"], cache_seqlens=c["cache_seqlens"],
             block_table=c["block_table"])
    with pytest.raises(ValueError, match="num_splits must be >= 0"):
        call(c["q"], kc, vc, cache_seqlens=c["cache_seqlens"], block_table=c["block_table"], num_splits=-2)
    np.testing.assert_array_equal(kc, c["k_cache"])  # nothing was appended by a failed call
    np.testing.assert_array_equal(vc, c["v_cache"])


# ------------------------------------------------------------------------------------------------
# torch on the CPU
# ------------------------------------------------------------------------------------------------
def _torch():
    return pytest.importorskip("torch", reason="torch is not installed: torch KV-cache tests skipped")


def _to_torch(torch, c, dtype, device="cpu"):
    """The case as torch tensors (floats converted to dtype, which may round them)."""
    t = {}
    for k, v in c.items():
        if isinstance(v, np.ndarray):
            x = torch.from_numpy(v.copy()).to(device)
            t[k] = x.to(dtype) if x.is_floating_point() else x
        else:
            t[k] = v
    return t


def _back_to_numpy(t):
    """float64 NumPy copies of the torch case (what the reference reads)."""
    return {k: (v.double().cpu().numpy() if v.is_floating_point() else v.cpu().numpy()) if hasattr(v, "cpu")
            else v for k, v in t.items()}


def _torch_call(torch, t, **opts):
    return flashattn.flash_attn_with_kvcache(t["q"], t["k_cache"], t["v_cache"], **{a: t.get(a) for a in _ARGS},
                                             **opts)


@pytest.mark.parametrize("dtype_name", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("page_size", [0, 16])
def test_torch_cpu_matches_reference(dtype_name, page_size):
    torch = _torch()
    dtype = getattr(torch, dtype_name)
    c = make_case(200 + page_size, b=3, nq=5, hq=8, hk=2, capacity=70, seqlens=(10, 60, 0), nnew=5,
                  page_size=page_size)
    t = _to_torch(torch, c, dtype)
    ref_in = _back_to_numpy(t)
    kc_before, vc_before = t["k_cache"].clone(), t["v_cache"].clone()
    out, lse = _torch_call(torch, t, causal=True, return_softmax_lse=True)
    assert out.dtype == dtype and out.shape == t["q"].shape and lse.dtype == torch.float32
    ref_out, ref_lse = kvcache_ref(ref_in, causal=True)
    base_out, base_lse = kvcache_ref(ref_in, causal=True, dtype=np.float32)
    base_out = torch.from_numpy(base_out).to(dtype).double().numpy()
    check_close(out.double().numpy(), ref_out, base_out, "out")
    check_close(lse.numpy(), ref_lse, base_lse, "lse")
    want_k = expected_cache(dict(ref_in, k_cache=kc_before.double().numpy()), "k_cache")
    np.testing.assert_array_equal(t["k_cache"].double().numpy(), want_k)
    want_v = expected_cache(dict(ref_in, v_cache=vc_before.double().numpy()), "v_cache")
    np.testing.assert_array_equal(t["v_cache"].double().numpy(), want_v)


def test_torch_cpu_return_convention_int_seqlens_and_no_grad():
    torch = _torch()
    c = make_case(300, b=2, nq=1, capacity=30, seqlens=(12, 12))
    t = _to_torch(torch, c, torch.float32)
    q = t["q"].requires_grad_()
    out = flashattn.flash_attn_with_kvcache(q, t["k_cache"], t["v_cache"], cache_seqlens=12)
    assert isinstance(out, torch.Tensor) and out.grad_fn is None and not out.requires_grad
    out2, lse = flashattn.flash_attn_with_kvcache(q, t["k_cache"], t["v_cache"], cache_seqlens=t["cache_seqlens"],
                                                  return_softmax_lse=True)
    assert torch.equal(out, out2) and lse.shape == (2, 4, 1)


def test_torch_cpu_custom_op_and_compile_keep_the_append():
    torch = _torch()
    c = make_case(310, b=2, nq=1, hq=4, hk=2, capacity=32, seqlens=(3, 20), nnew=1, page_size=4)
    eager = _to_torch(torch, c, torch.float32)
    traced = _to_torch(torch, c, torch.float32)
    want = _torch_call(torch, eager, causal=True)

    def step(q, kc, vc, k, v, seqlens, table):
        return flashattn.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, cache_seqlens=seqlens, block_table=table,
                                                 causal=True)

    # aot_eager: Dynamo + functionalization + the fake kernel, without needing a C++ toolchain.
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    got = compiled(traced["q"], traced["k_cache"], traced["v_cache"], traced["k"], traced["v"],
                   traced["cache_seqlens"], traced["block_table"])
    assert torch.equal(got, want)
    assert torch.equal(traced["k_cache"], eager["k_cache"]) and torch.equal(traced["v_cache"], eager["v_cache"])


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(rotary_cos="x"), "rotary_cos/rotary_sin"),
        (dict(rotary_sin="x"), "rotary_cos/rotary_sin"),
        (dict(cache_leftpad="x"), "cache_leftpad"),
        (dict(alibi_slopes="x"), "alibi_slopes"),
    ],
)
def test_torch_unsupported_arguments(kw, words):
    torch = _torch()
    q = torch.zeros(1, 1, 2, 64)
    kc = torch.zeros(1, 8, 2, 64)
    with pytest.raises(NotImplementedError, match=words):
        flashattn.flash_attn_with_kvcache(q, kc, kc.clone(), cache_seqlens=3, **kw)


def test_torch_misuse_messages():
    torch = _torch()
    q = torch.zeros(2, 1, 4, 64)
    kc, vc = torch.zeros(2, 8, 2, 64), torch.zeros(2, 8, 2, 64)
    with pytest.raises(ValueError, match=r"cache_seqlens\[0\] = 9 exceeds the cache capacity 8"):
        flashattn.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=9)
    with pytest.raises(ValueError, match="q has 4 heads, not a multiple of k_cache's 3"):
        flashattn.flash_attn_with_kvcache(q, torch.zeros(2, 8, 3, 64), torch.zeros(2, 8, 3, 64))
    with pytest.raises(TypeError, match="cache_seqlens: expected dtype int32"):
        flashattn.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=torch.zeros(2, dtype=torch.float32))
    with pytest.raises(ValueError, match="k_new is given without v_new"):
        flashattn.flash_attn_with_kvcache(q, kc, vc, k=torch.zeros(2, 1, 2, 64), cache_seqlens=1)


# ------------------------------------------------------------------------------------------------
# torch on CUDA
# ------------------------------------------------------------------------------------------------
def _cuda_torch():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: GPU KV-cache tests skipped")
    if not flashattn.cuda_built():
        pytest.skip("flashattn was built without CUDA: GPU KV-cache tests skipped")
    return torch


def _sdpa_per_sequence(torch, t, causal, window, softcap, dtype):
    """SDPA (explicit math with softcap) on each sequence's gathered keys, in `dtype`."""
    import torch.nn.functional as F

    q = t["q"]
    b, nq, h, d = q.shape
    out = torch.zeros(b, nq, h, d, dtype=dtype, device=q.device)
    nnew = t["k"].shape[1] if t.get("k") is not None else 0
    left, right = window
    if causal:
        right = 0
    for i in range(b):
        old = int(t["cache_seqlens"][i]) if t.get("cache_seqlens") is not None else t["capacity"]
        j = torch.arange(old, device=q.device)
        rows = []
        for name, new in (("k_cache", "k"), ("v_cache", "v")):
            cache = t[name]
            if t.get("block_table") is not None:
                ps = t["page_size"]
                x = cache[t["block_table"][i, j // ps].long(), j % ps]
            else:
                e = int(t["cache_batch_idx"][i]) if t.get("cache_batch_idx") is not None else i
                x = cache[e, :old]
            if nnew:
                x = torch.cat([x, t[new][i]])
            rows.append(x.to(dtype))
        kb, vb = rows
        nk = kb.shape[0]
        qi = torch.arange(nq, device=q.device)[:, None] + (nk - nq)
        kj = torch.arange(nk, device=q.device)[None, :]
        mask = torch.ones(nq, nk, dtype=torch.bool, device=q.device)
        if right >= 0:
            mask &= kj <= qi + right
        if left >= 0:
            mask &= kj >= qi - left
        qt = q[i].to(dtype).transpose(0, 1)[None]  # (1, h, nq, d)
        rep = h // kb.shape[1]
        kt = kb.transpose(0, 1).repeat_interleave(rep, dim=0)[None]
        vt = vb.transpose(0, 1).repeat_interleave(rep, dim=0)[None]
        if softcap > 0:
            s = (qt @ kt.transpose(-1, -2)) * d ** -0.5
            s = softcap * torch.tanh(s / softcap)
            o = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ vt
        else:
            o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
        out[i] = o[0].transpose(0, 1)
    return out


GPU_CASES = {
    # name: (make_case kwargs, options)
    "decode_paged16_gqa8": (dict(b=4, nq=1, hq=16, hk=2, d=128, capacity=1000, seqlens=(999, 1, 517, 64),
                                 nnew=1, page_size=16), dict(causal=True)),
    "decode_contiguous_mqa": (dict(b=3, nq=1, hq=8, hk=1, d=64, capacity=300, seqlens=(300, 17, 128)),
                              dict()),
    "spec_decode_nq5_page3": (dict(b=2, nq=5, hq=8, hk=2, d=128, capacity=200, seqlens=(100, 190), nnew=5,
                                   page_size=3), dict(causal=True)),
    "batch_idx_window": (dict(b=2, nq=4, hq=4, hk=4, d=64, capacity=256, seqlens=(200, 60), batch_idx=True),
                         dict(window_size=(32, 0))),
    "softcap_page256_long": (dict(b=2, nq=1, hq=8, hk=2, d=128, capacity=8192, seqlens=(8000, 3000), nnew=1,
                                  page_size=256), dict(softcap=30.0)),
    "d256_page64": (dict(b=2, nq=1, hq=4, hk=1, d=256, capacity=640, seqlens=(639, 65), nnew=1, page_size=64),
                    dict(causal=True)),
}


@pytest.mark.parametrize("num_splits", [0, 1, 3])
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_cuda_matches_sdpa_float64(name, dtype_name, num_splits):
    torch = _cuda_torch()
    dtype = getattr(torch, dtype_name)
    case_kw, opts = GPU_CASES[name]
    c = make_case(zlib.crc32(f"{name} {dtype_name} {num_splits}".encode()), **case_kw)
    t = _to_torch(torch, c, dtype, device="cuda")
    before = {k: v.clone() for k, v in t.items() if hasattr(v, "clone")}
    out, lse = _torch_call(torch, t, num_splits=num_splits, return_softmax_lse=True, **opts)
    torch.cuda.synchronize()
    causal = opts.get("causal", False)
    window = opts.get("window_size", (-1, -1))
    softcap = opts.get("softcap", 0.0)
    ref_t = dict(before, page_size=c["page_size"], capacity=c["capacity"])
    ref = _sdpa_per_sequence(torch, ref_t, causal, window, softcap, torch.float64)
    base = _sdpa_per_sequence(torch, ref_t, causal, window, softcap, dtype)
    err = (out.double() - ref).abs().max().item()
    bound = 2 * (base.double() - ref).abs().max().item() + 1e-5
    assert err <= bound, f"out: max error {err:.3g} > bound {bound:.3g}"
    assert torch.isfinite(lse).all()
    # The append: compare with the reference's expectation on the host.
    host = _back_to_numpy(before)
    host.update(page_size=c["page_size"], capacity=c["capacity"])
    np.testing.assert_array_equal(t["k_cache"].double().cpu().numpy(), expected_cache(host, "k_cache"))
    np.testing.assert_array_equal(t["v_cache"].double().cpu().numpy(), expected_cache(host, "v_cache"))


def test_cuda_torch_compile_fullgraph():
    torch = _cuda_torch()
    c = make_case(400, b=2, nq=1, hq=8, hk=2, d=128, capacity=512, seqlens=(100, 400), nnew=1, page_size=16)
    eager = _to_torch(torch, c, torch.bfloat16, device="cuda")
    traced = _to_torch(torch, c, torch.bfloat16, device="cuda")
    want = _torch_call(torch, eager, causal=True)

    def step(q, kc, vc, k, v, seqlens, table):
        return flashattn.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, cache_seqlens=seqlens, block_table=table,
                                                 causal=True)

    compiled = torch.compile(step, fullgraph=True)
    got = compiled(traced["q"], traced["k_cache"], traced["v_cache"], traced["k"], traced["v"],
                   traced["cache_seqlens"], traced["block_table"])
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    assert torch.equal(traced["k_cache"], eager["k_cache"]) and torch.equal(traced["v_cache"], eager["v_cache"])
