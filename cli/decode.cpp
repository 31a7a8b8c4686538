#include "decode.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/mask.hpp"
#include "core/validate.hpp"
#include "cpu/reference.hpp"

namespace fa::cli {

std::string DecodeSpec::cache_text() const {
  std::ostringstream s;
  if (page_size > 0)
    s << "paged (page " << page_size << ", shuffled block table)";
  else
    s << "contiguous";
  s << ", append " << append << "/step, splits ";
  if (splits == 0)
    s << "auto";
  else
    s << splits;
  if (ragged) s << ", ragged lengths";
  return s.str();
}

fa_tensor DecodeWorkload::index_tensor(void* data, std::vector<int64_t> shape) const {
  fa_tensor t = describe(data, FA_DTYPE_INT32, shape, p_.gpu);
  return t;
}

DecodeWorkload::DecodeWorkload(const Problem& p, const DecodeSpec& s) : p_(p), s_(s) {
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Hq = p_.heads_q, Hk = p_.heads_kv, D = p_.head_dim,
                A = s_.append;
  const fa_dtype dt = p_.dtype;
  const bool g = p_.gpu;
  opt_ = p_.options();

  // Capacity: the longest start plus every step's appended rows, rounded up to whole pages.
  capacity_ = s_.cache_len + A * s_.max_steps;
  if (s_.page_size > 0) {
    pages_per_seq_ = std::max<int64_t>(1, (capacity_ + s_.page_size - 1) / s_.page_size);
    capacity_ = pages_per_seq_ * s_.page_size;
    entries_ = B * pages_per_seq_;
    rows_ = s_.page_size;
  } else {
    entries_ = B;
    rows_ = std::max<int64_t>(1, capacity_);
  }

  // Index tables (small; built on the host first, because validating a CPU call reads them).
  std::mt19937_64 gen(p_.seed * 0x9e3779b97f4a7c15ull + 7);
  std::vector<int32_t> start(size_t(B), int32_t(s_.cache_len));
  if (s_.ragged)
    for (auto& l : start)
      l = int32_t(std::uniform_int_distribution<int64_t>(s_.cache_len / 2, s_.cache_len)(gen));
  seqlens_h_.resize(size_t(s_.max_steps * B));
  for (int64_t t = 0; t < s_.max_steps; ++t)
    for (int64_t b = 0; b < B; ++b)
      seqlens_h_[size_t(t * B + b)] = int32_t(start[size_t(b)] + t * A);
  if (s_.page_size > 0) {
    // A page allocator hands out pages in no particular order: a shuffled permutation of all pages,
    // so consecutive pages of one sequence are not adjacent in memory.
    std::vector<int32_t> perm(static_cast<size_t>(entries_));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    table_h_ = perm;
  }

  // Ask the library first (placeholder data pointers; host index arrays, read only for CPU
  // calls), so a bad request is reported in its words before the cache is allocated. The same
  // call sizes the split-KV workspace, allocated once here rather than per step.
  size_t ws_bytes = 0;
  {
    static char placeholder[16];
    fa_tensor q = describe(placeholder, dt, {B, Nq, Hq, D}, g);
    fa_tensor kc = describe(placeholder, dt, {entries_, rows_, Hk, D}, g);
    fa_tensor kn = describe(placeholder, dt, {B, A, Hk, D}, g);
    fa_tensor sl = index_tensor(seqlens_h_.data() + (s_.max_steps - 1) * B, {B});
    fa_tensor tab = index_tensor(table_h_.data(), {B, pages_per_seq_});
    fa_kvcache kv{};
    kv.k_cache = &kc;
    kv.v_cache = &kc;
    kv.cache_seqlens = &sl;
    kv.block_table = s_.page_size > 0 ? &tab : nullptr;
    kv.k_new = A > 0 ? &kn : nullptr;
    kv.v_new = A > 0 ? &kn : nullptr;
    kv.num_splits = int(s_.splits);
    throw_if_failed(fa_kvcache_workspace_size(&q, &kv, &opt_, &ws_bytes));
  }

  const int64_t e = elem_bytes(dt);
  const int64_t nq = B * Nq * Hq * D, nc = entries_ * rows_ * Hk * D, nn = B * A * Hk * D;
  fill_random(q_h_, nq, dt, p_.seed * 8 + 0);
  fill_random(kn_h_, nn, dt, p_.seed * 8 + 3);
  fill_random(vn_h_, nn, dt, p_.seed * 8 + 4);
  q_ = Buffer(size_t(nq * e), g);
  kc_ = Buffer(size_t(nc * e), g);
  vc_ = Buffer(size_t(nc * e), g);
  kn_ = Buffer(size_t(nn * e), g);
  vn_ = Buffer(size_t(nn * e), g);
  out_ = Buffer(size_t(nq * e), g);
  lse_ = Buffer(size_t(B * Hq * Nq * 4), g);
  seqlens_ = Buffer(seqlens_h_.size() * 4, g);
  table_ = Buffer(table_h_.size() * 4, g);
  workspace_ = Buffer(ws_bytes, g);
  {
    // The cache's initial contents exist on the host only until uploaded: check() reads the
    // cache back from the device, as the steps left it.
    std::vector<uint8_t> tmp;
    fill_random(tmp, nc, dt, p_.seed * 8 + 1);
    kc_.upload(tmp.data());
    fill_random(tmp, nc, dt, p_.seed * 8 + 2);
    vc_.upload(tmp.data());
  }
  q_.upload(q_h_.data());
  kn_.upload(kn_h_.data());
  vn_.upload(vn_h_.data());
  seqlens_.upload(seqlens_h_.data());
  table_.upload(table_h_.data());
  tq_ = describe(q_.data(), dt, {B, Nq, Hq, D}, g);
  tkc_ = describe(kc_.data(), dt, {entries_, rows_, Hk, D}, g);
  tvc_ = describe(vc_.data(), dt, {entries_, rows_, Hk, D}, g);
  tkn_ = describe(kn_.data(), dt, {B, A, Hk, D}, g);
  tvn_ = describe(vn_.data(), dt, {B, A, Hk, D}, g);
  tout_ = describe(out_.data(), dt, {B, Nq, Hq, D}, g);
  tlse_ = describe(lse_.data(), FA_DTYPE_FLOAT32, {B, Hq, Nq}, g);
  ttable_ = index_tensor(table_.data(), {B, pages_per_seq_});
  if (ws_bytes > 0) {
    opt_.workspace = workspace_.data();
    opt_.workspace_bytes = ws_bytes;
  }
}

void DecodeWorkload::step() {
  if (step_ >= s_.max_steps)
    throw std::logic_error("decode workload: the cache has no room for another step");
  const int64_t B = p_.batch;
  fa_tensor sl = index_tensor(static_cast<uint8_t*>(seqlens_.data()) + step_ * B * 4, {B});
  fa_kvcache kv{};
  kv.k_cache = &tkc_;
  kv.v_cache = &tvc_;
  kv.cache_seqlens = &sl;
  kv.block_table = s_.page_size > 0 ? &ttable_ : nullptr;
  kv.k_new = s_.append > 0 ? &tkn_ : nullptr;
  kv.v_new = s_.append > 0 ? &tvn_ : nullptr;
  kv.num_splits = int(s_.splits);
  throw_if_failed(fa_kvcache_forward(&tq_, &kv, &tout_, &tlse_, &opt_));
  ++step_;
}

int64_t DecodeWorkload::visible_keys(int b, int64_t t) const {
  const int64_t len = int64_t(seqlens_h_[size_t(t * p_.batch + b)]) + s_.append;
  const core::Mask m(p_.seqlen_q, len, p_.window_left, p_.causal ? 0 : p_.window_right);
  int64_t first = 0, last = 0;
  m.key_range(0, p_.seqlen_q, &first, &last);
  return std::max<int64_t>(0, last - first);
}

DecodeTiming DecodeWorkload::time(int warmup, int steps) {
  if (warmup + steps > steps_left())
    throw std::logic_error("decode workload: sized for fewer steps than asked to time");
  for (int i = 0; i < warmup; ++i) step();
  if (p_.gpu) gpu_synchronize();
  DecodeTiming r;
  r.steps = std::max(steps, 1);
  const double row_bytes = 2.0 * double(p_.heads_kv * p_.head_dim * elem_bytes(p_.dtype));  // K + V
  for (int64_t t = step_; t < step_ + r.steps; ++t)
    for (int b = 0; b < int(p_.batch); ++b) r.kv_bytes += double(visible_keys(b, t)) * row_bytes;
  Timer timer(p_.gpu);
  timer.start();
  for (int64_t i = 0; i < r.steps; ++i) step();
  r.total_ms = timer.stop_ms();
  return r;
}

CheckResult DecodeWorkload::check(int seqs) {
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Hq = p_.heads_q, Hk = p_.heads_kv, D = p_.head_dim,
                A = s_.append;
  const fa_dtype dt = p_.dtype;
  const int64_t e = elem_bytes(dt);
  const int64_t t = step_;
  if (t >= s_.max_steps) throw std::logic_error("decode workload: no step left to check");

  // The cache as the earlier steps left it: the reference's input.
  std::vector<uint8_t> kc_before(kc_.bytes()), vc_before(vc_.bytes());
  kc_.download(kc_before.data());
  vc_.download(vc_before.data());
  // Poison: a result the kernel forgets to write reads as NaN (0xff.. is NaN in every format).
  out_.fill_byte(0xff);
  lse_.fill_byte(0xff);
  step();
  if (p_.gpu) gpu_synchronize();
  std::vector<uint8_t> out_h(out_.bytes()), lse_h(lse_.bytes()), kc_after(kc_.bytes()),
      vc_after(vc_.bytes());
  out_.download(out_h.data());
  lse_.download(lse_h.data());
  kc_.download(kc_after.data());
  vc_.download(vc_after.data());

  CheckResult r;
  r.o.rtol = rtol_for(dt);
  r.lse.rtol = rtol_lse_for(dt);
  int64_t append_bad = 0;

  const int64_t n_pick = seqs <= 0 ? B : std::min<int64_t>(seqs, B);
  for (int64_t s = 0; s < n_pick; ++s) {
    const int b = int(n_pick == 1 ? 0 : s * (B - 1) / (n_pick - 1));  // first and last included
    // A batch-1 call for sequence b over the whole (pre-step) cache on the host: the block
    // table row of b, or cache entry b through cache_batch_idx.
    int32_t seqlen = seqlens_h_[size_t(t * B + b)], entry = b;
    fa_tensor hq = describe(q_h_.data() + b * Nq * Hq * D * e, dt, {1, Nq, Hq, D}, false);
    fa_tensor hkc = describe(kc_before.data(), dt, {entries_, rows_, Hk, D}, false);
    fa_tensor hvc = describe(vc_before.data(), dt, {entries_, rows_, Hk, D}, false);
    fa_tensor hkn = describe(kn_h_.data() + b * A * Hk * D * e, dt, {1, A, Hk, D}, false);
    fa_tensor hvn = describe(vn_h_.data() + b * A * Hk * D * e, dt, {1, A, Hk, D}, false);
    fa_tensor hsl = describe(&seqlen, FA_DTYPE_INT32, {1}, false);
    fa_tensor htab =
        describe(table_h_.data() + b * pages_per_seq_, FA_DTYPE_INT32, {1, pages_per_seq_}, false);
    fa_tensor hidx = describe(&entry, FA_DTYPE_INT32, {1}, false);
    std::vector<uint8_t> dummy_out(size_t(Nq * Hq * D * e));
    fa_tensor hout = describe(dummy_out.data(), dt, {1, Nq, Hq, D}, false);
    fa_kvcache kv{};
    kv.k_cache = &hkc;
    kv.v_cache = &hvc;
    kv.cache_seqlens = &hsl;
    kv.block_table = s_.page_size > 0 ? &htab : nullptr;
    kv.cache_batch_idx = s_.page_size > 0 ? nullptr : &hidx;
    kv.k_new = A > 0 ? &hkn : nullptr;
    kv.v_new = A > 0 ? &hvn : nullptr;
    fa_options hopt = opt_;
    hopt.backend = FA_BACKEND_CPU;
    hopt.algo = FA_ALGO_AUTO;
    hopt.workspace = nullptr;
    hopt.workspace_bytes = 0;
    core::CallArgs args;
    args.q = &hq, args.kvcache = &kv, args.out = &hout, args.opt = &hopt;
    core::AttnParams sub;
    const core::Status st = core::make_params(args, &sub);
    if (!st.ok()) throw LibraryError(st.code, st.message);
    std::vector<double> o_ref, lse_ref;
    ref::kvcache_forward(sub, o_ref, lse_ref);
    for (int64_t i = 0; i < Nq; ++i)
      for (int64_t h = 0; h < Hq; ++h) {
        for (int64_t c = 0; c < D; ++c)
          r.o.add(load_elem(out_h, dt, ((b * Nq + i) * Hq + h) * D + c),
                  o_ref[size_t((i * Hq + h) * D + c)]);
        float l;
        std::memcpy(&l, &lse_h[size_t(((b * Hq + h) * Nq + i) * 4)], 4);
        r.lse.add(l, lse_ref[size_t(h * Nq + i)]);
      }
    // The appended rows, where the block table (or entry b) puts them, bit-exact.
    for (int64_t j = 0; j < A; ++j) {
      const int64_t row = seqlen + j;
      const int64_t ent =
          s_.page_size > 0 ? table_h_[size_t(b * pages_per_seq_ + row / s_.page_size)] : b;
      const int64_t r_in = s_.page_size > 0 ? row % s_.page_size : row;
      const size_t dst = size_t(((ent * rows_ + r_in) * Hk) * D * e);
      const size_t src = size_t(((b * A + j) * Hk) * D * e);
      const size_t n = size_t(Hk * D * e);
      if (std::memcmp(&kc_after[dst], &kn_h_[src], n) != 0 ||
          std::memcmp(&vc_after[dst], &vn_h_[src], n) != 0)
        ++append_bad;
    }
  }
  r.cache_ok = append_bad == 0;

  std::ostringstream s;
  const auto row = seqlens_h_.begin() + t * B;
  s << (n_pick == B ? "all " : "") << n_pick << " of " << B << " sequences (all heads) at step "
    << t << ", keys " << *std::min_element(row, row + B) + A;
  if (s_.ragged) s << ".." << *std::max_element(row, row + B) + A;
  if (A > 0)
    s << "; appended rows "
      << (append_bad ? "WRONG in " + std::to_string(append_bad) + " places" : "bit-exact");
  r.sample = s.str();
  return r;
}

}  // namespace fa::cli
