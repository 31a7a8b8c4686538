// Scratch memory of the FA2 backward, carved from the one workspace buffer the dispatcher hands
// over. Shared by the workspace-size function (bwd_workspace.cu) and the launcher so the two can
// never disagree.
//
//   dq_accum  fp32 [Hq, dq_rows, D]        dQ summed over key blocks (zeroed by the pre-pass, or
//                                          not: BwdWorkspace::store_first); element order
//                                          within a head: dq_acc_offset
//   dsum      fp32 [Hq, total_q rows]      D = rowsum(dO ∘ O)
//   dq_sem    int  [B, Hq, query blocks]   per query block of the main kernel: in deterministic
//                                          mode the key blocks already added, else the
//                                          first-adder claim (0 none, 1 storing, 2 stored)
//
// "rows" are the workspace's dense row index: b * Nq + i in the batch form, cu_seqlens_q[b] + i in
// the varlen form, so one index serves both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/params.hpp"

namespace fa::cuda::sm80 {

#ifndef FA_SM80_BWD_DQ_PERM
// 1: a head's dQ accumulator is stored in 8-row bands, each band as D/8 blocks of 8 x 8 floats, a
// block row after row (dq_acc_offset). One red.global.add.v2 of the main kernel covers an m16n8
// accumulator half: 8 rows x 8 columns, one 32-byte sector per row. Row-major, those are 8
// sectors in 8 different 128-byte lines, and the L2 takes each as a request of its own; in bands
// they are 256 contiguous bytes, 2 requests of 4 sectors. ncu (H200, bf16 N4k, session 13):
// ours 201 M L2 reduction requests for 201 M sectors at d64 / d128, PyTorch's FA2 (scalar reds
// of a permuted accumulator) 50 M for the same sectors, and ours stalled on lg_throttle (0.25-1.1
// cycles per issued instruction against ~0). 0: row-major [rows, D], as before. The sm_80 cubin
// (A100: scalar reds, its own d 128 tile) keeps 0: there the banded addresses spilled 564 B at
// d 128. The pre-pass, the main kernel and the conversion of one cubin agree either way; the host
// pass (workspace size) sees 1, whose padding rows the sm_80 kernels simply do not use.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FA_SM80_BWD_DQ_PERM 0
#else
#define FA_SM80_BWD_DQ_PERM 1
#endif
#endif

// Offset of (row, col) in one head's dQ accumulator (row: the dense workspace row, below).
template <int kHeadDim>
inline __host__ __device__ int64_t dq_acc_offset(int64_t row, int col) {
#if FA_SM80_BWD_DQ_PERM
  return (row >> 3) * (8 * kHeadDim) + (row & 7) * 8 + (col >> 3) * 64 + (col & 7);
#else
  return row * kHeadDim + col;
#endif
}

// The semaphore array is sized for query blocks of this many rows, the smallest kBlockM of the
// tile table; a kernel with larger blocks indexes it by its own block index (uses a prefix).
constexpr int kBwdSemBlockM = 32;

struct BwdWorkspace {
  float* dq_accum = nullptr;
  float* dsum = nullptr;
  int* dq_sem = nullptr;
  int64_t n_sem = 0;
  int64_t sem_blocks_per_head = 0;  // query blocks per (batch, head)
  int64_t dq_rows = 0;              // rows per head of dq_accum: total_q (a multiple of 8 with DQ_PERM)
  // Kernel switches set by the launcher (not part of the buffer layout):
  // rotate_m: where each key block starts its walk over query blocks (FA_SM80_BWD_ROTATE_M:
  // 0 the first, 1 key block mod query blocks, 2 spread over the query blocks).
  int rotate_m = 0;
  // store_first (FA_SM80_BWD_DQ_STORE): the pre-pass leaves dq_accum as it is; each query block's
  // first adder stores its dS K instead of adding it, and the conversion writes 0 for blocks no
  // key block reached (dq_sem still 0). sem_block_m: the main kernel's query rows per block, the
  // unit of dq_sem.
  int store_first = 0;
  int sem_block_m = 0;
};

// Address of (head h, row, col) in dq_accum: the head stride and element order every kernel of a
// cubin uses (the pre-pass's zeroing, the main kernel's reductions, the conversion).
template <int kHeadDim>
inline __host__ __device__ float* dq_acc_at(const BwdWorkspace& ws, int h, int64_t row, int col) {
  return ws.dq_accum + int64_t(h) * ws.dq_rows * kHeadDim + dq_acc_offset<kHeadDim>(row, col);
}

// The dq_sem entry of (batch b, query head h, query block m_block of the main kernel's kBlockM
// rows): the deterministic turn counter or the first-adder claim, for the main kernel and the
// conversion alike.
inline __host__ __device__ int* dq_sem_at(const BwdWorkspace& ws, int heads_q, int64_t b, int h, int64_t m_block) {
  return ws.dq_sem + (b * heads_q + h) * ws.sem_blocks_per_head + m_block;
}

inline size_t bwd_align(size_t x) { return (x + 255) & ~size_t(255); }

// Lays the buffers out from base (null base: only computes the size into *bytes).
inline BwdWorkspace bwd_workspace_layout(const core::AttnParams& p, void* base, size_t* bytes) {
  BwdWorkspace w;
  const size_t rows = size_t(p.total_q);
  // Whole 8-row bands per head, so that a head's last band does not reach into the next head.
  w.dq_rows = FA_SM80_BWD_DQ_PERM ? (p.total_q + 7) / 8 * 8 : p.total_q;
  const size_t dq_bytes = bwd_align(size_t(w.dq_rows) * p.heads_q * p.head_dim * sizeof(float));
  const size_t dsum_bytes = bwd_align(rows * p.heads_q * sizeof(float));
  w.sem_blocks_per_head = (p.seqlen_q + kBwdSemBlockM - 1) / kBwdSemBlockM;
  // Always laid out (4 bytes per 32 query rows and head), so the size does not depend on a
  // run-time switch: the deterministic turns or the first-adder claims use it.
  w.n_sem = int64_t(p.batch) * p.heads_q * w.sem_blocks_per_head;
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
