// Zeroes the dK/dV rows that no query reaches through the kernels: every row when the call has no
// queries at all, and in the varlen form the keys past seqused_k[b] (the kernels iterate only over
// used keys, but the gradient of an unused key is defined, and is 0). Shared by every backward
// generation, so it lives beside the dispatcher rather than in each kernel.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/params.hpp"
#include "cuda/dispatch.hpp"

namespace fa::cuda {
namespace {

constexpr int kRowsPerBlock = 32;
constexpr int kThreads = 256;

__global__ void zero_kv_grad_kernel(core::AttnParams p, bool all_rows) {
  const int b = blockIdx.y;
  int64_t k_start = 0, k_full = p.seqlen_k, k_used = all_rows ? 0 : p.seqlen_k;
  if (p.varlen) {
    k_start = p.cu_seqlens_k[b];
    k_full = p.cu_seqlens_k[b + 1] - k_start;
    k_used = all_rows ? 0 : (p.seqused_k ? p.seqused_k[b] : k_full);
  }
  const int64_t r0 = k_used + int64_t(blockIdx.x) * kRowsPerBlock;
  const int64_t r1 = r0 + kRowsPerBlock < k_full ? r0 + kRowsPerBlock : k_full;
  const int64_t per_row = int64_t(p.heads_kv) * p.head_dim;
  // fp16/bf16 elements: written as 16-bit zeros; head_dim is a multiple of 8.
  auto* dk = static_cast<uint16_t*>(p.dk);
  auto* dv = static_cast<uint16_t*>(p.dv);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t e = threadIdx.x; e < per_row; e += kThreads) {
      const int h = int(e / p.head_dim), d = int(e % p.head_dim);
      dk[p.dk_str.offset(b, k_start + r, h) + d] = 0;
      dv[p.dv_str.offset(b, k_start + r, h) + d] = 0;
    }
}

}  // namespace

core::Status zero_unreached_kv_grads(const core::AttnParams& p, cudaStream_t stream, bool all_rows) {
  if (p.batch == 0 || p.seqlen_k == 0) return core::Status::success();
  if (!all_rows && !(p.varlen && p.seqused_k)) return core::Status::success();
  // Rows past seqused_k are at most max_seqlen_k per sequence; blocks past a sequence's end exit.
  dim3 grid(unsigned((p.seqlen_k + kRowsPerBlock - 1) / kRowsPerBlock), unsigned(p.batch));
  zero_kv_grad_kernel<<<grid, kThreads, 0, stream>>>(p, all_rows);
  return check_launch("zero dK/dV of unreached keys");
}

}  // namespace fa::cuda
