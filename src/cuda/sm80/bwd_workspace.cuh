// Scratch memory of the FA2 backward, carved from the one workspace buffer the dispatcher hands
// over. Shared by the workspace-size function (bwd_workspace.cu) and the launcher so the two can
// never disagree.
//
//   dq_accum  fp32 [Hq, total_q rows, D]   dQ summed over key blocks (zeroed by the pre-pass)
//   dsum      fp32 [Hq, total_q rows]      D = rowsum(dO ∘ O)
//   dq_sem    int  [B, Hq, query blocks]   deterministic mode only: key blocks already added
//
// "rows" are the workspace's dense row index: b * Nq + i in the batch form, cu_seqlens_q[b] + i in
// the varlen form, so one index serves both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/params.hpp"

namespace fa::cuda::sm80 {

// The semaphore array is sized for query blocks of this many rows, the smallest kBlockM of the
// tile table; a kernel with larger blocks indexes it by its own block index (uses a prefix).
constexpr int kBwdSemBlockM = 32;

struct BwdWorkspace {
  float* dq_accum = nullptr;
  float* dsum = nullptr;
  int* dq_sem = nullptr;
  int64_t n_sem = 0;
  int64_t sem_blocks_per_head = 0;  // query blocks per (batch, head)
  // Kernel switch set by the launcher (not part of the buffer layout): 1 = each key block starts its
  // walk over query blocks at (key block mod query blocks) instead of at the first one.
  int rotate_m = 0;
};

inline size_t bwd_align(size_t x) { return (x + 255) & ~size_t(255); }

// Lays the buffers out from base (null base: only computes the size into *bytes).
inline BwdWorkspace bwd_workspace_layout(const core::AttnParams& p, void* base, size_t* bytes) {
  BwdWorkspace w;
  const size_t rows = size_t(p.total_q);
  const size_t dq_bytes = bwd_align(rows * p.heads_q * p.head_dim * sizeof(float));
  const size_t dsum_bytes = bwd_align(rows * p.heads_q * sizeof(float));
  w.sem_blocks_per_head = (p.seqlen_q + kBwdSemBlockM - 1) / kBwdSemBlockM;
  w.n_sem = p.deterministic ? int64_t(p.batch) * p.heads_q * w.sem_blocks_per_head : 0;
  const size_t sem_bytes = bwd_align(size_t(w.n_sem) * sizeof(int));
  if (bytes) *bytes = dq_bytes + dsum_bytes + sem_bytes;
  if (base) {
    char* c = static_cast<char*>(base);
    w.dq_accum = reinterpret_cast<float*>(c);
    w.dsum = reinterpret_cast<float*>(c + dq_bytes);
    w.dq_sem = w.n_sem ? reinterpret_cast<int*>(c + dq_bytes + dsum_bytes) : nullptr;
  }
  return w;
}

}  // namespace fa::cuda::sm80
