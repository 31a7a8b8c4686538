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
// FP8 forward (fa_fp8_forward): p describes the bf16/fp16 call (q/k/v/o, sizes, mask); the CPU
// backend quantises as core/fp8.hpp says, dequantises and computes in float32 (src/cpu/fp8.cpp).
core::Status fp8_forward(const core::AttnParams& p, const fa_fp8& f);
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
// FP8 forward (fa_fp8_forward; src/cuda/fp8/): p describes the bf16/fp16 call; quantises q/k/v
// into the workspace (core/fp8.hpp layout), then runs fp8_attention on the quantised copies.
core::Status fp8_workspace_size(const core::AttnParams& p, const fa_fp8& f, size_t* bytes);
core::Status fp8_forward(const core::AttnParams& p, const fa_fp8& f);
// The dispatch table's FP8 kernels (src/cuda/dispatch.cu): p8 is the kernel's view (dtype
// F8E4M3, q/k/v = the quantised copies, the scales, o in out_dtype; see core/params.hpp).
core::Status fp8_attention(const core::AttnParams& p8);
}  // namespace fa::cuda
