"""flashattn: exact FlashAttention (CUDA kernels and a CPU backend) behind a C ABI.

- flash_attn_func / flash_attn_varlen_func: drop-ins for flash_attn's, on torch tensors; their
  packed forms (flash_attn_qkvpacked_func, flash_attn_kvpacked_func and the two varlen ones) too.
- flash_attn_with_kvcache: flash_attn's KV-cache decode (contiguous or paged cache, in-place
  append), on torch tensors.
- flash_attn_fp8_func: the FP8 (e4m3) forward (inference only), on torch tensors.
- attention / attention_backward (and the _varlen forms), attention_with_kvcache, attention_fp8:
  any DLPack array, e.g. NumPy.

torch is optional: without it the package imports and the DLPack functions work; the torch
functions raise ImportError.
"""

from . import _C
from ._core import (
    attention,
    attention_backward,
    attention_fp8,
    attention_varlen,
    attention_varlen_backward,
    attention_with_kvcache,
)

__version__ = _C.version()

cuda_built = _C.cuda_built
cuda_device_count = _C.cuda_device_count
build_info = _C.build_info

try:
    import torch  # noqa: F401
except ImportError:
    _torch_missing = True
else:
    _torch_missing = False

if _torch_missing:

    def _needs_torch(name):
        def f(*args, **kwargs):
            raise ImportError(f"flashattn.{name} needs PyTorch, which is not installed")

        f.__name__ = name
        return f

    flash_attn_func = _needs_torch("flash_attn_func")
    flash_attn_varlen_func = _needs_torch("flash_attn_varlen_func")
    flash_attn_qkvpacked_func = _needs_torch("flash_attn_qkvpacked_func")
    flash_attn_kvpacked_func = _needs_torch("flash_attn_kvpacked_func")
    flash_attn_varlen_qkvpacked_func = _needs_torch("flash_attn_varlen_qkvpacked_func")
    flash_attn_varlen_kvpacked_func = _needs_torch("flash_attn_varlen_kvpacked_func")
    flash_attn_with_kvcache = _needs_torch("flash_attn_with_kvcache")
    flash_attn_fp8_func = _needs_torch("flash_attn_fp8_func")
else:
    # Importing registers the torch.ops.flashattn custom ops.
    from ._torch import (
        flash_attn_fp8_func,
        flash_attn_func,
        flash_attn_kvpacked_func,
        flash_attn_qkvpacked_func,
        flash_attn_varlen_func,
        flash_attn_varlen_kvpacked_func,
        flash_attn_varlen_qkvpacked_func,
        flash_attn_with_kvcache,
    )

__all__ = [
    "attention",
    "attention_backward",
    "attention_fp8",
    "attention_varlen",
    "attention_varlen_backward",
    "attention_with_kvcache",
    "flash_attn_func",
    "flash_attn_varlen_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_with_kvcache",
    "flash_attn_fp8_func",
    "cuda_built",
    "cuda_device_count",
    "build_info",
]
