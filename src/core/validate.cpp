// Argument validation for every entry point. Messages name the argument, what was expected and
// what was given, because they reach users verbatim (fa_last_error, fa::Error, Python exceptions).
#include "core/validate.hpp"


#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace fa::core {
namespace {

constexpr int kMinHeadDim = 8;
constexpr int kMaxHeadDim = 256;

std::string shape_str(const fa_tensor& t) {
  std::ostringstream s;
  s << "[";
  for (int i = 0; i < t.rank && i < FA_MAX_RANK; ++i) s << (i ? ", " : "") << t.shape[i];
  s << "]";
  return s.str();
}

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::ostringstream s;
  s << "[";
  int i = 0;
  for (int64_t d : dims) s << (i++ ? ", " : "") << d;
  s << "]";
  return s.str();
}

const char* dtype_str(fa_dtype d) {
  switch (d) {
    case FA_DTYPE_FLOAT32: return "float32";
    case FA_DTYPE_FLOAT16: return "float16";
    case FA_DTYPE_BFLOAT16: return "bfloat16";
    case FA_DTYPE_FLOAT8_E4M3: return "float8_e4m3";
    case FA_DTYPE_INT32: return "int32";
  }
  return nullptr;
}

// The dtype's name, or its number when it is not an fa_dtype value (garbage from a binding).
std::string dtype_desc(fa_dtype d) {
  const char* n = dtype_str(d);
  return n ? std::string(n) : std::to_string(int(d));
}

int64_t numel(const fa_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.shape[i];
  return n;
}

// Structural checks that do not depend on the tensor's role beyond its name and rank.
Status check_descriptor(const fa_tensor* t, const char* name, int rank) {
  if (!t) return invalid(std::string(name) + " is null");
  if (t->rank != rank)
    return invalid(std::string(name) + ": expected rank " + std::to_string(rank) + ", got " +
                   std::to_string(t->rank));
  if (t->device != FA_DEVICE_CPU && t->device != FA_DEVICE_CUDA)
    return invalid(std::string(name) + ": unknown device " + std::to_string(int(t->device)));
  if (t->device == FA_DEVICE_CUDA && t->device_id < 0)
    return invalid(std::string(name) + ": CUDA device_id must be >= 0, got " +
                   std::to_string(t->device_id));
  for (int i = 0; i < rank; ++i) {
    if (t->shape[i] < 0)
      return invalid(std::string(name) + ": negative size in shape " + shape_str(*t));
    if (t->strides[i] < 0)
      return invalid(std::string(name) + ": negative stride in dimension " + std::to_string(i));
  }
  if (t->shape[rank - 1] > 1 && t->strides[rank - 1] != 1)
    return invalid(std::string(name) + ": last dimension must be contiguous (stride 1), got stride " +
                   std::to_string(t->strides[rank - 1]));
  if (!t->data && numel(*t) > 0) return invalid(std::string(name) + ".data is null");
  return Status::success();
}

Status check_shape(const fa_tensor& t, const char* name, std::initializer_list<int64_t> want) {
  int i = 0;
  for (int64_t w : want) {
    if (t.shape[i] != w)
      return invalid(std::string(name) + ": expected shape " + dims_str(want) + ", got " +
                     shape_str(t));
    ++i;
  }
  return Status::success();
}

Status check_same_place(const fa_tensor& t, const char* name, const fa_tensor& q) {
  if (t.device != q.device)
    return invalid(std::string(name) + " is on " + (t.device == FA_DEVICE_CUDA ? "CUDA" : "CPU") +
                   " but q is on " + (q.device == FA_DEVICE_CUDA ? "CUDA" : "CPU"));
  if (t.device == FA_DEVICE_CUDA && t.device_id != q.device_id)
    return invalid(std::string(name) + " is on CUDA device " + std::to_string(t.device_id) +
                   " but q is on CUDA device " + std::to_string(q.device_id));
  return Status::success();
}

Status check_dtype(const fa_tensor& t, const char* name, fa_dtype want) {
  if (t.dtype != want)
    return invalid(std::string(name) + ": expected dtype " + dtype_desc(want) + ", got " +
                   dtype_desc(t.dtype));
  return Status::success();
}

Strides strides_of(const fa_tensor& t, bool varlen) {
  // Batch form [B, N, H, D]; varlen form [T, H, D] with a zero batch stride.
  Strides s;
  if (varlen) {
    s.batch = 0;
    s.row = t.strides[0];
    s.head = t.strides[1];
  } else {
    s.batch = t.strides[0];
    s.row = t.strides[1];
    s.head = t.strides[2];
  }
  return s;
}

Status check_options(const fa_options& o, int head_dim) {
  if (!std::isfinite(o.softmax_scale) || o.softmax_scale < 0.f)
    return invalid("softmax_scale must be finite and >= 0 (0 selects 1/sqrt(head_dim)), got " +
                   std::to_string(o.softmax_scale));
  if (!std::isfinite(o.softcap) || o.softcap < 0.f)
    return invalid("softcap must be finite and >= 0 (0 disables it), got " +
                   std::to_string(o.softcap));
  if (o.window_left < -1)
    return invalid("window_left must be -1 (unbounded) or >= 0, got " +
                   std::to_string(o.window_left));
  if (o.window_right < -1)
    return invalid("window_right must be -1 (unbounded) or >= 0, got " +
                   std::to_string(o.window_right));
  if (o.num_threads < 0)
    return invalid("num_threads must be >= 0 (0 = all hardware threads), got " +
                   std::to_string(o.num_threads));
  if (o.backend < FA_BACKEND_AUTO || o.backend > FA_BACKEND_CUDA)
    return invalid("unknown backend " + std::to_string(int(o.backend)) +
                   " (expected FA_BACKEND_AUTO, FA_BACKEND_CPU or FA_BACKEND_CUDA)");
  if (o.algo < FA_ALGO_AUTO || o.algo > FA_ALGO_FA3)
    return invalid("unknown algo " + std::to_string(int(o.algo)) +
                   " (expected FA_ALGO_AUTO, FA_ALGO_FA1, FA_ALGO_FA2 or FA_ALGO_FA3)");
  if (o.workspace_bytes > 0 && !o.workspace)
    return invalid("workspace_bytes is " + std::to_string(o.workspace_bytes) +
                   " but workspace is null");
  // The kernels carve the workspace into 256-byte-aligned pieces and touch them with 16-byte
  // vector and TMA bulk accesses: a misaligned base would fault on the device (a sticky error
  // that ruins the caller's CUDA context), so it is refused here instead.
  if (o.workspace && reinterpret_cast<uintptr_t>(o.workspace) % kWorkspaceAlignment != 0)
    return invalid("workspace must be " + std::to_string(kWorkspaceAlignment) +
                   "-byte aligned (any cudaMalloc or framework allocation is)");
  (void)head_dim;
  return Status::success();
}

// Host-side checks of cu_seqlens contents; only possible when they live in host memory.
Status check_cu_seqlens_host(const int32_t* cu, int64_t n, int64_t total, const char* name,
                             const char* rows_of) {
  if (cu[0] != 0) return invalid(std::string(name) + "[0] must be 0, got " + std::to_string(cu[0]));
  for (int64_t i = 0; i < n; ++i)
    if (cu[i + 1] < cu[i])
      return invalid(std::string(name) + " must be non-decreasing: " + name + "[" +
                     std::to_string(i + 1) + "] = " + std::to_string(cu[i + 1]) + " < " + name +
                     "[" + std::to_string(i) + "] = " + std::to_string(cu[i]));
  if (cu[n] != total)
    return invalid(std::string(name) + "[" + std::to_string(n) + "] = " + std::to_string(cu[n]) +
                   " must equal the number of rows of " + rows_of + " (" + rows_of +
                   ".shape[0] = " + std::to_string(total) + ")");
  return Status::success();
}

// The share of AttnParams both entry forms take straight from q and the head counts: dtype,
// device, batch, heads, head dim.
void fill_sizes(const fa_tensor& q, int64_t batch, int64_t hq, int64_t hk, int64_t head_dim, AttnParams* r) {
  r->dtype = q.dtype == FA_DTYPE_FLOAT32   ? DType::F32
             : q.dtype == FA_DTYPE_FLOAT16 ? DType::F16
                                           : DType::BF16;
  r->is_cuda = q.device == FA_DEVICE_CUDA;
  r->device_id = q.device_id;
  r->batch = int(batch);
  r->heads_q = int(hq);
  r->heads_kv = int(hk);
  r->head_dim = int(head_dim);
}

// The options' share of AttnParams (head_dim must be set): scale resolved, causal folded into
// window_right = 0.
void fill_options(const fa_options& opt, AttnParams* r) {
  r->scale = opt.softmax_scale > 0.f ? opt.softmax_scale : 1.f / std::sqrt(float(r->head_dim));
  r->softcap = opt.softcap;
  r->causal = opt.causal != 0;
  r->window_left = opt.window_left;
  r->window_right = r->causal ? 0 : opt.window_right;
  r->deterministic = opt.deterministic != 0;
  r->algo = opt.algo;
  r->num_threads = opt.num_threads;
  r->stream = opt.stream;
  r->workspace = opt.workspace;
  r->workspace_bytes = opt.workspace_bytes;
}

Status make_kvcache_params(const CallArgs& a, const fa_options& opt, AttnParams* p);

}  // namespace

Status make_params(const CallArgs& a, AttnParams* p) {
  fa_options defaults;
  fa_options_init(&defaults);
  const fa_options& opt = a.opt ? *a.opt : defaults;
  if (a.kvcache) return make_kvcache_params(a, opt, p);
  const bool varlen = a.varlen != nullptr;
  const int rank = varlen ? 3 : 4;

  FA_RETURN_IF_ERROR(check_descriptor(a.q, "q", rank));
  FA_RETURN_IF_ERROR(check_descriptor(a.k, "k", rank));
  FA_RETURN_IF_ERROR(check_descriptor(a.v, "v", rank));
  const fa_tensor& q = *a.q;
  const fa_tensor& k = *a.k;
  const fa_tensor& v = *a.v;

  // dtype: q decides; k and v must match it.
  if (q.dtype != FA_DTYPE_FLOAT32 && q.dtype != FA_DTYPE_FLOAT16 && q.dtype != FA_DTYPE_BFLOAT16 &&
      q.dtype != FA_DTYPE_FLOAT8_E4M3)
    return invalid(std::string("q: unsupported dtype ") + dtype_desc(q.dtype) +
                   " (expected float16, bfloat16, float32 or float8_e4m3)");
  FA_RETURN_IF_ERROR(check_dtype(k, "k", q.dtype));
  FA_RETURN_IF_ERROR(check_dtype(v, "v", q.dtype));
  if (q.dtype == FA_DTYPE_FLOAT8_E4M3)
    return unsupported("float8_e4m3 attention is not available in this build yet");
  FA_RETURN_IF_ERROR(check_same_place(k, "k", q));
  FA_RETURN_IF_ERROR(check_same_place(v, "v", q));

  // Sizes.
  const int64_t head_dim = q.shape[rank - 1];
  const int64_t hq = q.shape[rank - 2];
  const int64_t hk = k.shape[rank - 2];
  int64_t batch, nq, nk, total_q, total_k;
  if (varlen) {
    total_q = q.shape[0];
    total_k = k.shape[0];
    if (!a.varlen->cu_seqlens_q) return invalid("cu_seqlens_q is null");
    if (!a.varlen->cu_seqlens_k) return invalid("cu_seqlens_k is null");
    FA_RETURN_IF_ERROR(check_descriptor(a.varlen->cu_seqlens_q, "cu_seqlens_q", 1));
    FA_RETURN_IF_ERROR(check_descriptor(a.varlen->cu_seqlens_k, "cu_seqlens_k", 1));
    FA_RETURN_IF_ERROR(check_dtype(*a.varlen->cu_seqlens_q, "cu_seqlens_q", FA_DTYPE_INT32));
    FA_RETURN_IF_ERROR(check_dtype(*a.varlen->cu_seqlens_k, "cu_seqlens_k", FA_DTYPE_INT32));
    FA_RETURN_IF_ERROR(check_same_place(*a.varlen->cu_seqlens_q, "cu_seqlens_q", q));
    FA_RETURN_IF_ERROR(check_same_place(*a.varlen->cu_seqlens_k, "cu_seqlens_k", q));
    batch = a.varlen->cu_seqlens_q->shape[0] - 1;
    if (batch < 0) return invalid("cu_seqlens_q must have at least one entry");
    if (a.varlen->cu_seqlens_k->shape[0] != batch + 1)
      return invalid("cu_seqlens_k has " + std::to_string(a.varlen->cu_seqlens_k->shape[0]) +
                     " entries but cu_seqlens_q has " + std::to_string(batch + 1));
    if (a.varlen->seqused_k) {
      FA_RETURN_IF_ERROR(check_descriptor(a.varlen->seqused_k, "seqused_k", 1));
      FA_RETURN_IF_ERROR(check_dtype(*a.varlen->seqused_k, "seqused_k", FA_DTYPE_INT32));
      FA_RETURN_IF_ERROR(check_same_place(*a.varlen->seqused_k, "seqused_k", q));
      FA_RETURN_IF_ERROR(check_shape(*a.varlen->seqused_k, "seqused_k", {batch}));
    }
    nq = a.varlen->max_seqlen_q;
    nk = a.varlen->max_seqlen_k;
    if (nq < 0 || nk < 0)
      return invalid("max_seqlen_q and max_seqlen_k must be >= 0, got " + std::to_string(nq) +
                     " and " + std::to_string(nk));
    if (q.device == FA_DEVICE_CPU) {
      // On the host we can afford to check the contents; on a GPU that would need a sync.
      const auto* cq = static_cast<const int32_t*>(a.varlen->cu_seqlens_q->data);
      const auto* ck = static_cast<const int32_t*>(a.varlen->cu_seqlens_k->data);
      FA_RETURN_IF_ERROR(check_cu_seqlens_host(cq, batch, total_q, "cu_seqlens_q", "q"));
      FA_RETURN_IF_ERROR(check_cu_seqlens_host(ck, batch, total_k, "cu_seqlens_k", "k"));
      for (int64_t b = 0; b < batch; ++b) {
        if (cq[b + 1] - cq[b] > nq)
          return invalid("sequence " + std::to_string(b) + " has " +
                         std::to_string(cq[b + 1] - cq[b]) + " queries, more than max_seqlen_q " +
                         std::to_string(nq));
        if (ck[b + 1] - ck[b] > nk)
          return invalid("sequence " + std::to_string(b) + " has " +
                         std::to_string(ck[b + 1] - ck[b]) + " keys, more than max_seqlen_k " +
                         std::to_string(nk));
        if (a.varlen->seqused_k) {
          const auto* used = static_cast<const int32_t*>(a.varlen->seqused_k->data);
          if (used[b] < 0 || used[b] > ck[b + 1] - ck[b])
            return invalid("seqused_k[" + std::to_string(b) + "] = " + std::to_string(used[b]) +
                           " is outside [0, " + std::to_string(ck[b + 1] - ck[b]) + "]");
        }
      }
    }
  } else {
    batch = q.shape[0];
    nq = q.shape[1];
    nk = k.shape[1];
    total_q = batch * nq;
    total_k = batch * nk;
    if (k.shape[0] != batch)
      return invalid("k: batch size " + std::to_string(k.shape[0]) + " does not match q's " +
                     std::to_string(batch));
  }
  if (head_dim < kMinHeadDim || head_dim > kMaxHeadDim || head_dim % 8 != 0)
    return unsupported("head_dim " + std::to_string(head_dim) +
                       " is not supported: it must be a multiple of 8 in [8, 256]");
  if (k.shape[rank - 1] != head_dim)
    return invalid("k: head_dim " + std::to_string(k.shape[rank - 1]) + " does not match q's " +
                   std::to_string(head_dim));
  if (hk <= 0 || hq <= 0)
    return invalid("number of heads must be positive (q has " + std::to_string(hq) +
                   ", k has " + std::to_string(hk) + ")");
  if (hq % hk != 0)
    return invalid("q has " + std::to_string(hq) + " heads, not a multiple of k's " +
                   std::to_string(hk) + " (GQA/MQA needs heads_q % heads_kv == 0)");
  if (varlen) {
    FA_RETURN_IF_ERROR(check_shape(k, "k", {total_k, hk, head_dim}));
    FA_RETURN_IF_ERROR(check_shape(v, "v", {total_k, hk, head_dim}));
  } else {
    FA_RETURN_IF_ERROR(check_shape(k, "k", {batch, nk, hk, head_dim}));
    FA_RETURN_IF_ERROR(check_shape(v, "v", {batch, nk, hk, head_dim}));
  }
  if (nq > INT32_MAX || nk > INT32_MAX || batch > INT32_MAX)
    return unsupported("sequence lengths and batch must be below 2^31");
  FA_RETURN_IF_ERROR(check_options(opt, int(head_dim)));

  // Outputs.
  auto check_like = [&](const fa_tensor* t, const char* name, const fa_tensor& like,
                        const char* like_name) -> Status {
    FA_RETURN_IF_ERROR(check_descriptor(t, name, rank));
    FA_RETURN_IF_ERROR(check_same_place(*t, name, q));
    FA_RETURN_IF_ERROR(check_dtype(*t, name, like.dtype));
    for (int i = 0; i < rank; ++i)
      if (t->shape[i] != like.shape[i])
        return invalid(std::string(name) + ": expected shape " + shape_str(like) + " (as " +
                       like_name + "), got " + shape_str(*t));
    return Status::success();
  };
  auto check_lse = [&](const fa_tensor* t) -> Status {
    const int lrank = varlen ? 2 : 3;
    FA_RETURN_IF_ERROR(check_descriptor(t, "lse", lrank));
    FA_RETURN_IF_ERROR(check_same_place(*t, "lse", q));
    FA_RETURN_IF_ERROR(check_dtype(*t, "lse", FA_DTYPE_FLOAT32));
    if (varlen) return check_shape(*t, "lse", {hq, total_q});
    return check_shape(*t, "lse", {batch, hq, nq});
  };

  if (!a.shapes_only) {
    if (!a.out) return invalid("out is null");
    FA_RETURN_IF_ERROR(check_like(a.out, "out", q, "q"));
    if (a.lse) FA_RETURN_IF_ERROR(check_lse(a.lse));
    if (a.backward) {
      if (!a.lse) return invalid("lse is null (the backward needs the forward's log-sum-exp)");
      if (!a.dout) return invalid("dout is null");
      FA_RETURN_IF_ERROR(check_like(a.dout, "dout", q, "q"));
      if (!a.dq) return invalid("dq is null");
      FA_RETURN_IF_ERROR(check_like(a.dq, "dq", q, "q"));
      if (!a.dk) return invalid("dk is null");
      FA_RETURN_IF_ERROR(check_like(a.dk, "dk", k, "k"));
      if (!a.dv) return invalid("dv is null");
      FA_RETURN_IF_ERROR(check_like(a.dv, "dv", v, "v"));
    }
  }

  // Backend and device agreement.
  if (opt.backend == FA_BACKEND_CPU && q.device != FA_DEVICE_CPU)
    return invalid("the CPU backend was asked for but q is a CUDA tensor");
  if (opt.backend == FA_BACKEND_CUDA && q.device != FA_DEVICE_CUDA)
    return invalid("the CUDA backend was asked for but q is a CPU tensor");
  if (q.device == FA_DEVICE_CPU && opt.algo != FA_ALGO_AUTO)
    return unsupported("algo selects a CUDA kernel generation; the CPU backend has one algorithm");

  // Fill the runtime description.
  AttnParams r;
  fill_sizes(q, batch, hq, hk, head_dim, &r);
  r.seqlen_q = nq;
  r.seqlen_k = nk;
  r.total_q = total_q;
  r.total_k = total_k;
  r.varlen = varlen;
  if (varlen) {
    r.cu_seqlens_q = static_cast<const int32_t*>(a.varlen->cu_seqlens_q->data);
    r.cu_seqlens_k = static_cast<const int32_t*>(a.varlen->cu_seqlens_k->data);
    r.seqused_k = a.varlen->seqused_k ? static_cast<const int32_t*>(a.varlen->seqused_k->data)
                                      : nullptr;
  }
  r.q = q.data;
  r.k = k.data;
  r.v = v.data;
  r.q_str = strides_of(q, varlen);
  r.k_str = strides_of(k, varlen);
  r.v_str = strides_of(v, varlen);
  if (!a.shapes_only) {
    r.o = a.out->data;
    r.o_str = strides_of(*a.out, varlen);
    if (a.lse) {
      r.lse = static_cast<float*>(a.lse->data);
      // lse is [B, Hq, Nq] or [Hq, Tq]; its row stride must be 1 (checked above as "last dim").
      r.lse_batch_stride = varlen ? 0 : a.lse->strides[0];
      r.lse_head_stride = varlen ? a.lse->strides[0] : a.lse->strides[1];
    }
    if (a.backward) {
      r.dout = a.dout->data;
      r.dq = a.dq->data;
      r.dk = a.dk->data;
      r.dv = a.dv->data;
      r.do_str = strides_of(*a.dout, varlen);
      r.dq_str = strides_of(*a.dq, varlen);
      r.dk_str = strides_of(*a.dk, varlen);
      r.dv_str = strides_of(*a.dv, varlen);
    }
  }
  fill_options(opt, &r);
  *p = r;
  return Status::success();
}

namespace {

// An int32 index tensor of the KV cache: rank, dtype, place, shape (rank 1: contiguous, as
// check_descriptor requires unit stride in the last dimension).
Status check_index(const fa_tensor* t, const char* name, const fa_tensor& q,
                   std::initializer_list<int64_t> shape) {
  FA_RETURN_IF_ERROR(check_descriptor(t, name, int(shape.size())));
  FA_RETURN_IF_ERROR(check_dtype(*t, name, FA_DTYPE_INT32));
  FA_RETURN_IF_ERROR(check_same_place(*t, name, q));
  return check_shape(*t, name, shape);
}

// fa_kvcache_forward. The cache takes k/v's place in AttnParams (see params.hpp); everything the
// kernels index with is checked here, and on the host (CPU calls) the index values too, so the
// CPU backend never reads or writes outside the cache. Nothing is written before this succeeds:
// the in-place append is the backend's first step.
Status make_kvcache_params(const CallArgs& a, const fa_options& opt, AttnParams* p) {
  const fa_kvcache& kv = *a.kvcache;
  FA_RETURN_IF_ERROR(check_descriptor(a.q, "q", 4));
  FA_RETURN_IF_ERROR(check_descriptor(kv.k_cache, "k_cache", 4));
  FA_RETURN_IF_ERROR(check_descriptor(kv.v_cache, "v_cache", 4));
  const fa_tensor& q = *a.q;
  const fa_tensor& kc = *kv.k_cache;
  const fa_tensor& vc = *kv.v_cache;

  if (q.dtype != FA_DTYPE_FLOAT32 && q.dtype != FA_DTYPE_FLOAT16 && q.dtype != FA_DTYPE_BFLOAT16)
    return q.dtype == FA_DTYPE_FLOAT8_E4M3
               ? unsupported("q: float8_e4m3 KV-cache attention is not available")
               : invalid(std::string("q: unsupported dtype ") + dtype_desc(q.dtype) +
                         " (expected float16, bfloat16 or float32)");
  FA_RETURN_IF_ERROR(check_dtype(kc, "k_cache", q.dtype));
  FA_RETURN_IF_ERROR(check_dtype(vc, "v_cache", q.dtype));
  FA_RETURN_IF_ERROR(check_same_place(kc, "k_cache", q));
  FA_RETURN_IF_ERROR(check_same_place(vc, "v_cache", q));

  const int64_t batch = q.shape[0], nq = q.shape[1], hq = q.shape[2], head_dim = q.shape[3];
  const int64_t hk = kc.shape[2];
  if (head_dim < kMinHeadDim || head_dim > kMaxHeadDim || head_dim % 8 != 0)
    return unsupported("head_dim " + std::to_string(head_dim) +
                       " is not supported: it must be a multiple of 8 in [8, 256]");
  if (kc.shape[3] != head_dim)
    return invalid("k_cache: head_dim " + std::to_string(kc.shape[3]) + " does not match q's " +
                   std::to_string(head_dim));
  if (hk <= 0 || hq <= 0)
    return invalid("number of heads must be positive (q has " + std::to_string(hq) +
                   ", k_cache has " + std::to_string(hk) + ")");
  if (hq % hk != 0)
    return invalid("q has " + std::to_string(hq) + " heads, not a multiple of k_cache's " +
                   std::to_string(hk) + " (GQA/MQA needs heads_q % heads_kv == 0)");
  FA_RETURN_IF_ERROR(check_shape(vc, "v_cache", {kc.shape[0], kc.shape[1], hk, head_dim}));

  // The cache's form and capacity.
  const bool paged = kv.block_table != nullptr;
  int64_t capacity = 0, pages_per_seq = 0;
  const int64_t entries = kc.shape[0];  // cache entries (contiguous) or pages (paged)
  if (paged) {
    if (kv.cache_batch_idx)
      return invalid("cache_batch_idx cannot be combined with block_table (a paged cache "
                     "maps sequences to pages through block_table)");
    FA_RETURN_IF_ERROR(check_descriptor(kv.block_table, "block_table", 2));
    FA_RETURN_IF_ERROR(check_dtype(*kv.block_table, "block_table", FA_DTYPE_INT32));
    FA_RETURN_IF_ERROR(check_same_place(*kv.block_table, "block_table", q));
    if (kv.block_table->shape[0] != batch)
      return invalid("block_table: expected " + std::to_string(batch) +
                     " rows (q's batch), got shape " + shape_str(*kv.block_table));
    if (kc.shape[1] < 1)
      return invalid("k_cache: page_size (k_cache.shape[1]) must be >= 1, got shape " +
                     shape_str(kc));
    pages_per_seq = kv.block_table->shape[1];
    capacity = pages_per_seq * kc.shape[1];
  } else {
    capacity = kc.shape[1];
    if (kv.cache_batch_idx) {
      FA_RETURN_IF_ERROR(check_index(kv.cache_batch_idx, "cache_batch_idx", q, {batch}));
    } else if (entries < batch) {
      return invalid("k_cache holds " + std::to_string(entries) + " sequences but q has batch " +
                     std::to_string(batch) + " (pass cache_batch_idx to select cache entries)");
    }
  }
  if (kv.cache_seqlens)
    FA_RETURN_IF_ERROR(check_index(kv.cache_seqlens, "cache_seqlens", q, {batch}));

  // New keys to append.
  int64_t nnew = 0;
  if ((kv.k_new != nullptr) != (kv.v_new != nullptr))
    return invalid(kv.k_new ? "k_new is given without v_new (pass both or neither)"
                            : "v_new is given without k_new (pass both or neither)");
  if (kv.k_new) {
    if (!kv.cache_seqlens)
      return invalid("k_new/v_new need cache_seqlens (where the new keys are written)");
    FA_RETURN_IF_ERROR(check_descriptor(kv.k_new, "k_new", 4));
    FA_RETURN_IF_ERROR(check_descriptor(kv.v_new, "v_new", 4));
    FA_RETURN_IF_ERROR(check_dtype(*kv.k_new, "k_new", q.dtype));
    FA_RETURN_IF_ERROR(check_dtype(*kv.v_new, "v_new", q.dtype));
    FA_RETURN_IF_ERROR(check_same_place(*kv.k_new, "k_new", q));
    FA_RETURN_IF_ERROR(check_same_place(*kv.v_new, "v_new", q));
    nnew = kv.k_new->shape[1];
    FA_RETURN_IF_ERROR(check_shape(*kv.k_new, "k_new", {batch, nnew, hk, head_dim}));
    FA_RETURN_IF_ERROR(check_shape(*kv.v_new, "v_new", {batch, nnew, hk, head_dim}));
  }
  if (kv.num_splits < 0)
    return invalid("num_splits must be >= 0 (0 = chosen automatically, 1 = no split), got " +
                   std::to_string(kv.num_splits));
  if (nq > INT32_MAX || capacity > INT32_MAX || batch > INT32_MAX || nnew > INT32_MAX)
    return unsupported("sequence lengths, cache capacity and batch must be below 2^31");
  FA_RETURN_IF_ERROR(check_options(opt, int(head_dim)));

  if (!a.shapes_only) {
    if (!a.out) return invalid("out is null");
    FA_RETURN_IF_ERROR(check_descriptor(a.out, "out", 4));
    FA_RETURN_IF_ERROR(check_same_place(*a.out, "out", q));
    FA_RETURN_IF_ERROR(check_dtype(*a.out, "out", q.dtype));
    FA_RETURN_IF_ERROR(check_shape(*a.out, "out", {batch, nq, hq, head_dim}));
    if (a.lse) {
      FA_RETURN_IF_ERROR(check_descriptor(a.lse, "lse", 3));
      FA_RETURN_IF_ERROR(check_same_place(*a.lse, "lse", q));
      FA_RETURN_IF_ERROR(check_dtype(*a.lse, "lse", FA_DTYPE_FLOAT32));
      FA_RETURN_IF_ERROR(check_shape(*a.lse, "lse", {batch, hq, nq}));
    }
  }

  if (opt.backend == FA_BACKEND_CPU && q.device != FA_DEVICE_CPU)
    return invalid("the CPU backend was asked for but q is a CUDA tensor");
  if (opt.backend == FA_BACKEND_CUDA && q.device != FA_DEVICE_CUDA)
    return invalid("the CUDA backend was asked for but q is a CPU tensor");
  if (opt.algo == FA_ALGO_FA1 || opt.algo == FA_ALGO_FA3)
    return unsupported("algo: there is no FA1/FA3 decode kernel (use FA_ALGO_AUTO or FA_ALGO_FA2)");
  if (q.device == FA_DEVICE_CPU && opt.algo != FA_ALGO_AUTO)
    return unsupported("algo selects a CUDA kernel generation; the CPU backend has one algorithm");
  if (q.device == FA_DEVICE_CUDA && q.dtype == FA_DTYPE_FLOAT32)
    return unsupported("q: the CUDA KV-cache kernels take float16 or bfloat16, not float32");

  if (q.device == FA_DEVICE_CPU) {
    // Host memory: the index values can be checked for free, so the CPU backend needs no clamps.
    const auto* seqlens =
        kv.cache_seqlens ? static_cast<const int32_t*>(kv.cache_seqlens->data) : nullptr;
    const auto* table = paged ? static_cast<const int32_t*>(kv.block_table->data) : nullptr;
    const auto* idx =
        kv.cache_batch_idx ? static_cast<const int32_t*>(kv.cache_batch_idx->data) : nullptr;
    for (int64_t b = 0; b < batch; ++b) {
      const std::string sb = "[" + std::to_string(b) + "]";
      int64_t len = capacity;
      if (seqlens) {
        const int64_t s0 = seqlens[b];
        if (s0 < 0)
          return invalid("cache_seqlens" + sb + " = " + std::to_string(s0) + " is negative");
        len = s0 + nnew;
        if (len > capacity)
          return invalid("cache_seqlens" + sb + " = " + std::to_string(s0) +
                         (nnew ? " plus " + std::to_string(nnew) + " new keys" : std::string()) +
                         " exceeds the cache capacity " + std::to_string(capacity));
      }
      if (idx) {
        const int64_t e = idx[b];
        if (e < 0 || e >= entries)
          return invalid("cache_batch_idx" + sb + " = " + std::to_string(e) + " is outside [0, " +
                         std::to_string(entries) + ") (k_cache.shape[0])");
      }
      if (table) {
        const int64_t used = (len + kc.shape[1] - 1) / kc.shape[1];  // pages sequence b reads
        for (int64_t i = 0; i < used; ++i) {
          const int64_t pg = table[b * kv.block_table->strides[0] + i];
          if (pg < 0 || pg >= entries)
            return invalid("block_table[" + std::to_string(b) + ", " + std::to_string(i) +
                           "] = " + std::to_string(pg) + " is outside [0, " +
                           std::to_string(entries) + ") (k_cache.shape[0] pages)");
        }
      }
    }
  }

  AttnParams r;
  fill_sizes(q, batch, hq, hk, head_dim, &r);
  r.seqlen_q = nq;
  r.seqlen_k = capacity;
  r.total_q = batch * nq;
  r.total_k = entries * kc.shape[1];  // rows of the cache tensor
  r.q = q.data;
  r.k = kc.data;
  r.v = vc.data;
  r.q_str = strides_of(q, false);
  r.k_str = strides_of(kc, false);  // paged: the batch stride is the page stride
  r.v_str = strides_of(vc, false);
  if (!a.shapes_only) {
    r.o = a.out->data;
    r.o_str = strides_of(*a.out, false);
    if (a.lse) {
      r.lse = static_cast<float*>(a.lse->data);
      r.lse_batch_stride = a.lse->strides[0];
      r.lse_head_stride = a.lse->strides[1];
    }
  }
  r.kvcache = true;
  // Rank-1 index tensors are contiguous (check_descriptor: unit stride in the last dimension).
  if (kv.cache_seqlens) r.cache_seqlens = static_cast<const int32_t*>(kv.cache_seqlens->data);
  if (kv.cache_batch_idx) r.cache_batch_idx = static_cast<const int32_t*>(kv.cache_batch_idx->data);
  if (paged) {
    r.block_table = static_cast<const int32_t*>(kv.block_table->data);
    r.block_table_stride = kv.block_table->strides[0];
    r.page_size = kc.shape[1];
  }
  if (kv.k_new) {
    r.k_cache_w = kc.data;
    r.v_cache_w = vc.data;
    r.k_new = kv.k_new->data;
    r.v_new = kv.v_new->data;
    r.knew_str = strides_of(*kv.k_new, false);
    r.vnew_str = strides_of(*kv.v_new, false);
    r.seqlen_new = nnew;
  }
  r.num_splits = kv.num_splits;
  fill_options(opt, &r);
  *p = r;
  return Status::success();
}

}  // namespace

Status make_fp8_params(const CallArgs& a, const fa_fp8* f, AttnParams* p) {
  if (!f) return invalid("f (the fa_fp8 options) is null");
  // q's dtype first: make_params would accept float32 and name float8_e4m3 "not available".
  FA_RETURN_IF_ERROR(check_descriptor(a.q, "q", 4));
  if (a.q->dtype != FA_DTYPE_FLOAT16 && a.q->dtype != FA_DTYPE_BFLOAT16)
    return invalid(std::string("q: the fp8 forward takes float16 or bfloat16 inputs (it quantises "
                               "them itself), got ") +
                   dtype_desc(a.q->dtype));
  if (f->scaling != FA_FP8_SCALING_BLOCK && f->scaling != FA_FP8_SCALING_PER_HEAD)
    return invalid("f->scaling must be FA_FP8_SCALING_BLOCK or FA_FP8_SCALING_PER_HEAD, got " +
                   std::to_string(int(f->scaling)));
  if (f->incoherent != 0 && f->incoherent != 1)
    return invalid("f->incoherent must be 0 or 1, got " + std::to_string(f->incoherent));
  if (f->reuse_quantized < 0 || f->reuse_quantized > 2)
    return invalid("f->reuse_quantized must be 0 (quantise q, k, v), 1 (none) or 2 (q only), got " +
                   std::to_string(f->reuse_quantized));
  if (f->reuse_quantized != 0 && !(a.opt && a.opt->workspace))
    return invalid("f->reuse_quantized = " + std::to_string(f->reuse_quantized) +
                   " needs the caller's workspace (opt->workspace) holding an earlier call's "
                   "quantised inputs");
  AttnParams r;
  FA_RETURN_IF_ERROR(make_params(a, &r));
  if (r.head_dim != 64 && r.head_dim != 128 && r.head_dim != 256)
    return unsupported("head_dim " + std::to_string(r.head_dim) +
                       " is not supported by the fp8 forward: it must be 64, 128 or 256 (the "
                       "Hadamard transform needs a power of two)");
  if (r.softcap != 0.f) return unsupported("softcap is not available in the fp8 forward (it must be 0)");
  if (r.algo != FA_ALGO_AUTO && r.algo != FA_ALGO_FA3)
    return unsupported("algo: the fp8 forward has only the FA3 kernel (use FA_ALGO_AUTO or FA_ALGO_FA3)");
  *p = r;
  return Status::success();
}

fa_backend resolve_backend(const AttnParams& p) {
  return p.is_cuda ? FA_BACKEND_CUDA : FA_BACKEND_CPU;
}

}  // namespace fa::core
