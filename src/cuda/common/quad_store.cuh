// Wide global stores of a wgmma accumulator's rows (sm90 forward O, backward dK/dV epilogues).
//
// In the wgmma accumulator layout the 4 lanes of a quad (lane % 4 = q) hold one row: for every
// 8-column group g, lane q holds columns 8g + 2q, 8g + 2q + 1, one 32-bit word once converted to
// 16-bit. Stored as they are, a warp instruction writes 8 rows x 16 bytes (half of each 32-byte
// sector), four times as many instructions as 16-byte stores need; on the H200 those stores (and
// the conversions waiting for their source registers) were ~21% of the d256 N512 forward's stall
// samples and ~7% of the d128 N2k backward's. Here each set of 2^kRounds consecutive groups is
// transposed inside the quad (kRounds xor-shuffle rounds, selects only: a runtime index into a
// register array would put it in local memory), after which lane q holds 2^kRounds words that are
// contiguous in the row and stores them with one 8-byte (kRounds 1) or 16-byte (kRounds 2) store.
//
// The transpose is written against two lane-wise operations, quad_select and quad_shfl_xor, found
// by argument-dependent lookup, so the host check (scripts/check_sm90_fwd_layout.cu) runs this very
// code on a lane-vector type that holds the whole quad.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"
#include "core/params.hpp"

// nvcc unrolls (the register arrays must stay in registers); host compilers (tests) need not.
#ifdef __CUDACC__
#define FA_QUAD_UNROLL _Pragma("unroll")
#else
#define FA_QUAD_UNROLL
#endif

namespace fa::cuda {

#ifdef __CUDACC__
__device__ __forceinline__ uint32_t quad_select(bool p, uint32_t a, uint32_t b) {
  return p ? a : b;
}
// Every lane of the warp must execute it (full mask): callers transpose outside row predicates.
__device__ __forceinline__ uint32_t quad_shfl_xor(uint32_t x, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, x, lane_mask);
}
#endif

// Column (in 16-bit elements) of lane q's wide store within each set of 2^kRounds groups.
// kRounds 2: group q of the set, all of it (8 columns, 16 bytes); kRounds 1: the lane pair
// q & 1 = 0/1 splits a set of 2 groups as group q & 1, and q >> 1 picks its first or second half.
FA_HD constexpr int quad_store_column(int q, int kRounds) {
  return 8 * (q % (1 << kRounds)) + 2 * (1 << kRounds) * (q >> kRounds);
}

// In-place transpose of every set of W = 2^kRounds consecutive words of w (N a multiple of W).
// On entry lane q holds in w[W s + t] its word of group W s + t. On exit w[W s + i] holds the word
// that lane (q with its low kRounds bits replaced by i) had for group W s + (q % W), i.e. columns
// quad_store_column(q) + 2 i, +1 of the set: the W words are the set's contiguous columns
// in order. lane_bit[b] is bit b of q.
// Round b exchanges with lane q ^ 2^b, in each pair of words (t, t | 2^b) with bit b of t clear,
// the word whose index bit b differs from bit b of q; the word received takes the sent one's slot.
// After all rounds a word's lane bits and index bits have swapped: a transpose. Per pair: one
// shuffle and three selects.
template <int kRounds, int N, class W, class P>
FA_HD void quad_transpose(W (&w)[N], P const (&lane_bit)[kRounds]) {
  constexpr int kW = 1 << kRounds;
  static_assert(kRounds >= 1 && kRounds <= 2, "8- or 16-byte stores");
  static_assert(N % kW == 0, "whole sets of groups only");
  FA_QUAD_UNROLL
  for (int b = 0; b < kRounds; ++b) {
    FA_QUAD_UNROLL
    for (int t0 = 0; t0 < N; ++t0) {
      if ((t0 & (1 << b)) != 0) continue;
      const int t1 = t0 | (1 << b);
      const W sent = quad_select(lane_bit[b], w[t0], w[t1]);
      const W got = quad_shfl_xor(sent, 1 << b);
      w[t0] = quad_select(lane_bit[b], got, w[t0]);
      w[t1] = quad_select(lane_bit[b], w[t1], got);
    }
  }
}

// Host side: whether every row start of a tensor (base `ptr`, strides `s` in elements of `elem`
// bytes) is aligned to a wide store of `bytes`; the launchers fall back to 4-byte stores otherwise.
inline bool wide_store_ok(const void* ptr, const core::Strides& s, size_t elem, int bytes) {
  auto a = [&](int64_t n) { return n * int64_t(elem) % bytes == 0; };
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0 && a(s.row) && a(s.head) && a(s.batch);
}

#ifdef __CUDACC__
// Stores the transposed words of one row: `lane_row` is the row start plus quad_store_column(q)
// elements of 16 bits, aligned to 4 << kRounds bytes (the caller checked the base and strides).
template <int kRounds, int N>
__device__ __forceinline__ void quad_store_row(void* lane_row, uint32_t const (&w)[N]) {
  constexpr int kW = 1 << kRounds;
#pragma unroll
  for (int s = 0; s < N / kW; ++s) {
    // One set = kW groups of 8 elements of 16 bits = 16 kW bytes.
    char* dst = static_cast<char*>(lane_row) + 16 * kW * s;
    if constexpr (kRounds == 2)
      *reinterpret_cast<uint4*>(dst) =
          make_uint4(w[4 * s], w[4 * s + 1], w[4 * s + 2], w[4 * s + 3]);
    else
      *reinterpret_cast<uint2*>(dst) = make_uint2(w[2 * s], w[2 * s + 1]);
  }
}
#endif

}  // namespace fa::cuda
