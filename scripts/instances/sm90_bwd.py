# Hopper (sm90a) FlashAttention-3 backward: TMA + WGMMA, warp specialised
# (src/cuda/sm90/flash_bwd*.cuh). d <= 128: 128-key tiles, each consumer WG owns 64 keys;
# d 192/256: 64-key "split-D" tiles. Workspace: fp32 dQ, LSE*log2e, D, deterministic turn counters.
# The 80-query non-causal d128 tile (FA_SM90_BWD_D128_NC_BLOCK_M=80) is compiled in companion units
# <d128 masked instance>_nc80.cu (one attention kernel per unit); built with the switch at 64 they
# compile to nothing. run_sm90_bwd routes the calls that qualify to it (flash_bwd.cuh, nc80_enabled).
family("bwd", "sm90", "cuda/sm90/flash_bwd.cuh", "run_sm90_bwd", "FA_ALGO_FA3", "Backward", 90, 90,
       [64, 96, 128, 192, 256], workspace="sm90_bwd_workspace", variants=MASKED,
       companions=[("_nc80", "cuda/sm90/flash_bwd_nc80.cuh", [128], "FA_SM90_BWD_NC80_INSTANTIATE({elem})",
                    [(True, False)])])
