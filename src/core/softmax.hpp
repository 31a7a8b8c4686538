// The scalar form of FlashAttention's online softmax and of the log-sum-exp algebra. The CPU
// backend's vector code and the CUDA kernels implement the same recurrences on tiles; this header
// is their specification and is also what split-KV combine and the backward's P recompute use.
#pragma once

#include <cmath>
#include <limits>

#include "core/hd.hpp"

namespace fa::core {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// scores = softcap * tanh(qk * scale / softcap) when softcap > 0, else qk * scale.
FA_HD float score_transform(float qk, float scale, float softcap) {
  if (softcap > 0.f) return softcap * tanhf(qk * (scale / softcap));
  return qk * scale;
}

// d score / d qk, given the transformed score (for the backward): scale * (1 - tanh^2).
FA_HD float score_transform_grad(float score, float scale, float softcap) {
  if (softcap > 0.f) {
    float t = score / softcap;
    return scale * (1.f - t * t);
  }
  return scale;
}

// The online softmax in exp2 units, with the roundings pinned. ref = log2_ref(m, c) is the row
// max m times c (the softmax scale × log2 e), rounded as a product of its own; P = exp2(s·c − ref)
// is relative to that rounded value, so moving older terms to a new max must subtract the same
// rounded values, exp2(ref_old − ref_new). Left to the compiler, the form exp2(m_old·c − ref_new)
// is contracted into one FMA with the exact product, which leaves the old reference's rounding
// residue (up to half an ulp of m·c) in every older term, and the residues of successive moves of
// the max add up: 3x the softmax's share of the LSE error in a CPU emulation of Student-t3 rows,
// and on the H200 (bf16 d64, 1000 keys) 2-3x the LSE error of PyTorch's flash and cuDNN kernels,
// equal to theirs with the references pinned (docs/perf/LOG.md, session 25).
// The reference itself is a plain product (so the compiler may share and rematerialise it; an
// __fmul_rn there cost the sm_90a sm80-class d128 forward 16-28 B of spills); what pins it is that
// it is consumed only through exp2_arg, ref_add and ref_delta, whose intrinsics no FMA can absorb it into.
FA_HD float log2_ref(float m, float c) { return m * c; }

// s·c − ref with one rounding (one FFMA) against the rounded reference.
FA_HD float exp2_arg(float s, float c, float ref) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(s, c, -ref);
#else
  return std::fma(s, c, -ref);
#endif
}

// ref + x and ref_old − ref_new (exactly 0 for an unchanged max) as additions of their own.
FA_HD float ref_add(float ref, float x) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(ref, x);
#else
  return ref + x;
#endif
}
FA_HD float ref_delta(float ref_old, float ref_new) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(ref_old, ref_new);
#else
  return ref_old - ref_new;
#endif
}

// Running state of one query row: max m and sum l of exp(s - m) over the keys seen so far.
// Normalisation is deferred: o holds sum exp(s - m) v and is divided by l once at the end.
struct RowState {
  float m = -INFINITY;
  float l = 0.f;

  // Folds a block whose max is block_max. Returns the factor the old accumulator (o and l) must be
  // multiplied by; the caller adds exp(s - m) terms with the returned new max.
  FA_HD float update_max(float block_max) {
    float m_new = block_max > m ? block_max : m;
    float factor = (m == -INFINITY) ? 0.f : expf(m - m_new);
    // A row that has seen only masked keys keeps m = -inf; exp(-inf - -inf) must not become NaN.
    m = m_new;
    l *= factor;
    return factor;
  }

  // log-sum-exp of the row; -inf for a row with no visible key.
  FA_HD float lse() const { return (l > 0.f) ? m + logf(l) : -INFINITY; }
  // 1/l for the final normalisation; 0 for an empty row so its output is 0.
  FA_HD float inv_sum() const { return (l > 0.f) ? 1.f / l : 0.f; }
};

// Combine two partial results over disjoint key sets (split-KV): weight of part a is
// exp(lse_a - lse), with lse the combined log-sum-exp.
FA_HD float lse_combine(float lse_a, float lse_b) {
  if (lse_a == -INFINITY) return lse_b;
  if (lse_b == -INFINITY) return lse_a;
  float mx = lse_a > lse_b ? lse_a : lse_b;
  return mx + logf(expf(lse_a - mx) + expf(lse_b - mx));
}

// The backward recomputes P = exp(s - lse). A fully masked row has lse = -inf and only masked
// entries; mapping its lse to +inf gives P = 0 there instead of exp(-inf + inf) = NaN.
FA_HD float lse_for_backward(float lse) { return lse == -INFINITY ? INFINITY : lse; }

}  // namespace fa::core
