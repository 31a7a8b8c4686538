"""flashattn as a transformers attention backend: a tiny random Llama, logits vs SDPA.

Skips visibly without transformers, torch, CUDA, or a flashattn built with CUDA.
"""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: transformers test skipped")
transformers = pytest.importorskip("transformers", reason="transformers is not installed: test skipped")

import flashattn  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: transformers test skipped"),
    pytest.mark.skipif(not flashattn.cuda_built(), reason="flashattn was built without CUDA"),
]


def _model(attn, dtype, seed=0):
    from transformers import AutoModelForCausalLM, LlamaConfig

    import flashattn.integrations.transformers as fa_tf

    fa_tf.register()
    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024)
    torch.manual_seed(seed)  # same seed, same weights for every backend
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    assert model.config._attn_implementation == attn
    return model.to("cuda", dtype).eval()


def _logits(attn, dtype, ids, mask=None):
    with torch.no_grad():
        return _model(attn, dtype)(input_ids=ids, attention_mask=mask).logits.double()


def test_llama_logits_match_sdpa():
    torch.manual_seed(1)
    ids = torch.randint(0, 512, (2, 200), device="cuda")
    ref = _logits("sdpa", torch.float64, ids)
    ours = _logits("flashattn", torch.bfloat16, ids)
    sdpa = _logits("sdpa", torch.bfloat16, ids)
    err, base = (ours - ref).abs().max().item(), (sdpa - ref).abs().max().item()
    assert err <= 2 * base + 1e-5, f"flashattn logits error {err:.3g} vs sdpa bf16 {base:.3g}"


def test_llama_left_padding_matches_sdpa():
    torch.manual_seed(2)
    ids = torch.randint(0, 512, (3, 64), device="cuda")
    mask = torch.ones_like(ids)
    mask[1, :20] = 0  # left padding, as in batched generation
    mask[2, :63] = 0
    ref = _logits("sdpa", torch.float64, ids, mask)
    ours = _logits("flashattn", torch.bfloat16, ids, mask)
    sdpa = _logits("sdpa", torch.bfloat16, ids, mask)
    keep = mask.bool()
    err = (ours - ref)[keep].abs().max().item()
    base = (sdpa - ref)[keep].abs().max().item()
    assert err <= 2 * base + 1e-5, f"flashattn logits error {err:.3g} vs sdpa bf16 {base:.3g}"


def test_llama_decode_step_with_kv_cache():
    # Prefill, then one token against the cache: the q_len = 1, kv_len = 17 path.
    torch.manual_seed(3)
    ids = torch.randint(0, 512, (2, 16), device="cuda")
    nxt = torch.randint(0, 512, (2, 1), device="cuda")
    steps = {}
    with torch.no_grad():
        for attn in ("flashattn", "sdpa"):
            model = _model(attn, torch.float32)
            pre = model(input_ids=ids, use_cache=True)
            steps[attn] = model(input_ids=nxt, past_key_values=pre.past_key_values, use_cache=True).logits
    torch.testing.assert_close(steps["flashattn"], steps["sdpa"], rtol=1e-4, atol=1e-4)
