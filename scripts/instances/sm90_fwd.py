# Hopper FA3 forward (src/cuda/sm90/flash_fwd.cuh): TMA + WGMMA, warp specialised; sm_90a only.
# Ablation variants (bf16 d128) live in src/cuda/sm90/fwd_ablation_*.cu, not here.
family("fwd", "sm90", "cuda/sm90/flash_fwd.cuh", "run_sm90_fwd", "FA_ALGO_FA3", "Forward", 90, 90,
       [64, 96, 128, 192, 256], tile_macros=True)
