// Score masking of the Hopper forward (flash_fwd_kernel.cuh): the key range [lo, hi) each query row
// may see (core::Mask: causal bottom-right aligned, sliding window, the key-length tail) applied to
// one key block of scores as the consumer warpgroup holds them (a wgmma accumulator in its
// row/column view), before the online softmax. Fully masked scores become -inf, so they add 0 to
// the row sum. Only blocks that cross a bound are masked; the key-block range (TileWork) skips the
// rest.
#pragma once

#include <cute/tensor.hpp>

#include <cmath>
#include <cstdint>

#include "core/mask.hpp"
#include "cuda/common/head_dim_mask.hpp"

// Score masking without a left bound (FwdScoreMask::apply), per head dim (head_dim_bit mask: d64 2,
// d96 4, d128 8, d192 16, d256 32; 0 = none): a uniform branch to a loop that tests the right bound
// only (one compare + one select per score) instead of both bounds (two compares + a select). Same
// result; the loop is compiled twice. Default 10 (d64, d128).
// H200, session 6 round 2 (bf16, causal, TFLOP/s at N 512/1k/8k, that round's default build,
// mask split off → the FA_SM90_FWD_SHORT_N=1 build, which has this switch at every head dim):
// d128 306 429 635 → 316 440 650 (the one switch that differs at masked d128); d256 264 402 686
// → 259 400 680 (ditto at d256, not in the default); d64 195 280 434 → 195 287 454, measured
// together with FA_SM90_FWD_EPI_OVERLAP_MASKED=2 (not separated). Same-code spread between calls up
// to ~5%. Bit 1 (d32, no sm90 forward instance) is rejected so a leftover
// -DFA_SM90_FWD_MASK_SPLIT=1 of the earlier on/off form fails to compile instead of doing nothing.
#ifndef FA_SM90_FWD_MASK_SPLIT
#define FA_SM90_FWD_MASK_SPLIT 10
#endif
static_assert((FA_SM90_FWD_MASK_SPLIT & 1) == 0,
              "FA_SM90_FWD_MASK_SPLIT is a head-dim mask (d64 2, d96 4, d128 8, d192 16, d256 32)");

// Score masking by bit masks (FwdScoreMask::apply_bits), per head dim (head_dim_bit mask: d64 2,
// d96 4, d128 8, d192 16, d256 32; 0 = none): each row's allowed columns become the set bits of a
// 32-bit mask, tested bit by bit, which ptxas compiles to R2P (seven predicates per instruction)
// instead of one compare per score; both bounds cost the same. Where on, FA_SM90_FWD_MASK_SPLIT
// does not apply. Default 0 (off): it lost on the H200 (session 28, bf16 causal, TFLOP/s at N
// 512/1k/2k, two alternations each, compare form → bit masks): d64 218, 217 / 289, 293 / 346, 346
// → 209, 209 / 284, 288 / 339, 346; d128 and d256 within the ±3% spread. The d64 masked kernel's
// SASS has 424 fewer instructions (4856 → 4432, static count; ISETP 561 → 200, 16 R2P), yet it
// runs slower. A reading, not profiled: each R2P writes the whole predicate file, so the selects
// wait on it, where the compares were independent. With it on, the fp8 d256 masked kernels spill
// 12 bytes.
#ifndef FA_SM90_FWD_MASK_R2P
#define FA_SM90_FWD_MASK_R2P 0
#endif
static_assert((FA_SM90_FWD_MASK_R2P & 1) == 0,
              "FA_SM90_FWD_MASK_R2P is a head-dim mask (d64 2, d96 4, d128 8, d192 16, d256 32)");

// Which key blocks need the score mask, per head dim (head_dim_bit mask: d64 2, d96 4, d128 8,
// d192 16, d256 32; 0 = none): the tile's unmasked block indices [lo, hi] taken once per tile
// (core::Mask::unmasked_blocks, in tile_work, so the handed-off record carries them) and two int
// compares per block, instead of core::Mask::block_unmasked's three 64-bit conditions on the
// block's bounds. Why: the d64 masked kernel's key-block loop spends ~25 uniform-datapath
// instructions per block on that test (session 44's SASS reading); d64 causal is the head dim
// where a block is shortest. Same blocks masked (tests/core/test_mask.cpp checks the two agree).
// Costs two ints in the tile record. Prediction: 0-2% at d64 causal N <= 2k, nothing elsewhere.
// H100, session 46 (docs/perf/ab_session46.md), bf16 d64 N 512-2k, two alternations: +1.8%
// geomean, none lower, causal N2k +5.0%. H100, session 47 (docs/perf/ab_session47.md,
// scripts/gpu/mask_range_ab.sh), N 512-8k, two alternations: d64 +1.2% non-causal / +2.6% causal,
// every d64 shape higher; d128 +0.7 / +0.9%, d256 +0.9 / +0.3%, per shape -1.9..+3.5%, inside the
// run's own off-vs-off spread. Default 2 (d64), where it is above that spread in both sessions.
#ifndef FA_SM90_FWD_MASK_RANGE
#define FA_SM90_FWD_MASK_RANGE 2
#endif
static_assert((FA_SM90_FWD_MASK_RANGE & 1) == 0,
              "FA_SM90_FWD_MASK_RANGE is a head-dim mask (d64 2, d96 4, d128 8, d192 16, d256 32)");

namespace fa::cuda::sm90 {

template <int kHeadDim, bool kMasked, int kBlockN>
struct FwdScoreMask {
  // Masks one block of scores (rowcol view) in place: keys outside [lo, hi) of each row → -inf.
  // Tile row r is query position m0 + (r >> pack_shift) (packed GQA: G rows per position).
  template <class TensorS, class TensorC>
  __device__ static void apply(TensorS& s, TensorC const& coord, core::Mask const& mask, int m0,
                               int n0, int pack_shift) {
    using namespace cute;
    if constexpr ((FA_SM90_FWD_MASK_R2P & head_dim_bit(kHeadDim)) != 0) {
      apply_bits(s, coord, mask, m0, n0, pack_shift);
      return;
    }
    // No left bound (causal, right-only windows, the key-length tail of any instance): lo = 0,
    // so lo32 = -n0 <= 0 <= col and the lower test never fires. Dropping it (a uniform branch,
    // FA_SM90_FWD_MASK_SPLIT) leaves one compare and one select per score instead of two
    // compares and a select.
    constexpr bool kMaskSplit = (FA_SM90_FWD_MASK_SPLIT & head_dim_bit(kHeadDim)) != 0;
    if (kMaskSplit && (!kMasked || mask.left < 0)) {
#pragma unroll
      for (int r = 0; r < size<0>(s); ++r) {
        const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
        int64_t hi = mask.k_len;
        if (kMasked && mask.right >= 0) hi = cute::min(hi, mask.diag(row) + mask.right + 1);
        // Against the column's constant offset from the thread's first column: a compare with
        // an immediate, no per-column address arithmetic.
        const int col0 = get<1>(coord(0, 0));
        int lim = int(cute::max(hi, int64_t(0))) - n0 - col0;
        asm volatile("" : "+r"(lim));  // else the compiler folds col0 back into every compare
#pragma unroll
        for (int c = 0; c < size<1>(s); ++c)
          if (get<1>(coord(0, c)) - col0 >= lim) s(r, c) = -INFINITY;
      }
      return;
    }
    // Unmasked instances with the split always took the branch above: compiled out, so the
    // front end does not flag this loop as unreachable (#128-D).
    if constexpr (!kMaskSplit || kMasked) {
#pragma unroll
      for (int r = 0; r < size<0>(s); ++r) {
        const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
        const int64_t diag = mask.diag(row);
        int64_t hi = mask.k_len, lo = 0;
        if (kMasked && mask.right >= 0) hi = cute::min(hi, diag + mask.right + 1);
        if (kMasked && mask.left >= 0) lo = cute::max(lo, diag - mask.left);
        // Clamp into [0, k_len] so the per-element test is 32-bit.
        const int hi32 = int(cute::max(hi, int64_t(0))) - n0;
        const int lo32 = int(cute::min(lo, mask.k_len)) - n0;
#pragma unroll
        for (int c = 0; c < size<1>(s); ++c) {
          const int col = get<1>(coord(0, c));
          if (col >= hi32 || col < lo32) s(r, c) = -INFINITY;
        }
      }
    }
  }

  // apply() with the per-score test taken from bit masks (FA_SM90_FWD_MASK_R2P). A thread's
  // columns of a row are col0 + 8 (c / 2) + c % 2 for its c-th value (the wgmma accumulator's
  // column pairs; scripts/check_sm90_fwd_layout.cu checks it against CuTe), so "column offset
  // below x" is "c below cut(x)", and a row's allowed values [cut(lo), cut(hi)) are the set bits
  // of a mask. Testing consecutive bits of one register lets ptxas use R2P, which sets seven
  // predicates per instruction; the compare form spends one ISETP per score. The left bound costs
  // one more mask per 24 columns instead of a compare per score.
  template <class TensorS, class TensorC>
  __device__ static void apply_bits(TensorS& s, TensorC const& coord, core::Mask const& mask,
                                    int m0, int n0, int pack_shift) {
    using namespace cute;
    constexpr int kCols = decltype(size<1>(s))::value;
    static_assert(kCols * 4 == kBlockN, "two values per 8 columns in each of a row's quads");
    // Values below column offset x (clamped into the block): 2 per whole 8 columns, plus the
    // pair's first, or both, within the last 8.
    auto cut = [](int x) {
      x = x < 0 ? 0 : (x > kCols * 4 ? kCols * 4 : x);
      return ((x >> 3) << 1) + ((x & 7) < 2 ? (x & 7) : 2);
    };
    const int col0 = get<1>(coord(0, 0));
#pragma unroll
    for (int r = 0; r < size<0>(s); ++r) {
      const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
      int64_t hi = mask.k_len, lo = 0;
      if (kMasked && mask.right >= 0) hi = cute::min(hi, mask.diag(row) + mask.right + 1);
      if (kMasked && mask.left >= 0) lo = cute::max(lo, mask.diag(row) - mask.left);
      // Offsets from the thread's first column, clamped into [0, kBlockN] by cut().
      const int hi_c =
          cut(int(cute::min(cute::max(hi - n0, int64_t(-8)), int64_t(kBlockN))) - col0);
      const int lo_c =
          cut(int(cute::min(cute::max(lo - n0, int64_t(-8)), int64_t(kBlockN))) - col0);
      // 24-value chunks: shifts stay below 32 (a shift by 32 is undefined), as in FA4's mask_r2p.
#pragma unroll
      for (int k = 0; k * 24 < kCols; ++k) {
        const uint32_t below_hi = (1u << cute::min(cute::max(hi_c - 24 * k, 0), 24)) - 1u;
        const uint32_t below_lo = (1u << cute::min(cute::max(lo_c - 24 * k, 0), 24)) - 1u;
        const uint32_t keep = below_hi & ~below_lo;
#pragma unroll
        for (int i = 0; i < 24 && k * 24 + i < kCols; ++i)
          if (!(keep & (1u << i))) s(r, k * 24 + i) = -INFINITY;
      }
    }
  }
};

}  // namespace fa::cuda::sm90
