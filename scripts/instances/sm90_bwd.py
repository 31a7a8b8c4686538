# Hopper (sm90a) FlashAttention-3 backward: TMA + WGMMA, warp specialised
# (src/cuda/sm90/flash_bwd*.cuh). d <= 128: 128-key tiles, each consumer WG owns 64 keys;
# d 192/256: 64-key "split-D" tiles. Workspace: fp32 dQ, LSE*log2e, D, deterministic turn counters.
family("bwd", "sm90", "cuda/sm90/flash_bwd.cuh", "run_sm90_bwd", "FA_ALGO_FA3", "Backward", 90, 90,
       [64, 96, 128, 192, 256], workspace="sm90_bwd_workspace", variants=MASKED)
