// Float64 reference attention: for each (sequence, query head, query row) the full score row over
// the visible keys, a two-pass softmax (max, then sum of exp), and the backward by the textbook
// formulas dP = dO V^T, D = sum_j P dP, dS = P (dP - D) * d(score)/d(qk), dQ = dS K,
// dK += dS^T Q, dV += P^T dO, summed over the query heads of a GQA group. No tiling, no online
// softmax: it shares only the mask definition (core::Mask) with the backends. Both passes are
// templates on the arithmetic type so that the same code gives the float32 peers of the tests.
#include "cpu/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/mask.hpp"
#include "cpu/convert.hpp"

namespace fa::ref {
namespace {

using core::AttnParams;

// Rows in the dense layout of q (and o, dq) and of k (and v, dk, dv).
int64_t dense_q_rows(const AttnParams& p) { return p.varlen ? p.total_q : int64_t(p.batch) * p.seqlen_q; }
int64_t dense_k_rows(const AttnParams& p) { return p.varlen ? p.total_k : int64_t(p.batch) * p.seqlen_k; }

void load_tensor(const AttnParams& p, const void* base, const core::Strides& str, int heads,
                 bool is_q, std::vector<double>& out) {
  const int d = p.head_dim;
  out.assign(size_t((is_q ? dense_q_rows(p) : dense_k_rows(p)) * heads * d), 0.0);
  std::vector<float> row(static_cast<size_t>(d));
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo s = core::seq_info(p, b);
    const int64_t n = is_q ? s.q_len : s.k_len;
    const int64_t start = is_q ? s.q_start : s.k_start;
    for (int64_t i = 0; i < n; ++i)
      for (int h = 0; h < heads; ++h) {
        const cpu::HeadView v{static_cast<const char*>(base), p.dtype, str, b, h};
        cpu::load_span(v.row(start + i), p.dtype, d, row.data());
        const int64_t r = is_q ? q_row(p, b, i) : k_row(p, b, i);
        for (int c = 0; c < d; ++c) out[size_t((r * heads + h) * d + c)] = row[size_t(c)];
      }
  }
}

// Score of one (query, key) pair and d(score)/d(qk), in T (double for the reference; float for
// the naive float32 peer below).
template <class T>
struct Score {
  T s, grad;
};
template <class T>
Score<T> score(T qk, const AttnParams& p) {
  const T scale = T(p.scale);
  if (p.softcap > 0.f) {
    const T cap = T(p.softcap);
    const T t = std::tanh(qk * scale / cap);
    return {cap * t, scale * (T(1) - t * t)};
  }
  return {qk * scale, scale};
}

// Probabilities of one query row over keys [0, k_len): P (0 where masked), and the row's lse.
template <class T>
void row_probs(const AttnParams& p, const std::vector<T>& in_q, const std::vector<T>& in_k,
               const core::Mask& mask, int b, int h, int64_t i, std::vector<T>& prob,
               std::vector<T>& grad, T* lse) {
  const int d = p.head_dim;
  const int hk = h / p.group_size();
  const T* q = &in_q[size_t((q_row(p, b, i) * p.heads_q + h) * d)];
  prob.assign(size_t(mask.k_len), T(0));
  grad.assign(size_t(mask.k_len), T(0));
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < mask.k_len; ++j) {
    if (!mask.allowed(i, j)) continue;
    const T* k = &in_k[size_t((k_row(p, b, j) * p.heads_kv + hk) * d)];
    T qk = 0;
    for (int c = 0; c < d; ++c) qk += q[c] * k[c];
    const Score<T> sc = score(qk, p);
    prob[size_t(j)] = sc.s;
    grad[size_t(j)] = sc.grad;
    m = std::max(m, sc.s);
  }
  if (m == -std::numeric_limits<T>::infinity()) {  // no visible key
    *lse = m;
    return;
  }
  T l = 0;
  for (int64_t j = 0; j < mask.k_len; ++j) {
    if (!mask.allowed(i, j)) continue;
    prob[size_t(j)] = std::exp(prob[size_t(j)] - m);
    l += prob[size_t(j)];
  }
  for (int64_t j = 0; j < mask.k_len; ++j) prob[size_t(j)] /= l;
  *lse = m + std::log(l);
}

// Calls row(b, s, h, hk, i, prob, grad, lse) for every query row i of every sequence b and query
// head h (hk its KV head) with the row's probabilities: the loop nest forward and backward share.
template <class T, class Row>
void for_each_row(const AttnParams& p, const std::vector<T>& in_q, const std::vector<T>& in_k,
                  Row&& row) {
  std::vector<T> prob, grad;
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo s = core::seq_info(p, b);
    const core::Mask mask(s.q_len, s.k_len, p.window_left, p.window_right);
    for (int h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < s.q_len; ++i) {
        T lse;
        row_probs(p, in_q, in_k, mask, b, h, i, prob, grad, &lse);
        row(b, s, h, h / p.group_size(), i, prob, grad, lse);
      }
  }
}

// O = P V and the LSE, every value and sum in T; the outputs are written as double.
template <class T>
void forward_in(const AttnParams& p, const std::vector<T>& in_q, const std::vector<T>& in_k,
                const std::vector<T>& in_v, std::vector<double>& o_out, std::vector<double>& lse) {
  const int d = p.head_dim;
  std::vector<T> o(size_t(dense_q_rows(p) * p.heads_q * d), T(0));
  lse.assign(
      size_t(p.varlen ? int64_t(p.heads_q) * p.total_q : int64_t(p.batch) * p.heads_q * p.seqlen_q),
      -std::numeric_limits<double>::infinity());
  const auto row = [&](int b, const core::SeqInfo& s, int h, int hk, int64_t i,
                       const std::vector<T>& prob, const std::vector<T>&, T row_lse) {
    lse[size_t(lse_index(p, b, h, i))] = row_lse;
    T* out = &o[size_t((q_row(p, b, i) * p.heads_q + h) * d)];
    for (int64_t j = 0; j < s.k_len; ++j) {
      if (prob[size_t(j)] == T(0)) continue;
      const T* v = &in_v[size_t((k_row(p, b, j) * p.heads_kv + hk) * d)];
      for (int c = 0; c < d; ++c) out[c] += prob[size_t(j)] * v[c];
    }
  };
  for_each_row(p, in_q, in_k, row);
  o_out.assign(o.begin(), o.end());
}

// The backward's textbook formulas, every value and sum in T; the outputs are written as double.
// stored_o: D = dO . O with O rounded to p.dtype, as an implementation that stores O computes it;
// otherwise D = sum_j P_j dP_j.
template <class T>
void backward_in(const AttnParams& p, const std::vector<T>& in_q, const std::vector<T>& in_k,
                 const std::vector<T>& in_v, const std::vector<T>& in_dout, bool stored_o,
                 std::vector<double>& dq_out, std::vector<double>& dk_out,
                 std::vector<double>& dv_out) {
  const int d = p.head_dim;
  std::vector<T> dq(size_t(dense_q_rows(p) * p.heads_q * d), T(0));
  std::vector<T> dk(size_t(dense_k_rows(p) * p.heads_kv * d), T(0));
  std::vector<T> dv(dk.size(), T(0));
  std::vector<T> dp, o;
  std::vector<float> o_stored(static_cast<size_t>(d));
  // O stored in p.dtype: room for d values of at most 4 bytes each.
  std::vector<float> o_bytes(static_cast<size_t>(d));
  const auto row = [&](int b, const core::SeqInfo& s, int h, int hk, int64_t i,
                       const std::vector<T>& prob, const std::vector<T>& grad, T) {
    const size_t qi = size_t((q_row(p, b, i) * p.heads_q + h) * d);
    const T* q = &in_q[qi];
    const T* g = &in_dout[qi];
    // dP_j = dO . v_j and D = sum_j P_j dP_j (= dO . O), or dO . O from O = sum_j P_j v_j stored.
    dp.assign(size_t(s.k_len), T(0));
    o.assign(stored_o ? size_t(d) : 0, T(0));
    T dsum = 0;
    for (int64_t j = 0; j < s.k_len; ++j) {
      const T pj = prob[size_t(j)];
      if (pj == T(0)) continue;
      const T* v = &in_v[size_t((k_row(p, b, j) * p.heads_kv + hk) * d)];
      T acc = 0;
      for (int c = 0; c < d; ++c) acc += g[c] * v[c];
      dp[size_t(j)] = acc;
      if (stored_o)
        for (int c = 0; c < d; ++c) o[size_t(c)] += pj * v[c];
      else
        dsum += pj * acc;
    }
    if (stored_o) {
      for (int c = 0; c < d; ++c) o_stored[size_t(c)] = float(o[size_t(c)]);
      cpu::store_span(o_stored.data(), d, p.dtype, o_bytes.data());
      cpu::load_span(o_bytes.data(), p.dtype, d, o_stored.data());
      for (int c = 0; c < d; ++c) dsum += g[c] * T(o_stored[size_t(c)]);
    }
    for (int64_t j = 0; j < s.k_len; ++j) {
      const T pj = prob[size_t(j)];
      if (pj == T(0)) continue;
      const T ds = pj * (dp[size_t(j)] - dsum) * grad[size_t(j)];
      const size_t kj = size_t((k_row(p, b, j) * p.heads_kv + hk) * d);
      for (int c = 0; c < d; ++c) {
        dq[qi + size_t(c)] += ds * in_k[kj + size_t(c)];
        dk[kj + size_t(c)] += ds * q[c];
        dv[kj + size_t(c)] += pj * g[c];
      }
    }
  };
  for_each_row(p, in_q, in_k, row);
  dq_out.assign(dq.begin(), dq.end());
  dk_out.assign(dk.begin(), dk.end());
  dv_out.assign(dv.begin(), dv.end());
}

// Exact: the inputs were read from fp32/fp16/bf16 tensors.
std::vector<float> narrow(const std::vector<double>& x) {
  return {x.begin(), x.end()};
}

}  // namespace

int64_t q_row(const AttnParams& p, int b, int64_t i) {
  return p.varlen ? p.cu_seqlens_q[b] + i : int64_t(b) * p.seqlen_q + i;
}
int64_t k_row(const AttnParams& p, int b, int64_t j) {
  return p.varlen ? p.cu_seqlens_k[b] + j : int64_t(b) * p.seqlen_k + j;
}
int64_t lse_index(const AttnParams& p, int b, int h, int64_t i) {
  return p.varlen ? int64_t(h) * p.total_q + p.cu_seqlens_q[b] + i
                  : (int64_t(b) * p.heads_q + h) * p.seqlen_q + i;
}

Inputs load(const AttnParams& p) {
  Inputs in;
  load_tensor(p, p.q, p.q_str, p.heads_q, true, in.q);
  load_tensor(p, p.k, p.k_str, p.heads_kv, false, in.k);
  load_tensor(p, p.v, p.v_str, p.heads_kv, false, in.v);
  if (p.dout) load_tensor(p, p.dout, p.do_str, p.heads_q, true, in.dout);
  return in;
}

void forward(const AttnParams& p, const Inputs& in, std::vector<double>& o, std::vector<double>& lse) {
  forward_in<double>(p, in.q, in.k, in.v, o, lse);
}

void backward(const AttnParams& p, const Inputs& in, std::vector<double>& dq,
              std::vector<double>& dk, std::vector<double>& dv) {
  backward_in<double>(p, in.q, in.k, in.v, in.dout, false, dq, dk, dv);
}

void forward_float32(const AttnParams& p, const Inputs& in, std::vector<double>& o,
                     std::vector<double>& lse) {
  forward_in<float>(p, narrow(in.q), narrow(in.k), narrow(in.v), o, lse);
}

void backward_float32(const AttnParams& p, const Inputs& in, std::vector<double>& dq,
                      std::vector<double>& dk, std::vector<double>& dv) {
  backward_in<float>(p, narrow(in.q), narrow(in.k), narrow(in.v), narrow(in.dout), true, dq, dk,
                     dv);
}

void forward(const AttnParams& p, std::vector<double>& o, std::vector<double>& lse) {
  forward(p, load(p), o, lse);
}

void backward(const AttnParams& p, std::vector<double>& dq, std::vector<double>& dk,
              std::vector<double>& dv) {
  backward(p, load(p), dq, dk, dv);
}

void kvcache_forward(const AttnParams& p, std::vector<double>& o, std::vector<double>& lse) {
  const int d = p.head_dim;
  const int batch = p.batch;
  const size_t nb = size_t(batch);
  std::vector<int32_t> cu_q(nb + 1, 0), cu_k(nb + 1, 0), old_len(nb, 0);
  int64_t max_len = 0;
  for (int b = 0; b < batch; ++b) {
    old_len[size_t(b)] = p.cache_seqlens ? p.cache_seqlens[b] : int32_t(p.seqlen_k);
    const int64_t len = old_len[size_t(b)] + (p.k_new ? p.seqlen_new : 0);
    max_len = std::max(max_len, len);
    cu_q[size_t(b) + 1] = int32_t(cu_q[size_t(b)] + p.seqlen_q);
    cu_k[size_t(b) + 1] = int32_t(cu_k[size_t(b)] + len);
  }
  AttnParams v = p;
  v.kvcache = false;
  v.varlen = true;
  v.cu_seqlens_q = cu_q.data();
  v.cu_seqlens_k = cu_k.data();
  v.seqused_k = nullptr;
  v.total_q = cu_q[size_t(batch)];
  v.total_k = cu_k[size_t(batch)];
  v.seqlen_k = max_len;

  // Row j of KV head h of sequence b, from the cache (j < old length) or from the new rows.
  std::vector<float> row(static_cast<size_t>(d));
  auto key_row = [&](const void* cache, const core::Strides& cs, const void* fresh,
                     const core::Strides& ns, int b, int64_t j, int h) -> const void* {
    const int64_t eb = cpu::dtype_bytes(p.dtype);
    if (j >= old_len[size_t(b)])
      return static_cast<const char*>(fresh) + ns.offset(b, j - old_len[size_t(b)], h) * eb;
    int64_t off;
    if (p.block_table) {
      const int64_t page = p.block_table[int64_t(b) * p.block_table_stride + j / p.page_size];
      off = page * cs.batch + (j % p.page_size) * cs.row + h * cs.head;
    } else {
      const int64_t entry = p.cache_batch_idx ? p.cache_batch_idx[b] : b;
      off = entry * cs.batch + j * cs.row + h * cs.head;
    }
    return static_cast<const char*>(cache) + off * eb;
  };
  Inputs in;
  in.q.assign(size_t(v.total_q * p.heads_q * d), 0.0);
  in.k.assign(size_t(v.total_k * p.heads_kv * d), 0.0);
  in.v.assign(in.k.size(), 0.0);
  for (int b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < p.seqlen_q; ++i)
      for (int h = 0; h < p.heads_q; ++h) {
        const cpu::HeadView qv{static_cast<const char*>(p.q), p.dtype, p.q_str, b, h};
        cpu::load_span(qv.row(i), p.dtype, d, row.data());
        std::copy(row.begin(), row.end(), in.q.begin() + (q_row(v, b, i) * p.heads_q + h) * d);
      }
    for (int64_t j = 0; j < cu_k[size_t(b) + 1] - cu_k[size_t(b)]; ++j)
      for (int h = 0; h < p.heads_kv; ++h) {
        const int64_t at = (k_row(v, b, j) * p.heads_kv + h) * d;
        cpu::load_span(key_row(p.k, p.k_str, p.k_new, p.knew_str, b, j, h), p.dtype, d, row.data());
        std::copy(row.begin(), row.end(), in.k.begin() + at);
        cpu::load_span(key_row(p.v, p.v_str, p.v_new, p.vnew_str, b, j, h), p.dtype, d, row.data());
        std::copy(row.begin(), row.end(), in.v.begin() + at);
      }
  }
  std::vector<double> lse_varlen;
  forward(v, in, o, lse_varlen);  // o: varlen rows b * Nq + i are the batch layout's rows
  lse.assign(size_t(int64_t(batch) * p.heads_q * p.seqlen_q), 0.0);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < p.heads_q; ++h)
      for (int64_t i = 0; i < p.seqlen_q; ++i)
        lse[size_t((int64_t(b) * p.heads_q + h) * p.seqlen_q + i)] =
            lse_varlen[size_t(lse_index(v, b, h, i))];
}

}  // namespace fa::ref
