// The decode workload of `fa run --decode`, `fa bench --decode` and `fa check`: token-by-token
// generation through fa_kvcache_forward. Each step appends `append` new key/value rows per
// sequence (k_new/v_new) at cache_seqlens[b] and attends Nq queries over the whole cache, then
// cache_seqlens advances, as a serving loop does. The cache is contiguous or paged (a shuffled
// block table, so pages of one sequence are scattered as a page allocator leaves them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace fa::cli {

struct DecodeSpec {
  int64_t cache_len = 4096;  // keys already in each sequence's cache before the first step
  int64_t append = 1;        // k_new/v_new rows per step; 0 = a static cache
  int64_t page_size = 0;     // 0 = contiguous cache
  int64_t splits = 0;        // fa_kvcache::num_splits (0 = the library's choice, 1 = off)
  bool ragged = false;       // start lengths drawn from [cache_len / 2, cache_len] per sequence
  // Steps the cache must have room for: capacity = cache_len + append * max_steps.
  int64_t max_steps = 16;

  std::string cache_text() const;  // "paged (page 256), append 1/step, splits auto"
};

struct DecodeTiming {
  int64_t steps = 0;
  double total_ms = 0;
  double kv_bytes = 0;  // K and V bytes the timed steps had to read (visible keys only)
  double us_per_step() const { return total_ms * 1e3 / double(steps); }
  double gb_per_s() const { return kv_bytes / (total_ms * 1e-3) * 1e-9; }
};

class DecodeWorkload {
 public:
  // p: batch, heads, head dim, dtype, mask, backend; p.seqlen_q = queries per step. Validates the
  // request through the library (placeholder data pointers) before allocating.
  DecodeWorkload(const Problem& p, const DecodeSpec& s);

  const Problem& problem() const { return p_; }
  const DecodeSpec& spec() const { return s_; }
  int64_t capacity() const { return capacity_; }
  int64_t steps_left() const { return s_.max_steps - step_; }

  void step();  // one decode step; throws LibraryError
  // warmup untimed steps, then `steps` steps in one timed region (back to back, like a serving
  // loop: no synchronisation between steps).
  DecodeTiming time(int warmup, int steps);
  // One more step with poisoned outputs, compared with the float64 reference (ref::kvcache_forward
  // on the cache as it was before the step) for `seqs` sampled sequences (0 = all), all heads; the
  // appended rows of those sequences must be in the cache bit-exact afterwards (counted in O).
  CheckResult check(int seqs);

 private:
  fa_tensor index_tensor(void* data, std::vector<int64_t> shape) const;
  int64_t visible_keys(int b, int64_t step) const;  // keys sequence b reads at that step

  Problem p_;
  DecodeSpec s_;
  fa_options opt_;
  // The cache tensors are [entries_, rows_, Hk, D]: B x capacity, or pages x page size.
  int64_t capacity_ = 0, pages_per_seq_ = 0, entries_ = 0, rows_ = 0;
  int64_t step_ = 0;
  std::vector<int32_t> seqlens_h_;  // [max_steps][B]: cache_seqlens of each step
  std::vector<int32_t> table_h_;    // [B][pages_per_seq] (paged)
  std::vector<uint8_t> q_h_, kc_h_, vc_h_, kn_h_, vn_h_;
  Buffer q_, kc_, vc_, kn_, vn_, out_, lse_, seqlens_, table_, workspace_;
  fa_tensor tq_{}, tkc_{}, tvc_{}, tkn_{}, tvn_{}, tout_{}, tlse_{}, ttable_{};
};

}  // namespace fa::cli
