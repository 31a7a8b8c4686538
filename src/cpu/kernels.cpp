// Register-blocked fp32 tile products and vectorised softmax helpers for the CPU backend.
//
// Micro-kernel: C is cut into panels of kRows = 6 rows x kCols vectors held in accumulators; each
// k step loads one row of B once and reuses it for 6 rows of A (broadcast from memory). AVX-512:
// 6 x 4 zmm = 24 accumulators (+4 B + 1 broadcast = 29 of 32 registers), 24 FMAs per 4 loads,
// enough to keep both FMA ports busy. AVX2: 6 x 2 ymm = 12 (+2 +1 = 15 of 16). Column panels
// are the outer loop so the K x panel slice of B stays in L1 while all row groups of A stream
// past it. Edges use smaller instantiations (1..6 rows, 1..kCols vectors) chosen by a switch, so
// there is no scalar tail (callers pad N to 16). One template serves both ISAs through a small
// vector-traits struct; without AVX2 the portable loops below are used (auto-vectorised).
#include "cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/softmax.hpp"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#define FA_CPU_SIMD 1
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_ps() placeholders (inside the reduce/roundscale
// intrinsics) as uninitialised: a known false positive, silenced for this file only.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace fa::cpu {

void gemm_tile_portable(int M, int N, int K, const float* A, int64_t lda, const float* B,
                        int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  for (int m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    if (!accumulate)
      for (int n = 0; n < N; ++n) c[n] = 0.f;
    const float* a = A + m * lda;
    for (int k = 0; k < K; ++k) {
      const float ak = a[k];
      const float* b = B + k * ldb;
      for (int n = 0; n < N; ++n) c[n] += ak * b[n];
    }
  }
}

void gemm_tile_at_portable(int M, int N, int K, const float* At, int64_t lda, const float* B,
                           int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  for (int m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    if (!accumulate)
      for (int n = 0; n < N; ++n) c[n] = 0.f;
    for (int k = 0; k < K; ++k) {
      const float ak = At[k * lda + m];
      const float* b = B + k * ldb;
      for (int n = 0; n < N; ++n) c[n] += ak * b[n];
    }
  }
}

void softmax_update_cols_portable(float* St, int64_t ld, int nk, int ncols, float scale, float* m,
                                  float* l, float* factor) {
  for (int c = 0; c < ncols; ++c) {
    float mx = -INFINITY;
    for (int j = 0; j < nk; ++j) mx = std::max(mx, St[j * ld + c]);
    const float m_new = std::max(m[c], mx * scale);
    factor[c] = m[c] == -INFINITY ? 0.f : std::exp(m[c] - m_new);
    const float neg = m_new == -INFINITY ? 0.f : -m_new;
    float sum = 0.f;
    for (int j = 0; j < nk; ++j) {
      const float p = std::exp(St[j * ld + c] * scale + neg);
      St[j * ld + c] = p;
      sum += p;
    }
    l[c] = l[c] * factor[c] + sum;
    m[c] = m_new;
  }
}

#if defined(FA_CPU_SIMD)
namespace {

// exp(x) = 2^n * e^r with n = round(x / ln2) and r = x - n ln2 in [-ln2/2, ln2/2], reduced in two
// steps (Cody-Waite: ln2 = hi + lo, hi with few bits so n*hi is exact) so the error does not grow
// with |x|; e^r by its degree-7 Taylor series (truncation < 1e-8 relative).
template <class V>
inline typename V::T exp_poly(typename V::T x, typename V::T* n_out) {
  using T = typename V::T;
  const T n = V::round(V::mul(x, V::set1(1.4426950408889634f)));
  T f = V::fnma(n, V::set1(0.693359375f), x);
  f = V::fnma(n, V::set1(-2.12194440e-4f), f);
  T p = V::set1(1.f / 5040.f);
  p = V::fma(p, f, V::set1(1.f / 720.f));
  p = V::fma(p, f, V::set1(1.f / 120.f));
  p = V::fma(p, f, V::set1(1.f / 24.f));
  p = V::fma(p, f, V::set1(1.f / 6.f));
  p = V::fma(p, f, V::set1(0.5f));
  p = V::fma(p, f, V::set1(1.f));
  p = V::fma(p, f, V::set1(1.f));
  *n_out = n;
  return p;
}

#if defined(__AVX512F__)
struct Vec {
  using T = __m512;
  static constexpr int W = 16;
  static constexpr int kCols = 4;  // 4 zmm per row of the register block
  static const char* name() { return "avx512"; }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T zero() { return _mm512_setzero_ps(); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T fnma(T a, T b, T c) { return _mm512_fnmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }
  static T round(T a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // v where t != -inf, else `other`.
  static T unless_ninf(T t, T v, T other) {
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(t, set1(-INFINITY), _CMP_EQ_OQ), other);
  }
  static float hmax(T v) { return _mm512_reduce_max_ps(v); }
  static float hsum(T v) { return _mm512_reduce_add_ps(v); }
  // Clamped at -110 so -inf and huge negative inputs give exactly 0 through scalef's underflow.
  static T exp(T x) {
    T n;
    const T p = exp_poly<Vec>(max(x, set1(-110.f)), &n);
    return _mm512_scalef_ps(p, n);
  }
};
#else
struct Vec {
  using T = __m256;
  static constexpr int W = 8;
  static constexpr int kCols = 2;  // 2 ymm per row: 12 accumulators of 16 registers
  static const char* name() { return "avx2"; }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T zero() { return _mm256_setzero_ps(); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T fnma(T a, T b, T c) { return _mm256_fnmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  static T round(T a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static T unless_ninf(T t, T v, T other) {
    return _mm256_blendv_ps(v, other, _mm256_cmp_ps(t, set1(-INFINITY), _CMP_EQ_OQ));
  }
  static float hmax(T v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
  static float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // 2^n built in the exponent field, valid for n in [-126, 127]: inputs are clamped to
  // [-87.33, 88] and results for x < -87.33 (about FLT_MIN and below) are flushed to 0.
  static T exp(T x) {
    T n;
    const T xc = _mm256_min_ps(max(x, set1(-87.33f)), set1(88.f));
    const T p = exp_poly<Vec>(xc, &n);
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const T r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(_mm256_cmp_ps(x, set1(-87.33f), _CMP_LT_OQ), r);
  }
};
#endif

constexpr int W = Vec::W;
constexpr int kRows = 6;  // rows per register block

// TransA: A(r, k) is A[k * lda + r] instead of A[r * lda + k]; the broadcast address is the only
// difference, so one template serves both.
template <int R, int NV, bool TransA>
inline void micro(int K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                  int64_t ldc, bool accumulate) {
  Vec::T acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? Vec::load(C + r * ldc + v * W) : Vec::zero();
  for (int k = 0; k < K; ++k) {
    Vec::T b[NV];
    for (int v = 0; v < NV; ++v) b[v] = Vec::load(B + k * ldb + v * W);
    for (int r = 0; r < R; ++r) {
      const Vec::T a = Vec::set1(TransA ? A[k * lda + r] : A[r * lda + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = Vec::fma(a, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) Vec::store(C + r * ldc + v * W, acc[r][v]);
}

using MicroFn = void (*)(int, const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

template <int R, bool TransA>
MicroFn pick_nv(int nv) {
  switch (nv) {
    case 1: return micro<R, 1, TransA>;
    case 2: return micro<R, 2, TransA>;
    case 3: return micro<R, (Vec::kCols >= 3 ? 3 : 1), TransA>;  // only reachable with kCols >= 3
    default: return micro<R, Vec::kCols, TransA>;
  }
}

template <bool TransA>
MicroFn pick(int rows, int nv) {
  switch (rows) {
    case 1: return pick_nv<1, TransA>(nv);
    case 2: return pick_nv<2, TransA>(nv);
    case 3: return pick_nv<3, TransA>(nv);
    case 4: return pick_nv<4, TransA>(nv);
    case 5: return pick_nv<5, TransA>(nv);
    default: return pick_nv<6, TransA>(nv);
  }
}

template <bool TransA>
void gemm_driver(int M, int N, int K, const float* A, int64_t lda, const float* B, int64_t ldb,
                 float* C, int64_t ldc, bool accumulate) {
  // Row block m0 of A starts at A + m0 * lda (rows) or A + m0 (transposed: columns of At).
  const int64_t a_step = TransA ? 1 : lda;
  for (int n0 = 0; n0 < N; n0 += Vec::kCols * W) {
    const int nv = std::min(Vec::kCols, (N - n0) / W);
    const MicroFn full = pick<TransA>(kRows, nv);
    int m0 = 0;
    for (; m0 + kRows <= M; m0 += kRows)
      full(K, A + m0 * a_step, lda, B + n0, ldb, C + m0 * ldc + n0, ldc, accumulate);
    if (m0 < M)
      pick<TransA>(M - m0, nv)(K, A + m0 * a_step, lda, B + n0, ldb, C + m0 * ldc + n0, ldc, accumulate);
  }
}

}  // namespace

void gemm_tile(int M, int N, int K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float* C, int64_t ldc, bool accumulate) {
  gemm_driver<false>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_tile_at(int M, int N, int K, const float* At, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc, bool accumulate) {
  gemm_driver<true>(M, N, K, At, lda, B, ldb, C, ldc, accumulate);
}

const char* gemm_tile_isa() { return Vec::name(); }

void softmax_update_cols(float* St, int64_t ld, int nk, int ncols, float scale, float* m,
                         float* l, float* factor) {
  const Vec::T vscale = Vec::set1(scale);
  const Vec::T zero = Vec::zero();
  for (int c = 0; c < ncols; c += W) {
    Vec::T mx = Vec::set1(-INFINITY);
    for (int j = 0; j < nk; ++j) mx = Vec::max(mx, Vec::load(St + j * ld + c));
    const Vec::T m_old = Vec::load(m + c);
    const Vec::T m_new = Vec::max(m_old, Vec::mul(mx, vscale));
    // factor = exp(m_old - m_new), 0 where m_old = -inf (computed on a dummy 0 there: no NaN).
    const Vec::T f = Vec::unless_ninf(m_old, Vec::exp(Vec::sub(Vec::unless_ninf(m_old, m_old, m_new), m_new)), zero);
    // P = exp(x * scale - m_new); a column still without a visible key uses 0 for m_new.
    const Vec::T neg = Vec::unless_ninf(m_new, Vec::sub(zero, m_new), zero);
    Vec::T sum = zero;
    for (int j = 0; j < nk; ++j) {
      const Vec::T p = Vec::exp(Vec::fma(Vec::load(St + j * ld + c), vscale, neg));
      Vec::store(St + j * ld + c, p);
      sum = Vec::add(sum, p);
    }
    Vec::store(l + c, Vec::fma(Vec::load(l + c), f, sum));
    Vec::store(m + c, m_new);
    Vec::store(factor + c, f);
  }
}

// tanh(a) for a = |y|: below 0.5 as expm1(2a) / (expm1(2a) + 2) with expm1 by its Taylor series
// (degree 10 on [0, 1): truncation < 3e-8, no cancellation); above, 1 - 2 / (exp(2a) + 1), whose
// cancellation costs at most ~1 bit at a = 0.5. a is clamped at 9 (tanh = 1 in fp32 beyond).
void softcap_span(float* x, int n, float scale, float cap) {
  const Vec::T k = Vec::set1(scale / cap), vcap = Vec::set1(cap), one = Vec::set1(1.f), two = Vec::set1(2.f);
  const Vec::T sign_mask = Vec::set1(-0.f);
  int i = 0;
  for (; i + W <= n; i += W) {
    const Vec::T y = Vec::mul(Vec::load(x + i), k);
#if defined(__AVX512F__)
    const Vec::T a = _mm512_min_ps(_mm512_andnot_ps(sign_mask, y), Vec::set1(9.f));
#else
    const Vec::T a = _mm256_min_ps(_mm256_andnot_ps(sign_mask, y), Vec::set1(9.f));
#endif
    const Vec::T z = Vec::add(a, a);
    Vec::T q = Vec::set1(1.f / 3628800.f);  // expm1(z) = z (1 + z/2 + z^2/6 + ... + z^9/10!)
    for (float c : {1.f / 362880.f, 1.f / 40320.f, 1.f / 5040.f, 1.f / 720.f, 1.f / 120.f, 1.f / 24.f,
                    1.f / 6.f, 0.5f, 1.f})
      q = Vec::fma(q, z, Vec::set1(c));
    const Vec::T em1 = Vec::mul(q, z);
    const Vec::T e = Vec::exp(z);
#if defined(__AVX512F__)
    const Vec::T small = _mm512_div_ps(em1, Vec::add(em1, two));
    const Vec::T large = Vec::sub(one, _mm512_div_ps(two, Vec::add(e, one)));
    const Vec::T t = _mm512_mask_mov_ps(large, _mm512_cmp_ps_mask(a, Vec::set1(0.5f), _CMP_LT_OQ), small);
    const Vec::T signed_t = _mm512_or_ps(t, _mm512_and_ps(y, sign_mask));
#else
    const Vec::T small = _mm256_div_ps(em1, Vec::add(em1, two));
    const Vec::T large = Vec::sub(one, _mm256_div_ps(two, Vec::add(e, one)));
    const Vec::T t = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, Vec::set1(0.5f), _CMP_LT_OQ));
    const Vec::T signed_t = _mm256_or_ps(t, _mm256_and_ps(y, sign_mask));
#endif
    Vec::store(x + i, Vec::mul(vcap, signed_t));
  }
  for (; i < n; ++i) x[i] = core::score_transform(x[i], scale, cap);
}

float row_max(const float* x, int n) {
  Vec::T m = Vec::set1(-INFINITY);
  int i = 0;
  for (; i + W <= n; i += W) m = Vec::max(m, Vec::load(x + i));
  float r = Vec::hmax(m);
  for (; i < n; ++i) r = std::max(r, x[i]);
  return r;
}

float exp_sub_sum(float* x, int n, float sub) {
  const Vec::T s = Vec::set1(sub);
  Vec::T acc = Vec::zero();
  int i = 0;
  for (; i + W <= n; i += W) {
    const Vec::T e = Vec::exp(Vec::sub(Vec::load(x + i), s));
    Vec::store(x + i, e);
    acc = Vec::add(acc, e);
  }
  float total = Vec::hsum(acc);
  for (; i < n; ++i) {  // tail: same vector exp on a padded copy, so every entry rounds alike
    float buf[W] = {};
    buf[0] = x[i] - sub;
    Vec::store(buf, Vec::exp(Vec::load(buf)));
    x[i] = buf[0];
    total += buf[0];
  }
  return total;
}

void scale_row(float* x, int n, float s) {
  const Vec::T v = Vec::set1(s);
  int i = 0;
  for (; i + W <= n; i += W) Vec::store(x + i, Vec::mul(Vec::load(x + i), v));
  for (; i < n; ++i) x[i] *= s;
}

void exp_span(const float* x, int n, float* y) {
  int i = 0;
  for (; i + W <= n; i += W) Vec::store(y + i, Vec::exp(Vec::load(x + i)));
  for (; i < n; ++i) {
    float buf[W] = {};
    buf[0] = x[i];
    Vec::store(buf, Vec::exp(Vec::load(buf)));
    y[i] = buf[0];
  }
}

#else  // portable build: loops the compiler vectorises for whatever ISA -march allows

void gemm_tile(int M, int N, int K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float* C, int64_t ldc, bool accumulate) {
  gemm_tile_portable(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_tile_at(int M, int N, int K, const float* At, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc, bool accumulate) {
  gemm_tile_at_portable(M, N, K, At, lda, B, ldb, C, ldc, accumulate);
}

void softmax_update_cols(float* St, int64_t ld, int nk, int ncols, float scale, float* m, float* l,
                         float* factor) {
  softmax_update_cols_portable(St, ld, nk, ncols, scale, m, l, factor);
}

const char* gemm_tile_isa() { return "portable"; }

void softcap_span(float* x, int n, float scale, float cap) {
  for (int i = 0; i < n; ++i) x[i] = core::score_transform(x[i], scale, cap);
}

float row_max(const float* x, int n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

float exp_sub_sum(float* x, int n, float sub) {
  float s = 0.f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - sub);
    s += x[i];
  }
  return s;
}

void scale_row(float* x, int n, float s) {
  for (int i = 0; i < n; ++i) x[i] *= s;
}

void exp_span(const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

#endif

}  // namespace fa::cpu
