// The host-side plan of a KV-cache decode call (fa_kvcache_forward on CUDA): tile sizes, the
// split-KV count and the workspace its partial results need. One definition, used by the
// workspace query and by the launcher, so the two always agree.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/params.hpp"
#include "core/status.hpp"

namespace fa::cuda::decode {

// Packed query rows per CTA: 4 warps x one 16-row MMA slab. A row is a (query position, query
// head of the KV head's group) pair, so one CTA serves a whole GQA group from one read of K/V.
constexpr int kNWarps = 4;
constexpr int kBlockM = 16 * kNWarps;
// Keys per pipeline stage. d <= 128: 64 (16 KB of K+V at d128 per stage); d 192/256: 32, so two
// stages of K and V plus Q stay at 96 KB and two CTAs fit on an SM (the second CTA's loads
// cover the first one's softmax and MMA phases).
constexpr int block_n(int head_dim) { return head_dim <= 128 ? 64 : 32; }
// The combine kernel keeps each row's split LSEs in shared memory (kMaxSplits floats per row).
constexpr int kMaxSplits = 64;
// The auto heuristic gives every split at least this many key blocks: shorter splits cost more
// in partial-result traffic and combine work than their extra parallelism buys.
constexpr int kMinBlocksPerSplit = 4;

struct Plan {
  int64_t m_rows = 0;      // packed rows per (batch, KV head): Nq * group
  int64_t m_blocks = 0;    // CTAs along the packed rows
  int num_splits = 1;      // CTAs along the keys; 1 = no split, no workspace, no combine
  int64_t rows_total = 0;  // B * Hq * Nq: rows of out (the partials' row count)
  size_t ws_bytes = 0;     // fp32 partial O [S, rows_total, D] then LSE [S, rows_total]
};

// num_sms: the device's SM count (the heuristic's target is two resident CTAs per SM).
Plan make_plan(const core::AttnParams& p, int num_sms);
// make_plan with the SM count of p.device_id (cached device attribute).
Plan make_plan(const core::AttnParams& p);

// Writes k_new/v_new into the cache rows cache_seqlens[b] + i (rows past the capacity are
// skipped), enqueued on stream; a no-op without k_new.
core::Status launch_append(const core::AttnParams& p, cudaStream_t stream);

}  // namespace fa::cuda::decode
