// The one runtime description of an attention call, shared by every backend and the reference.
// Built once by validation (src/core/validate.cpp) from the C ABI's tensors; backends assume it
// is valid. Everything that does not change code generation lives here, not in templates.
#pragma once

#include <flashattn/flashattn.h>

#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace fa::core {

enum class DType : int { F32 = 0, F16 = 1, BF16 = 2, F8E4M3 = 3 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F8E4M3: return "float8_e4m3";
  }
  return "?";
}

// Element strides of one [batch, row, head, dim] tensor (dim stride is 1). In the varlen form
// the batch stride is 0 and rows are global (row = cu_seqlens[b] + i).
struct Strides {
  int64_t batch = 0;
  int64_t row = 0;
  int64_t head = 0;
  FA_HD int64_t offset(int64_t b, int64_t row_idx, int64_t h) const {
    return b * batch + row_idx * row + h * head;
  }
};

struct AttnParams {
  DType dtype = DType::F16;
  bool is_cuda = false;
  int device_id = 0;

  // Sizes. seqlen_q/k are the batch form's lengths, or the varlen form's max_seqlen_q/k.
  int batch = 0;
  int heads_q = 0;
  int heads_kv = 0;
  int head_dim = 0;
  int64_t seqlen_q = 0;
  int64_t seqlen_k = 0;
  int64_t total_q = 0;  // rows of q: B*Nq, or the varlen total
  int64_t total_k = 0;

  // Varlen: device (CUDA) or host (CPU) pointers; null in the batch form.
  bool varlen = false;
  const int32_t* cu_seqlens_q = nullptr;  // [B+1]
  const int32_t* cu_seqlens_k = nullptr;  // [B+1]
  const int32_t* seqused_k = nullptr;     // [B] or null

  // Forward tensors.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // may be null in the forward when the caller does not want it
  Strides q_str, k_str, v_str, o_str;
  int64_t lse_batch_stride = 0;  // [B, Hq, Nq] -> Hq*Nq ; varlen [Hq, Tq] -> 0
  int64_t lse_head_stride = 0;   // Nq ; varlen Tq (row stride is 1)

  // Backward tensors (null in the forward).
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  Strides do_str, dq_str, dk_str, dv_str;

  // Options, already normalised: scale resolved; causal folded into window_right = 0.
  float scale = 1.f;
  float softcap = 0.f;      // 0 = off
  int64_t window_left = -1;   // -1 = unbounded
  int64_t window_right = -1;  // -1 = unbounded
  bool causal = false;
  bool deterministic = false;
  fa_algo algo = FA_ALGO_AUTO;
  int num_threads = 0;
  void* stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;

  // KV cache (fa_kvcache_forward; batch form): k/v are the cache tensors, k_str/v_str their
  // strides (for a paged cache the batch stride is the page stride) and seqlen_k its capacity.
  bool kvcache = false;
  const int32_t* cache_seqlens = nullptr;    // [B] or null: every sequence holds the capacity
  const int32_t* block_table = nullptr;      // [B, pages_per_seq] or null: contiguous cache
  int64_t block_table_stride = 0;            // elements between two sequences' table rows
  int64_t page_size = 0;                     // rows per page (paged only)
  const int32_t* cache_batch_idx = nullptr;  // [B] or null: sequence b uses cache entry b
  void* k_cache_w = nullptr;                 // the cache, writable, when k_new/v_new are given
  void* v_cache_w = nullptr;
  const void* k_new = nullptr;               // [B, seqlen_new, Hk, D] or null
  const void* v_new = nullptr;
  Strides knew_str, vnew_str;
  int64_t seqlen_new = 0;
  int num_splits = 0;  // as in fa_kvcache (0 = heuristic)

  // FP8 forward (fa_fp8_forward; layout in core/fp8.hpp). The kernel sees dtype F8E4M3 with q/k
  // the quantised copies in the workspace ([B, N, H, d], contiguous) and v = Vᵀ [B, Hk, d, vt_keys]
  // (v_str: batch = Hk·d·vt_keys, head = d·vt_keys, row = vt_keys, i.e. the stride between two
  // head-dim rows); o (and o_str) is the caller's output in out_dtype. Scores are
  // q_scale·k_scale·(q8·k8ᵀ) and O = v_scale · Σ P·v8 / l.
  DType out_dtype = DType::BF16;
  const float* q_scale = nullptr;  // [B, Hq, q_blocks] (core::fp8::kQBlock rows each)
  const float* k_scale = nullptr;  // [B, Hk, k_blocks] (core::fp8::kKBlock keys each)
  const float* v_scale = nullptr;  // [B, Hk]
  int64_t q_blocks = 0;
  int64_t k_blocks = 0;
  int64_t vt_keys = 0;             // Vᵀ's padded key count (a multiple of kKBlock)

  FA_HD int group_size() const { return heads_q / heads_kv; }  // query heads per KV head
  FA_HD int64_t lse_offset(int64_t b, int64_t h, int64_t global_row) const {
    return b * lse_batch_stride + h * lse_head_stride + global_row;
  }
};

// Where sequence b lives and how long it is, in both forms. For varlen, rows are global
// (start + i) and the tensors' batch stride is 0, so Strides::offset(b, start + i, h) is right.
struct SeqInfo {
  int64_t q_start = 0;
  int64_t q_len = 0;
  int64_t k_start = 0;
  int64_t k_len = 0;
};

FA_HD SeqInfo seq_info(const AttnParams& p, int b) {
  SeqInfo s;
  if (p.varlen) {
    s.q_start = p.cu_seqlens_q[b];
    s.q_len = p.cu_seqlens_q[b + 1] - s.q_start;
    s.k_start = p.cu_seqlens_k[b];
    s.k_len = p.seqused_k ? p.seqused_k[b] : p.cu_seqlens_k[b + 1] - s.k_start;
  } else {
    s.q_len = p.seqlen_q;
    s.k_len = p.seqlen_k;
  }
  return s;
}

// KV cache: keys sequence b attends over (see fa_kvcache), clamped to the capacity so that a
// bad cache_seqlens value on the device cannot make a kernel read out of bounds.
FA_HD int64_t kv_len(const AttnParams& p, int b) {
  if (!p.cache_seqlens) return p.seqlen_k;
  const int64_t n = int64_t(p.cache_seqlens[b]) + p.seqlen_new;
  return n < p.seqlen_k ? n : p.seqlen_k;
}

// KV cache: element offset of key row j of sequence b, KV head h, in a cache tensor with strides
// s (paged: through the block table; contiguous: through cache_batch_idx).
FA_HD int64_t cache_offset(const AttnParams& p, const Strides& s, int b, int64_t j, int h) {
  if (p.block_table) {
    const int64_t page = p.block_table[b * p.block_table_stride + j / p.page_size];
    return page * s.batch + (j % p.page_size) * s.row + h * s.head;
  }
  const int64_t e = p.cache_batch_idx ? int64_t(p.cache_batch_idx[b]) : int64_t(b);
  return e * s.batch + j * s.row + h * s.head;
}

}  // namespace fa::core
