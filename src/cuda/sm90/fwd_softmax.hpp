// Online softmax on Hopper wgmma accumulator fragments (the FA2/FA3 recurrence of
// core/softmax.hpp's RowState, applied to the rows one thread holds).
//
// A m64nNk16 accumulator gives each thread 2 rows (r and r + 8 of its warp's 16) and N/4 columns
// of each; the 4 threads of a quad (lanes 4k..4k+3) share a row, so row reductions are two
// xor-shuffles. Scores stay in "raw" units (after the softcap transform, before the softmax
// scale); exp2(s * scale_log2 - max * scale_log2) is one FFMA + one MUFU.EX2 per element (or
// exp2_poly on the FMA pipe for FA_SM90_FWD_POLY_EXP2's columns).
// (The FP8 forward keeps its max in log2-scaled units instead: kLog2Max below.)
// row_sum is kept per thread and reduced over the quad once, at the end (FA2's deferred sum).
#pragma once

#include <cute/tensor.hpp>

#include <cmath>

#include "core/exp2_poly.hpp"
#include "cuda/common/head_dim_mask.hpp"

// Exact O-rescale skip (1 = on): a row whose running max did not change gets the factor exactly 1
// (no exp2; with FFMA contraction exp2(m·c − round(m·c)) is 1 ± a few ulp instead), and the
// consumer skips the O *= factor multiplies (kHeadDim / 2 FMULs per thread per key block) when
// every row of the warp has factor 1 (a warp vote, so the branch is uniform). Past the first
// key blocks a row's max rarely changes, so at long N most blocks skip. 0 = always rescale.
// Default 0: H200, session 5 round 1, it cost 0-5% at every non-causal d64/d128/d256 shape
// measured (the compare and vote sit on the softmax → P·V path; the FMULs it saves are cheap).
// Again at d128 on session 48's kernel (one H100, two alternations, N 2k-16k): -2.6% geomean,
// lower at every shape, causal N16k -8% (docs/perf/ab_session48.md).
#ifndef FA_SM90_FWD_RESCALE_SKIP
#define FA_SM90_FWD_RESCALE_SKIP 0
#endif

// Row reductions as short independent chains: the row max over a thread's kBlockN/4 columns as 4
// interleaved partial maxima per row (both rows of the thread in the same loop), then a 2-level
// tree, and the row sum as 4 partial sums; otherwise one serial chain per row. SASS of the serial
// form (d128): 32 dependent FMNMX per row, the rows one after the other, all on the path from the
// scores to the first exp2 (the max must be final before any exponent); the tree form is ~8 deep.
// The max is order-independent (same result); the sum is rounded in another order.
// A mask of the head dims it applies to (head_dim_bit: d64 2, d96 4, d128 8, d192 16, d256 32;
// 0 = none, 62 = all). H200, session 5 round 1, non-causal N 512..8k, TFLOP/s without → with:
// d256 733 → 758 at N8k, 709 → 713 at N4k, ±1% at N <= 2k; d128 675 → 611 at N8k and 641 → 651
// at N4k, -1..0% at N <= 2k; d64 (128-row tiles) -3..-6% everywhere (d128 N8k's 611 may be the
// ~12% slower mode that shape showed in some processes, LOG.md round 2). Default: d256 only. Causal
// d256, where the tree was the only change in round 2: within 1% at N 512-4k, N8k 690 -> 671
// (masked instances too); d192 not measured.
// d128 again on session 48's kernel (one H100, two alternations, N 2k-16k): -1.6..-3.0% at every
// non-causal shape, even at causal (docs/perf/ab_session48.md): still d256 only.
#ifndef FA_SM90_FWD_TREE_REDUCE
#define FA_SM90_FWD_TREE_REDUCE 32
#endif

// Software exp2 for part of the scores (FlashAttention-4's trick; core/exp2_poly.hpp): of every 8
// consecutive columns a thread holds in a row, the first FA_SM90_FWD_POLY_EXP2 take exp2_poly
// (FADD, FFMA and an integer shift-add) instead of MUFU.EX2, so the MUFU pipe (16/clk/SM: one warp
// instruction holds it 8 clocks) and the FMA pipe share the exponentials. Why: fp8 d64 reached 460
// TFLOP/s against bf16's 521 (H200, session 9): its GEMMs take half the bf16 time but every score
// still needs one MUFU.EX2. SASS of fp8 d64's key-block loop, per consumer thread: off, 564
// instructions with 66 MUFU.EX2 (64 scores, 2 factors), i.e. ~528 MUFU clocks against 564 issue
// slots per warp; each polynomial score adds ~9 issue slots (3 FADD, 5 FFMA, FMNMX, LEA) and frees
// 8 MUFU clocks: 1/2/3/4 of 8 → 639/710/782/854 instructions, 58/50/42/34 MUFU.EX2. Whether that
// pays depends on how the softmax phases overlap with each other and the GEMMs: to be measured.
// The O-rescale factors and softcap_tanh stay on MUFU.
// FA_SM90_FWD_POLY_EXP2: 0..8 columns of 8 for the fp8 forward (update_scaled) and, unless
// FA_SM90_FWD_POLY_EXP2_16 says otherwise, the 16-bit ones (update/update_tree);
// FA_SM90_FWD_POLY_EXP2_HDIMS: the head dims it applies to (head_dim_bit mask, 62 = all);
// FA_SM90_FWD_POLY_EXP2_DEGREE: 3..6 (max relative error 8.6e-5, 3.0e-6, 1.6e-7, 8.2e-8; 3 breaks
// the LSE's 1e-5 slack, 4 uses a third of it). Default 0 (off): not yet measured on the GPU.
#ifndef FA_SM90_FWD_POLY_EXP2
#define FA_SM90_FWD_POLY_EXP2 0
#endif
#ifndef FA_SM90_FWD_POLY_EXP2_16
#define FA_SM90_FWD_POLY_EXP2_16 FA_SM90_FWD_POLY_EXP2
#endif
#ifndef FA_SM90_FWD_POLY_EXP2_HDIMS
#define FA_SM90_FWD_POLY_EXP2_HDIMS 62
#endif
#ifndef FA_SM90_FWD_POLY_EXP2_DEGREE
#define FA_SM90_FWD_POLY_EXP2_DEGREE 5
#endif
static_assert(FA_SM90_FWD_POLY_EXP2 >= 0 && FA_SM90_FWD_POLY_EXP2 <= 8 &&
                  FA_SM90_FWD_POLY_EXP2_16 >= 0 && FA_SM90_FWD_POLY_EXP2_16 <= 8,
              "FA_SM90_FWD_POLY_EXP2(_16): how many of every 8 columns, 0..8");
static_assert((FA_SM90_FWD_POLY_EXP2_HDIMS & 1) == 0,
              "FA_SM90_FWD_POLY_EXP2_HDIMS: head_dim_bit mask (d64 2, d128 8, d256 32, ...)");

namespace fa::cuda::sm90 {

// FA_SM90_FWD_POLY_EXP2 for one forward kernel: columns of 8 whose exponentials are exp2_poly.
constexpr int fwd_poly_exp2_cols(int head_dim, bool fp8) {
  if ((FA_SM90_FWD_POLY_EXP2_HDIMS & fa::cuda::head_dim_bit(head_dim)) == 0) return 0;
  return fp8 ? FA_SM90_FWD_POLY_EXP2 : FA_SM90_FWD_POLY_EXP2_16;
}

// ((2, 2, N/8), MMA_M, MMA_N) accumulator -> (rows = (2, MMA_M), cols = (2, N/8, MMA_N)).
template <class AccLayout>
CUTE_HOST_DEVICE constexpr auto acc_rowcol_layout(AccLayout acc) {
  using namespace cute;
  static_assert(decltype(rank(acc))::value == 3 && decltype(rank<0>(acc))::value == 3);
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)),
                     make_layout(get<0, 0>(acc), get<0, 2>(acc), get<2>(acc)));
}

// The same registers seen as the A operand of a 16-bit RS wgmma (K = the accumulator's N):
// ((2, 2, 2), MMA_M, N/16). Column groups 2j and 2j+1 of 8 are the two k-halves of k-block j.
template <class AccLayout>
CUTE_HOST_DEVICE constexpr auto acc_as_a_operand_layout(AccLayout acc) {
  using namespace cute;
  auto groups = logical_divide(get<0, 2>(acc), Tile<_2>{});  // ((2, N/16))
  return make_layout(make_layout(get<0, 0>(acc), get<0, 1>(acc), get<0, 0>(groups)), get<1>(acc),
                     coalesce(make_layout(get<0, 1>(groups), get<2>(acc))));
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// tanh for softcap. --use_fast_math may lower tanhf to MUFU.TANH (about 2^-11 relative error),
// which, multiplied by a softcap of ~30, is larger than the bf16 rounding the accuracy rule allows.
// 1 - 2 / (e^{2x} + 1) with MUFU.EX2 (2^-22) keeps the absolute error near 1e-7. |x| is clamped at
// 10, where tanh is 1 to fp32 precision, so e^{2x} never overflows.
__device__ __forceinline__ float softcap_tanh(float x) {
  x = fminf(fmaxf(x, -10.f), 10.f);
  const float e = exp2f(x * 2.8853900817779268f);  // e^{2x} = 2^{2x·log2(e)}
  return 1.f - 2.f / (e + 1.f);
}

// kTree: the tree form of the row reductions (FA_SM90_FWD_TREE_REDUCE for the kernel's head dim).
// kLog2Max (the FP8 forward): every key block has its own score scale (q_scale · k_scale(j), block
// quantisation), so raw scores of different blocks are not comparable and row_max is kept in
// log2-scaled units instead (update_scaled). The 16-bit kernels keep raw units (update).
// kPolyCols: of every 8 columns of a row, how many take exp2_poly (fwd_poly_exp2_cols).
template <int kRows, bool kTree = false, bool kLog2Max = false, int kPolyCols = 0>
struct OnlineSoftmax {
  static constexpr int kRowsC = kRows;
  static_assert(kPolyCols >= 0 && kPolyCols <= 8);
  float row_max[kRows];  // raw units (kLog2Max: log2-scaled); -inf until the row has an allowed key
  float row_sum[kRows];  // this thread's partial sum of exp2(...)
  float scale_log2;      // softmax scale × log2(e) (or softcap × log2(e) with softcap)

  __device__ explicit OnlineSoftmax(float scale_log2_) : scale_log2(scale_log2_) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = -INFINITY;
      row_sum[r] = 0.f;
    }
  }

  // P = 2^x of the score in column col: the first kPolyCols of every 8 columns on the FMA pipe,
  // the others on MUFU. (col is a constant after unrolling; with kPolyCols = 0 this is exp2f.)
  __device__ __forceinline__ static float exp2_score(float x, int col) {
    if constexpr (kPolyCols > 0) {
      if (col % 8 < kPolyCols) return fa::core::exp2_poly<FA_SM90_FWD_POLY_EXP2_DEGREE>(x);
    }
    return exp2f(x);
  }

  // Folds a block of scores (rowcol view, masked entries = -inf) into the running state:
  // overwrites the scores with P = exp2(s·c − m·c) and returns, per row, the factor the
  // accumulator O must be multiplied by (0 on the first block, where O is still empty).
  template <class TensorS>
  __device__ void update(TensorS& s, float (&rescale_o)[kRows]) {
    using namespace cute;
    static_assert(decltype(size<0>(s))::value == kRows);
    if constexpr (kTree) {
      update_tree(s, rescale_o);
    } else {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float m = row_max[r];
#pragma unroll
        for (int c = 0; c < size<1>(s); ++c) m = fmaxf(m, s(r, c));
        m = quad_max(m);
        // A row with no allowed key so far keeps m = -inf; use 0 as the offset so exp2 gives 0
        // (not NaN from -inf - -inf).
        const float m_scaled = (m == -INFINITY) ? 0.f : fa::core::log2_ref(m, scale_log2);
        rescale_o[r] = exp2f(fa::core::ref_delta(fa::core::log2_ref(row_max[r], scale_log2), m_scaled));  // old max -inf -> 0
        // Unchanged max: exactly 1. (A row with no allowed key yet has O = 0 and sum 0, which any
        // factor keeps.)
        if constexpr (FA_SM90_FWD_RESCALE_SKIP != 0) rescale_o[r] = m == row_max[r] ? 1.f : rescale_o[r];
        row_max[r] = m;
        float sum = 0.f;
#pragma unroll
        for (int c = 0; c < size<1>(s); ++c) {
          s(r, c) = exp2_score(fa::core::exp2_arg(s(r, c), scale_log2, m_scaled), c);
          sum += s(r, c);
        }
        row_sum[r] = row_sum[r] * rescale_o[r] + sum;
      }
    }
  }

  // kLog2Max: folds a block of raw scores whose true log2-scaled value is s · c (c > 0: the
  // softmax scale × log2(e) × the block's dequantisation scales). Since c > 0, max(s · c) is
  // c · max(s), so the row max is reduced over raw scores and scaled once; masked entries stay
  // -inf. P = exp2(s · c − m), factor = exp2(m_old − m). The reductions take the tree form
  // (independent partial maxima and sums) whatever kTree says.
  // kC > 1 (a key block of kC K-scale blocks, FA_SM90_FWD_FP8_*_BLOCK_N): the thread's columns
  // fall into kC equal groups of consecutive keys, group g scaled by c[g] (a thread's column index
  // grows with the key: col = e + 2j for key 8j + 2t + e), so the row max is max over g of
  // c[g] · max(group g), still one FMNMX per score, and the quad reduction runs on scaled values.
  template <int kC, class TensorS>
  __device__ void update_scaled(TensorS& s, float (&rescale_o)[kRows], const float (&c)[kC]) {
    using namespace cute;
    static_assert(kLog2Max, "raw-unit row_max: use update()");
    static_assert(decltype(size<0>(s))::value == kRows);
    constexpr int kCols = decltype(size<1>(s))::value;
    static_assert(kCols % kC == 0, "whole scale groups per thread");
    constexpr int kGroupCols = kCols / kC;
    constexpr int kP = kGroupCols % 4 == 0 ? 4 : (kGroupCols % 2 == 0 ? 2 : 1);
    float m[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int g = 0; g < kC; ++g) {
        float part[kP];
#pragma unroll
        for (int p = 0; p < kP; ++p) part[p] = -INFINITY;
#pragma unroll
        for (int col = g * kGroupCols; col < (g + 1) * kGroupCols; ++col)
          part[col % kP] = fmaxf(part[col % kP], s(r, col));
        const float mg = tree_max(part);
        if constexpr (kC == 1) m[r] = mg;
        else m[r] = g == 0 ? mg * c[0] : fmaxf(m[r], mg * c[g]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      m[r] = kC == 1 ? fmaxf(row_max[r], quad_max(m[r]) * c[0]) : fmaxf(row_max[r], quad_max(m[r]));
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      // A row with no allowed key so far keeps m = -inf: offset 0, so P = exp2(-inf) = 0.
      const float m_off = (m[r] == -INFINITY) ? 0.f : m[r];
      rescale_o[r] = exp2f(row_max[r] - m_off);  // old max -inf -> 0
      row_max[r] = m[r];
      float part[kP];
#pragma unroll
      for (int p = 0; p < kP; ++p) part[p] = 0.f;
#pragma unroll
      for (int col = 0; col < kCols; ++col) {
        s(r, col) = exp2_score(fmaf(s(r, col), c[col / kGroupCols], -m_off), col);
        part[col % kP] += s(r, col);
      }
      row_sum[r] = row_sum[r] * rescale_o[r] + tree_sum(part);
    }
  }

  // update() with kTree: same results (the sum up to rounding order).
  template <int kP>
  __device__ static float tree_max(float (&x)[kP]) {
#pragma unroll
    for (int w = kP / 2; w > 0; w /= 2)
#pragma unroll
      for (int p = 0; p < w; ++p) x[p] = fmaxf(x[p], x[p + w]);
    return x[0];
  }
  template <int kP>
  __device__ static float tree_sum(float (&x)[kP]) {
#pragma unroll
    for (int w = kP / 2; w > 0; w /= 2)
#pragma unroll
      for (int p = 0; p < w; ++p) x[p] += x[p + w];
    return x[0];
  }
  template <class TensorS>
  __device__ void update_tree(TensorS& s, float (&rescale_o)[kRows]) {
    using namespace cute;
    constexpr int kCols = decltype(size<1>(s))::value;
    constexpr int kP = kCols % 4 == 0 ? 4 : (kCols % 2 == 0 ? 2 : 1);
    float m[kRows];
    {
      float part[kRows][kP];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int p = 0; p < kP; ++p) part[r][p] = p == 0 ? row_max[r] : -INFINITY;
#pragma unroll
      for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int r = 0; r < kRows; ++r) part[r][c % kP] = fmaxf(part[r][c % kP], s(r, c));
#pragma unroll
      for (int r = 0; r < kRows; ++r) m[r] = tree_max(part[r]);
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = quad_max(m[r]);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      // As in update(): a row with no allowed key so far keeps m = -inf and offset 0.
      const float m_scaled = (m[r] == -INFINITY) ? 0.f : fa::core::log2_ref(m[r], scale_log2);
      rescale_o[r] = exp2f(fa::core::ref_delta(fa::core::log2_ref(row_max[r], scale_log2), m_scaled));
      if constexpr (FA_SM90_FWD_RESCALE_SKIP != 0) rescale_o[r] = m[r] == row_max[r] ? 1.f : rescale_o[r];
      row_max[r] = m[r];
      float part[kP];
#pragma unroll
      for (int p = 0; p < kP; ++p) part[p] = 0.f;
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        s(r, c) = exp2_score(fa::core::exp2_arg(s(r, c), scale_log2, m_scaled), c);
        part[c % kP] += s(r, c);
      }
      row_sum[r] = row_sum[r] * rescale_o[r] + tree_sum(part);
    }
  }

  // Final normalisation: 1/l per row (0 for an empty row, so O = 0) and the natural-log LSE
  // (-inf for an empty row).
  __device__ void finalize(float (&inv_sum)[kRows], float (&lse)[kRows]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float l = quad_sum(row_sum[r]);
      const bool empty = !(l > 0.f);
      inv_sum[r] = empty ? 0.f : 1.f / l;
      // The reference P was taken against (log2_ref), not the exact m·c an FFMA would fold in.
      const float m_log2 = kLog2Max ? row_max[r] : fa::core::log2_ref(row_max[r], scale_log2);
      lse[r] = empty ? -INFINITY : fa::core::ref_add(m_log2, log2f(l)) * 0.6931471805599453f;
    }
  }
};

}  // namespace fa::cuda::sm90
