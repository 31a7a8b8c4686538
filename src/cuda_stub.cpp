// The CUDA entry points of a build without CUDA (FA_ENABLE_CUDA=OFF): every GPU request gets a
// clear "unsupported" instead of a link error, so the CPU-only library is complete.
#include "core/backend.hpp"

namespace fa::cuda {
namespace {
core::Status no_cuda() {
  return core::unsupported("this flashattn was built without CUDA (FA_ENABLE_CUDA=OFF)");
}
}  // namespace

bool built() { return false; }
int device_count() { return 0; }
std::string info() { return "cuda: not built\n"; }
core::Status forward_workspace_size(const core::AttnParams&, size_t*) { return no_cuda(); }
core::Status backward_workspace_size(const core::AttnParams&, size_t*) { return no_cuda(); }
core::Status forward(const core::AttnParams&) { return no_cuda(); }
core::Status backward(const core::AttnParams&) { return no_cuda(); }
core::Status kvcache_workspace_size(const core::AttnParams&, size_t*) { return no_cuda(); }
core::Status kvcache_forward(const core::AttnParams&) { return no_cuda(); }
core::Status fp8_workspace_size(const core::AttnParams&, const fa_fp8&, size_t*) { return no_cuda(); }
core::Status fp8_forward(const core::AttnParams&, const fa_fp8&) { return no_cuda(); }
core::Status fp8_attention(const core::AttnParams&) { return no_cuda(); }
}  // namespace fa::cuda
