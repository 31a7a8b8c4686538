// Ablation variant of the sm90 forward (plain), bf16 d128, unmasked and masked+softcap:
// selected at run time with FA_SM90_FWD_ABLATE=plain (see flash_fwd.cuh).
#include "cuda/sm90/flash_fwd.cuh"

namespace fa::cuda::sm90 {
template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, false, false, false, false>(
    const core::AttnParams&, cudaStream_t);
template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, true, true, false, false>(
    const core::AttnParams&, cudaStream_t);
}  // namespace fa::cuda::sm90
