// FA3 backward, the two memory-bound passes around the main kernel (flash_bwd_kernel.cuh).
//
// bwd_preprocess: one CTA per (query block of kRowPad rows, query head, sequence). Computes
//   D = rowsum(dO * O) in fp32, copies LSE as LSE*log2(e) (a row with LSE = -inf, i.e. no visible
//   key, becomes +inf so the main kernel's exp2(s - lse) gives P = 0 instead of NaN), zeroes the
//   fp32 dQ accumulator rows and the deterministic-mode turn counter. Padding rows of the block
//   get D = 0, LSE = +inf.
// bwd_convert_dq: dQ = dq_acc * softmax_scale in the output dtype, written with dQ's strides.
//   dq_acc holds each query block in the main kernel's fragment order (not row-major).
// Both are plain loads/stores: the rows are short (head_dim <= 256) and strided per head.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

#include "core/params.hpp"
#include "core/softmax.hpp"
#include "cuda/sm90/bwd_workspace.hpp"
#include "cuda/sm90/flash_bwd_kernel.cuh"  // BwdConfig: the dQ fragment order

namespace fa::cuda::sm90_bwd {

constexpr int kPrepostThreads = 256;  // 8 warps, one row per warp at a time

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(kPrepostThreads)
bwd_preprocess(const core::AttnParams p, const BwdWorkspace ws) {
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const core::SeqInfo seq = core::seq_info(p, b);
  const int64_t row0 = int64_t(m_block) * kRowPad;
  if (row0 >= round_up(seq.q_len, kRowPad)) return;  // varlen: shorter than the grid's max
  const int64_t prow0 = int64_t(h) * ws.rows_pad + padded_row_start(p, b, seq.q_start) + row0;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const Element* o_base = static_cast<const Element*>(p.o);
  const Element* do_base = static_cast<const Element*>(p.dout);
  for (int r = warp; r < kRowPad; r += kPrepostThreads / 32) {
    const int64_t i = row0 + r;
    const bool valid = i < seq.q_len;
    float dot = 0.f;
    if (valid) {
      const Element* o = o_base + p.o_str.offset(b, seq.q_start + i, h);
      const Element* dout = do_base + p.do_str.offset(b, seq.q_start + i, h);
      for (int c = lane; c < kHeadDim; c += 32) dot += float(o[c]) * float(dout[c]);
    }
#pragma unroll
    for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
    if (lane == 0) {
      float lse_log2 = INFINITY;
      if (valid) {
        const float lse = p.lse[p.lse_offset(b, h, seq.q_start + i)];
        lse_log2 = lse == -INFINITY ? INFINITY : lse * core::kLog2e;
      }
      ws.lse_log2[prow0 + r] = lse_log2;
      ws.dpsum[prow0 + r] = dot;
    }
    float* acc = ws.dq_acc + (prow0 + r) * kHeadDim;
    for (int c = lane; c < kHeadDim; c += 32) acc[c] = 0.f;
  }
  if (threadIdx.x == 0) ws.dq_turn[prow0 / kRowPad] = 0;
}

// One thread per consumer thread of the main kernel: it reads that thread's dQ values of the
// block (fragment order, Cfg::dq_frag_offset; float4 loads, coalesced across threads) and finds
// their (row, column) through the same MMA partition the main kernel used.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kConsumerThreads)
bwd_convert_dq(const core::AttnParams p, const BwdWorkspace ws) {
  using Element = typename Cfg::T;
  constexpr int kHeadDim = Cfg::kHeadDim;
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const core::SeqInfo seq = core::seq_info(p, b);
  const int64_t row0 = int64_t(m_block) * kRowPad;
  if (row0 >= seq.q_len) return;
  const int64_t prow0 = int64_t(h) * ws.rows_pad + padded_row_start(p, b, seq.q_start) + row0;
  const int tid = threadIdx.x;
  typename Cfg::MmadQ mma_dq;
  Tensor cdQ = mma_dq.get_thread_slice(tid).partition_C(
      make_identity_tensor(Shape<Int<Cfg::kBlockM>, Int<kHeadDim>>{}));
  static_assert(decltype(size(cdQ))::value == Cfg::kDqFragValues);
  const float* acc = ws.dq_acc + prow0 * kHeadDim + Cfg::dq_frag_offset(tid, 0);
  Element* dq = static_cast<Element*>(p.dq);
  const int rows_left = int(min(seq.q_len - row0, int64_t(Cfg::kBlockM)));
  CUTE_UNROLL
  for (int i = 0; i < Cfg::kDqFragValues; i += 4) {
    const float4 v = *reinterpret_cast<const float4*>(acc + i * 128);
    const float e[4] = {v.x, v.y, v.z, v.w};
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int r = get<0>(cdQ(i + k)), c = get<1>(cdQ(i + k));
      if (r < rows_left) dq[p.dq_str.offset(b, seq.q_start + row0 + r, h) + c] = Element(e[k] * p.scale);
    }
  }
}

}  // namespace fa::cuda::sm90_bwd
