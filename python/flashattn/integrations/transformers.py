"""flashattn as a transformers attention backend.

    import flashattn.integrations.transformers as fa_tf
    fa_tf.register()
    model = AutoModelForCausalLM.from_pretrained(..., attn_implementation="flashattn")

transformers calls the attention function with query/key/value as (batch, heads, seq, head_dim);
flashattn wants (batch, seq, heads, head_dim), which a transpose gives as a view (no copy: the
library takes any strides with a contiguous last dimension). Padding is handled like transformers'
own flash-attention path: the mask function registered with the backend yields None (no padding)
or the 2D (batch, kv_len) padding mask, and padded batches run unpadded through the varlen kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._torch import flash_attn_func, flash_attn_varlen_func


def _window(sliding_window, causal):
    # transformers' sliding window: query at position i sees keys j with i - j < sliding_window,
    # so sliding_window - 1 keys to the left (and as many to the right when not causal).
    if not sliding_window:
        return (-1, -1)
    return (sliding_window - 1, 0 if causal else sliding_window - 1)


def _varlen_from_mask(mask):
    valid = mask.bool()
    seqlens = valid.sum(dim=1, dtype=torch.int32)
    cu = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    index = valid.flatten().nonzero(as_tuple=True)[0]
    return index, cu, int(seqlens.max())


def flashattn_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                                sliding_window=None, softcap=None, is_causal=None, **kwargs):
    """The AttentionInterface function: returns (attn_output (batch, seq, heads, dim), None)."""
    if dropout:
        raise NotImplementedError(
            f"dropout={dropout}: flashattn has no attention dropout; set the model's attention_dropout to 0"
        )
    if kwargs.get("output_attentions", False):
        raise NotImplementedError("flashattn does not return attention weights (output_attentions=True)")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    window = _window(sliding_window, causal)
    softcap = float(softcap) if softcap else 0.0
    q, k, v = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)

    if attention_mask is None:
        out = flash_attn_func(q, k, v, softmax_scale=scaling, causal=causal, window_size=window, softcap=softcap)
        return out, None
    if attention_mask.dim() != 2:
        raise NotImplementedError(
            f"flashattn takes no arbitrary {attention_mask.dim()}-D attention mask: only causal/window masks and "
            "2-D padding masks (register() installs the mask function that produces them)"
        )
    # Padding: keys are the mask's columns; queries are the last q_len of them (left padding in
    # generation, or q_len == kv_len in a prefill), so bottom-right alignment per sequence is right.
    b, q_len = q.shape[0], q.shape[1]
    idx_k, cu_k, max_k = _varlen_from_mask(attention_mask)
    idx_q, cu_q, max_q = _varlen_from_mask(attention_mask[:, -q_len:])
    q_unpad = q.reshape(b * q_len, *q.shape[2:])[idx_q]
    k_unpad = k.reshape(-1, *k.shape[2:])[idx_k]
    v_unpad = v.reshape(-1, *v.shape[2:])[idx_k]
    out_unpad = flash_attn_varlen_func(q_unpad, k_unpad, v_unpad, cu_q, cu_k, max_q, max_k, softmax_scale=scaling,
                                       causal=causal, window_size=window, softcap=softcap)
    out = out_unpad.new_zeros((b * q_len, *out_unpad.shape[1:]))
    out[idx_q] = out_unpad
    return out.view(b, q_len, *out.shape[1:]), None


# transformers >= 5 treats every attn_implementation whose name contains "flash" as a flavour of
# flash_attn and tries to load it as a Hub kernel, so "flashattn" cannot be selected there; this
# alias can. register() returns the name that works with the installed transformers.
ALIAS = "fa_exact"


def _name_is_hijacked(name: str) -> bool:
    try:
        from transformers.utils.generic import is_flash_attention_requested
    except ImportError:
        return False
    return bool(is_flash_attention_requested(requested_attention_implementation=name))


def register(name: str = "flashattn") -> str:
    """Registers `name` with transformers' AttentionInterface (and its mask function); where
    transformers would route `name` to its own flash-attention loader, also registers ALIAS.
    Returns the name to pass as attn_implementation."""
    from transformers import AttentionInterface

    names = [name] + ([ALIAS] if _name_is_hijacked(name) else [])
    try:
        # transformers >= 4.53 builds masks per backend; flash-style masks are None or 2-D padding.
        from transformers import AttentionMaskInterface
        from transformers.masking_utils import flash_attention_mask
    except ImportError:
        AttentionMaskInterface = None
    for n in names:
        AttentionInterface.register(n, flashattn_attention_forward)
        if AttentionMaskInterface is not None:
            AttentionMaskInterface.register(n, flash_attention_mask)
    return names[-1]
