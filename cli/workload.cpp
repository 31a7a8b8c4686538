#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "args.hpp"
#include "core/mask.hpp"
#include "core/validate.hpp"
#include "cpu/convert.hpp"
#include "cpu/reference.hpp"

namespace fa::cli {

int64_t elem_bytes(fa_dtype t) { return int64_t(core::dtype_size(t)); }

void throw_if_failed(fa_status s) {
  if (s != FA_OK) throw LibraryError(s, fa_last_error());
}

namespace {

// splitmix64: fast, seedable, good enough for test inputs (generating 4 x 16M values with
// std::normal_distribution would take seconds on this tool's critical path).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform on [-sqrt(3), sqrt(3)): mean 0, variance 1, like the usual randn inputs in scale.
  float unit() { return (float(next() >> 40) * (1.f / 16777216.f) * 2.f - 1.f) * 1.7320508f; }
};

}  // namespace

void fill_random(std::vector<uint8_t>& out, int64_t n, fa_dtype dt, uint64_t seed) {
  Rng rng{seed * 0x2545f4914f6cdd1dull + 1};
  out.resize(size_t(n * elem_bytes(dt)));
  if (dt == FA_DTYPE_FLOAT32) {
    auto* p = reinterpret_cast<float*>(out.data());
    for (int64_t i = 0; i < n; ++i) p[i] = rng.unit();
  } else {
    auto* p = reinterpret_cast<uint16_t*>(out.data());
    const bool f16 = dt == FA_DTYPE_FLOAT16;
    for (int64_t i = 0; i < n; ++i) {
      const float x = rng.unit();
      p[i] = f16 ? cpu::f32_to_f16(x) : cpu::f32_to_bf16(x);
    }
  }
}

double load_elem(const std::vector<uint8_t>& buf, fa_dtype dt, int64_t i) {
  if (dt == FA_DTYPE_FLOAT32) {
    float f;
    std::memcpy(&f, &buf[size_t(i) * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &buf[size_t(i) * 2], 2);
  return dt == FA_DTYPE_FLOAT16 ? cpu::f16_to_f32(h) : cpu::bf16_to_f32(h);
}

fa_tensor describe(void* data, fa_dtype dt, const std::vector<int64_t>& shape, bool gpu) {
  fa_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.device = gpu ? FA_DEVICE_CUDA : FA_DEVICE_CPU;
  t.rank = int(shape.size());
  int64_t st = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = shape[size_t(d)];
    t.strides[d] = st;
    st *= shape[size_t(d)];
  }
  return t;
}

// Relative tolerance per dtype for O and the gradients: 8 units of rounding (unit roundoff 2^-9
// for bf16, 2^-12 for fp16), which covers rounding the output and a low-precision P in P V.
// fp32 work is held to accumulation error. The check is a smoke test; the GPU suite applies the
// stricter "2x a naive same-precision implementation" rule.
double rtol_for(fa_dtype t) {
  switch (t) {
    case FA_DTYPE_FLOAT16: return 4.0 / 2048;
    case FA_DTYPE_BFLOAT16: return 4.0 / 256;
    default: return 1e-4;
  }
}
// LSE is fp32 in every dtype and computed from the same (rounded) inputs as the reference, so
// only fp32 accumulation and fast exp/tanh approximations (softcap on GPUs: ~2^-11 relative per
// score) separate them.
double rtol_lse_for(fa_dtype t) { return t == FA_DTYPE_FLOAT32 ? 1e-4 : 1e-3; }

const char* dtype_name(fa_dtype t) {
  switch (t) {
    case FA_DTYPE_FLOAT32: return "fp32";
    case FA_DTYPE_FLOAT16: return "fp16";
    case FA_DTYPE_BFLOAT16: return "bf16";
    case FA_DTYPE_FLOAT8_E4M3: return "fp8";
    case FA_DTYPE_INT32: return "int32";
  }
  return "?";
}

fa_dtype parse_dtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return FA_DTYPE_BFLOAT16;
  if (s == "fp16" || s == "float16" || s == "half") return FA_DTYPE_FLOAT16;
  if (s == "fp32" || s == "float32" || s == "float") return FA_DTYPE_FLOAT32;
  throw UsageError("--dtype must be bf16, fp16 or fp32, got '" + s + "'");
}

fa_algo parse_algo(const std::string& s) {
  if (s == "auto") return FA_ALGO_AUTO;
  if (s == "fa1") return FA_ALGO_FA1;
  if (s == "fa2") return FA_ALGO_FA2;
  if (s == "fa3") return FA_ALGO_FA3;
  throw UsageError("--algo must be auto, fa1, fa2 or fa3, got '" + s + "'");
}

std::string Problem::shape_text() const {
  std::ostringstream s;
  s << "B " << batch << ", H " << heads_q << "/" << heads_kv << ", N " << seqlen_q << "/"
    << seqlen_k << ", d " << head_dim;
  return s.str();
}

std::string Problem::mask_text() const {
  std::ostringstream s;
  if (window_left >= 0 || window_right >= 0)
    s << "window (" << window_left << ", " << (causal ? 0 : window_right) << ")";
  else
    s << (causal ? "causal" : "none");
  if (softcap > 0) s << " + softcap " << softcap;
  return s.str();
}

fa_options Problem::options() const {
  fa_options o;
  fa_options_init(&o);
  o.softmax_scale = float(scale);
  o.causal = causal ? 1 : 0;
  o.window_left = int(window_left);
  o.window_right = int(window_right);
  o.softcap = float(softcap);
  o.deterministic = deterministic ? 1 : 0;
  o.backend = gpu ? FA_BACKEND_CUDA : FA_BACKEND_CPU;
  o.algo = algo;
  o.num_threads = int(threads);
  return o;
}

double Problem::forward_flops() const {
  const double per_pair = 4.0 * double(batch) * double(heads_q) * double(head_dim);
  if (window_left < 0 && window_right < 0) {
    const double pairs = double(seqlen_q) * double(seqlen_k);
    return per_pair * (causal ? pairs / 2 : pairs);
  }
  const core::Mask m(seqlen_q, seqlen_k, window_left, causal ? 0 : window_right);
  double pairs = 0;
  for (int64_t i = 0; i < seqlen_q; ++i) {
    int64_t first, last;
    m.key_range(i, i + 1, &first, &last);
    pairs += double(std::max<int64_t>(0, last - first));
  }
  return per_pair * pairs;
}

void ErrorStat::add(double ours, double ref) {
  ++count;
  if (std::isfinite(ref)) max_ref = std::max(max_ref, std::fabs(ref));
  double err;
  if (std::isnan(ours) || std::isnan(ref))
    err = std::numeric_limits<double>::infinity();
  else if (std::isinf(ours) || std::isinf(ref))
    err = ours == ref ? 0.0 : std::numeric_limits<double>::infinity();  // -inf LSE must match
  else
    err = std::fabs(ours - ref);
  max_err = std::max(max_err, err);
}

bool CheckResult::passed() const {
  return cache_ok && o.ok() && lse.ok() && (!backward || (dq.ok() && dk.ok() && dv.ok()));
}

ForwardTensors::ForwardTensors(const Problem& p) {
  const int64_t B = p.batch, Nq = p.seqlen_q, Nk = p.seqlen_k, Hq = p.heads_q, Hk = p.heads_kv,
                D = p.head_dim;
  const fa_dtype dt = p.dtype;
  const int64_t nq = B * Nq * Hq * D, nk = B * Nk * Hk * D;
  fill_random(q_h, nq, dt, p.seed * 4 + 0);
  fill_random(k_h, nk, dt, p.seed * 4 + 1);
  fill_random(v_h, nk, dt, p.seed * 4 + 2);
  const int64_t e = elem_bytes(dt);
  const bool g = p.gpu;
  q = Buffer(size_t(nq * e), g);
  k = Buffer(size_t(nk * e), g);
  v = Buffer(size_t(nk * e), g);
  out = Buffer(size_t(nq * e), g);
  lse = Buffer(size_t(B * Hq * Nq * 4), g);
  q.upload(q_h.data());
  k.upload(k_h.data());
  v.upload(v_h.data());
  tq = describe(q.data(), dt, {B, Nq, Hq, D}, g);
  tk = describe(k.data(), dt, {B, Nk, Hk, D}, g);
  tv = describe(v.data(), dt, {B, Nk, Hk, D}, g);
  tout = describe(out.data(), dt, {B, Nq, Hq, D}, g);
  tlse = describe(lse.data(), FA_DTYPE_FLOAT32, {B, Hq, Nq}, g);
}

Workload::Workload(const Problem& p, bool with_backward) : p_(p), with_backward_(with_backward) {
  opt_ = p_.options();
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Nk = p_.seqlen_k, Hq = p_.heads_q,
                Hk = p_.heads_kv, D = p_.head_dim;
  const fa_dtype dt = p_.dtype;

  // Ask the library first, with placeholder pointers it never dereferences, so a bad shape is
  // reported in the library's words before gigabytes are allocated.
  {
    static char placeholder[1];
    fa_tensor q = describe(placeholder, dt, {B, Nq, Hq, D}, p_.gpu);
    fa_tensor k = describe(placeholder, dt, {B, Nk, Hk, D}, p_.gpu);
    size_t bytes = 0;
    throw_if_failed(with_backward ? fa_backward_workspace_size(&q, &k, &k, nullptr, &opt_, &bytes)
                                  : fa_forward_workspace_size(&q, &k, &k, nullptr, &opt_, &bytes));
  }

  io_ = ForwardTensors(p_);
  const int64_t nq = B * Nq * Hq * D, nk = B * Nk * Hk * D;
  const int64_t e = elem_bytes(dt);
  const bool g = p_.gpu;
  if (with_backward_) {
    fill_random(do_h_, nq, dt, p_.seed * 4 + 3);
    do_ = Buffer(size_t(nq * e), g);
    dq_ = Buffer(size_t(nq * e), g);
    dk_ = Buffer(size_t(nk * e), g);
    dv_ = Buffer(size_t(nk * e), g);
    do_.upload(do_h_.data());
    tdo_ = describe(do_.data(), dt, {B, Nq, Hq, D}, g);
    tdq_ = describe(dq_.data(), dt, {B, Nq, Hq, D}, g);
    tdk_ = describe(dk_.data(), dt, {B, Nk, Hk, D}, g);
    tdv_ = describe(dv_.data(), dt, {B, Nk, Hk, D}, g);
  }
}

void Workload::forward() {
  throw_if_failed(fa_forward(&io_.tq, &io_.tk, &io_.tv, &io_.tout, &io_.tlse, &opt_));
}

void Workload::backward() {
  throw_if_failed(fa_backward(&io_.tq, &io_.tk, &io_.tv, &io_.tout, &io_.tlse, &tdo_, &tdq_, &tdk_,
                              &tdv_, &opt_));
}

double median_ms(bool gpu, int warmup, int repeats, const std::function<void()>& call,
                 std::vector<double>* all) {
  Timer timer(gpu);
  for (int i = 0; i < warmup; ++i) call();
  if (gpu) gpu_synchronize();
  std::vector<double> ms;
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    timer.start();
    call();
    ms.push_back(timer.stop_ms());
  }
  if (all) *all = ms;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

core::AttnParams host_params(const Problem& p, fa_options opt, void* q, void* k, void* v,
                             void* out) {
  const int64_t B = p.batch, Nq = p.seqlen_q, Nk = p.seqlen_k, Hq = p.heads_q, Hk = p.heads_kv,
                D = p.head_dim;
  fa_tensor hq = describe(q, p.dtype, {B, Nq, Hq, D}, false);
  fa_tensor hk = describe(k, p.dtype, {B, Nk, Hk, D}, false);
  fa_tensor hv = describe(v, p.dtype, {B, Nk, Hk, D}, false);
  fa_tensor hout = describe(out, p.dtype, {B, Nq, Hq, D}, false);
  opt.backend = FA_BACKEND_CPU;
  opt.algo = FA_ALGO_AUTO;
  opt.workspace = nullptr;
  opt.workspace_bytes = 0;
  core::CallArgs args;
  args.q = &hq, args.k = &hk, args.v = &hv, args.out = &hout, args.opt = &opt;
  core::AttnParams full;
  const core::Status st = core::make_params(args, &full);
  if (!st.ok()) throw LibraryError(st.code, st.message);
  return full;
}

std::vector<std::pair<int64_t, int64_t>> sample_kv_heads(int64_t batch, int64_t heads_kv,
                                                         int heads) {
  std::vector<std::pair<int64_t, int64_t>> picks;
  const int64_t total = batch * heads_kv;
  const int64_t n_pick = heads <= 0 ? total : std::min<int64_t>(heads, total);
  for (int64_t s = 0; s < n_pick; ++s) {
    const int64_t idx = n_pick == 1 ? 0 : s * (total - 1) / (n_pick - 1);
    picks.push_back({idx / heads_kv, idx % heads_kv});
  }
  return picks;
}

core::AttnParams sub_problem(const core::AttnParams& full, const ForwardTensors& io, int64_t e,
                             int64_t b, int64_t kvh, int64_t row0, int64_t rows) {
  // Taking the last rows keeps the bottom-right alignment: Mask(rows, Nk) puts local row i at key
  // i + Nk - rows, which is where global row row0 + i sits in Mask(Nq, Nk).
  const int64_t G = full.heads_q / full.heads_kv;
  core::AttnParams sub = full;
  sub.batch = 1;
  sub.heads_q = int(G);
  sub.heads_kv = 1;
  sub.seqlen_q = rows;
  sub.total_q = rows;
  sub.total_k = full.seqlen_k;
  sub.q = io.q_h.data() + full.q_str.offset(b, row0, kvh * G) * e;
  sub.k = io.k_h.data() + full.k_str.offset(b, 0, kvh) * e;
  sub.v = io.v_h.data() + full.v_str.offset(b, 0, kvh) * e;
  return sub;
}

std::string sample_text(int64_t rows, int64_t seqlen_q, int64_t pairs, int64_t total_pairs) {
  if (rows == seqlen_q && pairs == total_pairs) return "all rows and heads";
  std::ostringstream s;
  s << "last " << rows << " of " << seqlen_q << " query rows of " << pairs << " of " << total_pairs
    << " (batch, kv head) pairs";
  return s.str();
}

double Workload::time_ms(bool bwd, int warmup, int repeats, std::vector<double>* all) {
  if (bwd) forward();  // the backward reads the forward's out and lse
  return median_ms(
      p_.gpu, warmup, repeats, [&] { bwd ? backward() : forward(); }, all);
}

CheckResult Workload::check(int64_t max_rows, int heads) {
  const int64_t B = p_.batch, Nq = p_.seqlen_q, Nk = p_.seqlen_k, Hq = p_.heads_q,
                Hk = p_.heads_kv, D = p_.head_dim;
  const fa_dtype dt = p_.dtype;
  const int64_t G = Hk > 0 ? Hq / Hk : 0;

  // Poison: a result the kernel forgets to write reads as NaN (0xff.. is NaN in every format).
  for (Buffer* b : {&io_.out, &io_.lse, &dq_, &dk_, &dv_}) b->fill_byte(0xff);
  forward();
  if (with_backward_) backward();
  if (p_.gpu) gpu_synchronize();

  std::vector<uint8_t> out_h(io_.out.bytes()), lse_h(io_.lse.bytes()), dq_h(dq_.bytes()),
      dk_h(dk_.bytes()), dv_h(dv_.bytes());
  io_.out.download(out_h.data());
  io_.lse.download(lse_h.data());
  if (with_backward_) {
    dq_.download(dq_h.data());
    dk_.download(dk_h.data());
    dv_.download(dv_h.data());
  }

  const core::AttnParams full =
      host_params(p_, opt_, io_.q_h.data(), io_.k_h.data(), io_.v_h.data(), out_h.data());

  CheckResult r;
  // Gradients pass through more low-precision steps (dP, dS in the input dtype on GPUs).
  r.o.rtol = rtol_for(dt);
  for (ErrorStat* s : {&r.dq, &r.dk, &r.dv}) s->rtol = 2 * rtol_for(dt);
  r.lse.rtol = rtol_lse_for(dt);
  r.backward = with_backward_;
  const int64_t m = (max_rows <= 0 || max_rows >= Nq) ? Nq : max_rows;
  const int64_t row0 = Nq - m;

  // Sampled KV heads: spread over (batch, kv head), first and last always included.
  const auto picks = sample_kv_heads(B, Hk, heads);

  // Keys whose dK/dV the tail block fully determines: those no row above it can see.
  const core::Mask full_mask(Nq, Nk, full.window_left, full.window_right);
  int64_t seen_first = 0, seen_last = 0;
  if (row0 > 0) full_mask.key_range(0, row0, &seen_first, &seen_last);
  int64_t complete_keys = 0;
  for (int64_t j = 0; j < Nk; ++j) complete_keys += (j < seen_first || j >= seen_last) ? 1 : 0;

  const int64_t e = elem_bytes(dt);
  for (auto [b, kvh] : picks) {
    core::AttnParams sub = sub_problem(full, io_, e, b, kvh, row0, m);
    sub.dout = with_backward_ ? do_h_.data() + full.q_str.offset(b, row0, kvh * G) * e : nullptr;
    sub.do_str = full.q_str;
    const ref::Inputs in = ref::load(sub);
    std::vector<double> o_ref, lse_ref;
    ref::forward(sub, in, o_ref, lse_ref);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t h = kvh * G + g;
        const int64_t ours_row = ((b * Nq + row0 + i) * Hq + h) * D;
        for (int64_t c = 0; c < D; ++c)
          r.o.add(load_elem(out_h, dt, ours_row + c), o_ref[size_t((i * G + g) * D + c)]);
        float l;
        std::memcpy(&l, &lse_h[size_t(((b * Hq + h) * Nq + row0 + i) * 4)], 4);
        r.lse.add(l, lse_ref[size_t(g * m + i)]);
      }
    if (!with_backward_) continue;
    std::vector<double> dq_ref, dk_ref, dv_ref;
    ref::backward(sub, in, dq_ref, dk_ref, dv_ref);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t g = 0; g < G; ++g) {
        const int64_t ours_row = ((b * Nq + row0 + i) * Hq + kvh * G + g) * D;
        for (int64_t c = 0; c < D; ++c)
          r.dq.add(load_elem(dq_h, dt, ours_row + c), dq_ref[size_t((i * G + g) * D + c)]);
      }
    for (int64_t j = 0; j < Nk; ++j) {
      if (j >= seen_first && j < seen_last) continue;  // rows outside the sample contribute
      const int64_t ours_row = ((b * Nk + j) * Hk + kvh) * D;
      for (int64_t c = 0; c < D; ++c) {
        r.dk.add(load_elem(dk_h, dt, ours_row + c), dk_ref[size_t(j * D + c)]);
        r.dv.add(load_elem(dv_h, dt, ours_row + c), dv_ref[size_t(j * D + c)]);
      }
    }
  }

  std::ostringstream s;
  s << sample_text(m, Nq, int64_t(picks.size()), B * Hk);
  if (with_backward_ && m < Nq) {
    if (complete_keys > 0)
      s << "; dK/dV on the " << complete_keys << " keys only those rows see";
    else
      s << "; dK/dV not checked (every key is also seen by rows outside the sample: --check-rows 0 checks them)";
  }
  r.sample = s.str();
  return r;
}

}  // namespace fa::cli
