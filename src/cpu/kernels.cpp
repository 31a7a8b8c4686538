// Register-blocked fp32 tile product and vectorised softmax helpers for the CPU backend.
//
// Micro-kernel (AVX-512): C is cut into panels of 6 rows x 64 columns held in 24 zmm accumulators
// (+4 for the B row, +1 broadcast = 29 of 32 registers). Each k step loads one 64-float row of B
// once and reuses it for 6 rows of A (broadcast from memory), i.e. 24 FMAs per 4 loads: enough
// to keep both FMA ports busy. Column panels are the outer loop so the K x 64 slice of B stays in
// L1 while all row groups of A stream past it. Edges use smaller instantiations (1..6 rows,
// 1..4 vectors) chosen by a switch, so there is no scalar tail (N is padded to 16 by callers).
#include "cpu/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__AVX512F__)
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

#if defined(__AVX512F__)
namespace {

// TransA: A(r, k) is A[k * lda + r] instead of A[r * lda + k]; the broadcast address is the only
// difference, so one template serves both.
template <int R, int NV, bool TransA>
inline void micro(int K, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                  int64_t ldc, bool accumulate) {
  __m512 acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(C + r * ldc + v * 16) : _mm512_setzero_ps();
  for (int k = 0; k < K; ++k) {
    __m512 b[NV];
    for (int v = 0; v < NV; ++v) b[v] = _mm512_loadu_ps(B + k * ldb + v * 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(TransA ? A[k * lda + r] : A[r * lda + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(C + r * ldc + v * 16, acc[r][v]);
}

using MicroFn = void (*)(int, const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

constexpr int kRows = 6;  // rows per register block (6 x 4 zmm accumulators)
constexpr int kCols = 4;  // zmm vectors per register block (64 floats)

template <int R, bool TransA>
MicroFn pick_nv(int nv) {
  switch (nv) {
    case 1: return micro<R, 1, TransA>;
    case 2: return micro<R, 2, TransA>;
    case 3: return micro<R, 3, TransA>;
    default: return micro<R, 4, TransA>;
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
  for (int n0 = 0; n0 < N; n0 += kCols * 16) {
    const int nv = (N - n0) / 16 < kCols ? (N - n0) / 16 : kCols;
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

const char* gemm_tile_isa() { return "avx512"; }

namespace {
// exp(x) = 2^n * e^r with n = round(x / ln2) and r = x - n ln2 in [-ln2/2, ln2/2], reduced in two
// steps (Cody-Waite: ln2 = hi + lo, hi with few bits so n*hi is exact) so the error does not grow
// with |x|; e^r by its degree-7 Taylor series (truncation < 1e-8 relative). x is clamped at -110
// so -inf and huge negative inputs give exactly 0 through scalef's underflow, not NaN.
inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-110.f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  f = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), f);
  __m512 p = _mm512_set1_ps(1.f / 5040.f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f / 720.f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f / 120.f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f / 24.f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f / 6.f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}
}  // namespace

void softmax_update_cols(float* St, int64_t ld, int nk, int ncols, float scale, float* m,
                         float* l, float* factor) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  for (int c = 0; c < ncols; c += 16) {
    __m512 mx = ninf;
    for (int j = 0; j < nk; ++j) mx = _mm512_max_ps(mx, _mm512_loadu_ps(St + j * ld + c));
    const __m512 m_old = _mm512_loadu_ps(m + c);
    const __m512 m_new = _mm512_max_ps(m_old, _mm512_mul_ps(mx, vscale));
    // factor = exp(m_old - m_new), forced to 0 where m_old = -inf (also avoids -inf - -inf).
    const __mmask16 was_empty = _mm512_cmp_ps_mask(m_old, ninf, _CMP_EQ_OQ);
    const __m512 f = _mm512_maskz_mov_ps(__mmask16(~was_empty),
                                         exp512(_mm512_sub_ps(_mm512_mask_mov_ps(m_old, was_empty, m_new), m_new)));
    const __mmask16 still_empty = _mm512_cmp_ps_mask(m_new, ninf, _CMP_EQ_OQ);
    const __m512 neg = _mm512_maskz_mov_ps(__mmask16(~still_empty), _mm512_sub_ps(_mm512_setzero_ps(), m_new));
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < nk; ++j) {
      const __m512 p = exp512(_mm512_fmadd_ps(_mm512_loadu_ps(St + j * ld + c), vscale, neg));
      _mm512_storeu_ps(St + j * ld + c, p);
      sum = _mm512_add_ps(sum, p);
    }
    _mm512_storeu_ps(l + c, _mm512_fmadd_ps(_mm512_loadu_ps(l + c), f, sum));
    _mm512_storeu_ps(m + c, m_new);
    _mm512_storeu_ps(factor + c, f);
  }
}

float row_max(const float* x, int n) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + i));
  if (i < n) {
    const __mmask16 k = __mmask16((1u << (n - i)) - 1);
    m = _mm512_max_ps(m, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + i));
  }
  return _mm512_reduce_max_ps(m);
}

float exp_sub_sum(float* x, int n, float sub) {
  const __m512 s = _mm512_set1_ps(sub);
  __m512 acc = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), s));
    _mm512_storeu_ps(x + i, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (i < n) {
    const __mmask16 k = __mmask16((1u << (n - i)) - 1);
    const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), s));
    _mm512_mask_storeu_ps(x + i, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

void scale_row(float* x, int n, float s) {
  const __m512 v = _mm512_set1_ps(s);
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), v));
  for (; i < n; ++i) x[i] *= s;
}

void exp_span(const float* x, int n, float* y) {
  int i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, exp512(_mm512_loadu_ps(x + i)));
  for (; i < n; ++i) {
    const __mmask16 k = 1;
    _mm512_mask_storeu_ps(y + i, k, exp512(_mm512_maskz_loadu_ps(k, x + i)));
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
