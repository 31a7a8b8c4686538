// Online softmax and masking on m16n8 register fragments, for the sm80-class forwards. The scalar
// specification is core/softmax.hpp (RowState) and core/mask.hpp (Mask); this is the same math on
// a thread's (row, col) fragment view, with row statistics shared across a quad of lanes.
#pragma once

#include <math.h>

#include "core/mask.hpp"
#include "core/softmax.hpp"
#include "cuda/common/sm80_tile.cuh"

namespace fa::cuda::sm80 {

// Scores -> log2 domain. exp(x·scale - m·scale) = exp2(x·scale_log2 - m·scale_log2), one FFMA + one
// MUFU.EX2 per element. With softcap the scores are softcap·tanh(qk·scale/softcap): the tanh is
// applied to the fragment first and the exponent scale becomes softcap·log2e.
struct ScoreScale {
  bool capped;       // softcap on for this call (a kSoftcap instance also serves softcap = 0)
  float tanh_arg;    // softcap: multiplier of qk inside tanh (scale / softcap)
  float log2;        // multiplier turning a (capped) raw score into the exp2 argument
  float natural;     // the same in natural-log units, for LSE = m·natural + ln(l)
};

template <bool kSoftcap>
CUTE_DEVICE ScoreScale make_score_scale(float scale, float softcap) {
  ScoreScale s;
  s.capped = kSoftcap && softcap > 0.f;
  const float unit = s.capped ? softcap : scale;
  s.tanh_arg = s.capped ? scale / softcap : 1.f;
  s.log2 = unit * 1.4426950408889634f;
  s.natural = unit;
  return s;
}

// tanh(x) = 1 - 2 / (exp(2x) + 1): one MUFU.EX2 and one reciprocal, absolute error ~1e-7, so the
// capped score softcap·tanh is off by ~softcap·1e-7. Not tanhf: under --use_fast_math it becomes
// MUFU.TANH, whose ~2^-11 error times a softcap of ~30 exceeds the fp16/bf16 accuracy rule.
// Large |x| saturate correctly (exp2 -> inf gives 1, -> 0 gives -1).
CUTE_DEVICE float tanh_accurate(float x) {
  const float e = exp2f(x * (2.f * 1.4426950408889634f));
  return 1.f - 2.f / (e + 1.f);
}

// tanh before the row max (scores must be capped before they compete for the max).
template <class Frag>
CUTE_DEVICE void apply_softcap(Frag& s, float tanh_arg) {
  CUTE_UNROLL
  for (int i = 0; i < size(s); ++i) s(i) = tanh_accurate(s(i) * tanh_arg);
}

// Sets to -inf the scores of keys that a row may not see: keys past k_len (the last partial key
// block) and, when kWindow, keys outside the causal/local window. s and coord are (row, col) views
// of the score fragment and of its identity (tile coordinates); row0/col0 place the tile in the
// sequence. Per row the visible keys are one interval, clamped to the tile so the per-element test
// is two int compares.
template <bool kWindow, int kBlockN, class S, class Coord>
CUTE_DEVICE void mask_scores(S& s, Coord const& coord, const core::Mask& mask, int64_t row0,
                             int64_t col0) {
  CUTE_UNROLL
  for (int r = 0; r < size<0>(s); ++r) {
    const int64_t i = row0 + get<0>(coord(r, 0));
    int64_t lo = 0, hi = mask.k_len;
    if constexpr (kWindow) {
      if (mask.right >= 0) hi = cute::min(hi, mask.diag(i) + mask.right + 1);
      if (mask.left >= 0) lo = cute::max(lo, mask.diag(i) - mask.left);
    }
    const int lo_local = int(cute::max(int64_t(0), cute::min(int64_t(kBlockN), lo - col0)));
    const int hi_local = int(cute::max(int64_t(0), cute::min(int64_t(kBlockN), hi - col0)));
    CUTE_UNROLL
    for (int c = 0; c < size<1>(s); ++c) {
      const int j = get<1>(coord(0, c));
      if (j < lo_local || j >= hi_local) s(r, c) = -INFINITY;
    }
  }
}

// The window of a boundary block in 32-bit block-local form (FA_SM80_FWD_MASK_BOUNDS32). Row i of
// the tile (i = row0 + row) may see key col0 + j of block col0 when
//   j < k_len - col0,   j < hi_diag - col0 + row   and   j >= lo_diag - col0 + row,
// with hi_diag = row0 + (k_len - q_len) + right + 1 and lo_diag = row0 + (k_len - q_len) - left
// (mask_scores' bounds with diag(i) = row0 + row + k_len - q_len). Both are clamped once per CTA to
// [-kBlockM, k_len + kBlockN]: over rows [0, kBlockM), keys [0, kBlockN) and col0 in [0, k_len) a
// clamped bound decides every test as the unclamped one does (below -kBlockM a bound + row is < 0
// <= col0 + j; above k_len + kBlockN it is > col0 + j), and it fits int32 with every sum above.
// Why: mask_scores' 64-bit diag(i) of a thread's rows are loop-invariant, so the compiler keeps them
// live across the whole key loop for the boundary steps; at d128 those 8 registers were spilled.
// This form needs two per-CTA scalars (uniform across the CTA) and the thread's row/column
// coordinates, which the step rebuilds from tid.
struct BlockWindow {
  int k_len;
  int hi_diag;  // no right bound: k_len + kBlockN (never masks)
  int lo_diag;  // no left bound: -kBlockM (never masks)
};

template <int kBlockM, int kBlockN>
CUTE_DEVICE BlockWindow make_block_window(const core::Mask& mask, int64_t row0) {
  const int64_t lo_clamp = -kBlockM, hi_clamp = mask.k_len + kBlockN;
  // A window wider than both sequences is unbounded; capping it keeps the int64 sums exact.
  const int64_t span = mask.q_len + mask.k_len + kBlockM + kBlockN;
  const int64_t diag0 = row0 + mask.k_len - mask.q_len;
  BlockWindow w;
  w.k_len = int(mask.k_len);
  w.hi_diag = mask.right >= 0
                  ? int(cute::max(lo_clamp, cute::min(hi_clamp, diag0 + cute::min(mask.right, span) + 1)))
                  : int(hi_clamp);
  w.lo_diag = mask.left >= 0
                  ? int(cute::max(lo_clamp, cute::min(hi_clamp, diag0 - cute::min(mask.left, span))))
                  : int(lo_clamp);
  return w;
}

// mask_scores with the bounds of a BlockWindow: coord holds tile (row, col) coordinates, col0 the
// block's first key. Same result as mask_scores(s, coord, mask, row0, col0).
template <bool kWindow, class S, class Coord>
CUTE_DEVICE void mask_scores_local(S& s, Coord const& coord, const BlockWindow& w, int col0) {
  const int k_end = w.k_len - col0;
  CUTE_UNROLL
  for (int r = 0; r < size<0>(s); ++r) {
    const int row = get<0>(coord(r, 0));
    int lo = 0, hi = k_end;
    if constexpr (kWindow) {
      hi = cute::min(hi, w.hi_diag - col0 + row);
      lo = w.lo_diag - col0 + row;
    }
    CUTE_UNROLL
    for (int c = 0; c < size<1>(s); ++c) {
      const int j = get<1>(coord(0, c));
      if (j < lo || j >= hi) s(r, c) = -INFINITY;
    }
  }
}

// kPinSum: the row sums of a block are computed before the caller's P·V MMAs. Left alone, ptxas
// sinks the FADDs of the sum past P·V (nothing needs the sum earlier), which keeps all fp32 P values
// of the block live beside their fp16/bf16 copies and acc_o: at d128 that is 64 registers more at
// the peak. pin_sum makes the row's first P value depend on the sum through an opaque 0
// (sum · 0 in inline PTX, which ptxas cannot fold: it is NaN for an infinite sum), so the
// conversion of P, and every MMA that reads it, waits for the sum. P + 0 = P exactly (the sum of
// at most kBlockN values <= 1 is finite); cost: one FMUL and one FADD per row and block.
template <class S>
CUTE_DEVICE void pin_sum(S& s, int r, float sum) {
  float zero;
  asm("mul.f32 %0, %1, 0f00000000;" : "=f"(zero) : "f"(sum));
  s(r, 0) += zero;
}

// Running max and (thread-partial) sum of each of a thread's kRows rows. Normalisation is deferred:
// O accumulates sum_j exp(s_j - m) v_j and is divided by the row sum once, in finalize().
template <int kRows>
struct FragmentSoftmax {
  float row_max[kRows];
  float row_sum[kRows];  // this lane's share; quad-reduced only in finalize()

  CUTE_DEVICE FragmentSoftmax() {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = -INFINITY;
      row_sum[r] = 0.f;
    }
  }

  // Folds one block of scores s into the state; on return s holds P = exp(s - m_new) and o has been
  // rescaled by exp(m_old - m_new). kFirst: the state is empty, so there is nothing to rescale.
  template <bool kFirst, bool kPinSum = false, class S, class O>
  CUTE_DEVICE void update(S& s, O& o, float scale_log2) {
    static_assert(decltype(size<0>(s))::value == kRows);
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float block_max = kFirst ? -INFINITY : row_max[r];
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) block_max = fmaxf(block_max, s(r, c));
      const float m_new = quad_max(block_max);
      // A row that has seen only masked keys keeps m = -inf; subtracting 0 instead of -inf keeps
      // exp2(-inf - -inf) from becoming NaN (its P is exp2(-inf) = 0).
      const float m_scaled = m_new == -INFINITY ? 0.f : core::log2_ref(m_new, scale_log2);
      if constexpr (!kFirst) {
        const float rescale_o = exp2f(core::ref_delta(core::log2_ref(row_max[r], scale_log2), m_scaled));
        row_sum[r] *= rescale_o;
        CUTE_UNROLL
        for (int c = 0; c < size<1>(o); ++c) o(r, c) *= rescale_o;
      }
      row_max[r] = m_new;
      float sum = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) {
        s(r, c) = exp2f(core::exp2_arg(s(r, c), scale_log2, m_scaled));
        sum += s(r, c);
      }
      if constexpr (kPinSum) pin_sum(s, r, sum);
      row_sum[r] = kFirst ? sum : row_sum[r] + sum;
    }
  }

  // update() with the O rescale behind a warp-uniform branch. kHeadroomLog2 > 0 (the "lazy" form):
  // the reference max moves only when some row of the warp has grown by more than 2^kHeadroomLog2
  // (exp2 units) since its last move; otherwise the block's P = exp2(s·scale - m_ref) is at most
  // 2^kHeadroomLog2 and O is left alone. Exact in real arithmetic (O and row_sum share the
  // reference, finalize divides it out), but P > 1 for the dominant keys is rounded to fp16/bf16
  // where the reference's P = 1 is exact: on the H200 that failed the 2x rule in ~1% of cases.
  // kHeadroomLog2 == 0 (the "skip unchanged" form): the branch is taken whenever any row of the warp
  // has a larger max (compared unscaled, so exactly), and then every row moves to its true max, so
  // P and O are those of update(); a skipped block is one where every row's factor is exactly 1.
  // Either way the branch keeps the 128 FMULs on a d128 O fragment (and their scheduling into the
  // P·V MMAs) out of the fall-through path, which the register allocator handles with fewer spills.
  // Rows that have seen only masked keys keep m = -inf as in update().
  template <int kHeadroomLog2 = 8, bool kPinSum = false, class S, class O>
  CUTE_DEVICE void update_lazy(S& s, O& o, float scale_log2) {
    static_assert(decltype(size<0>(s))::value == kRows);
    static_assert(kHeadroomLog2 >= 0);
    float block_max[kRows];
    bool grow = false;
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      float m = s(r, 0);
      CUTE_UNROLL
      for (int c = 1; c < size<1>(s); ++c) m = fmaxf(m, s(r, c));
      block_max[r] = quad_max(m);
      // -inf > -inf (+ h) is false: a row with no visible key yet stays at -inf.
      if constexpr (kHeadroomLog2 == 0) {
        grow |= block_max[r] > row_max[r];
      } else {
        grow |= block_max[r] * scale_log2 > row_max[r] * scale_log2 + float(kHeadroomLog2);
      }
    }
    // A loop of at most one trip rather than an if: ptxas if-converts an if of this size into
    // ~180 predicated instructions that issue on every block; a loop keeps the branch. The asm
    // hides the trip count's range so the compiler cannot fold the loop back into an if.
    int rescale_trips = __any_sync(0xffffffffu, grow) ? 1 : 0;
    asm volatile("" : "+r"(rescale_trips));
#pragma unroll 1
    for (int trip = 0; trip < rescale_trips; ++trip) {
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const float m_new = fmaxf(row_max[r], block_max[r]);
        const float m_scaled = m_new == -INFINITY ? 0.f : core::log2_ref(m_new, scale_log2);
        // An unchanged row subtracts equal references: exp2(0) = 1 exactly.
        const float rescale_o = exp2f(core::ref_delta(core::log2_ref(row_max[r], scale_log2), m_scaled));
        row_sum[r] *= rescale_o;
        CUTE_UNROLL
        for (int c = 0; c < size<1>(o); ++c) o(r, c) *= rescale_o;
        row_max[r] = m_new;
      }
    }
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float m_scaled = row_max[r] == -INFINITY ? 0.f : core::log2_ref(row_max[r], scale_log2);
      float sum = 0.f;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(s); ++c) {
        s(r, c) = exp2f(core::exp2_arg(s(r, c), scale_log2, m_scaled));
        sum += s(r, c);
      }
      if constexpr (kPinSum) pin_sum(s, r, sum);
      row_sum[r] += sum;
    }
  }

  // O /= l and lse = m·scale + ln(l); an empty row (l = 0) gets O = 0 and lse = -inf.
  template <class O>
  CUTE_DEVICE void finalize(O& o, float scale_natural, float (&lse)[kRows]) {
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const float l = quad_sum(row_sum[r]);
      const bool empty = !(l > 0.f);
      const float inv_l = empty ? 0.f : 1.f / l;
      lse[r] = empty ? -INFINITY : row_max[r] * scale_natural + logf(l);
      CUTE_UNROLL
      for (int c = 0; c < size<1>(o); ++c) o(r, c) *= inv_l;
    }
  }
};

}  // namespace fa::cuda::sm80
