// The header of the masked d256 wide-key tile's units (sm90_fwd_<dtype>_hd256_mask_softcap_wide.cu,
// companions of the masked d256 instances; scripts/instances/sm90_fwd.py). With
// FA_SM90_FWD_D256_MASKED_WIDE=1 (the default, fwd_tile_config.hpp) a unit holds
// launch_fwd_variant<E, 256, true, true, kD256WideFeatures>, which run_sm90_fwd calls through its
// extern declaration (flash_fwd.cuh); built with 0 it compiles to nothing and parses no kernel header.
#pragma once

#include "cuda/sm90/fwd_tile_config.hpp"  // FA_SM90_FWD_D256_MASKED_WIDE

#if FA_SM90_FWD_D256_MASKED_WIDE
#include "cuda/sm90/flash_fwd.cuh"
#define FA_SM90_FWD_D256_WIDE_INSTANTIATE(E)                                                      \
  template core::Status sm90::launch_fwd_variant<E, 256, true, true, sm90::kD256WideFeatures>(    \
      const core::AttnParams&, cudaStream_t);
#else
#define FA_SM90_FWD_D256_WIDE_INSTANTIATE(E)
#endif
