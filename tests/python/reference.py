"""Naive O(N^2) float64 attention in NumPy: the ground truth the Python tests compare against.

Written from the definition, independently of the library: scores = scale * q k^T, optional
softcap (c * tanh(s / c)), bottom-right aligned causal/window mask, softmax, times v. GQA by
repeating each KV head over its group of query heads. A row that sees no key gives out = 0 and
lse = -inf (the C ABI's convention).
"""

import numpy as np


def visible(nq, nk, causal, window):
    """Boolean (nq, nk): query i sees key j (bottom-right alignment, as in flash_attn >= 2.1)."""
    left, right = window
    if causal:
        right = 0
    i = np.arange(nq)[:, None] + (nk - nq)
    j = np.arange(nk)[None, :]
    ok = np.ones((nq, nk), dtype=bool)
    if right >= 0:
        ok &= j <= i + right
    if left >= 0:
        ok &= j >= i - left
    return ok


def _expand_kv(x, heads_q):
    return np.repeat(x, heads_q // x.shape[2], axis=2)


def _probs(q, k, scale, causal, window, softcap):
    """Returns (P, lse, raw scores) for q (B,Nq,H,D), k (B,Nk,H,D) already expanded, in float64."""
    s_raw = np.einsum("bqhd,bkhd->bhqk", q, k) * scale
    s = softcap * np.tanh(s_raw / softcap) if softcap > 0 else s_raw
    mask = visible(q.shape[1], k.shape[1], causal, window)
    s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    empty = ~np.isfinite(m)
    m = np.where(empty, 0.0, m)
    e = np.exp(s - m)
    l = e.sum(axis=-1, keepdims=True)
    p = np.where(empty, 0.0, e / np.where(empty, 1.0, l))
    with np.errstate(divide="ignore"):
        lse = np.where(empty, -np.inf, m + np.log(np.where(empty, 1.0, l)))[..., 0]
    return p, lse, s_raw


def attention_ref(q, k, v, causal=False, softmax_scale=None, window=(-1, -1), softcap=0.0, dtype=np.float64):
    """out (B,Nq,H,D) and lse (B,H,Nq), computed in `dtype` (float64: the truth; float32: the
    naive baseline of the 2x rule)."""
    q, k, v = (np.asarray(x, dtype=dtype) for x in (q, k, v))
    h = q.shape[2]
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    k, v = _expand_kv(k, h), _expand_kv(v, h)
    p, lse, _ = _probs(q, k, scale, causal, window, softcap)
    return np.einsum("bhqk,bkhd->bqhd", p, v), lse


def attention_ref_backward(q, k, v, dout, causal=False, softmax_scale=None, window=(-1, -1), softcap=0.0,
                           dtype=np.float64):
    """dq, dk, dv computed in `dtype` (dk/dv summed over each KV head's query group)."""
    q, k, v, dout = (np.asarray(x, dtype=dtype) for x in (q, k, v, dout))
    h, hk = q.shape[2], k.shape[2]
    scale = q.shape[-1] ** -0.5 if softmax_scale is None else softmax_scale
    ke, ve = _expand_kv(k, h), _expand_kv(v, h)
    p, _, s_raw = _probs(q, ke, scale, causal, window, softcap)
    out = np.einsum("bhqk,bkhd->bqhd", p, ve)
    dve = np.einsum("bhqk,bqhd->bkhd", p, dout)
    dp = np.einsum("bqhd,bkhd->bhqk", dout, ve)
    delta = np.einsum("bqhd,bqhd->bhq", dout, out)[..., None]
    ds = p * (dp - delta)  # gradient w.r.t. the (capped) scores
    if softcap > 0:
        ds = ds * (1.0 - np.tanh(s_raw / softcap) ** 2)
    dq = np.einsum("bhqk,bkhd->bqhd", ds, ke) * scale
    dke = np.einsum("bhqk,bqhd->bkhd", ds, q) * scale
    b, nk, _, d = k.shape
    dk = dke.reshape(b, nk, hk, h // hk, d).sum(axis=3)
    dv = dve.reshape(b, nk, hk, h // hk, d).sum(axis=3)
    return dq, dk, dv


def varlen_ref(q, k, v, cu_q, cu_k, backward_dout=None, seqused_k=None, **opts):
    """Per-sequence reference of the varlen form: out (Tq,H,D), lse (H,Tq) [, dq, dk, dv].
    seqused_k: sequence b uses only its first seqused_k[b] keys (the others get zero gradients)."""
    tq, h, d = q.shape
    out = np.zeros((tq, h, d))
    lse = np.full((h, tq), -np.inf)
    grads = [np.zeros(x.shape) for x in (q, k, v)]
    for b in range(len(cu_q) - 1):
        sq, eq, sk, ek = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        if seqused_k is not None:
            ek = sk + seqused_k[b]
        if eq == sq:
            continue
        qb, kb, vb = q[None, sq:eq], k[None, sk:ek], v[None, sk:ek]
        if ek == sk:  # no keys: out 0, lse -inf, no gradients
            continue
        o, l = attention_ref(qb, kb, vb, **opts)
        out[sq:eq], lse[:, sq:eq] = o[0], l[0]
        if backward_dout is not None:
            dq, dk, dv = attention_ref_backward(qb, kb, vb, backward_dout[None, sq:eq], **opts)
            grads[0][sq:eq], grads[1][sk:ek], grads[2][sk:ek] = dq[0], dk[0], dv[0]
    if backward_dout is not None:
        return out, lse, grads
    return out, lse


def check_close(ours, ref, baseline, name, slack=1e-5):
    """The project's 2x rule: max|ours - ref| <= 2 * max|baseline - ref| + slack, where baseline is
    a naive computation in the inputs' precision."""
    ours, ref, baseline = (np.asarray(x, dtype=np.float64) for x in (ours, ref, baseline))
    fin = np.isfinite(ref)
    assert np.array_equal(np.isfinite(ours), fin), f"{name}: non-finite entries differ from the reference"
    err = np.abs(ours[fin] - ref[fin]).max(initial=0.0)
    base = np.abs(baseline[fin] - ref[fin]).max(initial=0.0)
    assert err <= 2 * base + slack, f"{name}: max error {err:.3g} > 2 * baseline {base:.3g} + {slack:g}"
