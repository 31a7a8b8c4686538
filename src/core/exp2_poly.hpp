// exp2 on the FMA pipe (FlashAttention-4's software exp2). A softmax needs one exp2 per score, and
// MUFU.EX2 issues 16 per clock per SM against 128 FFMA: when the GEMMs are fast (FP8, small head
// dims) the MUFU pipe bounds the softmax. Computing a fraction of the exponentials with FFMA/FADD
// and integer ops lets both pipes share the work.
//
// 2^x = 2^j · 2^f with j = floor(x), f = x − j ∈ [0, 1):
//  - j by the magic-number trick: x + 1.5·2^23 rounded down leaves j in the low mantissa bits (an
//    FADD.RM on the FMA pipe; no F2I/FRND, which are not);
//  - 2^f by a polynomial p with p(0) = 1 exactly, in Horner form (FFMA);
//  - the result's bits are bits(p) + (j << 23): the exponent inserted by one shift-and-add
//    (LEA/IMAD on the integer pipe), valid while the result's exponent stays in range.
// Floor rather than round-to-nearest: with p(0) = 1 pinned at the end of [0, 1) instead of the
// middle of [−0.5, 0.5], the same degree is ~5× more accurate (minimax in exact arithmetic: degree
// 3 8.6e-5 vs 4.3e-4, degree 5 8.2e-8 vs 4.3e-7), and x = −127 (the clamp) gives p = 1, j = −127
// and the bits of +0 exactly, so −inf (masked scores) gives 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hd.hpp"

namespace fa::core {

// Coefficient k (1..degree) of p(f) ≈ 2^f on [0, 1], p(0) = 1: constrained minimax of the relative
// error (Remez), then each fp32 coefficient nudged by a few ulp to minimise the error of the fp32
// Horner evaluation over every multiple of 2^-24 in [0, 1]. Max relative error of exp2_poly against
// exp2 in double, over every float in [−126, 0] (an offline exhaustive run; the part above 1.4e-7 /
// 6.2e-8 comes from x in (−1, 0), where f = x + 1 rounds); tests/core/test_exp2_poly.cpp asserts
// these bounds on a dense sweep:
//   degree 3: 8.6e-5 (FA4's choice for 16-bit P; too coarse for the LSE's 1e-5)
//   degree 4: 3.0e-6
//   degree 5: 1.6e-7 (about MUFU.EX2's 2^-22; the default)
//   degree 6: 8.2e-8 (the fp32 rounding of p dominates)
FA_HD constexpr float exp2_poly_coeff(int degree, int k) {
  return degree == 3   ? (k == 1   ? 6.951167583e-01f
                          : k == 2 ? 2.276450396e-01f
                                   : 7.706703991e-02f)
         : degree == 4 ? (k == 1   ? 6.930448413e-01f
                          : k == 2 ? 2.412801981e-01f
                          : k == 3 ? 5.224247277e-02f
                                   : 1.342668384e-02f)
         : degree == 5 ? (k == 1   ? 6.931512952e-01f
                          : k == 2 ? 2.401644737e-01f
                          : k == 3 ? 5.579991639e-02f
                          : k == 4 ? 9.017030708e-03f
                                   : 1.867130050e-03f)
                       : (k == 1   ? 6.931470633e-01f
                          : k == 2 ? 2.402292788e-01f
                          : k == 3 ? 5.548527464e-02f
                          : k == 4 ? 9.675451554e-03f
                          : k == 5 ? 1.246784697e-03f
                                   : 2.161291486e-04f);
}

namespace detail {

FA_HD uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

FA_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// c_k + f · (c_{k+1} + f · (...)): the coefficients are compile-time immediates of the FFMAs.
template <int kDegree, int k>
FA_HD float exp2_poly_horner(float f) {
  constexpr float c = exp2_poly_coeff(kDegree, k);
  if constexpr (k == kDegree) {
    return c;
  } else {
    return fmaf(exp2_poly_horner<kDegree, k + 1>(f), f, c);
  }
}

}  // namespace detail

// 2^x for x < 128 (the softmax's arguments are <= 0 up to rounding), relative error as listed
// above for x >= −126. Below −127 the input is clamped: −127 and −inf give exactly +0. On
// (−127, −126) the result is a subnormal bit pattern within 2^-126 of 2^x (MUFU.EX2.FTZ gives 0
// there, and so do FTZ consumers of this result).
template <int kDegree = 5>
FA_HD float exp2_poly(float x) {
  static_assert(kDegree >= 3 && kDegree <= 6, "coefficients exist for degrees 3..6");
  constexpr float kRound = 12582912.f;  // 1.5·2^23: x + kRound has ulp 1, j in its low bits
  x = fmaxf(x, -127.f);
#ifdef __CUDA_ARCH__
  const float xr = __fadd_rd(x, kRound);
#else
  // The same bits as the device's round-down add: floor(x) and kRound are integers and their sum
  // (< 2^24) is exact.
  const float xr = kRound + std::floor(x);
#endif
  // Exact except for x in (−1, 0), where x + 1 rounds (by <= 2^-25, f may become 1: still right).
  const float f = x - (xr - kRound);
  const float p = fmaf(detail::exp2_poly_horner<kDegree, 1>(f), f, 1.f);
  // bits(xr) << 23 keeps the low 9 bits of j = bits(xr) − bits(kRound) (kRound's own bits shift
  // out): j · 2^23 mod 2^32, i.e. j added to p's exponent field.
  return detail::bits_float(detail::float_bits(p) + (detail::float_bits(xr) << 23));
}

}  // namespace fa::core
