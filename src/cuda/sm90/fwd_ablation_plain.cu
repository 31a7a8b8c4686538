// Ablation variant of the sm90 forward: FA_SM90_FWD_ABLATE=plain, bf16 d128, unmasked (one kernel per
// file: compile budget). The feature set is the one FA_SM90_FWD_ABLATIONS names (flash_fwd.cuh).
#define FA_INSTANCE_HEAD_DIM 128  // the tile, for flash_fwd_kernel.cuh's include choice
#define FA_INSTANCE_MASKED 0
#include "cuda/sm90/flash_fwd.cuh"

namespace fa::cuda::sm90 {
template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, false, false, (fwd_feature::kAll & ~(fwd_feature::kPingPong | fwd_feature::kIntraWgOverlap))>(
    const core::AttnParams&, cudaStream_t);
}  // namespace fa::cuda::sm90
