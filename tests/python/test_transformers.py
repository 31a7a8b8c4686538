"""flashattn as a transformers attention backend: a tiny random Llama, logits vs SDPA.

Runs on CUDA (bf16) and on the CPU backend (float32); each skips visibly where transformers,
torch, or (for CUDA) a GPU and a CUDA build of flashattn are missing.
"""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: transformers test skipped")
transformers = pytest.importorskip("transformers", reason="transformers is not installed: test skipped")

import flashattn  # noqa: E402

_NO_CUDA = not torch.cuda.is_available() or not flashattn.cuda_built()
DEVICES = [
    pytest.param("cuda", torch.bfloat16, id="cuda-bf16",
                 marks=pytest.mark.skipif(_NO_CUDA, reason="no CUDA device or flashattn built without CUDA")),
    pytest.param("cpu", torch.float32, id="cpu-fp32"),
]


def _model(attn, dtype, device, seed=0):
    from transformers import AutoModelForCausalLM, LlamaConfig

    import flashattn.integrations.transformers as fa_tf

    if attn == "flashattn":
        attn = fa_tf.register()  # "flashattn", or its alias where transformers claims "flash*" names
    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024)
    torch.manual_seed(seed)  # same seed, same weights for every backend
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    assert model.config._attn_implementation == attn
    return model.to(device, dtype).eval()


def _logits(attn, dtype, ids, mask=None):
    with torch.no_grad():
        return _model(attn, dtype, ids.device)(input_ids=ids, attention_mask=mask).logits.double()


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_llama_logits_match_sdpa(device, dtype):
    torch.manual_seed(1)
    ids = torch.randint(0, 512, (2, 200), device=device)
    ref = _logits("sdpa", torch.float64, ids)
    ours = _logits("flashattn", dtype, ids)
    sdpa = _logits("sdpa", dtype, ids)
    err, base = (ours - ref).abs().max().item(), (sdpa - ref).abs().max().item()
    assert err <= 2 * base + 1e-5, f"flashattn logits error {err:.3g} vs sdpa bf16 {base:.3g}"


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_llama_left_padding_matches_sdpa(device, dtype):
    torch.manual_seed(2)
    ids = torch.randint(0, 512, (3, 64), device=device)
    mask = torch.ones_like(ids)
    mask[1, :20] = 0  # left padding, as in batched generation
    mask[2, :63] = 0
    ref = _logits("sdpa", torch.float64, ids, mask)
    ours = _logits("flashattn", dtype, ids, mask)
    sdpa = _logits("sdpa", dtype, ids, mask)
    keep = mask.bool()
    err = (ours - ref)[keep].abs().max().item()
    base = (sdpa - ref)[keep].abs().max().item()
    assert err <= 2 * base + 1e-5, f"flashattn logits error {err:.3g} vs sdpa bf16 {base:.3g}"


@pytest.mark.parametrize("device,dtype", DEVICES)
def test_llama_decode_step_with_kv_cache(device, dtype):
    # Prefill, then one token against the cache: the q_len = 1, kv_len = 17 path.
    torch.manual_seed(3)
    ids = torch.randint(0, 512, (2, 16), device=device)
    nxt = torch.randint(0, 512, (2, 1), device=device)

    def decode(attn, dt):
        with torch.no_grad():
            model = _model(attn, dt, device)
            pre = model(input_ids=ids, use_cache=True)
            return model(input_ids=nxt, past_key_values=pre.past_key_values, use_cache=True).logits.double()

    ref = decode("sdpa", torch.float64)
    err = (decode("flashattn", dtype) - ref).abs().max().item()
    base = (decode("sdpa", dtype) - ref).abs().max().item()
    assert err <= 2 * base + 1e-5, f"flashattn logits error {err:.3g} vs sdpa {base:.3g}"
