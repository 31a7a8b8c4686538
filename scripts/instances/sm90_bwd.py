# Hopper (sm90a) FlashAttention-3 backward: TMA + WGMMA, warp specialised (src/cuda/sm90/flash_bwd*.cuh).
# Head dims 192 and 256 are not in the tile table yet (dK+dV of 64 keys do not fit one warpgroup's
# registers at these widths); the dispatcher falls back to the sm80 FA2 backward for them.
family("bwd", "sm90", "cuda/sm90/flash_bwd.cuh", "run_sm90_bwd", "FA_ALGO_FA3", "Backward", 90, 90,
       [64, 96, 128, 192, 256], workspace="sm90_bwd_workspace")
