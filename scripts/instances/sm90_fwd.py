# Hopper FA3 forward (src/cuda/sm90/flash_fwd.cuh): TMA + WGMMA, warp specialised; sm_90a only.
# Ablation variants (bf16 d128) live in src/cuda/sm90/fwd_ablation_*.cu, not here.
# The short-range tiles of d192 and d256 (FwdTile<hd, masked, true>: the masked 128-key wide tile,
# the unmasked short-range tile) are compiled in companion units <masked instance>_wide.cu and
# <instance>_short.cu (cuda/sm90/fwd_short_tiles.cuh); run_sm90_fwd routes short key ranges to them
# (flash_fwd.cuh, short_tile_call). A tile built with 0 (FA_SM90_FWD_SHORT_TILE_BUILT) leaves its
# units empty.
_CFG = "cuda/sm90/fwd_tile_config.hpp"
family("fwd", "sm90", "cuda/sm90/flash_fwd.cuh", "run_sm90_fwd", "FA_ALGO_FA3", "Forward", 90, 90,
       [64, 96, 128, 192, 256], tile_macros=True,
       companions=[("_wide", "cuda/sm90/fwd_short_tiles.cuh", [192, 256],
                    "FA_SM90_FWD_SHORT_TILE_INSTANTIATE({elem}, {hd}, true)", [(True, True)],
                    (_CFG, "FA_SM90_FWD_SHORT_TILE_BUILT({hd}, 1)")),
                   ("_short", "cuda/sm90/fwd_short_tiles.cuh", [192, 256],
                    "FA_SM90_FWD_SHORT_TILE_INSTANTIATE({elem}, {hd}, false)", [(False, False)],
                    (_CFG, "FA_SM90_FWD_SHORT_TILE_BUILT({hd}, 0)"))])
