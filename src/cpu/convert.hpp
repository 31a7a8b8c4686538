// Scalar fp16 / bf16 <-> fp32 conversions (IEEE binary16 and bfloat16), round-to-nearest-even,
// and the tile loaders/stores the CPU backend uses to move one head's rows between a tensor of any
// supported dtype (strided, head_dim contiguous) and a dense fp32 tile.
//
// The conversions are bit manipulations rather than hardware intrinsics so that the CPU backend
// behaves identically on every x86/ARM host; tests/common has an independent arithmetic version
// and tests/cpu checks the two against each other over every 16-bit pattern.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/params.hpp"

namespace fa::cpu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in fp32.
    float v = float(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN (payload kept)
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {
    if (ax == 0x7f800000u) return sign | 0x7c00u;
    return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN stays a (quiet) NaN
  }
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  const uint32_t e = ax >> 23;
  const uint32_t m = ax & 0x7fffffu;
  if (e < 113) {
    // Result is subnormal (or zero): units of 2^-24. value = (m | 1<<23) * 2^(e-150).
    if (e < 102) return sign;  // < 2^-25: rounds to zero (2^-25 itself is handled below)
    const uint32_t full = m | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t q = full >> shift;
    const uint32_t rem = full & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the min normal: correct
    return uint16_t(sign | q);
  }
  uint32_t h = ((e - 112) << 10) | (m >> 13);
  const uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry into the exponent is correct
  return uint16_t(sign | h);
}

inline float bf16_to_f32(uint16_t h) { return bits_float(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; overflow correctly rounds up to inf.
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline int dtype_bytes(core::DType t) { return t == core::DType::F32 ? 4 : t == core::DType::F8E4M3 ? 1 : 2; }

// Converts n contiguous elements of dtype t to fp32.
inline void load_span(const void* src, core::DType t, int n, float* dst) {
  switch (t) {
    case core::DType::F32: std::memcpy(dst, src, sizeof(float) * size_t(n)); break;
    case core::DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      break;
    }
    case core::DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    default: break;  // validation rejects fp8 for the CPU backend
  }
}

inline void store_span(const float* src, int n, core::DType t, void* dst) {
  switch (t) {
    case core::DType::F32: std::memcpy(dst, src, sizeof(float) * size_t(n)); break;
    case core::DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      break;
    }
    case core::DType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      break;
    }
    default: break;
  }
}

// One head's view of a [batch, row, head, dim] tensor: where row r of head h of sequence b lives.
// A paged KV cache ([pages, page_size, head, dim]) sets `pages` to the sequence's block-table row:
// row r is then row r % page_size of page pages[r / page_size] (b is unused).
struct HeadView {
  const char* base;
  core::DType dtype;
  core::Strides str;
  int64_t b;
  int64_t h;
  const int32_t* pages = nullptr;
  int64_t page_size = 1;
  const void* row(int64_t r) const {
    const int64_t off = pages ? pages[r / page_size] * str.batch + (r % page_size) * str.row +
                                    h * str.head
                              : str.offset(b, r, h);
    return base + off * dtype_bytes(dtype);
  }
  // Whether rows [r, r + n) are str.row elements apart, so row(r) can be read as one strided tile
  // (always, unless they cross a page boundary).
  bool rows_strided(int64_t r, int64_t n) const {
    return !pages || n <= 1 || r / page_size == (r + n - 1) / page_size;
  }
};

// dst[i*ld + c] = x[row0 + i][c] for i < n, c < d; columns d..ld are zero-filled so tiles padded
// to a multiple of the vector width add nothing to the products.
inline void load_rows(const HeadView& t, int64_t row0, int n, int d, float* dst, int ld) {
  for (int i = 0; i < n; ++i) {
    float* out = dst + int64_t(i) * ld;
    load_span(t.row(row0 + i), t.dtype, d, out);
    for (int c = d; c < ld; ++c) out[c] = 0.f;
  }
}

// dst[c*ld + i] = x[row0 + i][c]: the transposed tile, so that a product against it streams
// contiguous rows (keys along the vector lanes). Columns n..n_pad are zero-filled.
inline void load_rows_transposed(const HeadView& t, int64_t row0, int n, int n_pad, int d,
                                 float* dst, int ld, float* row_buf) {
  for (int i = 0; i < n; ++i) {
    load_span(t.row(row0 + i), t.dtype, d, row_buf);
    for (int c = 0; c < d; ++c) dst[int64_t(c) * ld + i] = row_buf[c];
  }
  for (int c = 0; c < d; ++c)
    for (int i = n; i < n_pad; ++i) dst[int64_t(c) * ld + i] = 0.f;
}

inline void store_rows(const float* src, int ld, int n, int d, char* base, core::DType t,
                       const core::Strides& str, int64_t b, int64_t row0, int64_t h) {
  for (int i = 0; i < n; ++i)
    store_span(src + int64_t(i) * ld, d, t, base + str.offset(b, row0 + i, h) * dtype_bytes(t));
}

}  // namespace fa::cpu
