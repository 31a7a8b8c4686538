// flashattn C++ API: a thin, header-only layer over the C ABI that throws fa::Error instead of
// returning status codes. Same layouts and semantics as flashattn.h.
#pragma once

#include <flashattn/flashattn.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace fa {

class Error : public std::runtime_error {
 public:
  Error(fa_status status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
  fa_status status() const noexcept { return status_; }

 private:
  fa_status status_;
};

inline void check(fa_status s) {
  if (s != FA_OK) throw Error(s, fa_last_error());
}

using DType = fa_dtype;
using Device = fa_device;

// A non-owning view. Strides default to the contiguous (row-major) ones.
struct Tensor : fa_tensor {
  Tensor() : fa_tensor{} {}
  Tensor(void* ptr, DType dt, std::initializer_list<int64_t> shp, Device dev = FA_DEVICE_CPU,
         int dev_id = 0)
      : fa_tensor{} {
    data = ptr;
    dtype = dt;
    device = dev;
    device_id = dev_id;
    rank = static_cast<int>(shp.size());  // > FA_MAX_RANK is caught by validation
    int i = 0;
    for (int64_t s : shp)
      if (i < FA_MAX_RANK) shape[i++] = s;
    int64_t st = 1;
    for (int d = (rank < FA_MAX_RANK ? rank : FA_MAX_RANK) - 1; d >= 0; --d) {
      strides[d] = st;
      st *= shape[d];
    }
  }
  Tensor& with_strides(std::initializer_list<int64_t> st) {
    int i = 0;
    for (int64_t s : st)
      if (i < FA_MAX_RANK) strides[i++] = s;
    return *this;
  }
};

struct Options : fa_options {
  Options() : fa_options{} { fa_options_init(this); }
  Options& scale(float s) { softmax_scale = s; return *this; }
  Options& set_causal(bool c = true) { causal = c ? 1 : 0; return *this; }
  Options& window(int left, int right) { window_left = left; window_right = right; return *this; }
  Options& set_softcap(float c) { softcap = c; return *this; }
  Options& set_deterministic(bool d = true) { deterministic = d ? 1 : 0; return *this; }
  Options& set_backend(fa_backend b) { backend = b; return *this; }
  Options& set_algo(fa_algo a) { algo = a; return *this; }
  Options& threads(int n) { num_threads = n; return *this; }
  Options& set_stream(void* s) { stream = s; return *this; }
};

// lse may be nullptr.
inline void forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor* lse,
                    const Options& opt = Options()) {
  check(fa_forward(&q, &k, &v, &out, lse, &opt));
}

inline void backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                     const Tensor& lse, const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv,
                     const Options& opt = Options()) {
  check(fa_backward(&q, &k, &v, &out, &lse, &dout, &dq, &dk, &dv, &opt));
}

struct Varlen : fa_varlen {
  Varlen(const Tensor& cu_q, const Tensor& cu_k, int64_t max_q, int64_t max_k,
         const Tensor* used_k = nullptr)
      : fa_varlen{} {
    cu_seqlens_q = &cu_q;
    cu_seqlens_k = &cu_k;
    seqused_k = used_k;
    max_seqlen_q = max_q;
    max_seqlen_k = max_k;
  }
};

inline void varlen_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Varlen& vl,
                           Tensor& out, Tensor* lse, const Options& opt = Options()) {
  check(fa_varlen_forward(&q, &k, &v, &vl, &out, lse, &opt));
}

inline void varlen_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Varlen& vl,
                            const Tensor& out, const Tensor& lse, const Tensor& dout, Tensor& dq,
                            Tensor& dk, Tensor& dv, const Options& opt = Options()) {
  check(fa_varlen_backward(&q, &k, &v, &vl, &out, &lse, &dout, &dq, &dk, &dv, &opt));
}

// KV-cache decode (fa_kvcache_forward; see flashattn.h): the cache description, e.g.
//   fa::KvCache kv(k_cache, v_cache); kv.seqlens(lens).pages(table).append(k_new, v_new);
//   fa::kvcache_forward(q, kv, out, &lse);
struct KvCache : fa_kvcache {
  KvCache(Tensor& kc, Tensor& vc) : fa_kvcache{} {
    k_cache = &kc;
    v_cache = &vc;
  }
  KvCache& seqlens(const Tensor& t) { cache_seqlens = &t; return *this; }
  KvCache& pages(const Tensor& table) { block_table = &table; return *this; }
  KvCache& batch_idx(const Tensor& t) { cache_batch_idx = &t; return *this; }
  KvCache& append(const Tensor& k, const Tensor& v) { k_new = &k; v_new = &v; return *this; }
  KvCache& splits(int n) { num_splits = n; return *this; }
};

inline void kvcache_forward(const Tensor& q, const KvCache& kv, Tensor& out, Tensor* lse,
                            const Options& opt = Options()) {
  check(fa_kvcache_forward(&q, &kv, &out, lse, &opt));
}

// FP8 forward (fa_fp8_forward; see flashattn.h): the quantisation options, e.g.
//   fa::Fp8 f; f.set_scaling(FA_FP8_SCALING_PER_HEAD).set_incoherent(false);
//   fa::fp8_forward(q, k, v, out, &lse, f);
struct Fp8 : fa_fp8 {
  Fp8() : fa_fp8{} { fa_fp8_init(this); }
  Fp8& set_scaling(fa_fp8_scaling s) { scaling = s; return *this; }
  Fp8& set_incoherent(bool on = true) { incoherent = on ? 1 : 0; return *this; }
  Fp8& set_seed(uint64_t s) { seed = s; return *this; }
  Fp8& reuse(int r) { reuse_quantized = r; return *this; }
};

inline void fp8_forward(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, Tensor* lse,
                        const Fp8& f = Fp8(), const Options& opt = Options()) {
  check(fa_fp8_forward(&q, &k, &v, &f, &out, lse, &opt));
}

inline size_t fp8_workspace_size(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Fp8& f = Fp8(), const Options& opt = Options()) {
  size_t bytes = 0;
  check(fa_fp8_workspace_size(&q, &k, &v, &f, &opt, &bytes));
  return bytes;
}

}  // namespace fa
