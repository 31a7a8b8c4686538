// The sm90 backward family's workspace function (named in scripts/instances/sm90_bwd.py).
#include "cuda/sm90/bwd_workspace.hpp"

namespace fa::cuda::inst {
size_t sm90_bwd_workspace(const core::AttnParams& p) { return sm90_bwd::workspace_bytes(p); }
}  // namespace fa::cuda::inst
