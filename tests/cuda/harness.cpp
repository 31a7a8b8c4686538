// Implementation of the CUDA tests' harness (see harness.hpp).
#include "harness.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/validate.hpp"

namespace fa::cuda_test {

void cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  // Clear the thread's record of this failure: the library refuses to launch while a CUDA error
  // is pending, so a harness failure left there would fail every later test of the process too.
  (void)cudaGetLastError();
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  // Never a null pointer, even for empty tensors: validation rejects null data only when
  // numel > 0, and a real allocation makes a stray write visible to compute-sanitizer.
  cuda_ok(cudaMalloc(&ptr_, std::max<size_t>(bytes, 256)), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

void DeviceBuffer::poison() const {
  cuda_ok(cudaMemset(ptr_, 0xFF, std::max<size_t>(bytes_, 256)), "cudaMemset(poison)");
  // The memset runs on the legacy default stream; a call on a non-blocking stream would not wait
  // for it.
  cuda_ok(cudaDeviceSynchronize(), "poison sync");
}

std::vector<uint8_t> DeviceBuffer::to_host_bytes() const {
  std::vector<uint8_t> h(bytes_);
  if (bytes_) cuda_ok(cudaMemcpy(h.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

std::vector<double> to_host(const double* dev, size_t n) {
  std::vector<double> h(n);
  if (n) cuda_ok(cudaMemcpy(h.data(), dev, n * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

std::vector<float> to_host(const float* dev, size_t n) {
  std::vector<float> h(n);
  if (n) cuda_ok(cudaMemcpy(h.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Padded: return "padded";
    case Layout::HeadMajor: return "head_major";
    case Layout::PackedQKV: return "packed_qkv";
    case Layout::Offset64: return "offset64";
  }
  return "?";
}

bool claimed_head_dim(int d) { return d == 32 || d == 64 || d == 96 || d == 128 || d == 192 || d == 256; }

std::string Case::describe() const {
  std::ostringstream s;
  s << name << ": " << (dtype == FA_DTYPE_FLOAT16 ? "fp16" : "bf16") << " d=" << d << " hq=" << hq
    << " hk=" << hk;
  if (varlen()) {
    s << " varlen q=[";
    for (size_t i = 0; i < seqlens_q.size(); ++i) s << (i ? "," : "") << seqlens_q[i];
    s << "] k=[";
    for (size_t i = 0; i < seqlens_k.size(); ++i) s << (i ? "," : "") << seqlens_k[i];
    s << "]";
    if (!seqused_k.empty()) {
      s << " used_k=[";
      for (size_t i = 0; i < seqused_k.size(); ++i) s << (i ? "," : "") << seqused_k[i];
      s << "]";
    }
  } else {
    s << " B=" << batch << " Nq=" << nq << " Nk=" << nk;
  }
  if (causal) s << " causal";
  if (window_left >= 0 || window_right >= 0) s << " window=(" << window_left << "," << window_right << ")";
  if (softcap > 0) s << " softcap=" << softcap;
  s << " layout=" << layout_name(layout);
  if (input == Input::LargeLogits) s << " input=q*8";
  if (input == Input::HeavyTail) s << " input=student_t3";
  return s.str();
}

namespace {

uint64_t test_seed() {
  if (const char* env = std::getenv("FA_TEST_SEED")) return std::strtoull(env, nullptr, 0);
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

core::DType core_dtype(fa_dtype t) { return t == FA_DTYPE_FLOAT16 ? core::DType::F16 : core::DType::BF16; }

// One [rows, heads, D] view per batch (rank 4) or over all rows (varlen, rank 3).
struct ViewSpec {
  size_t elems = 0;     // allocation size in elements
  int64_t strides[4]{};  // batch, row, head, dim (varlen: row, head, dim)
};

ViewSpec view_spec(Layout l, bool varlen, int64_t batch, int64_t rows, int64_t heads, int64_t d) {
  ViewSpec v;
  int64_t bs = 0, rs = 0, hs = 0;
  switch (l) {
    case Layout::Contiguous:
    case Layout::PackedQKV:  // PackedQKV views are built by make_packed; others are contiguous
      hs = d, rs = heads * d, bs = rows * rs;
      break;
    case Layout::Padded:
      // Gaps of 8 elements keep every row 16-byte aligned, which vectorised kernels rely on.
      hs = d + 8, rs = heads * hs + 8, bs = rows * rs + 16;
      break;
    case Layout::HeadMajor:
      rs = d, hs = rows * d, bs = heads * rows * d;
      break;
    case Layout::Offset64:
      // Batch b > 0 starts past element 2^31: 32-bit offset arithmetic would wrap.
      hs = d, rs = heads * d, bs = std::max<int64_t>(rows * rs, (int64_t(1) << 31) + 64);
      break;
  }
  if (varlen) {
    v.elems = l == Layout::HeadMajor ? size_t(heads * rows * d)
                                     : size_t(rows * rs + (l == Layout::Padded ? 16 : 0));
    v.strides[0] = rs, v.strides[1] = hs, v.strides[2] = 1;
  } else {
    v.elems = l == Layout::Offset64 ? size_t((batch - 1) * bs + rows * rs) : size_t(batch * bs);
    v.strides[0] = bs, v.strides[1] = rs, v.strides[2] = hs, v.strides[3] = 1;
  }
  return v;
}

fa_tensor make_tensor(void* base, size_t offset_elems, fa_dtype dt, bool varlen, int64_t batch, int64_t rows,
                      int64_t heads, int64_t d, const int64_t* strides) {
  fa_tensor t{};
  t.data = static_cast<char*>(base) + offset_elems * dtype_size(dt);
  t.dtype = dt;
  t.device = FA_DEVICE_CUDA;
  int dev = 0;
  cudaGetDevice(&dev);
  t.device_id = dev;
  if (varlen) {
    t.rank = 3;
    t.shape[0] = rows, t.shape[1] = heads, t.shape[2] = d;
    for (int i = 0; i < 3; ++i) t.strides[i] = strides[i];
  } else {
    t.rank = 4;
    t.shape[0] = batch, t.shape[1] = rows, t.shape[2] = heads, t.shape[3] = d;
    for (int i = 0; i < 4; ++i) t.strides[i] = strides[i];
  }
  return t;
}

fa_tensor single_view(TensorSet& set, Layout l, fa_dtype dt, bool varlen, int64_t batch, int64_t rows,
                      int64_t heads, int64_t d) {
  ViewSpec s = view_spec(l, varlen, batch, rows, heads, d);
  auto buf = std::make_shared<DeviceBuffer>(s.elems * dtype_size(dt));
  set.buffers.push_back(buf);
  return make_tensor(buf->get(), 0, dt, varlen, batch, rows, heads, d, s.strides);
}

// q, k, v as slices of one [B, N, Hq + 2 Hk, D] (varlen [T, Hq + 2 Hk, D]) buffer.
void make_packed(TensorSet& set, const Case& c, bool varlen, int64_t rows) {
  const int64_t ht = c.hq + 2 * c.hk;
  int64_t st[4];
  size_t elems;
  if (varlen) {
    st[0] = ht * c.d, st[1] = c.d, st[2] = 1;
    elems = size_t(rows * ht * c.d);
  } else {
    st[0] = rows * ht * c.d, st[1] = ht * c.d, st[2] = c.d, st[3] = 1;
    elems = size_t(c.batch * rows * ht * c.d);
  }
  auto buf = std::make_shared<DeviceBuffer>(elems * dtype_size(c.dtype));
  set.buffers.push_back(buf);
  set.q = make_tensor(buf->get(), 0, c.dtype, varlen, c.batch, rows, c.hq, c.d, st);
  set.k = make_tensor(buf->get(), size_t(c.hq) * c.d, c.dtype, varlen, c.batch, rows, c.hk, c.d, st);
  set.v = make_tensor(buf->get(), size_t(c.hq + c.hk) * c.d, c.dtype, varlen, c.batch, rows, c.hk, c.d, st);
}

TensorSet make_set(const Problem& pb, Layout l) {
  const Case& c = pb.c;
  const bool vl = c.varlen();
  const int64_t rq = vl ? pb.total_q : c.nq, rk = vl ? pb.total_k : c.nk;
  TensorSet set;
  if (l == Layout::PackedQKV) {
    if (rq != rk) throw std::runtime_error("PackedQKV needs equal q and k rows");
    make_packed(set, c, vl, rq);
  } else {
    set.q = single_view(set, l, c.dtype, vl, c.batch, rq, c.hq, c.d);
    set.k = single_view(set, l, c.dtype, vl, c.batch, rk, c.hk, c.d);
    set.v = single_view(set, l, c.dtype, vl, c.batch, rk, c.hk, c.d);
  }
  return set;
}

std::shared_ptr<DeviceBuffer> upload_i32(const std::vector<int>& h, fa_tensor* t) {
  auto buf = std::make_shared<DeviceBuffer>(h.size() * sizeof(int32_t));
  if (!h.empty())
    cuda_ok(cudaMemcpy(buf->get(), h.data(), h.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "upload");
  *t = fa_tensor{};
  t->data = buf->get();
  t->dtype = FA_DTYPE_INT32;
  t->device = FA_DEVICE_CUDA;
  cudaGetDevice(&t->device_id);
  t->rank = 1;
  t->shape[0] = int64_t(h.size());
  t->strides[0] = 1;
  return buf;
}

core::Strides strides_of(const fa_tensor& t) {
  core::Strides s;
  if (t.rank == 3) {
    s.batch = 0, s.row = t.strides[0], s.head = t.strides[1];
  } else {
    s.batch = t.strides[0], s.row = t.strides[1], s.head = t.strides[2];
  }
  return s;
}

}  // namespace

std::unique_ptr<Problem> make_problem(const Case& c) {
  auto pb = std::make_unique<Problem>();
  pb->c = c;
  pb->seed = test_seed();
  if (c.varlen()) {
    pb->c.batch = int(c.seqlens_q.size());
    std::vector<int> cq{0}, ck{0};
    int64_t mq = 0, mk = 0;
    for (size_t b = 0; b < c.seqlens_q.size(); ++b) {
      cq.push_back(cq.back() + c.seqlens_q[b]);
      ck.push_back(ck.back() + c.seqlens_k[b]);
      mq = std::max<int64_t>(mq, c.seqlens_q[b]);
      mk = std::max<int64_t>(mk, c.seqlens_k[b]);
    }
    pb->total_q = cq.back();
    pb->total_k = ck.back();
    pb->cu_q = upload_i32(cq, &pb->cu_q_t);
    pb->cu_k = upload_i32(ck, &pb->cu_k_t);
    pb->vl.cu_seqlens_q = &pb->cu_q_t;
    pb->vl.cu_seqlens_k = &pb->cu_k_t;
    if (!c.seqused_k.empty()) {
      pb->used_k = upload_i32(c.seqused_k, &pb->used_k_t);
      pb->vl.seqused_k = &pb->used_k_t;
    }
    pb->vl.max_seqlen_q = mq;
    pb->vl.max_seqlen_k = mk;
    pb->c.nq = mq;
    pb->c.nk = mk;
  } else {
    pb->total_q = int64_t(c.batch) * c.nq;
    pb->total_k = int64_t(c.batch) * c.nk;
  }
  pb->qkv = make_set(*pb, c.layout);
  pb->dout_set = make_set(*pb, c.layout == Layout::PackedQKV ? Layout::Contiguous : c.layout);

  const core::DType dt = core_dtype(c.dtype);
  const Dist qk_dist = c.input == Input::HeavyTail ? Dist::StudentT : Dist::Normal;
  const float q_scale = c.input == Input::LargeLogits ? 8.f : 1.f;
  uint64_t sub = pb->seed;
  // Fill whole buffers (padding included) so reading a gap gives plausible-looking garbage, not
  // zeros that could hide a stride bug. Packed buffers are shared: fill the first (only) buffer.
  if (c.layout == Layout::PackedQKV) {
    auto& b = pb->qkv.buffers[0];
    cuda_ok(fill_random(b->get(), dt, b->bytes() / 2, ++sub, qk_dist, q_scale, nullptr), "fill qkv");
  } else {
    auto& bq = pb->qkv.buffers[0];
    auto& bk = pb->qkv.buffers[1];
    auto& bv = pb->qkv.buffers[2];
    cuda_ok(fill_random(bq->get(), dt, bq->bytes() / 2, ++sub, qk_dist, q_scale, nullptr), "fill q");
    cuda_ok(fill_random(bk->get(), dt, bk->bytes() / 2, ++sub, qk_dist, 1.f, nullptr), "fill k");
    cuda_ok(fill_random(bv->get(), dt, bv->bytes() / 2, ++sub, Dist::Normal, 1.f, nullptr), "fill v");
  }
  for (auto& b : pb->dout_set.buffers)
    cuda_ok(fill_random(b->get(), dt, b->bytes() / 2, ++sub, Dist::Normal, 1.f, nullptr), "fill dout");
  cuda_ok(cudaDeviceSynchronize(), "fill sync");
  return pb;
}

TensorSet make_outputs(const Problem& pb, bool grads) {
  TensorSet set;
  if (grads) {
    set = make_set(pb, pb.c.layout);
  } else {
    const Layout l = pb.c.layout == Layout::PackedQKV ? Layout::Contiguous : pb.c.layout;
    set.q = single_view(set, l, pb.c.dtype, pb.c.varlen(), pb.c.batch, pb.c.varlen() ? pb.total_q : pb.c.nq,
                        pb.c.hq, pb.c.d);
  }
  for (auto& b : set.buffers) b->poison();
  return set;
}

std::shared_ptr<DeviceBuffer> make_lse(const Problem& pb, fa_tensor* t) {
  const Case& c = pb.c;
  *t = fa_tensor{};
  t->dtype = FA_DTYPE_FLOAT32;
  t->device = FA_DEVICE_CUDA;
  cudaGetDevice(&t->device_id);
  size_t n;
  if (c.varlen()) {
    t->rank = 2;
    t->shape[0] = c.hq, t->shape[1] = pb.total_q;
    t->strides[0] = pb.total_q, t->strides[1] = 1;
    n = size_t(c.hq) * pb.total_q;
  } else {
    t->rank = 3;
    t->shape[0] = c.batch, t->shape[1] = c.hq, t->shape[2] = c.nq;
    t->strides[0] = c.hq * c.nq, t->strides[1] = c.nq, t->strides[2] = 1;
    n = size_t(c.batch) * c.hq * c.nq;
  }
  auto buf = std::make_shared<DeviceBuffer>(n * sizeof(float));
  buf->poison();
  t->data = buf->get();
  return buf;
}

fa_options options_for(const Case& c, fa_algo algo) {
  fa_options o;
  fa_options_init(&o);
  o.causal = c.causal ? 1 : 0;
  o.window_left = c.window_left;
  o.window_right = c.window_right;
  o.softcap = c.softcap;
  o.backend = FA_BACKEND_CUDA;
  o.algo = algo;
  return o;
}

core::AttnParams params_for(const Problem& pb, const fa_tensor& out, const fa_tensor* dout) {
  const fa_options opt = options_for(pb.c, FA_ALGO_AUTO);
  core::CallArgs a;
  a.q = &pb.qkv.q, a.k = &pb.qkv.k, a.v = &pb.qkv.v;
  a.varlen = pb.varlen();
  a.out = &out;
  a.opt = &opt;
  core::AttnParams p;
  core::Status st = core::make_params(a, &p);
  if (!st.ok()) throw std::runtime_error("validation rejected the reference's view of the call: " + st.message);
  if (dout) {
    p.dout = dout->data;
    p.do_str = strides_of(*dout);
  }
  return p;
}

void compute_reference(const Problem& pb, bool backward, Reference* r) {
  // The reference needs an `out` tensor only for validation; any q-shaped view will do.
  TensorSet outs = make_outputs(pb, false);
  const core::AttnParams p = params_for(pb, outs.q, &pb.dout_set.q);
  const DenseDims dd = dense_dims(p);
  DeviceBuffer o(dd.o_elems() * 8), lse(dd.lse_elems() * 8), no(dd.o_elems() * 8),
      nlse(dd.lse_elems() * 8), terms(dd.lse_elems() * 8);
  for (auto* b : {&o, &lse, &no, &nlse, &terms}) b->poison();
  cuda_ok(reference_forward(p, Precision::F64, o.as<double>(), lse.as<double>(), nullptr,
                            terms.as<double>()),
          "reference_forward f64");
  cuda_ok(reference_forward(p, Precision::Naive, no.as<double>(), nlse.as<double>(), nullptr),
          "reference_forward naive");
  cuda_ok(cudaDeviceSynchronize(), "reference forward");
  r->o = to_host(o.as<double>(), dd.o_elems());
  r->lse = to_host(lse.as<double>(), dd.lse_elems());
  r->n_o = to_host(no.as<double>(), dd.o_elems());
  r->n_lse = to_host(nlse.as<double>(), dd.lse_elems());
  r->lse_allowance =
      lse_accumulation_allowance(to_host(terms.as<double>(), dd.lse_elems()), p.head_dim);
  r->has_backward = false;
  if (!backward) return;
  DeviceBuffer dq(dd.o_elems() * 8), dk(dd.k_elems() * 8), dv(dd.k_elems() * 8),
      fdq(dd.o_elems() * 8), fdk(dd.k_elems() * 8), fdv(dd.k_elems() * 8);
  cuda_ok(reference_backward(p, Precision::F64, o.as<double>(), lse.as<double>(), dq.as<double>(), dk.as<double>(),
                             dv.as<double>(), nullptr),
          "reference_backward f64");
  cuda_ok(cudaDeviceSynchronize(), "reference backward f64");
  r->dq = to_host(dq.as<double>(), dd.o_elems());
  r->dk = to_host(dk.as<double>(), dd.k_elems());
  r->dv = to_host(dv.as<double>(), dd.k_elems());
  cuda_ok(reference_backward(p, Precision::Naive, no.as<double>(), nlse.as<double>(),
                             dq.as<double>(), dk.as<double>(), dv.as<double>(), nullptr,
                             RoundingFlips{fdq.as<double>(), fdk.as<double>(), fdv.as<double>()}),
          "reference_backward naive");
  cuda_ok(cudaDeviceSynchronize(), "reference backward naive");
  r->n_dq = to_host(dq.as<double>(), dd.o_elems());
  r->n_dk = to_host(dk.as<double>(), dd.k_elems());
  r->n_dv = to_host(dv.as<double>(), dd.k_elems());
  r->flip_dq = to_host(fdq.as<double>(), dd.o_elems());
  r->flip_dk = to_host(fdk.as<double>(), dd.k_elems());
  r->flip_dv = to_host(fdv.as<double>(), dd.k_elems());
  r->has_backward = true;
}

std::vector<double> gather(const Problem& pb, const fa_tensor& t, bool like_q) {
  const Case& c = pb.c;
  const bool vl = c.varlen();
  const int batch = vl ? 1 : c.batch;
  const int64_t rows = vl ? (like_q ? pb.total_q : pb.total_k) : (like_q ? c.nq : c.nk);
  const int heads = like_q ? c.hq : c.hk;
  const size_t n = size_t(batch) * rows * heads * c.d;
  DeviceBuffer dense(n * 8);
  cuda_ok(gather_to_f64(t.data, core_dtype(c.dtype), strides_of(t), batch, rows, heads, c.d, dense.as<double>(),
                        nullptr),
          "gather");
  cuda_ok(cudaDeviceSynchronize(), "gather sync");
  return to_host(dense.as<double>(), n);
}

std::vector<double> lse_to_host(const Problem& pb, const fa_tensor& lse) {
  const size_t n = size_t(pb.c.hq) * pb.total_q;  // B*Hq*Nq or Hq*Tq, both contiguous
  std::vector<float> f = to_host(static_cast<const float*>(lse.data), n);
  return std::vector<double>(f.begin(), f.end());
}

std::vector<double> lse_accumulation_allowance(const std::vector<double>& score_terms,
                                               int head_dim) {
  static const double ulps_per_step = [] {
    const char* env = std::getenv("FA_TEST_LSE_ULPS_PER_STEP");
    return env ? std::strtod(env, nullptr) : 1.0;
  }();
  const double per_row = ulps_per_step * ((head_dim + 7) / 8) * std::ldexp(1.0, -23);
  std::vector<double> a(score_terms.size());
  for (size_t e = 0; e < a.size(); ++e)
    a[e] = std::isfinite(score_terms[e]) ? per_row * score_terms[e] : 0.0;
  return a;
}

::testing::AssertionResult check_rule(const char* what, const std::vector<double>& ours,
                                      const std::vector<double>& ref,
                                      const std::vector<double>& naive, bool is_lse,
                                      RuleResult* res, const std::vector<double>* allowance) {
  RuleResult r;
  size_t worst = 0, bad = 0, first_bad = size_t(-1);
  std::string first_bad_why;
  if (ours.size() != ref.size() || naive.size() != ref.size() ||
      (allowance && allowance->size() != ref.size()))
    return ::testing::AssertionFailure() << what << ": size mismatch";
  for (size_t e = 0; e < ref.size(); ++e) {
    const double o = ours[e], rf = ref[e], nv = naive[e];
    if (is_lse && std::isinf(rf) && rf < 0) {
      if (!(std::isinf(o) && o < 0)) {
        if (bad++ == 0) first_bad = e, first_bad_why = "reference is -inf (no visible key)";
      }
      continue;
    }
    if (!std::isfinite(o)) {
      if (bad++ == 0) first_bad = e, first_bad_why = "not finite (unwritten, NaN or Inf)";
      continue;
    }
    // LSE is an fp32 output: its last bits cannot be closer to the truth than a few fp32 ulps of
    // its magnitude (|LSE| reaches 270 on the heavy-tailed inputs, where one ulp is 3e-5, more
    // than the rule's absolute 1e-5), so the comparison forgives 4 ulps of |ref| for LSE alone.
    double slack = is_lse ? 4.0 * std::ldexp(std::fabs(rf), -23) : 0.0;
    // Plus the scores' accumulation allowance (LSE) or the rounding-flip allowance (gradients).
    if (allowance) slack = std::max(slack, (*allowance)[e]);
    const double err = std::max(0.0, std::fabs(o - rf) - slack);
    if (err > r.err) r.err = err, worst = e;
    if (std::isfinite(nv)) r.naive_err = std::max(r.naive_err, std::fabs(nv - rf));
  }
  r.bound = 2.0 * r.naive_err + 1e-5;
  std::ostringstream s;
  s << what << ": max|ours-ref| = " << r.err << " (at " << worst << ": ours "
    << (ours.empty() ? 0 : ours[worst]) << ", ref " << (ref.empty() ? 0 : ref[worst])
    << "), max|naive-ref| = " << r.naive_err << ", bound " << r.bound;
  if (is_lse)
    s << " (LSE errors counted beyond 4 fp32 ulps of |ref|"
      << (allowance ? " or the score accumulation allowance)" : ")");
  else if (allowance)
    s << " (errors counted beyond one rounding flip of each element's largest term)";
  r.detail = s.str();
  if (res) *res = r;
  if (bad)
    return ::testing::AssertionFailure() << what << ": " << bad << " bad element(s); first at " << first_bad
                                         << ": ours " << ours[first_bad] << ", ref " << ref[first_bad] << " ("
                                         << first_bad_why << "). " << r.detail;
  if (!(r.err <= r.bound)) return ::testing::AssertionFailure() << r.detail;
  return ::testing::AssertionSuccess() << r.detail;
}

std::string rule_property(const RuleResult& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4e / bound %.4e", r.err, r.bound);
  return buf;
}

::testing::AssertionResult check_masked_rows_zero(const Problem& pb, const std::vector<double>& o,
                                                  const std::vector<double>& ref_lse) {
  const Case& c = pb.c;
  const int64_t rows = c.varlen() ? pb.total_q : c.nq;
  const int64_t nrows_total = c.varlen() ? pb.total_q : int64_t(c.batch) * c.nq;
  size_t masked = 0;
  for (int64_t r = 0; r < nrows_total; ++r) {
    const int64_t b = r / rows, i = r % rows;
    for (int h = 0; h < c.hq; ++h) {
      const size_t li = c.varlen() ? size_t(h) * pb.total_q + size_t(r) : (size_t(b) * c.hq + h) * c.nq + size_t(i);
      if (!(std::isinf(ref_lse[li]) && ref_lse[li] < 0)) continue;
      ++masked;
      for (int d = 0; d < c.d; ++d) {
        const double v = o[(size_t(r) * c.hq + h) * c.d + d];
        if (v != 0.0)
          return ::testing::AssertionFailure() << "fully masked row " << r << " head " << h << ": O[" << d
                                               << "] = " << v << ", expected exactly 0";
      }
    }
  }
  return ::testing::AssertionSuccess() << masked << " fully masked (row, head) pairs with O = 0";
}

::testing::AssertionResult check_untouched_outside(const DeviceBuffer& buf, const std::vector<const fa_tensor*>& views) {
  if (views.empty()) return ::testing::AssertionSuccess();
  const size_t es = dtype_size(views[0]->dtype);
  const size_t n = buf.bytes() / es;
  std::vector<uint8_t> covered(n, 0);
  for (const fa_tensor* t : views) {
    const size_t base = size_t(static_cast<const char*>(t->data) - static_cast<const char*>(buf.get())) / es;
    const int r = t->rank;
    const int64_t outer = r == 4 ? t->shape[0] : 1;
    const int64_t rows = t->shape[r - 3], heads = t->shape[r - 2], d = t->shape[r - 1];
    const int64_t sb = r == 4 ? t->strides[0] : 0, sr = t->strides[r - 3], sh = t->strides[r - 2];
    for (int64_t b = 0; b < outer; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t h = 0; h < heads; ++h) {
          const size_t off = base + size_t(b * sb + i * sr + h * sh);
          std::fill(covered.begin() + off, covered.begin() + off + d, uint8_t(1));
        }
  }
  const std::vector<uint8_t> bytes = buf.to_host_bytes();
  for (size_t e = 0; e < n; ++e) {
    if (covered[e]) continue;
    for (size_t k = 0; k < es; ++k)
      if (bytes[e * es + k] != 0xFF)
        return ::testing::AssertionFailure() << "element " << e << " outside the tensor view was overwritten";
  }
  return ::testing::AssertionSuccess();
}

CallOutcome classify(fa_status st, const Case& c, fa_algo algo, std::string* msg) {
  const std::string err = fa_last_error();
  if (st == FA_OK) return CallOutcome::Ran;
  if (st == FA_ERROR_UNSUPPORTED) {
    const bool claimed = (c.dtype == FA_DTYPE_FLOAT16 || c.dtype == FA_DTYPE_BFLOAT16) && claimed_head_dim(c.d);
    // A build compiled with FA_INSTANCE_FILTER lacks instances on purpose: there a missing kernel
    // is a skip, not a broken promise.
    static const bool filtered = std::strstr(fa_build_info(), "(instance-filtered build)") != nullptr;
    if (algo == FA_ALGO_AUTO && claimed && !filtered) {
      *msg = "AUTO must serve every fp16/bf16 case with head_dim in {32,64,96,128,192,256}, but: " + err;
      return CallOutcome::Failed;
    }
    *msg = std::string("algo ") + algo_name(algo) + " does not provide this case: " + err;
    return CallOutcome::Unsupported;
  }
  *msg = std::string(fa_status_string(st)) + ": " + err;
  return CallOutcome::Failed;
}

CachedProblem& cached_problem(const Case& c, bool backward) {
  static CachedProblem fwd, bwd;
  CachedProblem& slot = backward ? bwd : fwd;
  // Suites share the slots: the key is the whole description, not just the (per-suite) name.
  const std::string key = c.name + "|" + c.describe();
  if (slot.key != key || !slot.pb) {
    slot.pb.reset();
    slot.key.clear();
    slot.pb = make_problem(c);
    compute_reference(*slot.pb, backward, &slot.ref);
    slot.key = key;
  }
  return slot;
}

fa_status run_forward_api(const Problem& pb, fa_tensor& out, fa_tensor* lse, const fa_options& opt) {
  if (pb.c.varlen()) return fa_varlen_forward(&pb.qkv.q, &pb.qkv.k, &pb.qkv.v, pb.varlen(), &out, lse, &opt);
  return fa_forward(&pb.qkv.q, &pb.qkv.k, &pb.qkv.v, &out, lse, &opt);
}

fa_status run_backward_api(const Problem& pb, const fa_tensor& out, const fa_tensor& lse, TensorSet& grads,
                           const fa_options& opt) {
  if (pb.c.varlen())
    return fa_varlen_backward(&pb.qkv.q, &pb.qkv.k, &pb.qkv.v, pb.varlen(), &out, &lse, &pb.dout_set.q, &grads.q,
                              &grads.k, &grads.v, &opt);
  return fa_backward(&pb.qkv.q, &pb.qkv.k, &pb.qkv.v, &out, &lse, &pb.dout_set.q, &grads.q, &grads.k, &grads.v,
                     &opt);
}

void upload_dense(const Problem& pb, const std::vector<double>& dense, const fa_tensor& t, bool like_q) {
  const Case& c = pb.c;
  const bool vl = c.varlen();
  const int64_t outer = vl ? 1 : c.batch;
  const int64_t rows = vl ? (like_q ? pb.total_q : pb.total_k) : (like_q ? c.nq : c.nk);
  const int64_t heads = like_q ? c.hq : c.hk, d = c.d;
  if (dense.size() != size_t(outer * rows * heads * d)) throw std::runtime_error("upload_dense: size mismatch");
  const core::Strides st = strides_of(t);
  // The smallest element range covering the view (strides are non-negative): read it, overwrite
  // the view's elements, write it back, so gaps keep their bytes.
  int64_t span = 0;
  if (outer * rows * heads > 0) span = (outer - 1) * st.batch + (rows - 1) * st.row + (heads - 1) * st.head + d;
  std::vector<uint16_t> img(static_cast<size_t>(span));
  if (span) cuda_ok(cudaMemcpy(img.data(), t.data, size_t(span) * 2, cudaMemcpyDeviceToHost), "upload_dense D2H");
  for (int64_t b = 0; b < outer; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; ++e) {
          const float v = float(dense[size_t(((b * rows + i) * heads + h) * d + e)]);
          uint16_t bits;
          if (c.dtype == FA_DTYPE_BFLOAT16) {
            const __nv_bfloat16 x = __float2bfloat16_rn(v);
            std::memcpy(&bits, &x, 2);
          } else {
            const __half x = __float2half_rn(v);
            std::memcpy(&bits, &x, 2);
          }
          img[size_t(b * st.batch + i * st.row + h * st.head + e)] = bits;
        }
  if (span) cuda_ok(cudaMemcpy(t.data, img.data(), size_t(span) * 2, cudaMemcpyHostToDevice), "upload_dense H2D");
}

std::string forward_for_backward(const Problem& pb, const Reference& ref, fa_tensor& out, fa_tensor& lse,
                                 cudaStream_t stream) {
  fa_options opt = options_for(pb.c, FA_ALGO_AUTO);
  opt.stream = stream;
  const fa_status st = run_forward_api(pb, out, &lse, opt);
  if (st == FA_OK) {
    cuda_ok(cudaStreamSynchronize(stream), "forward");
    return "ours";
  }
  if (st != FA_ERROR_UNSUPPORTED)
    throw std::runtime_error(std::string("forward: ") + fa_status_string(st) + ": " + fa_last_error());
  cuda_ok(cudaDeviceSynchronize(), "before the reference upload");
  upload_dense(pb, ref.o, out, true);
  std::vector<float> l(ref.lse.begin(), ref.lse.end());  // [B, Hq, Nq] / [Hq, Tq], as make_lse
  if (!l.empty())
    cuda_ok(cudaMemcpy(lse.data, l.data(), l.size() * sizeof(float), cudaMemcpyHostToDevice), "lse upload");
  return "reference";
}

::testing::AssertionResult wait_with_watchdog(cudaStream_t stream, double seconds, const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) {
      // "Not ready" answers are not errors; do not leave one as the thread's last error.
      if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();
      return ::testing::AssertionSuccess();
    }
    if (e != cudaErrorNotReady) {
      (void)cudaGetLastError();
      return ::testing::AssertionFailure() << what << ": " << cudaGetErrorName(e) << ": " << cudaGetErrorString(e);
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > seconds) {
      const ::testing::TestInfo* ti = ::testing::UnitTest::GetInstance()->current_test_info();
      const std::string name = ti ? std::string(ti->test_suite_name()) + "." + ti->name() : std::string("?");
      std::fprintf(stdout,
                   "\n[  FAILED  ] %s: WATCHDOG: %s did not finish within %.0f s (a deadlock, e.g. a "
                   "deterministic-mode dQ turn that is never taken). A running kernel cannot be cancelled "
                   "and every later CUDA call would wait on it: exiting the test process now (code 124).\n",
                   name.c_str(), what.c_str(), seconds);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(124);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(waited < 0.01 ? 20 : 1000));
  }
}

}  // namespace fa::cuda_test
