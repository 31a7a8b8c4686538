// The backends' entry points as the API layer sees them. Each takes validated AttnParams.
#pragma once

#include <cstddef>
#include <string>

#include "core/params.hpp"
#include "core/status.hpp"

namespace fa::cpu {
core::Status forward(const core::AttnParams& p);
core::Status backward(const core::AttnParams& p);
core::Status kvcache_forward(const core::AttnParams& p);  // p.kvcache
}  // namespace fa::cpu

namespace fa::cuda {
// Implemented in src/cuda/dispatch.cu, or by src/cuda_stub.cpp in a build without CUDA.
bool built();
int device_count();
std::string info();  // archs compiled, kernels in the dispatch table, devices found
core::Status forward_workspace_size(const core::AttnParams& p, size_t* bytes);
core::Status backward_workspace_size(const core::AttnParams& p, size_t* bytes);
core::Status forward(const core::AttnParams& p);
core::Status backward(const core::AttnParams& p);
// KV-cache decode (p.kvcache): appends k_new/v_new, then split-KV attention over the cache.
core::Status kvcache_workspace_size(const core::AttnParams& p, size_t* bytes);
core::Status kvcache_forward(const core::AttnParams& p);
}  // namespace fa::cuda
