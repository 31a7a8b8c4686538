// Workspace of the FA1 forward (src/cuda/sm80/fa1_fwd.cuh): the running state that Algorithm 1
// keeps in HBM between outer (K/V) steps — normalised O in fp32 [Hq, total_q, D], then the row
// max m and row sum l [Hq, total_q].
#include <cstddef>

#include "core/params.hpp"

namespace fa::cuda::inst {

size_t sm80_fa1_fwd_workspace(const core::AttnParams& p) {
  const size_t rows = size_t(p.heads_q) * size_t(p.total_q);
  return rows * (size_t(p.head_dim) + 2) * sizeof(float);
}

}  // namespace fa::cuda::inst
