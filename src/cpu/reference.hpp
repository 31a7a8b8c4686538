// The float64 reference: naive attention (O(Nq*Nk) memory per head), forward and backward, with
// the same semantics as every backend (core::Mask bottom-right windows, softcap, GQA, varlen,
// fully masked rows -> output 0 / LSE -inf / zero gradients). Used only by tests and `fa check`.
//
// Result layout (dense, double, independent of the input strides):
//   o, dq       [total_q rows][heads_q][head_dim]    index (row * heads_q + h) * head_dim + c
//   dk, dv      [total_k rows][heads_kv][head_dim]   index (row * heads_kv + h) * head_dim + c
//   lse         batch form [batch][heads_q][seqlen_q] index (b * heads_q + h) * seqlen_q + i
//               varlen form [heads_q][total_q]         index h * total_q + row
// where row = b * seqlen_q + i (batch form) or the global row cu_seqlens_q[b] + i (varlen); the
// same for keys. Rows no sequence covers (and keys beyond seqused_k) are 0.
#pragma once

#include <vector>

#include "core/params.hpp"

namespace fa::ref {

// Inputs converted to double in the dense layout above (q, dout like o; k, v like dk).
struct Inputs {
  std::vector<double> q, k, v, dout;
};

// Reads p.q/k/v (and p.dout when non-null) from host memory in p.dtype through p's strides.
Inputs load(const core::AttnParams& p);

// Shapes, masks and options come from p; the data from in.
void forward(const core::AttnParams& p, const Inputs& in, std::vector<double>& o,
             std::vector<double>& lse);
void backward(const core::AttnParams& p, const Inputs& in, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv);

// The float32 peers: the same formulas evaluated in float32, sums in order, and in the backward
// D = dO . O with O stored in p.dtype (as FlashAttention computes it). Their error is what a
// straightforward float32 implementation misses by on these inputs; tests allow twice it where
// conditioning, not our code, sets the error (heavy-tailed scores, long GQA sums, fp16 O in D).
void forward_float32(const core::AttnParams& p, const Inputs& in, std::vector<double>& o,
                     std::vector<double>& lse);
void backward_float32(const core::AttnParams& p, const Inputs& in, std::vector<double>& dq,
                      std::vector<double>& dk, std::vector<double>& dv);

// Convenience: load(p) and run.
void forward(const core::AttnParams& p, std::vector<double>& o, std::vector<double>& lse);
void backward(const core::AttnParams& p, std::vector<double>& dq, std::vector<double>& dk,
              std::vector<double>& dv);

// KV-cache attention (p.kvcache, host memory) as flash_attn_with_kvcache defines it: p describes
// the call's inputs, i.e. the cache BEFORE k_new/v_new are appended; the keys of sequence b are
// cache rows 0 .. cache_seqlens[b] - 1 followed by its k_new rows (all capacity rows without
// cache_seqlens). Gathers them (with its own paged/contiguous addressing, not core::cache_offset)
// into a varlen problem and runs forward(). o in the batch layout above ([B * Nq][Hq][D]), lse
// [B][Hq][Nq]. Index values must be valid (validation's host checks).
void kvcache_forward(const core::AttnParams& p, std::vector<double>& o, std::vector<double>& lse);

// Dense indices of the layout above.
int64_t q_row(const core::AttnParams& p, int b, int64_t i);  // row of query i of sequence b
int64_t k_row(const core::AttnParams& p, int b, int64_t j);
int64_t lse_index(const core::AttnParams& p, int b, int h, int64_t i);

}  // namespace fa::ref
