// CPU KV-cache attention (fa_kvcache_forward; flash_attn_with_kvcache's semantics): append the
// new keys/values to the cache in place, then the CPU forward (src/cpu/forward.cpp) over the
// cache, whose K/V rows it reads through cache_batch_idx or the block table (key_view there;
// a paged block that crosses a page is gathered row by row into the worker's K/V tile).
//
// Task shape. Decoding has one or a few queries per sequence, so a task of one query head would
// fill 1 of the tile's 64 query lanes and convert (fp16/bf16 -> fp32) every K/V block once per
// query head. Instead the query heads of one KV head share a task (GQA packing: heads x Nq rows
// in the 64 lanes), so each K/V block is converted once per group and the micro-kernel works on
// group x Nq lanes. FA_CPU_KVCACHE_PACK_GQA=0 turns this off (one head per task, as the forward),
// for the ablation. num_splits is a CUDA knob: the CPU splits work over (sequence, KV head,
// head group) tasks and ignores it.
//
// Validation (src/core/validate.cpp) has checked every index value against the cache on the
// host, so nothing here clamps.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/backend.hpp"
#include "cpu/convert.hpp"
#include "cpu/forward.hpp"

namespace fa::cpu {
namespace {

bool pack_gqa_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FA_CPU_KVCACHE_PACK_GQA");
    return !(e && e[0] == '0');
  }();
  return on;
}

// Writes k_new/v_new rows into the cache at rows cache_seqlens[b] .. + seqlen_new - 1. Inputs and
// cache have the same dtype, so this is a byte copy of each row (head_dim contiguous).
void append_new_rows(const core::AttnParams& p) {
  const size_t row_bytes = size_t(p.head_dim) * size_t(dtype_bytes(p.dtype));
  const int64_t eb = dtype_bytes(p.dtype);
  for (int b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.seqlen_new; ++i) {
      const int64_t j = int64_t(p.cache_seqlens[b]) + i;
      for (int h = 0; h < p.heads_kv; ++h) {
        std::memcpy(static_cast<char*>(p.k_cache_w) + core::cache_offset(p, p.k_str, b, j, h) * eb,
                    static_cast<const char*>(p.k_new) + p.knew_str.offset(b, i, h) * eb, row_bytes);
        std::memcpy(static_cast<char*>(p.v_cache_w) + core::cache_offset(p, p.v_str, b, j, h) * eb,
                    static_cast<const char*>(p.v_new) + p.vnew_str.offset(b, i, h) * eb, row_bytes);
      }
    }
}

}  // namespace

core::Status kvcache_forward(const core::AttnParams& p) {
  if (p.dtype != core::DType::F32 && p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("CPU backend: dtype ") + core::dtype_name(p.dtype) +
                             " is not supported (float32, float16, bfloat16 are)");
  if (p.k_new) append_new_rows(p);

  const int group = p.group_size();
  const int64_t nq = p.seqlen_q;
  // Heads per task: as many of the group as fit in the tile's lanes with all their rows; packing
  // needs at least two heads' rows in one tile to pay off.
  const int heads_per_task = pack_gqa_enabled() && nq > 0 && nq <= kFwdBlockM / 2
                                 ? int(std::min<int64_t>(group, kFwdBlockM / nq))
                                 : 1;
  std::vector<FwdTask> tasks;
  for (int b = 0; b < p.batch; ++b)
    for (int hk = 0; hk < p.heads_kv; ++hk)
      for (int g0 = 0; g0 < group; g0 += heads_per_task) {
        const int heads = std::min(heads_per_task, group - g0);
        // Later query blocks see more keys under causal/local masks: longest first, as forward().
        for (int64_t i0 = (nq - 1) / kFwdBlockM * kFwdBlockM; nq > 0 && i0 >= 0; i0 -= kFwdBlockM)
          tasks.push_back({b, hk * group + g0, i0, heads});
      }
  run_forward_tasks(p, tasks);
  return core::Status::success();
}

}  // namespace fa::cpu
