// Ablation variant of the sm90 backward (persistent), bf16 d128, masked: selected at run time with
// FA_SM90_BWD_ABLATE=persistent (see flash_bwd.cuh).
#include "cuda/sm90/flash_bwd.cuh"

namespace fa::cuda::sm90_bwd {
template core::Status launch_bwd<BwdAblPersistent<cutlass::bfloat16_t>, true, false>(const core::AttnParams&,
                                                                             cudaStream_t, void*);
}  // namespace fa::cuda::sm90_bwd
