// The CUDA tests' reference: naive O(N^2) attention on the GPU, forward (O, LSE) and backward
// (dQ, dK, dV through P, dP and D = rowsum(dO * O)), in two precisions (see reference_f64.hpp).
//
// Data flow, one thread block (4 warps) per output row:
//   forward   block (i, h, b): the q row is widened into shared memory; warp w computes the
//             scores of keys w, w+4, ... (lanes split the head dim, shuffle reduction) into a
//             shared score row of k_len entries; block reductions give the row max and sum; then
//             each thread owns head-dim columns and sums P[j] * V[j, d] over the whole row.
//   dQ        block (i, h, b): D_i, then dS[j] for every key into the shared row, then
//             dQ[d] = scale * sum_j dS[j] K[j, d].
//   dK, dV    block (j, hk, b): loops over the query rows of every query head of the KV head's
//             group in chunks of kRowChunk; warps fill P and dS for the chunk, threads own
//             head-dim columns and accumulate dV += P dO and dK += dS Q.
// Synchronisation is __syncthreads between the "fill shared" and "consume shared" phases only.
// Nothing here is tuned: it must be obviously right, and the H200's fp64 rate makes it fast
// enough for N = 4097 with several heads.
//
// Built without --use_fast_math (tests/CMakeLists.txt): exp/log/tanh are the accurate ones.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <utility>

#include "core/mask.hpp"
#include "core/softmax.hpp"
#include "reference_f64.hpp"

namespace fa::cuda_test {
namespace {

using core::AttnParams;
using core::DType;
using core::Mask;
using core::SeqInfo;

constexpr int kThreads = 128;  // 4 warps
constexpr int kWarps = kThreads / 32;
constexpr int kMaxHeadDim = 256;
constexpr int kRowChunk = 64;  // query rows per shared-memory chunk in the dK/dV kernel

__device__ __forceinline__ float load_elem(const void* base, DType dt, int64_t idx) {
  if (dt == DType::F16) return __half2float(static_cast<const __half*>(base)[idx]);
  return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[idx]);
}

// Rounds a float to the input dtype and back: what a kernel does when it converts P or dS to
// fp16/bf16 for a tensor-core GEMM, or writes an output.
__device__ __forceinline__ float round_to(float x, DType dt) {
  if (dt == DType::F16) return __half2float(__float2half_rn(x));
  return __bfloat162float(__float2bfloat16_rn(x));
}

// The distance from x (already rounded to dt) to its neighbour away from zero: how far a kernel's
// copy of x moves when its fp32 value, a hair from the peer's, lies on the other side of a
// rounding midpoint. 0 for x = 0 (masked terms).
__device__ __forceinline__ float rounding_step(float x, DType dt) {
  if (x == 0.f) return 0.f;
  const int e = ilogbf(x);
  if (dt == DType::F16) return ldexpf(1.f, (e < -14 ? -14 : e) - 10);  // subnormals: 2^-24
  return ldexpf(1.f, e - 7);
}

// The per-precision arithmetic. F64 widens to double; Naive stays in float and rounds where a
// half-precision kernel must.
template <Precision kPrec>
struct Arith;

template <>
struct Arith<Precision::F64> {
  using Acc = double;
  static __device__ Acc transform(Acc qk, float scale, float softcap) {
    // core::score_transform in double: softcap * tanh(qk * scale / softcap), or qk * scale.
    if (softcap > 0.f) return double(softcap) * tanh(qk * (double(scale) / double(softcap)));
    return qk * double(scale);
  }
  // d score / d qk divided by scale (scale is applied once at the end, as kernels do).
  static __device__ Acc transform_grad_unscaled(Acc score, float softcap) {
    if (softcap > 0.f) {
      Acc t = score / double(softcap);
      return 1.0 - t * t;
    }
    return 1.0;
  }
  static __device__ Acc ex(Acc x) { return exp(x); }
  static __device__ Acc lg(Acc x) { return log(x); }
  static __device__ Acc round_p(Acc x, DType) { return x; }
  static __device__ Acc round_out(Acc x, DType) { return x; }
};

template <>
struct Arith<Precision::Naive> {
  using Acc = float;
  static __device__ Acc transform(Acc qk, float scale, float softcap) {
    return core::score_transform(qk, scale, softcap);
  }
  static __device__ Acc transform_grad_unscaled(Acc score, float softcap) {
    return core::score_transform_grad(score, 1.f, softcap);
  }
  static __device__ Acc ex(Acc x) { return expf(x); }
  static __device__ Acc lg(Acc x) { return logf(x); }
  static __device__ Acc round_p(Acc x, DType dt) { return round_to(x, dt); }
  static __device__ Acc round_out(Acc x, DType dt) { return round_to(x, dt); }
};

template <typename T>
__device__ T warp_sum(T x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <typename T>
__device__ T warp_max(T x) {
  for (int o = 16; o > 0; o >>= 1) {
    T y = __shfl_xor_sync(0xffffffffu, x, o);
    x = y > x ? y : x;
  }
  return x;
}

// Block-wide reductions over kThreads threads; every thread gets the result.
template <typename T>
__device__ T block_sum(T x, T* scratch) {
  x = warp_sum(x);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  T r = 0;
  for (int w = 0; w < kWarps; ++w) r += scratch[w];
  return r;
}

template <typename T>
__device__ T block_max(T x, T* scratch) {
  x = warp_max(x);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < kWarps; ++w) r = scratch[w] > r ? scratch[w] : r;
  return r;
}

// Dense logical row of query row i (key row j) of sequence b; see reference_f64.hpp.
__device__ __forceinline__ int64_t dense_row_q(const AttnParams& p, const SeqInfo& s, int b, int64_t i) {
  return p.varlen ? s.q_start + i : int64_t(b) * p.seqlen_q + i;
}
__device__ __forceinline__ int64_t dense_row_k(const AttnParams& p, const SeqInfo& s, int b, int64_t j) {
  return p.varlen ? s.k_start + j : int64_t(b) * p.seqlen_k + j;
}
__device__ __forceinline__ int64_t dense_lse(const AttnParams& p, const SeqInfo& s, int b, int h, int64_t i) {
  if (p.varlen) return int64_t(h) * p.total_q + s.q_start + i;
  return (int64_t(b) * p.heads_q + h) * p.seqlen_q + i;
}

// ---------------------------------------------------------------------------------------------
// Forward: grid (max q rows, Hq, B); dynamic shared memory = k_len Acc's (the score row).
// ---------------------------------------------------------------------------------------------
template <Precision kPrec>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(AttnParams p, double* o_out, double* lse_out, double* terms_out) {
  using A = Arith<kPrec>;
  using Acc = typename A::Acc;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Acc* row = reinterpret_cast<Acc*>(smem_raw);
  __shared__ Acc q_row[kMaxHeadDim];
  __shared__ Acc red[kWarps];

  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t i = blockIdx.x;
  const SeqInfo s = core::seq_info(p, b);
  if (i >= s.q_len) return;
  const int hk = h / p.group_size();
  const int D = p.head_dim;
  const Mask mask(s.q_len, s.k_len, p.window_left, p.window_right);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const int64_t q_off = p.q_str.offset(b, s.q_start + i, h);
  for (int d = threadIdx.x; d < D; d += kThreads) q_row[d] = Acc(load_elem(p.q, p.dtype, q_off + d));
  __syncthreads();

  // Scores of this row; masked keys get -inf. terms: the largest sum of |q_d k_jd| over visible
  // keys (what bounds any fp32 accumulation's error in a score: reference_f64.hpp).
  Acc terms = 0;
  for (int64_t j = warp; j < s.k_len; j += kWarps) {
    const int64_t k_off = p.k_str.offset(b, s.k_start + j, hk);
    Acc dot = 0, abs_dot = 0;
    for (int d = lane; d < D; d += 32) {
      const Acc t = q_row[d] * Acc(load_elem(p.k, p.dtype, k_off + d));
      dot += t;
      if (terms_out) abs_dot += t < 0 ? -t : t;
    }
    dot = warp_sum(dot);
    const bool allowed = mask.allowed(i, j);
    if (terms_out && allowed) {
      abs_dot = warp_sum(abs_dot);
      terms = abs_dot > terms ? abs_dot : terms;
    }
    if (lane == 0) row[j] = allowed ? A::transform(dot, p.scale, p.softcap) : Acc(-INFINITY);
  }
  __syncthreads();
  if (terms_out) {
    terms = block_max(terms, red);
    if (threadIdx.x == 0) terms_out[dense_lse(p, s, b, h, i)] = double(terms) * double(p.scale);
  }

  Acc m = -INFINITY;
  for (int64_t j = threadIdx.x; j < s.k_len; j += kThreads) m = row[j] > m ? row[j] : m;
  m = block_max(m, red);

  const int64_t o_row = dense_row_q(p, s, b, i);
  double* o = o_out + (o_row * p.heads_q + h) * D;
  if (m == Acc(-INFINITY)) {  // no visible key (or k_len = 0): O = 0, LSE = -inf
    for (int d = threadIdx.x; d < D; d += kThreads) o[d] = 0.0;
    if (threadIdx.x == 0) lse_out[dense_lse(p, s, b, h, i)] = -INFINITY;
    return;
  }

  // P = exp(s - m): the row sum uses the unrounded P; the P.V product uses P as the GEMM sees it.
  Acc l = 0;
  for (int64_t j = threadIdx.x; j < s.k_len; j += kThreads) {
    Acc pj = row[j] == Acc(-INFINITY) ? Acc(0) : A::ex(row[j] - m);
    l += pj;
    row[j] = A::round_p(pj, p.dtype);
  }
  l = block_sum(l, red);  // block_sum's barriers also publish row[] to every thread

  for (int d = threadIdx.x; d < D; d += kThreads) {
    Acc acc = 0;
    for (int64_t j = 0; j < s.k_len; ++j) {
      if (row[j] == Acc(0)) continue;
      acc += row[j] * Acc(load_elem(p.v, p.dtype, p.v_str.offset(b, s.k_start + j, hk) + d));
    }
    o[d] = double(A::round_out(acc / l, p.dtype));
  }
  if (threadIdx.x == 0) lse_out[dense_lse(p, s, b, h, i)] = double(m + A::lg(l));
}

// ---------------------------------------------------------------------------------------------
// Backward, dQ and D: grid (max q rows, Hq, B); dynamic shared memory = k_len Acc's (dS row).
// ---------------------------------------------------------------------------------------------
template <Precision kPrec>
__global__ void __launch_bounds__(kThreads)
    backward_dq_kernel(AttnParams p, const double* o_in, const double* lse_in, double* delta_out,
                       double* dq_out, double* flip_dq) {
  using A = Arith<kPrec>;
  using Acc = typename A::Acc;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Acc* ds_row = reinterpret_cast<Acc*>(smem_raw);
  // Naive: each dS's rounding step, past ds_row and its padding (backward_impl sizes both).
  float* ds_step = reinterpret_cast<float*>(ds_row + p.seqlen_k + 256);
  __shared__ Acc q_row[kMaxHeadDim];
  __shared__ Acc do_row[kMaxHeadDim];
  __shared__ Acc red[kWarps];

  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t i = blockIdx.x;
  const SeqInfo s = core::seq_info(p, b);
  if (i >= s.q_len) return;
  const int hk = h / p.group_size();
  const int D = p.head_dim;
  const Mask mask(s.q_len, s.k_len, p.window_left, p.window_right);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t o_row = dense_row_q(p, s, b, i);
  const double* o = o_in + (o_row * p.heads_q + h) * D;
  double* dq = dq_out + (o_row * p.heads_q + h) * D;
  const int64_t li = dense_lse(p, s, b, h, i);
  const Acc lse = Acc(lse_in[li]);

  const int64_t q_off = p.q_str.offset(b, s.q_start + i, h);
  const int64_t do_off = p.do_str.offset(b, s.q_start + i, h);
  Acc delta_part = 0;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    q_row[d] = Acc(load_elem(p.q, p.dtype, q_off + d));
    do_row[d] = Acc(load_elem(p.dout, p.dtype, do_off + d));
    delta_part += do_row[d] * Acc(o[d]);
  }
  // D_i = rowsum(dO * O) = sum_j P_ij dP_ij; its block_sum barriers also publish q_row/do_row.
  const Acc delta = block_sum(delta_part, red);
  if (threadIdx.x == 0) delta_out[li] = double(delta);
  if (lse == Acc(-INFINITY)) {  // fully masked row: P = 0, so dQ = 0
    for (int d = threadIdx.x; d < D; d += kThreads) dq[d] = 0.0;
    return;
  }

  for (int64_t j = warp; j < s.k_len; j += kWarps) {
    const int64_t k_off = p.k_str.offset(b, s.k_start + j, hk);
    const int64_t v_off = p.v_str.offset(b, s.k_start + j, hk);
    Acc qk = 0, dp = 0;
    for (int d = lane; d < D; d += 32) {
      qk += q_row[d] * Acc(load_elem(p.k, p.dtype, k_off + d));
      dp += do_row[d] * Acc(load_elem(p.v, p.dtype, v_off + d));
    }
    qk = warp_sum(qk);
    dp = warp_sum(dp);
    if (lane == 0) {
      Acc ds = 0;
      if (mask.allowed(i, j)) {
        const Acc score = A::transform(qk, p.scale, p.softcap);
        const Acc pij = A::ex(score - lse);
        ds = A::round_p(pij * (dp - delta) * A::transform_grad_unscaled(score, p.softcap), p.dtype);
      }
      ds_row[j] = ds;
      if constexpr (kPrec == Precision::Naive) ds_step[j] = rounding_step(ds, p.dtype);
    }
  }
  __syncthreads();

  for (int d = threadIdx.x; d < D; d += kThreads) {
    Acc acc = 0;
    float flip = 0.f;  // Naive: the largest single term's rounding step (see RoundingFlips)
    for (int64_t j = 0; j < s.k_len; ++j) {
      if (ds_row[j] == Acc(0)) continue;
      const Acc kv = Acc(load_elem(p.k, p.dtype, p.k_str.offset(b, s.k_start + j, hk) + d));
      acc += ds_row[j] * kv;
      if constexpr (kPrec == Precision::Naive) flip = fmaxf(flip, ds_step[j] * fabsf(kv));
    }
    dq[d] = double(A::round_out(acc * Acc(p.scale), p.dtype));
    if (flip_dq) flip_dq[(o_row * p.heads_q + h) * D + d] = double(flip) * double(p.scale);
  }
}

// ---------------------------------------------------------------------------------------------
// Backward, dK and dV: grid (max k rows, Hk, B). Sums over every query head of the group (GQA).
// ---------------------------------------------------------------------------------------------
template <Precision kPrec>
__global__ void __launch_bounds__(kThreads)
    backward_dkdv_kernel(AttnParams p, const double* lse_in, const double* delta_in, double* dk_out,
                         double* dv_out, double* flip_dk, double* flip_dv) {
  using A = Arith<kPrec>;
  using Acc = typename A::Acc;
  constexpr int kCols = kMaxHeadDim / kThreads;  // head-dim columns owned per thread
  __shared__ Acc k_row[kMaxHeadDim];
  __shared__ Acc v_row[kMaxHeadDim];
  __shared__ Acc p_chunk[kRowChunk];
  __shared__ Acc ds_chunk[kRowChunk];
  __shared__ float p_step[kRowChunk];  // Naive: the rounding steps of P and dS
  __shared__ float ds_step[kRowChunk];
  __shared__ int64_t qrow_chunk[kRowChunk];  // element offset of the chunk's q rows (dO likewise)
  __shared__ int64_t dorow_chunk[kRowChunk];

  const int b = blockIdx.z, hk = blockIdx.y;
  const int64_t j = blockIdx.x;
  const SeqInfo s = core::seq_info(p, b);
  if (j >= s.k_len) return;  // unused keys keep the zeros the host wrote
  const int D = p.head_dim;
  const int G = p.group_size();
  const Mask mask(s.q_len, s.k_len, p.window_left, p.window_right);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const int64_t k_off = p.k_str.offset(b, s.k_start + j, hk);
  const int64_t v_off = p.v_str.offset(b, s.k_start + j, hk);
  for (int d = threadIdx.x; d < D; d += kThreads) {
    k_row[d] = Acc(load_elem(p.k, p.dtype, k_off + d));
    v_row[d] = Acc(load_elem(p.v, p.dtype, v_off + d));
  }
  Acc dk_acc[kCols], dv_acc[kCols];
  float dk_flip[kCols], dv_flip[kCols];  // Naive: the largest single term's rounding step
  for (int c = 0; c < kCols; ++c) dk_acc[c] = dv_acc[c] = 0, dk_flip[c] = dv_flip[c] = 0.f;
  __syncthreads();

  for (int g = 0; g < G; ++g) {
    const int h = hk * G + g;
    for (int64_t i0 = 0; i0 < s.q_len; i0 += kRowChunk) {
      const int n = int(s.q_len - i0 < kRowChunk ? s.q_len - i0 : kRowChunk);
      for (int r = warp; r < n; r += kWarps) {
        const int64_t i = i0 + r;
        const int64_t q_off = p.q_str.offset(b, s.q_start + i, h);
        const int64_t do_off = p.do_str.offset(b, s.q_start + i, h);
        Acc pij = 0, ds = 0;
        if (mask.allowed(i, j)) {
          Acc qk = 0, dp = 0;
          for (int d = lane; d < D; d += 32) {
            qk += Acc(load_elem(p.q, p.dtype, q_off + d)) * k_row[d];
            dp += Acc(load_elem(p.dout, p.dtype, do_off + d)) * v_row[d];
          }
          qk = warp_sum(qk);
          dp = warp_sum(dp);
          const int64_t li = dense_lse(p, s, b, h, i);
          const Acc score = A::transform(qk, p.scale, p.softcap);
          const Acc praw = A::ex(score - Acc(lse_in[li]));
          pij = A::round_p(praw, p.dtype);
          ds = A::round_p(praw * (dp - Acc(delta_in[li])) * A::transform_grad_unscaled(score, p.softcap),
                          p.dtype);
        }
        if (lane == 0) {
          p_chunk[r] = pij;
          ds_chunk[r] = ds;
          if constexpr (kPrec == Precision::Naive) {
            p_step[r] = rounding_step(pij, p.dtype);
            ds_step[r] = rounding_step(ds, p.dtype);
          }
          qrow_chunk[r] = q_off;
          dorow_chunk[r] = do_off;
        }
      }
      __syncthreads();
      for (int c = 0; c < kCols; ++c) {
        const int d = threadIdx.x + c * kThreads;
        if (d >= D) break;
        for (int r = 0; r < n; ++r) {
          if (p_chunk[r] == Acc(0) && ds_chunk[r] == Acc(0)) continue;
          const Acc dov = Acc(load_elem(p.dout, p.dtype, dorow_chunk[r] + d));
          const Acc qv = Acc(load_elem(p.q, p.dtype, qrow_chunk[r] + d));
          dv_acc[c] += p_chunk[r] * dov;
          dk_acc[c] += ds_chunk[r] * qv;
          if constexpr (kPrec == Precision::Naive) {
            dv_flip[c] = fmaxf(dv_flip[c], p_step[r] * fabsf(dov));
            dk_flip[c] = fmaxf(dk_flip[c], ds_step[r] * fabsf(qv));
          }
        }
      }
      __syncthreads();
    }
  }

  const int64_t k_dense = dense_row_k(p, s, b, j);
  double* dk = dk_out + (k_dense * p.heads_kv + hk) * D;
  double* dv = dv_out + (k_dense * p.heads_kv + hk) * D;
  for (int c = 0; c < kCols; ++c) {
    const int d = threadIdx.x + c * kThreads;
    if (d >= D) break;
    dk[d] = double(A::round_out(dk_acc[c] * Acc(p.scale), p.dtype));
    dv[d] = double(A::round_out(dv_acc[c], p.dtype));
    const int64_t fe = (k_dense * p.heads_kv + hk) * D + d;
    if (flip_dk) flip_dk[fe] = double(dk_flip[c]) * double(p.scale);
    if (flip_dv) flip_dv[fe] = double(dv_flip[c]);
  }
}

__global__ void gather_kernel(const void* src, DType dt, core::Strides str, int64_t rows, int heads,
                              int head_dim, int64_t total, double* dst) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int d = int(e % head_dim);
    const int h = int((e / head_dim) % heads);
    const int64_t r = e / (int64_t(head_dim) * heads);
    const int64_t b = r / rows, i = r % rows;
    dst[e] = double(load_elem(src, dt, str.offset(b, i, h) + d));
  }
}

// splitmix64: a counter-based hash, so element e's value depends only on (seed, e).
__device__ __forceinline__ uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float uniform01(uint64_t h) {  // in (0, 1]
  return float((h >> 40) + 1) * (1.0f / 16777216.0f);
}
__device__ __forceinline__ float normal(uint64_t seed, uint64_t e, int k) {
  const uint64_t h = mix(seed ^ mix(e * 8 + k));
  const float u1 = uniform01(h), u2 = uniform01(mix(h));
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

__global__ void fill_kernel(void* dst, DType dt, size_t n, uint64_t seed, int dist, float scale) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n; e += size_t(gridDim.x) * blockDim.x) {
    float x = normal(seed, e, 0);
    if (dist == int(Dist::StudentT)) {  // t_3 = z / sqrt(chi2_3 / 3)
      const float a = normal(seed, e, 1), c = normal(seed, e, 2), f = normal(seed, e, 3);
      x = x / sqrtf((a * a + c * c + f * f) / 3.f + 1e-6f);
      x = fminf(fmaxf(x, -60.f), 60.f);  // keep scaled values finite in fp16
    }
    x *= scale;
    if (dt == DType::F16) {
      __half v = __float2half_rn(x);
      if (__half2float(v) == 0.f) v = __float2half_rn(scale * 1e-3f);  // never exact zeros
      static_cast<__half*>(dst)[e] = v;
    } else {
      __nv_bfloat16 v = __float2bfloat16_rn(x);
      if (__bfloat162float(v) == 0.f) v = __float2bfloat16_rn(scale * 1e-3f);
      static_cast<__nv_bfloat16*>(dst)[e] = v;
    }
  }
}

template <typename Kernel>
cudaError_t set_smem(Kernel k, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
}

template <Precision kPrec>
cudaError_t forward_impl(const AttnParams& p, double* o, double* lse, double* terms,
                         cudaStream_t stream) {
  using Acc = typename Arith<kPrec>::Acc;
  // Padded: memcheck saw 16-byte reads past seqlen_k entries in the forward (Quick q17_k17).
  const size_t smem = (size_t(p.seqlen_k) + 256) * sizeof(Acc);
  cudaError_t e = set_smem(forward_kernel<kPrec>, smem);
  if (e != cudaSuccess) return e;
  if (p.seqlen_q == 0 || p.batch == 0) return cudaSuccess;
  dim3 grid(unsigned(p.seqlen_q), unsigned(p.heads_q), unsigned(p.batch));
  forward_kernel<kPrec><<<grid, kThreads, smem, stream>>>(p, o, lse, terms);
  return cudaGetLastError();
}

template <Precision kPrec>
cudaError_t backward_impl(const AttnParams& p, const double* o, const double* lse, double* dq,
                          double* dk, double* dv, const RoundingFlips& flips, cudaStream_t stream) {
  using Acc = typename Arith<kPrec>::Acc;
  const DenseDims dd = dense_dims(p);
  cudaError_t e;
  for (auto [buf, n] : {std::pair<double*, size_t>{flips.dq, dd.o_elems()},
                        {flips.dk, dd.k_elems()},
                        {flips.dv, dd.k_elems()}})
    if (buf && (e = cudaMemsetAsync(buf, 0, n * sizeof(double), stream)) != cudaSuccess) return e;
  // Keys no block visits (beyond seqused_k) must read as 0; so must dQ rows of empty batches.
  if ((e = cudaMemsetAsync(dk, 0, dd.k_elems() * sizeof(double), stream)) != cudaSuccess) return e;
  if ((e = cudaMemsetAsync(dv, 0, dd.k_elems() * sizeof(double), stream)) != cudaSuccess) return e;
  if ((e = cudaMemsetAsync(dq, 0, dd.o_elems() * sizeof(double), stream)) != cudaSuccess) return e;
  if (p.batch == 0) return cudaSuccess;
  double* delta = nullptr;
  if ((e = cudaMallocAsync(&delta, (dd.lse_elems() + 1) * sizeof(double), stream)) != cudaSuccess) return e;
  // Padded: memcheck saw 16-byte reads past seqlen_k entries in the forward (Quick q17_k17).
  const size_t smem = (size_t(p.seqlen_k) + 256) * sizeof(Acc) +
                      (kPrec == Precision::Naive ? size_t(p.seqlen_k) * sizeof(float) : 0);
  if ((e = set_smem(backward_dq_kernel<kPrec>, smem)) != cudaSuccess) return e;
  if (p.seqlen_q > 0) {
    dim3 grid(unsigned(p.seqlen_q), unsigned(p.heads_q), unsigned(p.batch));
    backward_dq_kernel<kPrec><<<grid, kThreads, smem, stream>>>(p, o, lse, delta, dq, flips.dq);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
  }
  if (p.seqlen_k > 0) {
    dim3 grid(unsigned(p.seqlen_k), unsigned(p.heads_kv), unsigned(p.batch));
    backward_dkdv_kernel<kPrec>
        <<<grid, kThreads, 0, stream>>>(p, lse, delta, dk, dv, flips.dk, flips.dv);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
  }
  return cudaFreeAsync(delta, stream);
}

}  // namespace

DenseDims dense_dims(const core::AttnParams& p) {
  DenseDims d;
  d.batch = p.batch;
  d.varlen = p.varlen;
  d.rows_q = p.varlen ? p.total_q : p.seqlen_q;
  d.rows_k = p.varlen ? p.total_k : p.seqlen_k;
  d.heads_q = p.heads_q;
  d.heads_k = p.heads_kv;
  d.head_dim = p.head_dim;
  return d;
}

cudaError_t reference_forward(const core::AttnParams& p, Precision prec, double* o, double* lse,
                              cudaStream_t stream, double* score_terms) {
  return prec == Precision::F64 ? forward_impl<Precision::F64>(p, o, lse, score_terms, stream)
                                : forward_impl<Precision::Naive>(p, o, lse, score_terms, stream);
}

cudaError_t reference_backward(const core::AttnParams& p, Precision prec, const double* o,
                               const double* lse, double* dq, double* dk, double* dv,
                               cudaStream_t stream, const RoundingFlips& flips) {
  if (prec == Precision::F64)
    return backward_impl<Precision::F64>(p, o, lse, dq, dk, dv, RoundingFlips{}, stream);
  return backward_impl<Precision::Naive>(p, o, lse, dq, dk, dv, flips, stream);
}

cudaError_t gather_to_f64(const void* src, core::DType dtype, core::Strides str, int batch,
                          int64_t rows, int heads, int head_dim, double* dst, cudaStream_t stream) {
  const int64_t total = int64_t(batch) * rows * heads * head_dim;
  if (total == 0) return cudaSuccess;
  const int64_t blocks = (total + 255) / 256;
  gather_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(src, dtype, str, rows, heads,
                                                                                head_dim, total, dst);
  return cudaGetLastError();
}

cudaError_t fill_random(void* dst, core::DType dtype, size_t n, uint64_t seed, Dist dist, float scale,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const size_t blocks = (n + 255) / 256;
  fill_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(dst, dtype, n, seed, int(dist),
                                                                              scale);
  return cudaGetLastError();
}

}  // namespace fa::cuda_test
