# KV-cache decode (fa_kvcache_forward), sm80 class: src/cuda/decode/decode_fwd.cuh. Built for every
# sm80-family arch (the H200 runs it); workspace: the split-KV partials (decode_common.cu).
# One instance per (dtype, head dim): masks and softcap are run-time (decode is bound by the bytes
# of K/V, and the per-element mask runs only on the blocks that need it), so the registry key is
# (masked, softcap) = (true, true).
# The key-split tile (d <= 128) is compiled in companion units <instance>_ks.cu (one attention kernel
# per unit: both tiles in one unit took 29-32 s / 2.8-3.2 GB); run_sm80_decode chooses between them.
family("decode", "sm80", "cuda/decode/decode_fwd.cuh", "run_sm80_decode", "FA_ALGO_FA2", "Decode", 80, 90,
       [32, 64, 96, 128, 192, 256], variants=[(True, True)], workspace="sm80_decode_workspace",
       companions=[("_ks", "cuda/decode/decode_fwd_ks.cuh", [32, 64, 96, 128],
                    "template core::Status decode::launch_decode_ks<{elem}, {hd}>(\n"
                    "    const core::AttnParams&, const decode::DecodeArgs&, dim3, cudaStream_t);")])
