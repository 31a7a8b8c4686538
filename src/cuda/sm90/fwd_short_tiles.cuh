// The header of the short-range tiles' units, companions of the d192 and d256 instances
// (scripts/instances/sm90_fwd.py; one kernel per unit):
// - sm90_fwd_<dtype>_hd<hd>_mask_softcap_wide.cu: the masked wide-key tile,
//   launch_fwd_variant<E, hd, true, true, kShortTileFeatures<hd, true>>;
// - sm90_fwd_<dtype>_hd<hd>_short.cu: the unmasked short-range tile,
//   launch_fwd_variant<E, hd, false, false, kShortTileFeatures<hd, false>>.
// A unit whose tile is built with 0 (FA_SM90_FWD_SHORT_TILE_BUILT, fwd_tile_config.hpp) compiles to
// nothing; with every one 0 no kernel header is parsed. run_sm90_fwd calls them through their
// extern declarations (flash_fwd.cuh).
#pragma once

#include "cuda/sm90/fwd_tile_config.hpp"  // FA_SM90_FWD_SHORT_TILE_BUILT

#if FA_SM90_FWD_SHORT_TILE_BUILT(192, 0) || FA_SM90_FWD_SHORT_TILE_BUILT(192, 1) || \
    FA_SM90_FWD_SHORT_TILE_BUILT(256, 0) || FA_SM90_FWD_SHORT_TILE_BUILT(256, 1)
#include "cuda/sm90/flash_fwd.cuh"
#endif
// Used under `#if FA_SM90_FWD_SHORT_TILE_BUILT(HD, M)` in the generated units.
#define FA_SM90_FWD_SHORT_TILE_INSTANTIATE(E, HD, M)                                              \
  template core::Status sm90::launch_fwd_variant<E, HD, M, M, sm90::kShortTileFeatures<HD, M>>(   \
      const core::AttnParams&, cudaStream_t);
