// The header of the d256 short-range tiles' units, companions of the d256 instances
// (scripts/instances/sm90_fwd.py; one kernel per unit):
// - sm90_fwd_<dtype>_hd256_mask_softcap_wide.cu: the masked wide-key tile. With
//   FA_SM90_FWD_D256_MASKED_WIDE=1 (the default, fwd_tile_config.hpp) it holds
//   launch_fwd_variant<E, 256, true, true, kD256WideFeatures>;
// - sm90_fwd_<dtype>_hd256_short.cu: the unmasked short-range tile. With FA_SM90_FWD_D256_SHORT=1
//   it holds launch_fwd_variant<E, 256, false, false, kD256ShortFeatures>.
// run_sm90_fwd calls them through their extern declarations (flash_fwd.cuh). A unit whose tile is
// built with 0 compiles to nothing; with both 0 no kernel header is parsed.
#pragma once

#include "cuda/sm90/fwd_tile_config.hpp"  // FA_SM90_FWD_D256_MASKED_WIDE, FA_SM90_FWD_D256_SHORT

#if FA_SM90_FWD_D256_MASKED_WIDE || FA_SM90_FWD_D256_SHORT
#include "cuda/sm90/flash_fwd.cuh"
#endif
#if FA_SM90_FWD_D256_MASKED_WIDE
#define FA_SM90_FWD_D256_WIDE_INSTANTIATE(E)                                                      \
  template core::Status sm90::launch_fwd_variant<E, 256, true, true, sm90::kD256WideFeatures>(    \
      const core::AttnParams&, cudaStream_t);
#else
#define FA_SM90_FWD_D256_WIDE_INSTANTIATE(E)
#endif
#if FA_SM90_FWD_D256_SHORT
#define FA_SM90_FWD_D256_SHORT_INSTANTIATE(E)                                                     \
  template core::Status sm90::launch_fwd_variant<E, 256, false, false, sm90::kD256ShortFeatures>( \
      const core::AttnParams&, cudaStream_t);
#else
#define FA_SM90_FWD_D256_SHORT_INSTANTIATE(E)
#endif
