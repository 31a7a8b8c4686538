// Host interface of the GPU reference used by the CUDA tests (kernels in reference_f64.cu).
//
// Two computations of the same attention, both naive O(N^2) with the score row held whole:
//   Precision::F64   the reference: inputs widened to double, everything in double.
//   Precision::Naive "naive same precision": what a straightforward fp16/bf16 implementation
//                    gets — products accumulated in fp32, P (and dS) rounded to the input dtype
//                    before the GEMMs that consume them, outputs rounded to the dtype.
// The acceptance rule is max|ours - F64| <= 2 * max|Naive - F64| + 1e-5, per output, with
// ours' error counted beyond a per-element allowance where a kernel's fp32 arithmetic can
// legitimately part from the peer's: LSE's score accumulation (harness.hpp) and the gradients'
// rounding flips (RoundingFlips below).
//
// Both read the library's own tensors through a validated core::AttnParams (device pointers,
// element strides, varlen offsets), and use core::Mask for "which key does row i see", so the
// reference and the kernels cannot disagree on layout or masking semantics. Outputs are dense
// double arrays in logical order:
//   O, dQ  : [rows_q, Hq, D]   rows_q = B*Nq (batch form) or Tq (varlen), row-major by (b, i)
//   dK, dV : [rows_k, Hk, D]
//   LSE    : [B, Hq, Nq] or [Hq, Tq]
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/params.hpp"

namespace fa::cuda_test {

enum class Precision { F64, Naive };

// Dense index helpers shared by the host-side comparisons and the kernels' output writes.
struct DenseDims {
  int batch = 0;
  int64_t rows_q = 0;   // per batch (Nq) in the batch form; the total Tq in varlen
  int64_t rows_k = 0;
  int heads_q = 0;
  int heads_k = 0;
  int head_dim = 0;
  bool varlen = false;
  int64_t total_rows_q() const { return varlen ? rows_q : int64_t(batch) * rows_q; }
  int64_t total_rows_k() const { return varlen ? rows_k : int64_t(batch) * rows_k; }
  size_t o_elems() const { return size_t(total_rows_q()) * heads_q * head_dim; }
  size_t k_elems() const { return size_t(total_rows_k()) * heads_k * head_dim; }
  size_t lse_elems() const { return size_t(total_rows_q()) * heads_q; }
};

DenseDims dense_dims(const core::AttnParams& p);

// Forward: o [o_elems], lse [lse_elems] (device, double). Fully masked rows: o = 0, lse = -inf.
// score_terms (optional, [lse_elems]): per row, scale * max over visible keys j of
// sum_d |q_d k_jd| (0 when no key is visible). Any fp32 accumulation of a score's d products
// errs by at most about d ulps of that sum, whatever the order or rounding, so it sizes the
// LSE error a kernel's score arithmetic can cause: on heavy-tailed inputs it is many times |LSE|.
cudaError_t reference_forward(const core::AttnParams& p, Precision prec, double* o, double* lse,
                              cudaStream_t stream, double* score_terms = nullptr);

// The rounding-flip allowance of the gradients (Naive only; device, double, dense like dq / dk /
// dv; nullptr: not computed). A kernel rounds dS (for dQ, dK) and P (for dV) to the input dtype
// before its GEMMs, as the naive peer does, but from fp32 values a hair away from the peer's (its
// own O in D = rowsum(dO * O), exp2 instead of exp, its own LSE). Where one of them lies that close
// to a rounding midpoint, the kernel's copy lands one step away from the peer's, and when that
// term dominates a gradient element the element moves by the step times the other factor: one
// bf16 step of a dS of -1.08 (0.0078) times |K| = 3.39 times scale 0.177 is 0.0047 of a dQ of 0.50
// (session 32, docs/perf/LOG.md), more than the 2x rule's bound of 0.0039 there. Per element:
//   dQ[i, d] = scale * max_j step(dS_ij) |K_jd|, dK[j, d] = scale * max_i step(dS_ij) |Q_id|,
//   dV[j, d] = max_i step(P_ij) |dO_id|
// (max over the group's query heads for dK, dV): one flip of the largest term is forgiven.
struct RoundingFlips {
  double* dq = nullptr;
  double* dk = nullptr;
  double* dv = nullptr;
};

// Backward from the same precision's forward results (o, lse as produced by reference_forward
// with the same prec) and p.dout / p.do_str. Writes dq [o_elems], dk/dv [k_elems] (device,
// double); keys that no query sees (or beyond seqused_k) get exactly 0.
cudaError_t reference_backward(const core::AttnParams& p, Precision prec, const double* o,
                               const double* lse, double* dq, double* dk, double* dv,
                               cudaStream_t stream, const RoundingFlips& flips = {});

// Gathers a strided fp16/bf16 [B, N, H, D] (or varlen [T, H, D]) tensor into dense double.
cudaError_t gather_to_f64(const void* src, core::DType dtype, core::Strides str, int batch,
                          int64_t rows, int heads, int head_dim, double* dst, cudaStream_t stream);

// Fills n elements of dtype at dst with seeded random values: dist 0 normal(0, 1) * scale,
// dist 1 Student-t with 3 degrees of freedom * scale (heavy tails). Never zeros by design.
enum class Dist { Normal = 0, StudentT = 1 };
cudaError_t fill_random(void* dst, core::DType dtype, size_t n, uint64_t seed, Dist dist,
                        float scale, cudaStream_t stream);

}  // namespace fa::cuda_test
