// The header of the short-range tiles' units, companions of the d192 and d256 instances
// (scripts/instances/sm90_fwd.py; one kernel per unit):
// - sm90_fwd_<dtype>_hd<hd>_mask_softcap_wide.cu: the masked wide-key tile,
//   launch_fwd_variant<E, hd, true, true, kShortTileFeatures<hd, true>>;
// - sm90_fwd_<dtype>_hd<hd>_short.cu: the unmasked short-range tile,
//   launch_fwd_variant<E, hd, false, false, kShortTileFeatures<hd, false>>.
// A unit includes this only where its tile is built (FA_SM90_FWD_SHORT_TILE_BUILT,
// fwd_tile_config.hpp); otherwise it compiles to nothing. run_sm90_fwd calls them through their
// extern declarations (flash_fwd.cuh).
#pragma once

#include "cuda/sm90/flash_fwd.cuh"

#define FA_SM90_FWD_SHORT_TILE_INSTANTIATE(E, HD, M)                                              \
  template core::Status sm90::launch_fwd_variant<E, HD, M, M, sm90::kShortTileFeatures<HD, M>>(   \
      const core::AttnParams&, cudaStream_t);
