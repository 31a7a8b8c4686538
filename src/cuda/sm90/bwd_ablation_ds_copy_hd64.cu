// Ablation variant of the sm90 backward (ds_copy), bf16 d64, masked: selected at run time with
// FA_SM90_BWD_ABLATE=ds_copy (see flash_bwd.cuh).
#include "cuda/sm90/flash_bwd.cuh"

namespace fa::cuda::sm90_bwd {
template core::Status launch_bwd<BwdAblDsCopy<cutlass::bfloat16_t, 64>, true, false>(const core::AttnParams&,
                                                                                 cudaStream_t, void*);
}  // namespace fa::cuda::sm90_bwd
