// KV-cache decode, the parts that do not depend on dtype or head dim: the plan (split count,
// workspace) and the in-place append of k_new/v_new. The attention and combine kernels are
// templates in decode_fwd.cuh, instantiated per (dtype, head dim) in src/cuda/instances/.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/common/device_attr.hpp"
#include "cuda/decode/decode_plan.hpp"
#include "cuda/dispatch.hpp"

namespace fa::cuda {
namespace decode {

namespace {
// The run-time A/B switch: FA_DECODE_KEY_SPLIT=0 in the environment selects the 64-row tile for
// every call (read once per process).
bool key_split_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FA_DECODE_KEY_SPLIT");
    return !(e && e[0] == '0' && e[1] == '\0');
  }();
  return on;
}
}  // namespace

Plan make_plan(const core::AttnParams& p, int num_sms) {
  Plan pl;
  pl.m_rows = p.seqlen_q * p.group_size();
  pl.key_split = has_key_split_tile(p.head_dim) && pl.m_rows <= kKsBlockM && key_split_enabled();
  const int bm = pl.key_split ? kKsBlockM : kBlockM;
  pl.m_blocks = (pl.m_rows + bm - 1) / bm;
  pl.rows_total = int64_t(p.batch) * p.heads_q * p.seqlen_q;
  const int bn = pl.key_split ? ks_block_n(p.head_dim) : block_n(p.head_dim);
  // The key blocks of the longest possible sequence (the capacity): the lengths themselves are
  // in device memory. Splits past a sequence's own length run empty and contribute lse = -inf.
  const int64_t n_blocks = std::max<int64_t>(1, (p.seqlen_k + bn - 1) / bn);
  const int cap = int(std::min<int64_t>(kMaxSplits, n_blocks));
  int s = 1;
  if (p.num_splits > 0) {
    s = std::min(p.num_splits, cap);
  } else {
    // Fill the resident CTA slots (ctas_per_sm per SM: one loads while the other computes) in
    // whole waves: a last, partial wave leaves slots idle while the bytes still to read sit in a
    // few CTAs. Wave efficiency of s splits = CTAs / (waves * slots); the fewest splits within
    // 95% of the best efficiency win (fewer splits: less partial-result traffic and combine
    // work; FA2's compute-bound heuristic accepts 85%, but here an idle slot is lost bandwidth
    // and a split costs only D + 1 floats per row), and no split is shorter than
    // kMinBlocksPerSplit key blocks.
    // The kernels' __launch_bounds__ minimum (the key-split tile's: kKsCtasPerSm; at 2 its 68 KB
    // of shared memory at d128 may still let a third CTA in, which only adds slack to the waves).
    const int ctas_per_sm = pl.key_split ? kKsCtasPerSm : 2;
    const int64_t ctas = std::max<int64_t>(1, pl.m_blocks * p.heads_kv * p.batch);
    const int64_t slots = int64_t(ctas_per_sm) * std::max(num_sms, 1);
    const int max_s = int(std::max<int64_t>(1, std::min<int64_t>(cap, n_blocks / kMinBlocksPerSplit)));
    auto efficiency = [&](int splits) {
      const int64_t n = ctas * splits, waves = (n + slots - 1) / slots;
      return double(n) / double(waves * slots);
    };
    double best = 0.0;
    for (int k = 1; k <= max_s; ++k) best = std::max(best, efficiency(k));
    s = 1;
    while (s < max_s && efficiency(s) < 0.95 * best) ++s;
  }
  pl.num_splits = s;
  if (s > 1 && pl.rows_total > 0) {
    const size_t o_bytes = size_t(s) * size_t(pl.rows_total) * size_t(p.head_dim) * sizeof(float);
    pl.ws_bytes = o_bytes + size_t(s) * size_t(pl.rows_total) * sizeof(float);
  }
  return pl;
}

Plan make_plan(const core::AttnParams& p) {
  return make_plan(p, device_attr<cudaDevAttrMultiProcessorCount>(p.device_id));
}

namespace {

// One thread per 16-byte vector of a new K (and V) row. Rows are independent; the kernel is a
// scatter through the row addressing the attention kernel reads with (core::cache_offset).
__global__ void append_kernel(const core::AttnParams p) {
  constexpr int kVec = 8;  // 2-byte elements per 16-byte vector
  const int64_t vecs_per_row = p.head_dim / kVec;
  const int64_t total = int64_t(p.batch) * p.seqlen_new * p.heads_kv * vecs_per_row;
  using Vec = uint4;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = idx % vecs_per_row;
    int64_t t = idx / vecs_per_row;
    const int h = int(t % p.heads_kv);
    t /= p.heads_kv;
    const int64_t i = t % p.seqlen_new;
    const int b = int(t / p.seqlen_new);
    const int64_t j = int64_t(p.cache_seqlens[b]) + i;
    // Device-side index values cannot be validated without a sync: rows outside the cache are
    // skipped (fa_kvcache's contract), never written.
    if (j < 0 || j >= p.seqlen_k) continue;
    const auto* kn = static_cast<const uint16_t*>(p.k_new) + p.knew_str.offset(b, i, h) + c * kVec;
    const auto* vn = static_cast<const uint16_t*>(p.v_new) + p.vnew_str.offset(b, i, h) + c * kVec;
    auto* kc = static_cast<uint16_t*>(p.k_cache_w) + core::cache_offset(p, p.k_str, b, j, h) + c * kVec;
    auto* vc = static_cast<uint16_t*>(p.v_cache_w) + core::cache_offset(p, p.v_str, b, j, h) + c * kVec;
    *reinterpret_cast<Vec*>(kc) = *reinterpret_cast<const Vec*>(kn);
    *reinterpret_cast<Vec*>(vc) = *reinterpret_cast<const Vec*>(vn);
  }
}

}  // namespace

core::Status launch_append(const core::AttnParams& p, cudaStream_t stream) {
  if (!p.k_new || p.seqlen_new == 0 || p.batch == 0) return core::Status::success();
  const int64_t total = int64_t(p.batch) * p.seqlen_new * p.heads_kv * (p.head_dim / 8);
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((total + kThreads - 1) / kThreads, 65535);
  append_kernel<<<unsigned(blocks), kThreads, 0, stream>>>(p);
  return check_launch("kvcache append");
}

}  // namespace decode

namespace inst {
// The registry's workspace function of the decode family (scripts/instances/decode.py).
size_t sm80_decode_workspace(const core::AttnParams& p) { return decode::make_plan(p).ws_bytes; }
}  // namespace inst

}  // namespace fa::cuda
