// FP8 quantiser (FA3 §3.3: block quantisation, incoherent processing) on any CUDA GPU: writes the
// e4m3 copies and scales that the sm90a fp8 kernel reads (layout: core/fp8.hpp). Generic CUDA,
// memory bound; the attention kernel that follows costs far more.
//
// Data flow. One CTA of 4 warps per (row block, head, sequence); a warp owns one row of d channels
// at a time, lane l holding channels l*E .. l*E+E-1 (E = d/32) in registers:
//   Q, K  block_amax: load (fp16/bf16 -> fp32), incoherent: signs, butterfly stages h < E inside
//         the lane, h >= E across lanes (shfl_xor with lane mask h/E), times 1/sqrt(d); |x| max
//         over the warp (shuffles) and the CTA (shared memory).
//         BLOCK: the same CTA then recomputes each row (the second read hits L2) and stores
//         e4m3(x * 448/amax) as one E-byte store per lane. PER_HEAD: a first kernel writes each
//         block's amax into the workspace scratch, a second reduces each head's (one CTA per
//         head), the quantising CTAs read it.
//   V     the same two kernels give the (sequence, KV head) amax; the transposing CTA
//         quantises its 128 keys into a shared [128][d] byte tile (zeros past Nk), then writes
//         Vᵀ rows of 128 bytes, 16 per thread, gathering the keys in vt_key order.
// The arithmetic is src/cpu/fp8.hpp's, operation for operation: __fmul_rn/__fadd_rn/__fsub_rn
// keep nvcc from contracting a product and a sum into an FMA (--use_fast_math allows it),
// __fdiv_rn keeps the two divisions IEEE (fast math would approximate them); subnormal inputs are
// flushed explicitly, subnormal results by the build's flush-to-zero (the CPU copies both).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <string>

#include "cuda/dispatch.hpp"
#include "cuda/fp8/quantize.hpp"

namespace fa::cuda::fp8 {
namespace {

namespace cf = core::fp8;

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFullMask = 0xffffffffu;

// One tensor's quantisation: rows of d channels of `heads` heads, `rows` rows per scale block.
struct Args {
  const void* x = nullptr;
  core::Strides str;
  int64_t n = 0;  // rows per sequence
  int heads = 0;
  int64_t blocks = 0;  // ceil(n / rows)
  int rows = 0;
  bool incoherent = false;
  uint64_t seed = 0;
  float norm = 1.f;       // 1/sqrt(d), computed on the host as the CPU quantiser does
  uint8_t* x8 = nullptr;  // Q/K: [B, n, heads, d]; V: Vᵀ [B, heads, d, vt_keys]
  int64_t vt_keys = 0;
  float* scale = nullptr;  // Q/K: [B, heads, blocks]; V: [B, heads]
  float* amax = nullptr;   // scratch [B, heads, blocks]
};

__device__ __forceinline__ float to_f32(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float to_f32(__half v) {
  return __half2float(v);
}

__device__ __forceinline__ float flush(float x) {
  return fabsf(x) < 1.17549435e-38f ? copysignf(0.f, x) : x;
}

__device__ __forceinline__ uint8_t e4m3(float x) {
  return uint8_t(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// Row i of head h of sequence b, lane's E channels, transformed when a.incoherent.
template <typename T, int E>
__device__ __forceinline__ void load_row(const Args& a, int b, int h, int64_t i, int lane,
                                         const float (&sign)[E], float (&x)[E]) {
  const T* row = static_cast<const T*>(a.x) + a.str.offset(b, i, h) + lane * E;
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = flush(to_f32(row[e]));
  if (!a.incoherent) return;
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = __fmul_rn(x[e], sign[e]);
    // Stages h = 1 .. E/2: both channels of a pair in this lane.
#pragma unroll
  for (int hs = 1; hs < E; hs *= 2)
#pragma unroll
    for (int e = 0; e < E; ++e)
      if ((e & hs) == 0) {
        const float lo = x[e], hi = x[e + hs];
        x[e] = __fadd_rn(lo, hi);
        x[e + hs] = __fsub_rn(lo, hi);
      }
      // Stages h = E .. d/2: the partner channel is in lane ^ (h/E); the lower lane keeps a + b,
      // the upper a - b (a = the lower channel's value).
#pragma unroll
  for (int m = 1; m < 32; m *= 2)
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const float other = __shfl_xor_sync(kFullMask, x[e], m);
      x[e] = (lane & m) ? __fsub_rn(other, x[e]) : __fadd_rn(x[e], other);
    }
#pragma unroll
  for (int e = 0; e < E; ++e) x[e] = __fmul_rn(x[e], a.norm);
}

template <int E>
__device__ __forceinline__ void signs(const Args& a, int lane, float (&sign)[E]) {
#pragma unroll
  for (int e = 0; e < E; ++e)
    sign[e] = a.incoherent ? cf::hadamard_sign(a.seed, lane * E + e) : 1.f;
}

// Max over the CTA; every thread gets it. Max is exact, so the order does not matter.
__device__ float cta_max(float m) {
  __shared__ float part[kWarps];
#pragma unroll
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(kFullMask, m, o));
  __syncthreads();  // part may still be read from an earlier call
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = m;
  __syncthreads();
  m = part[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, part[w]);
  return m;
}

// amax of rows [blk*rows, min(n, (blk+1)*rows)) of (b, h), transformed.
template <typename T, int E>
__device__ float block_amax(const Args& a, int b, int h, int64_t blk, const float (&sign)[E]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float m = 0.f;
  for (int r = warp; r < a.rows; r += kWarps) {
    const int64_t i = blk * a.rows + r;
    if (i >= a.n) break;
    float x[E];
    load_row<T, E>(a, b, h, i, lane, sign, x);
#pragma unroll
    for (int e = 0; e < E; ++e) m = fmaxf(m, fabsf(x[e]));
  }
  return cta_max(m);
}

// The amax of (b, h): reduce_head_amax_kernel left it in the first block's scratch entry.
__device__ __forceinline__ float head_amax(const Args& a, int b, int h) {
  return a.amax[(int64_t(b) * a.heads + h) * a.blocks];
}

__device__ __forceinline__ float scale_of(float amax) {
  return amax > 0.f ? __fdiv_rn(amax, cf::kE4M3Max) : 1.f;
}
__device__ __forceinline__ float inv_of(float amax) {
  return amax > 0.f ? __fdiv_rn(cf::kE4M3Max, amax) : 1.f;
}

// E codes as one little-endian integer: byte e is channel lane*E + e.
template <int E>
__device__ __forceinline__ void store_codes(uint8_t* dst, const float (&x)[E], float inv) {
  uint64_t bits = 0;
#pragma unroll
  for (int e = 0; e < E; ++e) bits |= uint64_t(e4m3(__fmul_rn(x[e], inv))) << (8 * e);
  if constexpr (E == 2) *reinterpret_cast<uint16_t*>(dst) = uint16_t(bits);
  if constexpr (E == 4) *reinterpret_cast<uint32_t*>(dst) = uint32_t(bits);
  if constexpr (E == 8) *reinterpret_cast<uint64_t*>(dst) = bits;
}

// Grid (blocks, heads, batch): each block's amax into a.amax.
template <typename T, int E>
__global__ void __launch_bounds__(kThreads) block_amax_kernel(const Args a) {
  const int64_t blk = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  float sign[E];
  signs<E>(a, threadIdx.x % 32, sign);
  const float m = block_amax<T, E>(a, b, h, blk, sign);
  if (threadIdx.x == 0) a.amax[(int64_t(b) * a.heads + h) * a.blocks + blk] = m;
}

// Grid (heads, batch): the max of (b, h)'s block amax into its first entry. One CTA per head
// reduces once what every quantising CTA of the head would otherwise re-read.
__global__ void __launch_bounds__(kThreads) reduce_head_amax_kernel(const Args a) {
  const int h = blockIdx.x, b = blockIdx.y;
  float* am = a.amax + (int64_t(b) * a.heads + h) * a.blocks;
  float m = 0.f;
  for (int64_t i = threadIdx.x; i < a.blocks; i += kThreads) m = fmaxf(m, am[i]);
  m = cta_max(m);  // ends after every thread's reads (its barriers), so entry 0 may be overwritten
  if (threadIdx.x == 0) am[0] = m;
}

// Grid (blocks, heads, batch): Q or K rows of one block -> e4m3 [B, n, heads, d] and the scale.
template <typename T, int E, bool kPerHead>
__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(const Args a) {
  constexpr int d = 32 * E;
  const int64_t blk = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float sign[E];
  signs<E>(a, lane, sign);
  const float amax = kPerHead ? head_amax(a, b, h) : block_amax<T, E>(a, b, h, blk, sign);
  if (threadIdx.x == 0) a.scale[(int64_t(b) * a.heads + h) * a.blocks + blk] = scale_of(amax);
  const float inv = inv_of(amax);
  for (int r = warp; r < a.rows; r += kWarps) {
    const int64_t i = blk * a.rows + r;
    if (i >= a.n) break;
    float x[E];
    load_row<T, E>(a, b, h, i, lane, sign, x);
    store_codes<E>(a.x8 + ((int64_t(b) * a.n + i) * a.heads + h) * d + lane * E, x, inv);
  }
}

// Grid (key blocks, KV heads, batch): 128 keys of V -> 128 columns of Vᵀ (all d rows), permuted
// within each 32-key chunk by vt_key, zero past n; block 0 also writes the head's scale.
template <typename T, int E>
__global__ void __launch_bounds__(kThreads) quantize_vt_kernel(const Args a) {
  constexpr int d = 32 * E;
  constexpr int kCols = cf::kKBlock;
  constexpr int kGroup = 16;                      // bytes per thread store
  __shared__ alignas(16) uint8_t tile[kCols][d];  // [key][channel], 8..32 KB
  const int64_t blk = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float amax = head_amax(a, b, h);
  if (blk == 0 && threadIdx.x == 0) a.scale[int64_t(b) * a.heads + h] = scale_of(amax);
  const float inv = inv_of(amax);
  float sign[E];
  signs<E>(a, lane, sign);  // all 1: a.incoherent is false for V
  for (int r = warp; r < kCols; r += kWarps) {
    const int64_t j = blk * kCols + r;
    float x[E];
    if (j < a.n) {
      load_row<T, E>(a, b, h, j, lane, sign, x);
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e) x[e] = 0.f;
    }
    store_codes<E>(&tile[r][lane * E], x, inv);
  }
  __syncthreads();
  uint8_t* head = a.x8 + (int64_t(b) * a.heads + h) * d * a.vt_keys + blk * kCols;
  for (int g = threadIdx.x; g < d * (kCols / kGroup); g += kThreads) {
    const int c = g / (kCols / kGroup), s0 = (g % (kCols / kGroup)) * kGroup;
    uint32_t w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int t = 0; t < kGroup; ++t) {
      const int col = s0 + t;
      const int key = col / cf::kVtChunk * cf::kVtChunk + cf::vt_key(col % cf::kVtChunk);
      w[t / 4] |= uint32_t(tile[key][c]) << (8 * (t % 4));
    }
    *reinterpret_cast<uint4*>(head + int64_t(c) * a.vt_keys + s0) =
        make_uint4(w[0], w[1], w[2], w[3]);
  }
}

template <typename T, int E>
core::Status launch(const core::AttnParams& p, const fa_fp8& f, bool do_q, bool do_kv, uint8_t* ws,
                    cudaStream_t stream) {
  const Workspace w = workspace(p);
  const bool per_head = f.scaling == FA_FP8_SCALING_PER_HEAD;
  const float norm = float(1.0 / std::sqrt(double(p.head_dim)));  // = cpu::fp8::hadamard_norm
  auto rows = [&](const void* x, const core::Strides& str, int64_t n, int heads, int rows_per_block,
                  int64_t x8, int64_t scale, int64_t amax) {
    Args a;
    a.x = x, a.str = str, a.n = n, a.heads = heads, a.rows = rows_per_block;
    a.blocks = cf::ceil_div(n, rows_per_block);
    a.incoherent = f.incoherent != 0, a.seed = f.seed, a.norm = norm;
    a.x8 = ws + x8;
    a.scale = reinterpret_cast<float*>(ws + scale);
    a.amax = reinterpret_cast<float*>(ws + amax);
    return a;
  };
  auto grid = [&](const Args& a) {
    return dim3(unsigned(a.blocks), unsigned(a.heads), unsigned(p.batch));
  };
  auto quantize_rows = [&](const Args& a) {
    if (a.blocks == 0 || p.batch == 0) return;
    if (per_head) {
      block_amax_kernel<T, E><<<grid(a), kThreads, 0, stream>>>(a);
      reduce_head_amax_kernel<<<dim3(unsigned(a.heads), unsigned(p.batch)), kThreads, 0, stream>>>(
          a);
      quantize_rows_kernel<T, E, true><<<grid(a), kThreads, 0, stream>>>(a);
    } else {
      quantize_rows_kernel<T, E, false><<<grid(a), kThreads, 0, stream>>>(a);
    }
  };
  if (do_q)
    quantize_rows(
        rows(p.q, p.q_str, p.seqlen_q, p.heads_q, cf::kQBlock, w.l.q8, w.l.q_scale, w.q_amax));
  if (do_kv) {
    quantize_rows(
        rows(p.k, p.k_str, p.seqlen_k, p.heads_kv, cf::kKBlock, w.l.k8, w.l.k_scale, w.k_amax));
    Args v =
        rows(p.v, p.v_str, p.seqlen_k, p.heads_kv, cf::kKBlock, w.l.vt8, w.l.v_scale, w.v_amax);
    v.incoherent = false;
    v.vt_keys = w.l.vt_keys;
    if (v.blocks > 0 && p.batch > 0) {
      block_amax_kernel<T, E><<<grid(v), kThreads, 0, stream>>>(v);
      reduce_head_amax_kernel<<<dim3(unsigned(v.heads), unsigned(p.batch)), kThreads, 0, stream>>>(
          v);
      quantize_vt_kernel<T, E><<<grid(v), kThreads, 0, stream>>>(v);
    }
  }
  return check_launch("fp8 quantiser");
}

template <typename T>
core::Status launch_dim(const core::AttnParams& p, const fa_fp8& f, bool q, bool kv, uint8_t* ws,
                        cudaStream_t s) {
  switch (p.head_dim) {
    case 64:
      return launch<T, 2>(p, f, q, kv, ws, s);
    case 128:
      return launch<T, 4>(p, f, q, kv, ws, s);
    case 256:
      return launch<T, 8>(p, f, q, kv, ws, s);
  }
  return core::unsupported("fp8 quantiser: head_dim " + std::to_string(p.head_dim) +
                           " (64, 128 or 256)");
}

}  // namespace

Workspace workspace(const core::AttnParams& p) {
  Workspace w;
  w.l = cf::layout(p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim);
  const int64_t f = int64_t(sizeof(float));
  w.q_amax = w.l.bytes;
  w.k_amax = cf::align16(w.q_amax + int64_t(p.batch) * p.heads_q * w.l.q_blocks * f);
  w.v_amax = cf::align16(w.k_amax + int64_t(p.batch) * p.heads_kv * w.l.k_blocks * f);
  w.bytes = cf::align16(w.v_amax + int64_t(p.batch) * p.heads_kv * w.l.k_blocks * f);
  return w;
}

core::Status quantize(const core::AttnParams& p, const fa_fp8& f, bool q, bool kv, uint8_t* ws,
                      cudaStream_t stream) {
  if (p.batch > 65535 || p.heads_q > 65535)  // grid y (heads) and z (sequences)
    return core::unsupported("fp8 quantiser: batch and heads must be at most 65535, got " +
                             std::to_string(p.batch) + " and " + std::to_string(p.heads_q));
  if (p.dtype == core::DType::BF16) return launch_dim<__nv_bfloat16>(p, f, q, kv, ws, stream);
  if (p.dtype == core::DType::F16) return launch_dim<__half>(p, f, q, kv, ws, stream);
  return core::unsupported(std::string("fp8 quantiser: dtype ") + core::dtype_name(p.dtype) +
                           " (float16 or bfloat16)");
}

}  // namespace fa::cuda::fp8
