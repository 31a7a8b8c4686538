// The CPU backend of the FP8 forward (fa_fp8_forward): quantise Q, K, V exactly as the CUDA
// quantiser does (src/cpu/fp8.hpp states the arithmetic), dequantise the e4m3 copies to fp32 and
// run the tiled CPU forward (src/cpu/forward.cpp) on them. Q and K stay rotated: (QM)(KM)ᵀ = QKᵀ.
// This is the quantisation's effect on attention, not the kernel's: P is not rounded to e4m3 here
// (the sm90a kernel rounds it before P·V), and S and O are accumulated in fp32 as on the GPU.
// Its use is testing and accuracy studies (tests/cpu/test_fp8.cpp), so it favours clarity: the
// quantisation keeps one fp32 copy of a head's rows at a time, the forward full fp32 copies.
#include "cpu/fp8.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/backend.hpp"
#include "cpu/convert.hpp"
#include "cpu/parallel.hpp"

namespace fa::cpu {
namespace fp8 {
namespace {

namespace cf = core::fp8;

// Rows [0, n) of one head of a [B, N, H, d] fp16/bf16 tensor as fp32 (flushed as the GPU does).
void load_head(const core::AttnParams& p, const void* base, const core::Strides& str, int b, int h,
               int64_t n, std::vector<float>& out) {
  const int d = p.head_dim;
  out.resize(size_t(n) * d);
  const HeadView view{static_cast<const char*>(base), p.dtype, str, b, h};
  for (int64_t i = 0; i < n; ++i) {
    float* row = out.data() + size_t(i) * d;
    load_span(view.row(i), p.dtype, d, row);
    for (int c = 0; c < d; ++c) row[c] = ftz(row[c]);
  }
}

float amax_of(const float* x, int64_t n) {
  float m = 0.f;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
  return m;
}

float scale_of(float amax) {
  return amax > 0.f ? amax / cf::kE4M3Max : 1.f;
}
float inv_of(float amax) {
  return amax > 0.f ? cf::kE4M3Max / amax : 1.f;
}

// Q or K of one (sequence, head): rotate (incoherent), block amax (or the head's), e4m3 codes into
// dst8 ([B, N, H, d] contiguous) and the block scales into scale[0 .. blocks).
void quantize_head(const core::AttnParams& p, const fa_fp8& f, const void* base,
                   const core::Strides& str, int b, int h, int heads, int64_t n, int rows_per_block,
                   uint8_t* dst8, float* scale, std::vector<float>& x) {
  const int d = p.head_dim;
  load_head(p, base, str, b, h, n, x);
  if (f.incoherent) {
    std::vector<float> sign(static_cast<size_t>(d));
    for (int c = 0; c < d; ++c) sign[size_t(c)] = cf::hadamard_sign(f.seed, c);
    const float norm = hadamard_norm(d);
    for (int64_t i = 0; i < n; ++i) rotate_row(x.data() + size_t(i) * d, d, sign.data(), norm);
  }
  const int64_t blocks = cf::ceil_div(n, rows_per_block);
  std::vector<float> amax(static_cast<size_t>(blocks));
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t r0 = blk * rows_per_block, r1 = std::min<int64_t>(n, r0 + rows_per_block);
    amax[size_t(blk)] = amax_of(x.data() + size_t(r0) * d, (r1 - r0) * d);
  }
  if (f.scaling == FA_FP8_SCALING_PER_HEAD) {
    const float m = blocks ? *std::max_element(amax.begin(), amax.end()) : 0.f;
    std::fill(amax.begin(), amax.end(), m);
  }
  for (int64_t blk = 0; blk < blocks; ++blk) {
    scale[blk] = scale_of(amax[size_t(blk)]);
    const float inv = inv_of(amax[size_t(blk)]);
    const int64_t r0 = blk * rows_per_block, r1 = std::min<int64_t>(n, r0 + rows_per_block);
    for (int64_t i = r0; i < r1; ++i) {
      uint8_t* row8 = dst8 + ((int64_t(b) * n + i) * heads + h) * d;
      const float* row = x.data() + size_t(i) * d;
      for (int c = 0; c < d; ++c) row8[c] = e4m3_from_float(ftz(row[c] * inv));
    }
  }
}

// V of one (sequence, KV head): one scale, codes transposed into Vᵀ with vt_key's permutation
// inside every 32-key chunk and zero padding up to vt_keys.
void quantize_v(const core::AttnParams& p, const cf::Layout& l, int b, int h, uint8_t* vt8,
                float* v_scale, std::vector<float>& x) {
  const int d = p.head_dim;
  const int64_t n = p.seqlen_k;
  load_head(p, p.v, p.v_str, b, h, n, x);
  const float amax = amax_of(x.data(), n * d);
  *v_scale = scale_of(amax);
  const float inv = inv_of(amax);
  uint8_t* head = vt8 + (int64_t(b) * p.heads_kv + h) * d * l.vt_keys;
  for (int c = 0; c < d; ++c) {
    uint8_t* row = head + int64_t(c) * l.vt_keys;
    for (int64_t col = 0; col < l.vt_keys; ++col) {
      const int64_t key = col / cf::kVtChunk * cf::kVtChunk + cf::vt_key(int(col % cf::kVtChunk));
      row[col] = key < n ? e4m3_from_float(ftz(x[size_t(key) * d + c] * inv)) : uint8_t(0);
    }
  }
}

}  // namespace

void quantize(const core::AttnParams& p, const fa_fp8& f, Parts parts, uint8_t* ws) {
  const cf::Layout l = layout_of(p);
  auto* q_scale = reinterpret_cast<float*>(ws + l.q_scale);
  auto* k_scale = reinterpret_cast<float*>(ws + l.k_scale);
  auto* v_scale = reinterpret_cast<float*>(ws + l.v_scale);
  // Tasks: (sequence, query head) for Q, then (sequence, KV head) for K and for V.
  const int64_t nq_tasks = parts.q ? int64_t(p.batch) * p.heads_q : 0;
  const int64_t nkv_tasks = parts.kv ? int64_t(p.batch) * p.heads_kv : 0;
  const int threads = resolve_threads(p.num_threads);
  std::vector<std::vector<float>> scratch(size_t(std::max(threads, 1)));
  parallel_for(nq_tasks + 2 * nkv_tasks, threads, [&](int64_t t, int worker) {
    std::vector<float>& x = scratch[size_t(worker)];
    if (t < nq_tasks) {
      const int b = int(t / p.heads_q), h = int(t % p.heads_q);
      quantize_head(p, f, p.q, p.q_str, b, h, p.heads_q, p.seqlen_q, cf::kQBlock, ws + l.q8,
                    q_scale + (int64_t(b) * p.heads_q + h) * l.q_blocks, x);
      return;
    }
    t -= nq_tasks;
    const bool is_v = t >= nkv_tasks;
    if (is_v) t -= nkv_tasks;
    const int b = int(t / p.heads_kv), h = int(t % p.heads_kv);
    if (is_v)
      quantize_v(p, l, b, h, ws + l.vt8, v_scale + int64_t(b) * p.heads_kv + h, x);
    else
      quantize_head(p, f, p.k, p.k_str, b, h, p.heads_kv, p.seqlen_k, cf::kKBlock, ws + l.k8,
                    k_scale + (int64_t(b) * p.heads_kv + h) * l.k_blocks, x);
  });
}

}  // namespace fp8

core::Status fp8_forward(const core::AttnParams& p, const fa_fp8& f) {
  namespace cf = core::fp8;
  const cf::Layout l = fp8::layout_of(p);
  std::vector<uint8_t> own;
  uint8_t* ws = static_cast<uint8_t*>(p.workspace);
  if (ws && p.workspace_bytes < size_t(l.bytes))
    return core::invalid("workspace of " + std::to_string(p.workspace_bytes) +
                         " bytes is too small: this call needs " + std::to_string(l.bytes) +
                         " (fa_fp8_workspace_size)");
  if (!ws) {
    own.resize(size_t(l.bytes));
    ws = own.data();
  }
  fp8::quantize(p, f, fp8::parts_of(f), ws);
  if (p.batch == 0 || p.seqlen_q == 0) return core::Status::success();

  // Dequantised copies, [B, N, H, d] contiguous fp32; V back in key order.
  const int d = p.head_dim;
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, hq = p.heads_q, hk = p.heads_kv;
  std::vector<float> qf(size_t(p.batch * nq * hq * d)), kf(size_t(p.batch * nk * hk * d)),
      vf(size_t(p.batch * nk * hk * d)), of(size_t(p.batch * nq * hq * d));
  float lut[256];
  for (int c = 0; c < 256; ++c) lut[c] = fp8::e4m3_to_float(uint8_t(c));
  const float* q_scale = reinterpret_cast<const float*>(ws + l.q_scale);
  const float* k_scale = reinterpret_cast<const float*>(ws + l.k_scale);
  const float* v_scale = reinterpret_cast<const float*>(ws + l.v_scale);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < nq; ++i)
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t row = ((b * nq + i) * hq + h) * d;
        const float s = q_scale[(b * hq + h) * l.q_blocks + i / cf::kQBlock];
        for (int c = 0; c < d; ++c) qf[size_t(row + c)] = lut[ws[l.q8 + row + c]] * s;
      }
  int inv_vt[cf::kVtChunk];
  for (int s = 0; s < cf::kVtChunk; ++s) inv_vt[cf::vt_key(s)] = s;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t h = 0; h < hk; ++h) {
        const int64_t row = ((b * nk + j) * hk + h) * d;
        const float ks = k_scale[(b * hk + h) * l.k_blocks + j / cf::kKBlock];
        const float vs = v_scale[b * hk + h];
        const int64_t col = j / cf::kVtChunk * cf::kVtChunk + inv_vt[j % cf::kVtChunk];
        const uint8_t* vt = ws + l.vt8 + (b * hk + h) * d * l.vt_keys + col;
        for (int c = 0; c < d; ++c) {
          kf[size_t(row + c)] = lut[ws[l.k8 + row + c]] * ks;
          vf[size_t(row + c)] = lut[vt[int64_t(c) * l.vt_keys]] * vs;
        }
      }

  core::AttnParams p32 = p;
  p32.dtype = core::DType::F32;
  p32.q = qf.data();
  p32.k = kf.data();
  p32.v = vf.data();
  p32.o = of.data();
  p32.q_str = {nq * hq * d, hq * d, d};
  p32.k_str = p32.v_str = {nk * hk * d, hk * d, d};
  p32.o_str = p32.q_str;
  p32.workspace = nullptr;
  p32.workspace_bytes = 0;
  FA_RETURN_IF_ERROR(forward(p32));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < hq; ++h)
      store_rows(of.data() + (b * nq * hq + h) * d, int(hq * d), int(nq), d,
                 static_cast<char*>(p.o), p.dtype, p.o_str, b, 0, h);
  return core::Status::success();
}

}  // namespace fa::cpu
