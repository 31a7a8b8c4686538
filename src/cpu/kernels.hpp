// Tile-level building blocks of the CPU FlashAttention: a register-blocked fp32 tile product
// (AVX-512 micro-kernel, with a portable loop version used where AVX-512 is absent and by the
// tests as a second opinion), a vectorised exp for the softmax, and row helpers.
#pragma once

#include <cstdint>

namespace fa::cpu {

constexpr int kVecWidth = 16;  // fp32 lanes of one AVX-512 register; tiles pad to this

inline int round_up(int x, int m) { return (x + m - 1) / m * m; }

// C[M x N] = (accumulate ? C : 0) + A[M x K] * B[K x N]; all row-major with leading dimensions
// lda/ldb/ldc (in floats). N must be a multiple of kVecWidth (callers pad B and C with zeros).
void gemm_tile(int M, int N, int K, const float* A, int64_t lda, const float* B, int64_t ldb,
               float* C, int64_t ldc, bool accumulate);
// The same with A read transposed: A(m, k) = At[k * lda + m] (At is K x M row-major). Saves an
// explicit transpose where a tile is produced keys-major and consumed queries-major.
void gemm_tile_at(int M, int N, int K, const float* At, int64_t lda, const float* B, int64_t ldb,
                  float* C, int64_t ldc, bool accumulate);
// The same products with plain loops (the compiler auto-vectorises the inner axpy).
void gemm_tile_portable(int M, int N, int K, const float* A, int64_t lda, const float* B,
                        int64_t ldb, float* C, int64_t ldc, bool accumulate);
void gemm_tile_at_portable(int M, int N, int K, const float* At, int64_t lda, const float* B,
                           int64_t ldb, float* C, int64_t ldc, bool accumulate);
// Which implementation gemm_tile uses in this build: "avx512" or "portable".
const char* gemm_tile_isa();

// One online-softmax step (core::RowState, vectorised across queries) on a transposed score
// tile St[nk x ld]: keys are rows, queries are columns c < ncols (a multiple of kVecWidth).
// Raw scores x become P = exp(x * scale - m_new) in place, where per column
//   m_new = max(m, scale * max_j x)   (scale > 0, so the max commutes with it)
//   factor = exp(m - m_new), or 0 while m was -inf   (what the running O and l are multiplied by)
//   l = l * factor + sum_j P ;  m = m_new.
// A column whose scores are all -inf so far keeps m = -inf, l = 0 and gets P = 0 (never NaN).
void softmax_update_cols(float* St, int64_t ld, int nk, int ncols, float scale, float* m,
                         float* l, float* factor);
void softmax_update_cols_portable(float* St, int64_t ld, int nk, int ncols, float scale, float* m,
                                  float* l, float* factor);

// Score soft-capping in place: x[i] = cap * tanh(x[i] * scale / cap) (core::score_transform with
// softcap = cap > 0), vectorised; a few ulp from tanhf. -inf gives -cap: mask after capping.
void softcap_span(float* x, int n, float scale, float cap);

// max over x[0..n); -inf for n == 0.
float row_max(const float* x, int n);
// x[i] = exp(x[i] - sub) for i < n, returns the sum of the new x. sub must be finite; x[i] may be
// -inf (gives 0). Relative error about 2 ulp.
float exp_sub_sum(float* x, int n, float sub);
// x[i] *= s for i < n.
void scale_row(float* x, int n, float s);
// Vectorised exp for tests: y[i] = exp(x[i]).
void exp_span(const float* x, int n, float* y);

}  // namespace fa::cpu
