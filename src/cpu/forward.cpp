// CPU FlashAttention forward (FlashAttention-2 loop order on a CPU core).
//
// One task = one block of kBlockM query rows of one (sequence, query head). The task loads its Q
// tile once (converted to fp32), then walks the key blocks that Mask::key_range says some of its
// rows can see, kBlockN keys at a time: S = Q K^T (micro-kernel against a transposed K tile),
// score transform (scale, softcap), per-element masking only on blocks that Mask::block_unmasked
// says are partial, the online-softmax update of each row's RowState (rescale the running O by
// exp(m_old - m_new), P = exp(S - m_new), l += rowsum P), then O += P V. Normalisation by 1/l is
// deferred to the end, where O is written in the input dtype and LSE = m + log l in fp32.
//
// Memory: per-worker tiles only (Q, K^T, V, S, O: a few hundred KB at d = 256), so O(N) overall.
// Tasks are independent and each is computed in a fixed order, so the result does not depend on
// the thread count (bit-identical; tested). Task order is longest-first for causal/local masks.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend.hpp"
#include "core/mask.hpp"
#include "core/softmax.hpp"
#include "cpu/convert.hpp"
#include "cpu/kernels.hpp"
#include "cpu/parallel.hpp"

namespace fa::cpu {
namespace {

constexpr int kBlockM = 64;  // query rows per task: O and S tiles stay in L2 up to d = 256
constexpr int kBlockN = 64;  // keys per step: one 4-zmm column panel of S (see kernels.cpp)

struct FwdTask {
  int b;
  int h;
  int64_t i0;  // first query row of the block, relative to the sequence
};

struct FwdScratch {
  std::vector<float> q, kt, v, s, o, row;
  std::vector<core::RowState> state;
  FwdScratch(int d, int dp)
      : q(size_t(kBlockM) * dp), kt(size_t(d) * kBlockN), v(size_t(kBlockN) * dp),
        s(size_t(kBlockM) * kBlockN), o(size_t(kBlockM) * dp), row(size_t(dp)), state(kBlockM) {}
};

void forward_block(const core::AttnParams& p, const FwdTask& t, FwdScratch& w) {
  const int d = p.head_dim;
  const int dp = round_up(d, kVecWidth);
  const core::SeqInfo seq = core::seq_info(p, t.b);
  const core::Mask mask(seq.q_len, seq.k_len, p.window_left, p.window_right);
  const int hk = t.h / p.group_size();
  const int mi = int(std::min<int64_t>(kBlockM, seq.q_len - t.i0));

  const HeadView qv{static_cast<const char*>(p.q), p.dtype, p.q_str, t.b, t.h};
  const HeadView kv{static_cast<const char*>(p.k), p.dtype, p.k_str, t.b, hk};
  const HeadView vv{static_cast<const char*>(p.v), p.dtype, p.v_str, t.b, hk};

  load_rows(qv, seq.q_start + t.i0, mi, d, w.q.data(), dp);
  std::fill(w.o.begin(), w.o.begin() + int64_t(mi) * dp, 0.f);
  for (int r = 0; r < mi; ++r) w.state[r] = core::RowState{};

  int64_t first = 0, last = 0;
  mask.key_range(t.i0, t.i0 + mi, &first, &last);
  for (int64_t j0 = first; j0 < last; j0 += kBlockN) {
    const int nk = int(std::min<int64_t>(kBlockN, last - j0));
    const int nkp = round_up(nk, kVecWidth);
    load_rows_transposed(kv, seq.k_start + j0, nk, nkp, d, w.kt.data(), kBlockN, w.row.data());
    load_rows(vv, seq.k_start + j0, nk, d, w.v.data(), dp);

    gemm_tile(mi, nkp, d, w.q.data(), dp, w.kt.data(), kBlockN, w.s.data(), kBlockN, false);

    const bool partial = !mask.block_unmasked(t.i0, t.i0 + mi, j0, j0 + nk);
    for (int r = 0; r < mi; ++r) {
      float* srow = w.s.data() + int64_t(r) * kBlockN;
      if (p.softcap > 0.f) {
        for (int c = 0; c < nk; ++c) srow[c] = core::score_transform(srow[c], p.scale, p.softcap);
      } else {
        scale_row(srow, nk, p.scale);
      }
      if (partial) {
        const int64_t i = t.i0 + r;
        for (int c = 0; c < nk; ++c)
          if (!mask.allowed(i, j0 + c)) srow[c] = -INFINITY;
      }
      core::RowState& st = w.state[r];
      const float factor = st.update_max(row_max(srow, nk));
      float* orow = w.o.data() + int64_t(r) * dp;
      if (st.m == -INFINITY) {
        // Nothing visible yet in this row: P = 0 (exp(-inf - -inf) would be NaN).
        std::fill(srow, srow + nk, 0.f);
        continue;
      }
      if (factor != 1.f) scale_row(orow, dp, factor);
      st.l += exp_sub_sum(srow, nk, st.m);
    }
    // O += P V over the nk real keys only (P's padding columns are never read).
    gemm_tile(mi, dp, nk, w.s.data(), kBlockN, w.v.data(), dp, w.o.data(), dp, true);
  }

  for (int r = 0; r < mi; ++r) scale_row(w.o.data() + int64_t(r) * dp, d, w.state[r].inv_sum());
  store_rows(w.o.data(), dp, mi, d, static_cast<char*>(p.o), p.dtype, p.o_str, t.b,
             seq.q_start + t.i0, t.h);
  if (p.lse) {
    for (int r = 0; r < mi; ++r)
      p.lse[p.lse_offset(t.b, t.h, seq.q_start + t.i0 + r)] = w.state[r].lse();
  }
}

}  // namespace

core::Status forward(const core::AttnParams& p) {
  if (p.dtype != core::DType::F32 && p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("CPU backend: dtype ") + core::dtype_name(p.dtype) +
                             " is not supported (float32, float16, bfloat16 are)");
  std::vector<FwdTask> tasks;
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo seq = core::seq_info(p, b);
    // Last query blocks first: under causal/local masks they see the most keys (longest first).
    for (int64_t i0 = (seq.q_len - 1) / kBlockM * kBlockM; seq.q_len > 0 && i0 >= 0; i0 -= kBlockM)
      for (int h = 0; h < p.heads_q; ++h) tasks.push_back({b, h, i0});
  }
  if (p.window_right < 0 && p.window_left < 0) {
    // Unmasked: all blocks cost the same; keep the natural order for locality of K/V.
    std::stable_sort(tasks.begin(), tasks.end(), [](const FwdTask& a, const FwdTask& c) {
      return a.b != c.b ? a.b < c.b : a.i0 < c.i0;
    });
  }
  const int threads = std::min<int64_t>(resolve_threads(p.num_threads), int64_t(tasks.size()));
  const int dp = round_up(p.head_dim, kVecWidth);
  std::vector<FwdScratch> scratch;
  scratch.reserve(size_t(std::max(threads, 1)));
  for (int w = 0; w < std::max(threads, 1); ++w) scratch.emplace_back(p.head_dim, dp);
  parallel_for(int64_t(tasks.size()), threads,
               [&](int64_t t, int worker) { forward_block(p, tasks[size_t(t)], scratch[size_t(worker)]); });
  return core::Status::success();
}

}  // namespace fa::cpu
