// CPU FlashAttention backward (FlashAttention-2 loop order: key blocks outside, query blocks
// inside), recomputing P from the forward's LSE instead of storing it.
//
// Phase 1 (parallel over query blocks): D = rowsum(dO * O) per (row, query head), fp32.
// Phase 2 (parallel over (sequence, KV head, key block)): the task owns dK_j and dV_j of its
//   kBlockN keys, summed over every query head of the GQA group. For each head and each query
//   block whose key range meets the block: S = Q K_j^T, P = exp(S - LSE) (masked entries and
//   fully masked rows give 0 via core::lse_for_backward), dV_j += P^T dO, dP = dO V_j^T,
//   dS = P * (dP - D) * d(score)/d(qk) (softcap derivative), dK_j += dS^T Q, dQ_i += dS K_j.
// Phase 3 (parallel over query blocks): the fp32 dQ accumulator is written in the output dtype.
//
// dQ without races, deterministically: dQ_i receives one contribution per key block that sees
// it. Each contribution is computed into the task's own buffer, then added to a shared fp32
// accumulator in key-block order, enforced by a per-(query head, query block) ticket: key block
// j waits until the j - j_first earlier contributors have added theirs. Tasks are enumerated key
// block major (all heads' block 0, then block 1, ...) and claimed in index order, so a task only
// ever waits for a task that is already running (no deadlock), and with B*Hkv >= threads the
// predecessor has long finished (little waiting). Compared with per-thread dQ copies (threads x
// |dQ| memory) or a second pass over query blocks (recomputes S and dP: 7 tile products instead
// of 5), this costs one extra fp32 dQ buffer and gives results independent of the thread count,
// so p.deterministic needs no separate path: every call is bit-reproducible.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/mask.hpp"
#include "core/softmax.hpp"
#include "cpu/convert.hpp"
#include "cpu/kernels.hpp"
#include "cpu/mask_rows.hpp"
#include "cpu/parallel.hpp"

namespace fa::cpu {
namespace {

constexpr int kBlockM = 64;  // query rows per inner step
constexpr int kBlockN = 64;  // keys owned by one task (its dK/dV tile)

struct BwdTask {
  int b;
  int hk;
  int jb;  // key block index within the sequence
};

struct BwdScratch {
  std::vector<float> kt, vt, krow, dk, dv, q, dout, s, dp, dq, row, lse, dsum;
  BwdScratch(int d, int dp_)
      : kt(size_t(d) * kBlockN), vt(size_t(d) * kBlockN), krow(size_t(kBlockN) * dp_),
        dk(size_t(kBlockN) * dp_), dv(size_t(kBlockN) * dp_), q(size_t(kBlockM) * dp_),
        dout(size_t(kBlockM) * dp_), s(size_t(kBlockM) * kBlockN), dp(size_t(kBlockM) * kBlockN),
        dq(size_t(kBlockM) * dp_),
        row(size_t(dp_)), lse(kBlockM), dsum(kBlockM) {}
};

// Shared state of one backward call.
struct BwdShared {
  const core::AttnParams& p;
  int d, dp;
  std::vector<int64_t> qrow0;    // global dense row of sequence b's first query (b*Nq or cu_q[b])
  std::vector<int64_t> qblock0;  // index of sequence b's first query block
  std::vector<float> dsum;       // D, [Hq][total_q]
  std::vector<float> dq_acc;     // [total_q][Hq][dp] fp32
  std::unique_ptr<std::atomic<int>[]> ticket;  // [total query blocks][Hq]

  float* dq_row(int64_t grow, int h) { return dq_acc.data() + (grow * p.heads_q + h) * dp; }
};

void wait_for(std::atomic<int>& t, int value) {
  for (int spins = 0; t.load(std::memory_order_acquire) != value; ++spins)
    if (spins > 64) std::this_thread::yield();
}

void backward_block(BwdShared& sh, const BwdTask& t, BwdScratch& w) {
  const core::AttnParams& p = sh.p;
  const int d = sh.d, dp = sh.dp;
  const core::SeqInfo seq = core::seq_info(p, t.b);
  const core::Mask mask(seq.q_len, seq.k_len, p.window_left, p.window_right);
  const int64_t j0 = int64_t(t.jb) * kBlockN;
  const int nk = int(std::min<int64_t>(kBlockN, seq.k_len - j0));
  const int nkp = round_up(nk, kVecWidth);

  const HeadView kv{static_cast<const char*>(p.k), p.dtype, p.k_str, t.b, t.hk};
  const HeadView vv{static_cast<const char*>(p.v), p.dtype, p.v_str, t.b, t.hk};
  load_rows_transposed(kv, seq.k_start + j0, nk, nkp, d, w.kt.data(), kBlockN, w.row.data());
  load_rows_transposed(vv, seq.k_start + j0, nk, nkp, d, w.vt.data(), kBlockN, w.row.data());
  load_rows(kv, seq.k_start + j0, nk, d, w.krow.data(), dp);
  std::fill(w.dk.begin(), w.dk.end(), 0.f);
  std::fill(w.dv.begin(), w.dv.end(), 0.f);

  // fp32 Q and dO are B operands (re-read per 6-row block): in place only when one head's rows
  // are contiguous, as for V in the forward (see there).
  const bool in_place = p.dtype == core::DType::F32 && d == dp && p.q_str.row == d && p.do_str.row == d;
  const int group = p.group_size();
  for (int h = t.hk * group; h < (t.hk + 1) * group; ++h) {
    const HeadView qv{static_cast<const char*>(p.q), p.dtype, p.q_str, t.b, h};
    const HeadView dov{static_cast<const char*>(p.dout), p.dtype, p.do_str, t.b, h};
    for (int64_t i0 = 0; i0 < seq.q_len; i0 += kBlockM) {
      const int mi = int(std::min<int64_t>(kBlockM, seq.q_len - i0));
      int64_t first = 0, last = 0;
      mask.key_range(i0, i0 + mi, &first, &last);
      if (first >= last || j0 >= last || j0 + nk <= first) continue;  // block skipping
      // This block's rank among the key blocks contributing to dQ_i (they are contiguous).
      const int rank = t.jb - int(first / kBlockN);

      const float* qp = w.q.data();
      const float* dop = w.dout.data();
      int64_t ldq = dp, lddo = dp;
      if (in_place) {
        qp = static_cast<const float*>(qv.row(seq.q_start + i0));
        dop = static_cast<const float*>(dov.row(seq.q_start + i0));
        ldq = p.q_str.row;
        lddo = p.do_str.row;
      } else {
        load_rows(qv, seq.q_start + i0, mi, d, w.q.data(), dp);
        load_rows(dov, seq.q_start + i0, mi, d, w.dout.data(), dp);
      }
      for (int r = 0; r < mi; ++r) {
        const int64_t grow = seq.q_start + i0 + r;
        w.lse[r] = core::lse_for_backward(p.lse[p.lse_offset(t.b, h, grow)]);
        w.dsum[r] = sh.dsum[size_t(h) * p.total_q + sh.qrow0[t.b] + i0 + r];
      }

      // S = Q K^T, then P = exp(score - LSE) in place; dP = dO V^T.
      gemm_tile(mi, nkp, d, qp, ldq, w.kt.data(), kBlockN, w.s.data(), kBlockN, false);
      gemm_tile(mi, nkp, d, dop, lddo, w.vt.data(), kBlockN, w.dp.data(), kBlockN, false);
      const bool partial = !mask.block_unmasked(i0, i0 + mi, j0, j0 + nk);
      for (int r = 0; r < mi; ++r) {
        float* srow = w.s.data() + int64_t(r) * kBlockN;
        float* dprow = w.dp.data() + int64_t(r) * kBlockN;
        const float dsum = w.dsum[r];
        if (p.softcap > 0.f) {
          // dS needs d(score)/d(qk) at the transformed score; fold it into dprow now.
          softcap_span(srow, nk, p.scale, p.softcap);
          for (int c = 0; c < nk; ++c)
            dprow[c] = (dprow[c] - dsum) * core::score_transform_grad(srow[c], p.scale, p.softcap);
        } else {
          const float scale = p.scale;
          for (int c = 0; c < nk; ++c) {
            srow[c] *= scale;
            dprow[c] = (dprow[c] - dsum) * scale;
          }
        }
        if (partial) {
          int64_t lo = 0, hi = 0;
          visible_keys(mask, i0 + r, j0, nk, &lo, &hi);
          for (int64_t c = 0; c < lo; ++c) srow[c] = -INFINITY;
          for (int64_t c = hi; c < nk; ++c) srow[c] = -INFINITY;
        }
        exp_sub_sum(srow, nk, w.lse[r]);  // P (a row with lse = -inf maps to +inf: P = 0)
        for (int c = 0; c < nk; ++c) dprow[c] *= srow[c];  // dS = P * (dP - D) * grad
      }
      // dV_j += P^T dO ; dK_j += dS^T Q (both read transposed) ; dQ_i (local) = dS K_j.
      gemm_tile_at(nk, dp, mi, w.s.data(), kBlockN, dop, lddo, w.dv.data(), dp, true);
      gemm_tile_at(nk, dp, mi, w.dp.data(), kBlockN, qp, ldq, w.dk.data(), dp, true);
      gemm_tile(mi, dp, nk, w.dp.data(), kBlockN, w.krow.data(), dp, w.dq.data(), dp, false);

      // Ordered accumulation into the shared dQ (see the file comment).
      std::atomic<int>& tk = sh.ticket[size_t(sh.qblock0[t.b] + i0 / kBlockM) * p.heads_q + h];
      wait_for(tk, rank);
      for (int r = 0; r < mi; ++r) {
        float* acc = sh.dq_row(sh.qrow0[t.b] + i0 + r, h);
        const float* src = w.dq.data() + int64_t(r) * dp;
        for (int c = 0; c < d; ++c) acc[c] += src[c];
      }
      tk.store(rank + 1, std::memory_order_release);
    }
  }
  store_rows(w.dk.data(), dp, nk, d, static_cast<char*>(p.dk), p.dtype, p.dk_str, t.b,
             seq.k_start + j0, t.hk);
  store_rows(w.dv.data(), dp, nk, d, static_cast<char*>(p.dv), p.dtype, p.dv_str, t.b,
             seq.k_start + j0, t.hk);
}

}  // namespace

core::Status backward(const core::AttnParams& p) {
  if (p.dtype != core::DType::F32 && p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("CPU backend: dtype ") + core::dtype_name(p.dtype) +
                             " is not supported (float32, float16, bfloat16 are)");
  // No query rows: the LSE is an empty tensor (whose data pointer may be null) and is never read;
  // every key's gradient is 0 and the loops below write exactly that.
  if (!p.lse && p.total_q > 0) return core::invalid("CPU backward: lse is required");
  const int threads = resolve_threads(p.num_threads);
  BwdShared sh{p, p.head_dim, round_up(p.head_dim, kVecWidth), {}, {}, {}, {}, nullptr};
  sh.qrow0.resize(size_t(p.batch));
  sh.qblock0.resize(size_t(p.batch) + 1);
  sh.qblock0[0] = 0;
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo seq = core::seq_info(p, b);
    sh.qrow0[b] = p.varlen ? seq.q_start : int64_t(b) * p.seqlen_q;
    sh.qblock0[b + 1] = sh.qblock0[b] + (seq.q_len + kBlockM - 1) / kBlockM;
  }
  const int64_t n_qblocks = sh.qblock0[p.batch];
  const size_t n_tickets = size_t(n_qblocks) * p.heads_q;
  sh.ticket.reset(new std::atomic<int>[n_tickets]);
  for (size_t i = 0; i < n_tickets; ++i) sh.ticket[i].store(0, std::memory_order_relaxed);
  sh.dsum.assign(size_t(p.heads_q) * p.total_q, 0.f);
  sh.dq_acc.assign(size_t(p.total_q) * p.heads_q * sh.dp, 0.f);

  // Query-block list shared by phases 1 and 3: (b, block) pairs.
  std::vector<std::pair<int, int64_t>> qblocks;
  for (int b = 0; b < p.batch; ++b)
    for (int64_t i0 = 0; i0 < core::seq_info(p, b).q_len; i0 += kBlockM) qblocks.push_back({b, i0});

  // Phase 1: D = rowsum(dO * O).
  parallel_for(int64_t(qblocks.size()), threads, [&](int64_t t, int) {
    const int b = qblocks[size_t(t)].first;
    const int64_t i0 = qblocks[size_t(t)].second;
    const core::SeqInfo seq = core::seq_info(p, b);
    const int mi = int(std::min<int64_t>(kBlockM, seq.q_len - i0));
    std::vector<float> o(size_t(sh.dp)), dout(size_t(sh.dp));
    for (int h = 0; h < p.heads_q; ++h) {
      const HeadView ov{static_cast<const char*>(p.o), p.dtype, p.o_str, b, h};
      const HeadView dov{static_cast<const char*>(p.dout), p.dtype, p.do_str, b, h};
      for (int r = 0; r < mi; ++r) {
        load_span(ov.row(seq.q_start + i0 + r), p.dtype, p.head_dim, o.data());
        load_span(dov.row(seq.q_start + i0 + r), p.dtype, p.head_dim, dout.data());
        float acc = 0.f;
        for (int c = 0; c < p.head_dim; ++c) acc += o[c] * dout[c];
        sh.dsum[size_t(h) * p.total_q + sh.qrow0[b] + i0 + r] = acc;
      }
    }
  });

  // Phase 2: key-block tasks, key block major (see the file comment on ordering).
  std::vector<BwdTask> tasks;
  int64_t max_kblocks = 0;
  for (int b = 0; b < p.batch; ++b)
    max_kblocks = std::max(max_kblocks, (core::seq_info(p, b).k_len + kBlockN - 1) / kBlockN);
  for (int64_t jb = 0; jb < max_kblocks; ++jb)
    for (int b = 0; b < p.batch; ++b) {
      if (jb * kBlockN >= core::seq_info(p, b).k_len) continue;
      for (int hk = 0; hk < p.heads_kv; ++hk) tasks.push_back({b, hk, int(jb)});
    }
  const int t2 = int(std::min<int64_t>(threads, int64_t(tasks.size())));
  std::vector<BwdScratch> scratch;
  scratch.reserve(size_t(std::max(t2, 1)));
  for (int w = 0; w < std::max(t2, 1); ++w) scratch.emplace_back(sh.d, sh.dp);
  parallel_for(int64_t(tasks.size()), t2, [&](int64_t t, int worker) {
    backward_block(sh, tasks[size_t(t)], scratch[size_t(worker)]);
  });

  // Phase 3: dQ in the output dtype.
  parallel_for(int64_t(qblocks.size()), threads, [&](int64_t t, int) {
    const int b = qblocks[size_t(t)].first;
    const int64_t i0 = qblocks[size_t(t)].second;
    const core::SeqInfo seq = core::seq_info(p, b);
    const int mi = int(std::min<int64_t>(kBlockM, seq.q_len - i0));
    for (int h = 0; h < p.heads_q; ++h)
      store_rows(sh.dq_row(sh.qrow0[b] + i0, h), p.heads_q * sh.dp, mi, p.head_dim,
                 static_cast<char*>(p.dq), p.dtype, p.dq_str, b, seq.q_start + i0, h);
  });

  // Keys a varlen sequence does not use (seqused_k) get a zero gradient.
  if (p.varlen && p.seqused_k) {
    std::vector<float> zero(size_t(sh.dp), 0.f);
    for (int b = 0; b < p.batch; ++b) {
      const core::SeqInfo seq = core::seq_info(p, b);
      for (int64_t r = seq.k_start + seq.k_len; r < p.cu_seqlens_k[b + 1]; ++r)
        for (int hk = 0; hk < p.heads_kv; ++hk) {
          store_rows(zero.data(), sh.dp, 1, p.head_dim, static_cast<char*>(p.dk), p.dtype,
                     p.dk_str, b, r, hk);
          store_rows(zero.data(), sh.dp, 1, p.head_dim, static_cast<char*>(p.dv), p.dtype,
                     p.dv_str, b, r, hk);
        }
    }
  }
  return core::Status::success();
}

}  // namespace fa::cpu
