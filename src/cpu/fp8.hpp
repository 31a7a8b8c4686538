// The CPU quantiser of the FP8 forward (core/fp8.hpp's layout) and the e4m3 conversions. It is the
// specification the CUDA quantiser (src/cuda/fp8/quantize.cu) matches bit for bit: the same float
// operations in the same order (tests/cuda/test_fp8.cpp compares the bytes).
//
// Per element of Q or K (one row of d channels of one head):
//   x = ftz(input)                          fp16/bf16 -> fp32 is exact; ftz (below) as the GPU does
//   incoherent:  x_i = x_i * sign_i         exact (sign = core::fp8::hadamard_sign, ±1)
//                butterfly, h = 1, 2, 4, ..., d/2: every pair (i, i+h) with bit h of i clear
//                becomes (a + b, a - b), a = x_i, b = x_{i+h}, in place, one stage after another
//                x_i = x_i * c                c = float(1 / sqrt(double(d))), one constant
//   amax over the block (or the head: PER_HEAD); an all-zero block has amax 0
//   scale = amax / 448 and inv = 448 / amax (two IEEE divisions; 1 and 1 when amax is 0)
//   code  = e4m3_rne_satfinite(x * inv)
// V: the same without the transform, amax over the whole (sequence, KV head).
// Every product and sum is one IEEE fp32 operation, each result flushed to zero when subnormal:
// the CUDA build uses --use_fast_math (flush-to-zero), so the CPU does the same by hand (only
// inputs or sums below 2^-126 ever see it). The GPU code uses __fmul_rn/__fadd_rn so that no
// multiply and add are contracted into an FMA.
#pragma once

#include <flashattn/flashattn.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp8.hpp"
#include "core/params.hpp"

namespace fa::cpu::fp8 {

// e4m3 (OCP FP8, "fn": no infinities, one NaN pattern per sign): bias 7, 3 mantissa bits,
// largest finite 448, subnormals k * 2^-9. Round to nearest even; finite values above 448 and
// infinities saturate to ±448 (PTX cvt .satfinite); NaN gives 0x7F.
inline uint8_t e4m3_from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return 0x7f;
  if (a >= 0x43e00000u) return sign | 0x7e;  // >= 448 (and inf): saturate
  const uint32_t e = a >> 23;                // fp32 biased exponent
  const uint32_t mant = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
  uint32_t code, rem, half;
  if (e >= 121) {
    // Normal e4m3 (>= 2^-6): keep 3 of the 23 mantissa bits; a carry out of the mantissa
    // correctly bumps the exponent field.
    code = ((e - 120u) << 3) | ((mant >> 20) & 7u);
    rem = mant & 0xfffffu;
    half = 0x80000u;
  } else {
    // Subnormal e4m3: units of 2^-9; the value is mant * 2^(e - 150).
    const uint32_t shift = 141u - e;  // 21..141
    if (shift > 24) return sign;      // below 2^-10: rounds to zero
    code = mant >> shift;             // 0..7 (8 after rounding up is the smallest normal)
    rem = mant & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
  }
  if (rem > half || (rem == half && (code & 1u))) ++code;
  return uint8_t(sign | code);
}

inline float e4m3_to_float(uint8_t c) {
  const int exp = (c >> 3) & 15, m = c & 7;
  float v;
  if (exp == 15 && m == 7)
    v = NAN;
  else if (exp == 0)
    v = std::ldexp(float(m), -9);
  else
    v = std::ldexp(float(8 + m), exp - 10);
  return (c & 0x80) ? -v : v;
}

// Flush-to-zero of an fp32 result, as the GPU's .ftz arithmetic (sign kept).
inline float ftz(float x) {
  return std::fabs(x) < 1.17549435e-38f ? std::copysign(0.f, x) : x;
}

// The Hadamard normalisation 1/sqrt(d) as one float constant (the CUDA quantiser receives the
// same value from its host code).
inline float hadamard_norm(int d) {
  return float(1.0 / std::sqrt(double(d)));
}

// Random signs times the normalised Hadamard transform, in place (the order the header states).
inline void rotate_row(float* x, int d, const float* sign, float norm) {
  for (int i = 0; i < d; ++i) x[i] = ftz(x[i] * sign[i]);
  for (int h = 1; h < d; h *= 2)
    for (int i = 0; i < d; ++i)
      if ((i & h) == 0) {
        const float a = x[i], b = x[i + h];
        x[i] = ftz(a + b);
        x[i + h] = ftz(a - b);
      }
  for (int i = 0; i < d; ++i) x[i] = ftz(x[i] * norm);
}

// Which quantised tensors a call writes (fa_fp8::reuse_quantized).
struct Parts {
  bool q = true;
  bool kv = true;
};
inline Parts parts_of(const fa_fp8& f) {
  return {f.reuse_quantized != 1, f.reuse_quantized == 0};
}

inline core::fp8::Layout layout_of(const core::AttnParams& p) {
  return core::fp8::layout(p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim);
}

// Quantises p's q/k/v (host memory, batch form, fp16/bf16) into ws (layout_of(p).bytes, any
// alignment) as core/fp8.hpp lays it out; only the parts asked for. Bytes between the regions
// are not written.
void quantize(const core::AttnParams& p, const fa_fp8& f, Parts parts, uint8_t* ws);

}  // namespace fa::cpu::fp8
