// The header of the 80-query d128 backward tile's units (sm90_bwd_<dtype>_hd128_mask_nc80.cu,
// companions of the d128 instances; scripts/instances/sm90_bwd.py). With
// FA_SM90_BWD_D128_NC_BLOCK_M=80 (the default) a unit holds launch_bwd<BwdNc80<E>, false, false>,
// which run_sm90_bwd calls through its extern declaration (flash_bwd.cuh); built with 64 it
// compiles to nothing and does not parse the kernel headers.
#pragma once

#include "cuda/sm90/bwd_workspace.hpp"  // FA_SM90_BWD_D128_NC_BLOCK_M

#if FA_SM90_BWD_D128_NC_BLOCK_M == 80
#include "cuda/sm90/flash_bwd.cuh"
#define FA_SM90_BWD_NC80_INSTANTIATE(E)                                                           \
  template core::Status sm90_bwd::launch_bwd<sm90_bwd::BwdNc80<E>, false, false>(const core::AttnParams&, \
                                                                                 cudaStream_t, void*);
#else
#define FA_SM90_BWD_NC80_INSTANTIATE(E)
#endif
