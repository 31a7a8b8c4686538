# Hopper FA3 forward (src/cuda/sm90/flash_fwd.cuh): TMA + WGMMA, warp specialised; sm_90a only.
# Ablation variants (bf16 d128) live in src/cuda/sm90/fwd_ablation_*.cu, not here.
# The masked d256 wide-key tile (128 keys × 1 stage, FwdTile<256, true, true>) is compiled in companion
# units <d256 masked instance>_wide.cu; run_sm90_fwd routes short key ranges to it (flash_fwd.cuh,
# d256_wide_keys). Built with FA_SM90_FWD_D256_MASKED_WIDE=0 they compile to nothing.
# The unmasked d256 short-range tile (64 or 128 keys, FwdTile<256, false, true>) likewise, in
# <d256 instance>_short.cu (d256_short_keys; FA_SM90_FWD_D256_SHORT=0: nothing).
family("fwd", "sm90", "cuda/sm90/flash_fwd.cuh", "run_sm90_fwd", "FA_ALGO_FA3", "Forward", 90, 90,
       [64, 96, 128, 192, 256], tile_macros=True,
       companions=[("_wide", "cuda/sm90/fwd_d256_wide.cuh", [256], "FA_SM90_FWD_D256_WIDE_INSTANTIATE({elem})",
                    [(True, True)]),
                   ("_short", "cuda/sm90/fwd_d256_wide.cuh", [256], "FA_SM90_FWD_D256_SHORT_INSTANTIATE({elem})",
                    [(False, False)])])
