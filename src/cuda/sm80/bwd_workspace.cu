// Workspace size of the FA2 backward family (named in scripts/instances/sm80_bwd.py).
#include "cuda/sm80/bwd_workspace.cuh"

namespace fa::cuda::inst {

size_t sm80_bwd_workspace(const core::AttnParams& p) {
  size_t bytes = 0;
  sm80::bwd_workspace_layout(p, nullptr, &bytes);
  return bytes;
}

}  // namespace fa::cuda::inst
