// CPU FlashAttention forward (FlashAttention-2 loop order on a CPU core).
//
// One task = one block of kBlockM query rows of one (sequence, query head), or, for KV-cache
// decode (src/cpu/kvcache.cpp), the few query rows of several heads of one GQA group. The task
// loads its Q tile once, transposed (Q^T: d x kBlockM, fp32), then walks the key blocks that
// Mask::key_range says some of its rows can see, kBlockN keys at a time:
//   S^T = K Q^T            micro-kernel; keys are rows, queries are the 64 vector lanes
//   softcap / masking      score_transform; -inf only on blocks Mask::block_unmasked calls partial
//   online softmax         softmax_update_cols: RowState's recurrence for 16 queries per vector
//                          (column max, rescale factor, P = exp(scale*s - m), l += sum P)
//   O = factor * O + P V   rows of O rescaled where the max moved, then the micro-kernel reading
//                          P^T transposed (no explicit transpose)
// and at the end divides by l (deferred normalisation), writes O in the input dtype and
// LSE = m + log l in fp32. Producing S transposed means K is consumed in its natural row layout:
// for fp32 inputs K is read in place (V too when one head's rows are contiguous); other dtypes
// and strided V are converted/packed tile by tile.
//
// Memory: per-worker tiles only (Q^T, K, V, S, O: a few hundred KB at d = 256), so O(N) overall,
// kept by the calling thread between calls (up to 4 MB) so that a small call allocates nothing.
// Tasks are independent and each is computed in a fixed order, so the result does not depend on
// the thread count (bit-identical; tested).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/mask.hpp"
#include "core/softmax.hpp"
#include "cpu/convert.hpp"
#include "cpu/forward.hpp"
#include "cpu/kernels.hpp"
#include "cpu/mask_rows.hpp"
#include "cpu/parallel.hpp"

namespace fa::cpu {
namespace {

constexpr int kBlockM = kFwdBlockM;
constexpr int kBlockN = 64;  // keys per step: rows of S^T; S^T stays in L1 (16 KB)

// One worker's tiles, carved from a buffer that outlives the call (ScratchBuffer below). Nothing
// here is zeroed: every element forward_block reads it has written first in the same task (the
// loaders zero-fill the padding themselves, O is cleared for the rows it accumulates, m and l are
// reset per task).
struct FwdScratch {
  float *qt, *k, *v, *st, *o, *row, *m, *l, *factor;
};

constexpr size_t kLineFloats = 64 / sizeof(float);

// Floats of one worker's tiles, padded to whole 64-byte lines so that workers never share one.
size_t scratch_floats(int d, int dp) {
  const size_t n = size_t(d) * kBlockM + 2 * size_t(kBlockN) * dp + size_t(kBlockN) * kBlockM +
                   size_t(kBlockM) * dp + size_t(dp) + 3 * size_t(kBlockM);
  return (n + kLineFloats - 1) / kLineFloats * kLineFloats;
}

FwdScratch carve_scratch(float* base, int d, int dp) {
  FwdScratch w;
  w.qt = base;
  w.k = w.qt + size_t(d) * kBlockM;
  w.v = w.k + size_t(kBlockN) * dp;
  w.st = w.v + size_t(kBlockN) * dp;
  w.o = w.st + size_t(kBlockN) * kBlockM;
  w.row = w.o + size_t(kBlockM) * dp;
  w.m = w.row + dp;
  w.l = w.m + kBlockM;
  w.factor = w.l + kBlockM;
  return w;
}

// The calling thread's scratch for all workers of one call, reused by its next calls. Allocating
// and zeroing it per call (a few hundred KB: malloc, memset and fresh pages) cost more than the
// whole computation of a decode-sized call. It only grows; after a call that needed more than
// kKeepBytes it is released, since such a call computes long enough that allocating is noise and
// a thread should not keep many MB for one past call. Workers only use it during the call, so one
// buffer per calling thread is enough (forward() is never re-entered on a thread).
constexpr size_t kKeepBytes = size_t(4) << 20;
struct ScratchBuffer {
  std::unique_ptr<float[]> mem;  // default-initialised: no zeroing
  size_t floats = 0;             // usable floats after aligning
  float* get(size_t n) {
    if (n > floats) {
      mem.reset();
      mem.reset(new float[n + kLineFloats]);
      floats = n;
      // NaN, not zero: a read of a tile element that the task did not write first then shows up
      // in every test's first call instead of passing silently (once per growth, not per call).
      std::fill_n(mem.get(), n + kLineFloats, std::numeric_limits<float>::quiet_NaN());
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(mem.get());
    return mem.get() + ((64 - a % 64) % 64) / sizeof(float);
  }
  void trim() {
    if (floats * sizeof(float) > kKeepBytes) {
      mem.reset();
      floats = 0;
    }
  }
};

// Lengths of sequence b; a KV-cache call has all its queries and kv_len keys in the cache.
core::SeqInfo sequence(const core::AttnParams& p, int b) {
  if (!p.kvcache) return core::seq_info(p, b);
  core::SeqInfo s;
  s.q_len = p.seqlen_q;
  s.k_len = core::kv_len(p, b);
  return s;
}

// K or V rows of (sequence b, KV head hk): the forward's tensor, or the KV cache through
// cache_batch_idx (a contiguous cache is a batch tensor indexed by the cache entry) or through
// the sequence's block-table row (paged).
HeadView key_view(const core::AttnParams& p, const void* base, const core::Strides& str, int b,
                  int hk) {
  HeadView v{static_cast<const char*>(base), p.dtype, str, b, hk};
  if (p.kvcache && p.block_table) {
    v.pages = p.block_table + int64_t(b) * p.block_table_stride;
    v.page_size = p.page_size;
  } else if (p.kvcache && p.cache_batch_idx) {
    v.b = p.cache_batch_idx[b];
  }
  return v;
}

void forward_block(const core::AttnParams& p, const FwdTask& t, const FwdScratch& w) {
  const int d = p.head_dim;
  const int dp = round_up(d, kVecWidth);
  const core::SeqInfo seq = sequence(p, t.b);
  const core::Mask mask(seq.q_len, seq.k_len, p.window_left, p.window_right);
  const int hk = t.h / p.group_size();
  // Tile rows: t.heads query heads of mi rows each, head-major (row g * mi + r is query i0 + r of
  // head h + g); the mask depends on the query position only, so every head's segment gets the
  // same key range and per-key visible interval.
  const int mi = int(std::min<int64_t>(kBlockM, seq.q_len - t.i0));
  const int ng = t.heads;
  const int mt = ng * mi;
  const int mip = round_up(mt, kVecWidth);
  // fp32 tensors are read in place where that is cheap. K is the A operand of S^T = K Q^T, read
  // once per product: any row stride is fine. V is the B operand of O += P V, re-read for every
  // 6-row block of P: in place only when one head's rows are contiguous (d % 16 == 0, row stride
  // d); with a [B, N, H, D] layout its rows are H*d*4 bytes apart, each on its own page, and a
  // packed copy was measured faster (docs/perf/LOG.md, 2026-11-29).
  // A paged cache's block is read in place only when it does not cross a page.
  const bool k_in_place = p.dtype == core::DType::F32;
  const bool v_in_place = k_in_place && d == dp && p.v_str.row == d;

  const HeadView kv = key_view(p, p.k, p.k_str, t.b, hk);
  const HeadView vv = key_view(p, p.v, p.v_str, t.b, hk);

  for (int g = 0; g < ng; ++g) {
    const HeadView qv{static_cast<const char*>(p.q), p.dtype, p.q_str, t.b, t.h + g};
    // The last segment also zero-fills the padding columns mt .. mip.
    load_rows_transposed(qv, seq.q_start + t.i0, mi, g + 1 < ng ? mi : mip - g * mi, d,
                         w.qt + g * mi, kBlockM, w.row);
  }
  std::fill(w.o, w.o + int64_t(mt) * dp, 0.f);
  std::fill(w.m, w.m + kBlockM, -INFINITY);
  std::fill(w.l, w.l + kBlockM, 0.f);
  // With softcap the scores are transformed explicitly; the softmax step then scales by 1.
  const float softmax_scale = p.softcap > 0.f ? 1.f : p.scale;

  int64_t first = 0, last = 0;
  mask.key_range(t.i0, t.i0 + mi, &first, &last);
  for (int64_t j0 = first; j0 < last; j0 += kBlockN) {
    const int nk = int(std::min<int64_t>(kBlockN, last - j0));
    const float* kp = w.k;
    int64_t ldk = dp;
    if (k_in_place && kv.rows_strided(seq.k_start + j0, nk)) {
      kp = static_cast<const float*>(kv.row(seq.k_start + j0));
      ldk = p.k_str.row;
    } else {
      load_rows(kv, seq.k_start + j0, nk, d, w.k, dp);
    }
    const float* vp = w.v;
    int64_t ldv = dp;
    if (v_in_place && vv.rows_strided(seq.k_start + j0, nk)) {
      vp = static_cast<const float*>(vv.row(seq.k_start + j0));
      ldv = p.v_str.row;
    } else {
      load_rows(vv, seq.k_start + j0, nk, d, w.v, dp);
    }

    gemm_tile(nk, mip, d, kp, ldk, w.qt, kBlockM, w.st, kBlockM, false);

    if (p.softcap > 0.f) {
      for (int j = 0; j < nk; ++j)
        softcap_span(w.st + size_t(j) * kBlockM, mip, p.scale, p.softcap);
    }
    if (!mask.block_unmasked(t.i0, t.i0 + mi, j0, j0 + nk)) {
      // Partial block: key j is seen by one interval of the block's queries.
      for (int j = 0; j < nk; ++j) {
        int64_t lo = 0, hi = 0;
        visible_queries(mask, j0 + j, t.i0, mi, &lo, &hi);
        for (int g = 0; g < ng; ++g) {
          float* srow = w.st + size_t(j) * kBlockM + size_t(g) * mi;
          std::fill(srow, srow + lo, -INFINITY);
          std::fill(srow + hi, srow + mi, -INFINITY);
        }
      }
    }
    softmax_update_cols(w.st, kBlockM, nk, mip, softmax_scale, w.m, w.l, w.factor);
    for (int r = 0; r < mt; ++r)
      if (w.factor[r] != 1.f) scale_row(w.o + int64_t(r) * dp, dp, w.factor[r]);
    // O += P V with P read from P^T (nk x kBlockM) transposed, over the nk real keys only.
    gemm_tile_at(mt, dp, nk, w.st, kBlockM, vp, ldv, w.o, dp, true);
  }

  for (int r = 0; r < mt; ++r) {
    const core::RowState st{w.m[r], w.l[r]};
    scale_row(w.o + int64_t(r) * dp, d, st.inv_sum());
  }
  for (int g = 0; g < ng; ++g) {
    store_rows(w.o + int64_t(g) * mi * dp, dp, mi, d, static_cast<char*>(p.o), p.dtype, p.o_str,
               t.b, seq.q_start + t.i0, t.h + g);
    if (p.lse) {
      for (int r = 0; r < mi; ++r) {
        const core::RowState st{w.m[g * mi + r], w.l[g * mi + r]};
        p.lse[p.lse_offset(t.b, t.h + g, seq.q_start + t.i0 + r)] = st.lse();
      }
    }
  }
}

}  // namespace

void run_forward_tasks(const core::AttnParams& p, const std::vector<FwdTask>& tasks) {
  const int threads = std::min<int64_t>(resolve_threads(p.num_threads), int64_t(tasks.size()));
  const int dp = round_up(p.head_dim, kVecWidth);
  const size_t per_worker = scratch_floats(p.head_dim, dp);
  thread_local ScratchBuffer buffer;
  float* base = buffer.get(per_worker * size_t(std::max(threads, 1)));
  parallel_for(int64_t(tasks.size()), threads, [&](int64_t t, int worker) {
    forward_block(p, tasks[size_t(t)],
                  carve_scratch(base + per_worker * size_t(worker), p.head_dim, dp));
  });
  buffer.trim();
}

core::Status forward(const core::AttnParams& p) {
  if (p.dtype != core::DType::F32 && p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("CPU backend: dtype ") + core::dtype_name(p.dtype) +
                             " is not supported (float32, float16, bfloat16 are)");
  std::vector<FwdTask> tasks;
  // One head's blocks are consecutive so that the workers, which claim tasks in order, all read
  // the same K/V (shared in L3; one worker's successive blocks reuse it in L2). Within a head the
  // last query blocks go first: under causal/local masks they see the most keys, so the short
  // ones fill in at the end (longest-processing-time first).
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo seq = core::seq_info(p, b);
    for (int h = 0; h < p.heads_q; ++h)
      for (int64_t i0 = (seq.q_len - 1) / kBlockM * kBlockM; seq.q_len > 0 && i0 >= 0; i0 -= kBlockM)
        tasks.push_back({b, h, i0});
  }
  run_forward_tasks(p, tasks);
  return core::Status::success();
}

}  // namespace fa::cpu
