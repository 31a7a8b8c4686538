// Scalar fp16 / bf16 <-> fp32 conversions (IEEE binary16 and bfloat16), round-to-nearest-even,
// and the tile loaders/stores the CPU backend uses to move one head's rows between a tensor of any
// supported dtype (strided, head_dim contiguous) and a dense fp32 tile.
//
// The conversions are bit manipulations rather than hardware intrinsics so that the CPU backend
// behaves identically on every x86/ARM host; tests/common has an independent arithmetic version
// and tests/cpu checks the two against each other over every 16-bit pattern. The scalar functions
// are the reference; the fp16 span loaders (a branch-free twin the compiler vectorises, and F16C
// where the build has it) are checked bit for bit against them (tests/cpu, Convert.*Span*).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

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

// f16_to_f32 without branches, so that a loop over it vectorises (GCC 12 -O3 -march=native:
// vpmovzxwd, vpslld, vpaddd, vcvtdq2ps, masked vmulps, vpternlogd, 32 halves per iteration; the
// ?: form of the same selects was turned back into a branch and the loop stayed scalar, hence the
// masks). Every case is computed and the right one picked by a mask:
//   normal:      exponent field moved to fp32's and rebiased by 127 - 15 = 112;
//   inf/NaN:     rebiased by a further 112 so 31 becomes 255, mantissa (NaN payload) kept, all in
//                integers so a signalling NaN stays signalling, as in the scalar version;
//   zero/subnormal: mant * 2^-24 via an int -> float conversion, exact; the product is a normal
//                fp32 (>= 2^-24) or zero, so FTZ/DAZ could not change it (the host build has no
//                -ffast-math anyway).
// The sign is OR-ed back last (also giving -0 for 0x8000).
inline float f16_to_f32_branchless(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;  // exponent and mantissa
  const uint32_t inf_nan = 0u - uint32_t(em >= 0x7c00u);
  const uint32_t subnormal = 0u - uint32_t(em < 0x400u);
  const uint32_t normal = (em << 13) + (112u << 23) + (inf_nan & (112u << 23));
  const uint32_t tiny = float_bits(float(int32_t(em)) * 5.9604644775390625e-8f);  // 2^-24
  return bits_float(sign | (tiny & subnormal) | (normal & ~subnormal));
}

inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
  // Round to nearest even on the 16 dropped bits; overflow correctly rounds up to inf.
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline int dtype_bytes(core::DType t) { return t == core::DType::F32 ? 4 : t == core::DType::F8E4M3 ? 1 : 2; }

// fp16 span loaders, all bit-identical to f16_to_f32 (tests/cpu checks each over every pattern,
// with unaligned starts and every tail length). FA_CPU_F16_CONVERT picks one for ablations:
//   scalar    the f16_to_f32 loop (the code before the vector loaders; it stays scalar)
//   portable  f16_to_f32_branchless, vectorised by the compiler (any ISA)
//   f16c      vcvtph2ps where the build targets F16C (16 lanes with AVX-512F, else 8), the default
//             there; otherwise f16c means portable.
// The same switch picks the fp16 stores (store_span below): f16c -> vcvtps2ph, else scalar.
// Measured on this 2-core AVX-512 host (single thread, 8 MB of halves into an L1 tile): scalar
// 1.6 GB/s, portable ~10 GB/s, f16c ~18 GB/s (= the bf16 loader, i.e. memory bound).
inline void load_f16_span_scalar(const uint16_t* s, int n, float* d) {
  for (int i = 0; i < n; ++i) d[i] = f16_to_f32(s[i]);
}

inline void load_f16_span_portable(const uint16_t* s, int n, float* d) {
  for (int i = 0; i < n; ++i) d[i] = f16_to_f32_branchless(s[i]);
}

#if defined(__F16C__)
inline constexpr bool kHaveF16c = true;
// vcvtph2ps is exact for every non-NaN half and ignores MXCSR.DAZ (Intel SDM), so subnormal halves
// survive a host that set DAZ; but it quiets signalling NaNs (and raises invalid). A block holding
// any NaN therefore goes through the integer code instead: bit-exact, and no FP exception.
inline void load_f16_span_f16c(const uint16_t* s, int n, float* d) {
  int i = 0;
#if defined(__AVX512F__)
  const __m256i abs_mask = _mm256_set1_epi16(0x7fff), inf = _mm256_set1_epi16(0x7c00);
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    if (_mm256_movemask_epi8(_mm256_cmpgt_epi16(_mm256_and_si256(h, abs_mask), inf)))
      load_f16_span_portable(s + i, 16, d + i);
    else
      // maskz with all lanes: GCC 12's _mm512_cvtph_ps trips -Wmaybe-uninitialized (its
      // _mm512_undefined_ps pass-through); the all-ones mask compiles to the plain instruction.
      _mm512_storeu_ps(d + i, _mm512_maskz_cvtph_ps(__mmask16(0xffff), h));
  }
#endif
  const __m128i abs_mask8 = _mm_set1_epi16(0x7fff), inf8 = _mm_set1_epi16(0x7c00);
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, abs_mask8), inf8)))
      load_f16_span_portable(s + i, 8, d + i);
    else
      _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
  }
  load_f16_span_portable(s + i, n - i, d + i);
}
#else
inline constexpr bool kHaveF16c = false;
inline void load_f16_span_f16c(const uint16_t* s, int n, float* d) {
  load_f16_span_portable(s, n, d);
}
#endif

enum class F16Loader { Scalar, Portable, F16c };

inline F16Loader f16_loader() {
  static const F16Loader l = [] {
    const char* e = std::getenv("FA_CPU_F16_CONVERT");
    if (e && std::strcmp(e, "scalar") == 0) return F16Loader::Scalar;
    if ((e && std::strcmp(e, "portable") == 0) || !kHaveF16c) return F16Loader::Portable;
    return F16Loader::F16c;
  }();
  return l;
}

// Converts n contiguous elements of dtype t to fp32.
inline void load_span(const void* src, core::DType t, int n, float* dst) {
  switch (t) {
    case core::DType::F32: std::memcpy(dst, src, sizeof(float) * size_t(n)); break;
    case core::DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      switch (f16_loader()) {
        case F16Loader::Scalar:
          load_f16_span_scalar(s, n, dst);
          break;
        case F16Loader::Portable:
          load_f16_span_portable(s, n, dst);
          break;
        case F16Loader::F16c:
          load_f16_span_f16c(s, n, dst);
          break;
      }
      break;
    }
    case core::DType::BF16: {
      // Already branch-free: a zero-extend and a shift, which GCC vectorises as it stands.
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      break;
    }
    default: break;  // validation rejects fp8 for the CPU backend
  }
}

// fp32 -> fp16 span stores. The scalar f32_to_f16 loop stays scalar (~3 ns an element here, about
// 7% of a d128 fp16 forward/backward on this host); vcvtps2ph with round-to-nearest-even from the
// immediate (not MXCSR.RC) matched f32_to_f16 on all 2^32 fp32 patterns, NaNs included (a one-off
// exhaustive run on this host; tests/cpu checks a sweep, every half's midpoints and NaN classes).
// It ignores MXCSR.FTZ (subnormal halves are kept); DAZ could only turn an fp32 subnormal input
// into a zero of the same sign, which is what f32_to_f16 gives for it anyway. FA_CPU_F16_CONVERT=
// scalar or portable store with the scalar loop (there is no portable vector store).
inline void store_f16_span_scalar(const float* s, int n, uint16_t* d) {
  for (int i = 0; i < n; ++i) d[i] = f32_to_f16(s[i]);
}

#if defined(__F16C__)
inline void store_f16_span_f16c(const float* s, int n, uint16_t* d) {
  constexpr int kRne = _MM_FROUND_TO_NEAREST_INT;  // imm8[2] = 0: this rounding, not MXCSR.RC
  int i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)  // maskz: see load_f16_span_f16c
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm512_maskz_cvtps_ph(__mmask16(0xffff), _mm512_loadu_ps(s + i), kRne));
#endif
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), kRne));
  store_f16_span_scalar(s + i, n - i, d + i);
}
#else
inline void store_f16_span_f16c(const float* s, int n, uint16_t* d) {
  store_f16_span_scalar(s, n, d);
}
#endif

inline void store_span(const float* src, int n, core::DType t, void* dst) {
  switch (t) {
    case core::DType::F32: std::memcpy(dst, src, sizeof(float) * size_t(n)); break;
    case core::DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      if (f16_loader() == F16Loader::F16c)
        store_f16_span_f16c(src, n, d);
      else
        store_f16_span_scalar(src, n, d);
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
