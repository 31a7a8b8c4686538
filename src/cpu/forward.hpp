// The CPU forward's task runner, shared by fa::cpu::forward (src/cpu/forward.cpp) and the KV-cache
// decode (src/cpu/kvcache.cpp): both are lists of independent query-block tasks over the same
// tiled FlashAttention-2 loop; they differ in where K/V rows come from (the forward's tensors, or
// the cache through cache_batch_idx / block_table, see key_view in forward.cpp) and in how tasks
// group query heads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/params.hpp"

namespace fa::cpu {

constexpr int kFwdBlockM = 64;  // query rows per task = lanes of the S^T tile (4 zmm)

struct FwdTask {
  int b;
  int h;       // first query head
  int64_t i0;  // first query row of the block, relative to the sequence
  // Query heads h .. h + heads - 1, all of one KV head, share the task (GQA packing for decode:
  // the task's rows are heads x min(kFwdBlockM, Nq - i0) and every K/V tile it converts serves
  // all of them). heads * rows must not exceed kFwdBlockM.
  int heads = 1;
};

// Runs the tasks on resolve_threads(p.num_threads) workers. p.kvcache: K/V rows are read from the
// cache (any appending has been done already) and sequence b has core::kv_len(p, b) keys.
void run_forward_tasks(const core::AttnParams& p, const std::vector<FwdTask>& tasks);

}  // namespace fa::cpu
