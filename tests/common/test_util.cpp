// Implementation of the shared test helpers: random fills, arithmetic fp16/bf16 rounding, problem
// construction over host buffers (strides computed from the chosen layout), poisoning and
// read-back, and the error measure/tolerance rule.
#include "test_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace fa::test {

uint64_t fresh_seed() {
  if (const char* s = std::getenv("FA_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

void fill_random(std::vector<float>& x, Dist dist, uint64_t seed, float scale) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::student_t_distribution<float> heavy(3.f);
  for (float& v : x) v = scale * (dist == Dist::Normal ? normal(gen) : 3.f * heavy(gen));
}

// ---- fp16 / bf16 by arithmetic: x = m * 2^e, keep `bits` significant bits, round the rest.
namespace {
double round_float_format(double x, int bits, int min_exp, double max_finite) {
  if (!std::isfinite(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);                    // |x| in [2^(e-1), 2^e)
  const int ulp_exp = std::max(e, min_exp) - bits;  // subnormals share the min exponent's ulp
  const double ulp = std::ldexp(1.0, ulp_exp);
  const double r = std::nearbyint(x / ulp) * ulp;  // default rounding mode: ties to even
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
  return r;
}
constexpr double kF16Max = 65504.0;
const double kBF16Max = std::ldexp(255.0, 127 - 7);
}  // namespace

double round_to(core::DType t, double x) {
  switch (t) {
    case core::DType::F16: return round_float_format(x, 11, -13, kF16Max);
    case core::DType::BF16: return round_float_format(x, 8, -125, kBF16Max);
    default: return double(float(x));
  }
}

uint16_t to_f16_bits(double x) {
  if (std::isnan(x)) return 0x7e00;
  const double r = round_to(core::DType::F16, x);
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  const double a = std::fabs(r);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) return uint16_t(sign | uint16_t(a * std::ldexp(1.0, 24)));
  int e;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  const uint16_t mant = uint16_t((m * 2 - 1) * 1024);
  return uint16_t(sign | uint16_t((e - 1 + 15) << 10) | mant);
}

uint16_t to_bf16_bits(double x) {
  if (std::isnan(x)) return 0x7fc0;
  const float r = float(round_to(core::DType::BF16, x));  // exact: r has 8 significant bits
  uint32_t u;
  std::memcpy(&u, &r, 4);
  return uint16_t(u >> 16);
}

double from_f16_bits(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double s = (h & 0x8000) ? -1 : 1;
  if (e == 0) return s * std::ldexp(double(m), -24);
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : s * INFINITY;
  return s * std::ldexp(1024.0 + m, e - 25);
}

double from_bf16_bits(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::string CaseSpec::name() const {
  std::ostringstream s;
  s << core::dtype_name(dtype) << " B" << batch << " Hq" << heads_q << " Hk" << heads_kv << " d"
    << head_dim;
  if (varlen_q.empty()) {
    s << " Nq" << seqlen_q << " Nk" << seqlen_k;
  } else {
    s << " varlen q[";
    for (int x : varlen_q) s << x << ",";
    s << "] k[";
    for (int x : varlen_k) s << x << ",";
    s << "]";
  }
  if (causal) s << " causal";
  if (window_left >= 0 || window_right >= 0) s << " window(" << window_left << "," << window_right << ")";
  if (softcap > 0) s << " softcap" << softcap;
  if (layout == Layout::Padded) s << " padded";
  if (layout == Layout::HeadMajor) s << " head-major";
  if (dist == Dist::HeavyTail) s << " heavy-tail";
  return s.str();
}

namespace {

int elem_bytes(core::DType t) { return t == core::DType::F32 ? 4 : 2; }

// Strides and element count of one [batch, rows, heads, D] tensor in the chosen layout.
core::Strides make_strides(const CaseSpec& s, int64_t rows, int heads, int64_t* elems) {
  core::Strides st;
  const int64_t d = s.head_dim;
  const bool varlen = !s.varlen_q.empty();
  switch (s.layout) {
    case Layout::Dense:
      st.head = d;
      st.row = heads * d;
      break;
    case Layout::Padded:
      st.head = d + 3;  // odd gaps: catches code that assumes alignment or density
      st.row = heads * st.head + 5;
      break;
    case Layout::HeadMajor:
      st.row = d;
      st.head = rows * d;
      break;
  }
  if (varlen) {
    st.batch = 0;
    *elems = s.layout == Layout::HeadMajor ? heads * rows * d : rows * st.row;
  } else {
    st.batch = s.layout == Layout::HeadMajor ? heads * rows * d : rows * st.row + 7 * (s.layout == Layout::Padded);
    *elems = s.batch * st.batch;
  }
  *elems = std::max<int64_t>(*elems, 1);
  return st;
}

void store_values(const std::vector<float>& vals, const core::Strides& st, const CaseSpec& s,
                  const std::vector<int32_t>& cu, int64_t rows_per_batch, int heads,
                  std::vector<uint8_t>& buf, std::vector<float>* rounded) {
  // vals is dense [row][head][d]; rows are global (varlen) or b*rows_per_batch + i.
  const int d = s.head_dim;
  const int nb = cu.empty() ? s.batch : int(cu.size()) - 1;
  for (int b = 0; b < nb; ++b) {
    const int64_t n = cu.empty() ? rows_per_batch : cu[b + 1] - cu[b];
    const int64_t start = cu.empty() ? 0 : cu[b];
    for (int64_t i = 0; i < n; ++i)
      for (int h = 0; h < heads; ++h) {
        const int64_t dense_row = cu.empty() ? b * rows_per_batch + i : start + i;
        const int64_t off = st.offset(b, start + i, h);
        for (int c = 0; c < d; ++c) {
          const size_t vi = size_t((dense_row * heads + h) * d + c);
          const double r = round_to(s.dtype, vals[vi]);
          if (rounded) (*rounded)[vi] = float(r);
          uint8_t* dst = buf.data() + (off + c) * elem_bytes(s.dtype);
          if (s.dtype == core::DType::F32) {
            const float f = float(r);
            std::memcpy(dst, &f, 4);
          } else {
            const uint16_t bits = s.dtype == core::DType::F16 ? to_f16_bits(r) : to_bf16_bits(r);
            std::memcpy(dst, &bits, 2);
          }
        }
      }
  }
}

void poison(std::vector<uint8_t>& buf, core::DType t) {
  if (t == core::DType::F32) {
    const uint32_t nan = 0x7fc00000u;
    for (size_t i = 0; i + 4 <= buf.size(); i += 4) std::memcpy(&buf[i], &nan, 4);
  } else {
    const uint16_t nan = t == core::DType::F16 ? 0x7e00 : 0x7fc0;
    for (size_t i = 0; i + 2 <= buf.size(); i += 2) std::memcpy(&buf[i], &nan, 2);
  }
}

}  // namespace

Problem make_problem(const CaseSpec& spec, uint64_t seed) {
  Problem pr;
  pr.spec = spec;
  pr.seed = seed;
  core::AttnParams& p = pr.p;
  const bool varlen = !spec.varlen_q.empty();
  p.dtype = spec.dtype;
  p.batch = varlen ? int(spec.varlen_q.size()) : spec.batch;
  pr.spec.batch = p.batch;
  p.heads_q = spec.heads_q;
  p.heads_kv = spec.heads_kv;
  p.head_dim = spec.head_dim;
  if (varlen) {
    pr.cu_q.assign(1, 0);
    pr.cu_k.assign(1, 0);
    for (size_t b = 0; b < spec.varlen_q.size(); ++b) {
      pr.cu_q.push_back(pr.cu_q.back() + spec.varlen_q[b]);
      pr.cu_k.push_back(pr.cu_k.back() + spec.varlen_k[b]);
    }
    p.varlen = true;
    p.cu_seqlens_q = pr.cu_q.data();
    p.cu_seqlens_k = pr.cu_k.data();
    p.total_q = pr.cu_q.back();
    p.total_k = pr.cu_k.back();
    p.seqlen_q = *std::max_element(spec.varlen_q.begin(), spec.varlen_q.end());
    p.seqlen_k = *std::max_element(spec.varlen_k.begin(), spec.varlen_k.end());
  } else {
    p.seqlen_q = spec.seqlen_q;
    p.seqlen_k = spec.seqlen_k;
    p.total_q = spec.batch * spec.seqlen_q;
    p.total_k = spec.batch * spec.seqlen_k;
  }
  const int64_t rq = varlen ? p.total_q : p.seqlen_q;  // rows per batch entry (or total)
  const int64_t rk = varlen ? p.total_k : p.seqlen_k;
  int64_t nq = 0, nk = 0;
  p.q_str = p.o_str = p.do_str = p.dq_str = make_strides(spec, rq, spec.heads_q, &nq);
  p.k_str = p.v_str = p.dk_str = p.dv_str = make_strides(spec, rk, spec.heads_kv, &nk);
  const int eb = elem_bytes(spec.dtype);

  const int64_t d = spec.head_dim;
  std::vector<float> vq(size_t(p.total_q * spec.heads_q * d)), vk(size_t(p.total_k * spec.heads_kv * d)),
      vv(vk.size()), vdo(vq.size());
  fill_random(vq, spec.dist, seed, 1.f);
  fill_random(vk, spec.dist, seed + 1, 1.f);
  fill_random(vv, Dist::Normal, seed + 2, 1.f);
  fill_random(vdo, Dist::Normal, seed + 3, 1.f);

  pr.q.assign(size_t(nq * eb), 0);
  pr.k.assign(size_t(nk * eb), 0);
  pr.v.assign(size_t(nk * eb), 0);
  store_values(vq, p.q_str, spec, pr.cu_q, p.seqlen_q, spec.heads_q, pr.q, nullptr);
  store_values(vk, p.k_str, spec, pr.cu_k, p.seqlen_k, spec.heads_kv, pr.k, nullptr);
  store_values(vv, p.v_str, spec, pr.cu_k, p.seqlen_k, spec.heads_kv, pr.v, nullptr);
  pr.o.assign(size_t(nq * eb), 0);
  pr.lse.assign(size_t(varlen ? int64_t(spec.heads_q) * p.total_q : int64_t(p.batch) * spec.heads_q * p.seqlen_q) + 1, 0.f);
  if (spec.backward) {
    pr.dout.assign(size_t(nq * eb), 0);
    store_values(vdo, p.do_str, spec, pr.cu_q, p.seqlen_q, spec.heads_q, pr.dout, nullptr);
    pr.dq.assign(size_t(nq * eb), 0);
    pr.dk.assign(size_t(nk * eb), 0);
    pr.dv.assign(size_t(nk * eb), 0);
  }
  p.q = pr.q.data();
  p.k = pr.k.data();
  p.v = pr.v.data();
  p.o = pr.o.data();
  p.lse = pr.lse.data();
  p.lse_batch_stride = varlen ? 0 : int64_t(spec.heads_q) * p.seqlen_q;
  p.lse_head_stride = varlen ? p.total_q : p.seqlen_q;
  if (spec.backward) {
    p.dout = pr.dout.data();
    p.dq = pr.dq.data();
    p.dk = pr.dk.data();
    p.dv = pr.dv.data();
  }
  p.scale = float(1.0 / std::sqrt(double(spec.head_dim)));
  p.softcap = spec.softcap;
  p.window_left = spec.window_left;
  p.window_right = spec.causal ? 0 : spec.window_right;
  p.causal = spec.causal;
  p.num_threads = spec.num_threads;
  poison_outputs(pr);
  return pr;
}

void poison_outputs(Problem& pr) {
  poison(pr.o, pr.spec.dtype);
  poison(pr.dq, pr.spec.dtype);
  poison(pr.dk, pr.spec.dtype);
  poison(pr.dv, pr.spec.dtype);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(pr.lse.begin(), pr.lse.end(), nan);
}

namespace {
struct TensorInfo {
  const std::vector<uint8_t>* buf;
  core::Strides str;
  int heads;
  bool is_q;
};
TensorInfo info(const Problem& pr, Tensor t) {
  const core::AttnParams& p = pr.p;
  switch (t) {
    case Tensor::Q: return {&pr.q, p.q_str, p.heads_q, true};
    case Tensor::K: return {&pr.k, p.k_str, p.heads_kv, false};
    case Tensor::V: return {&pr.v, p.v_str, p.heads_kv, false};
    case Tensor::O: return {&pr.o, p.o_str, p.heads_q, true};
    case Tensor::DOut: return {&pr.dout, p.do_str, p.heads_q, true};
    case Tensor::DQ: return {&pr.dq, p.dq_str, p.heads_q, true};
    case Tensor::DK: return {&pr.dk, p.dk_str, p.heads_kv, false};
    case Tensor::DV: return {&pr.dv, p.dv_str, p.heads_kv, false};
  }
  return {&pr.q, p.q_str, p.heads_q, true};
}
double read_elem(const std::vector<uint8_t>& buf, core::DType t, int64_t idx) {
  if (t == core::DType::F32) {
    float f;
    std::memcpy(&f, &buf[size_t(idx * 4)], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &buf[size_t(idx * 2)], 2);
  return t == core::DType::F16 ? from_f16_bits(h) : from_bf16_bits(h);
}
// Calls fn(dense_index, storage_index) for every logical element of tensor t.
template <class Fn>
void for_each_elem(const Problem& pr, const TensorInfo& ti, Fn fn) {
  const core::AttnParams& p = pr.p;
  const int d = p.head_dim;
  for (int b = 0; b < p.batch; ++b) {
    const core::SeqInfo s = core::seq_info(p, b);
    // Every stored row of the sequence (for keys: the whole cu_seqlens_k span).
    const int64_t n = ti.is_q ? s.q_len : (p.varlen ? pr.cu_k[b + 1] - pr.cu_k[b] : p.seqlen_k);
    const int64_t start = ti.is_q ? s.q_start : s.k_start;
    const int64_t per_b = ti.is_q ? p.seqlen_q : p.seqlen_k;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t dense_row = p.varlen ? start + i : b * per_b + i;
      for (int h = 0; h < ti.heads; ++h) {
        const int64_t off = ti.str.offset(b, start + i, h);
        for (int c = 0; c < d; ++c) fn((dense_row * ti.heads + h) * d + c, off + c);
      }
    }
  }
}
}  // namespace

std::vector<double> read_dense(const Problem& pr, Tensor t) {
  const TensorInfo ti = info(pr, t);
  const int64_t rows = ti.is_q ? pr.p.total_q : pr.p.total_k;
  std::vector<double> out(size_t(rows * ti.heads * pr.p.head_dim), 0.0);
  for_each_elem(pr, ti, [&](int64_t di, int64_t si) { out[size_t(di)] = read_elem(*ti.buf, pr.p.dtype, si); });
  return out;
}

std::vector<double> read_lse(const Problem& pr) {
  return std::vector<double>(pr.lse.begin(), pr.lse.end() - 1);  // last entry: a guard
}

int64_t gaps_overwritten(const Problem& pr, Tensor t) {
  const TensorInfo ti = info(pr, t);
  const int eb = elem_bytes(pr.p.dtype);
  std::vector<char> logical(ti.buf->size() / size_t(eb), 0);
  for_each_elem(pr, ti, [&](int64_t, int64_t si) { logical[size_t(si)] = 1; });
  int64_t n = 0;
  for (size_t i = 0; i < logical.size(); ++i)
    if (!logical[i] && !std::isnan(read_elem(*ti.buf, pr.p.dtype, int64_t(i)))) ++n;
  return n;
}

std::string ErrorReport::str() const {
  std::ostringstream s;
  s << "max_err " << max_err << " (ref scale " << ref_scale << ") at " << worst << ": ours "
    << ours_at << " ref " << ref_at;
  return s.str();
}

ErrorReport compare(const std::vector<double>& ours, const std::vector<double>& ref) {
  ErrorReport r;
  if (ours.size() != ref.size()) {
    r.max_err = INFINITY;
    return r;
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isfinite(ref[i])) r.ref_scale = std::max(r.ref_scale, std::fabs(ref[i]));
    double e;
    if (std::isnan(ours[i]) || std::isnan(ref[i])) {
      e = INFINITY;  // NaN never passes
    } else if (!std::isfinite(ours[i]) || !std::isfinite(ref[i])) {
      e = ours[i] == ref[i] ? 0.0 : INFINITY;  // -inf LSE must match exactly
    } else {
      e = std::fabs(ours[i] - ref[i]);
    }
    if (r.worst < 0 || e > r.max_err) {
      r.max_err = e;
      r.worst = int64_t(i);
      r.ours_at = ours[i];
      r.ref_at = ref[i];
    }
  }
  return r;
}

double tolerance(const std::vector<double>& ref, core::DType out_dtype, double rel) {
  double round_err = 0, scale = 0;
  for (double x : ref) {
    if (!std::isfinite(x)) continue;
    round_err = std::max(round_err, std::fabs(round_to(out_dtype, x) - x));
    scale = std::max(scale, std::fabs(x));
  }
  // 2e-5 absolute: gradients that are exactly 0 in exact arithmetic (one visible key: dS = 0)
  // come out as fp32 cancellation noise.
  return 2 * round_err + rel * scale + 2e-5;
}

}  // namespace fa::test
