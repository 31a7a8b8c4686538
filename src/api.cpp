// The C ABI: validate once, route to a backend, turn every failure into a status and a
// thread-local message. No exception crosses this boundary.
#include <flashattn/flashattn.h>

#include <exception>
#include <new>
#include <string>

#include "core/backend.hpp"
#include "core/fp8.hpp"
#include "core/validate.hpp"

namespace {

thread_local std::string g_last_error;

fa_status finish(const fa::core::Status& s) {
  g_last_error = s.message;
  return s.code;
}

template <typename F>
fa_status guarded(F&& f) {
  try {
    return finish(f());
  } catch (const std::bad_alloc&) {
    return finish({FA_ERROR_OUT_OF_MEMORY, "out of host memory"});
  } catch (const std::exception& e) {
    return finish({FA_ERROR_INTERNAL, std::string("internal error: ") + e.what()});
  } catch (...) {
    return finish({FA_ERROR_INTERNAL, "internal error: unknown exception"});
  }
}

fa::core::Status run(const fa::core::CallArgs& args) {
  fa::core::AttnParams p;
  FA_RETURN_IF_ERROR(fa::core::make_params(args, &p));
  const bool cuda = fa::core::resolve_backend(p) == FA_BACKEND_CUDA;
  if (cuda && !fa::cuda::built())
    return fa::core::unsupported("q is a CUDA tensor but this flashattn was built without CUDA");
  if (args.kvcache) return cuda ? fa::cuda::kvcache_forward(p) : fa::cpu::kvcache_forward(p);
  if (args.backward) return cuda ? fa::cuda::backward(p) : fa::cpu::backward(p);
  return cuda ? fa::cuda::forward(p) : fa::cpu::forward(p);
}

fa::core::Status workspace(const fa::core::CallArgs& args, size_t* bytes) {
  if (!bytes) return fa::core::invalid("bytes is null");
  fa::core::AttnParams p;
  FA_RETURN_IF_ERROR(fa::core::make_params(args, &p));
  // Computed into a local so *bytes is written only on success, as for every output.
  size_t need = 0;
  if (fa::core::resolve_backend(p) == FA_BACKEND_CUDA) {
    if (!fa::cuda::built())
      return fa::core::unsupported("q is a CUDA tensor but this flashattn was built without CUDA");
    FA_RETURN_IF_ERROR(args.kvcache    ? fa::cuda::kvcache_workspace_size(p, &need)
                       : args.backward ? fa::cuda::backward_workspace_size(p, &need)
                                       : fa::cuda::forward_workspace_size(p, &need));
  }
  *bytes = need;
  return fa::core::Status::success();
}

fa::core::Status fp8_run(const fa::core::CallArgs& args, const fa_fp8* f) {
  fa::core::AttnParams p;
  FA_RETURN_IF_ERROR(fa::core::make_fp8_params(args, f, &p));
  if (fa::core::resolve_backend(p) == FA_BACKEND_CPU) return fa::cpu::fp8_forward(p, *f);
  if (!fa::cuda::built())
    return fa::core::unsupported("q is a CUDA tensor but this flashattn was built without CUDA");
  return fa::cuda::fp8_forward(p, *f);
}

fa::core::Status fp8_workspace(const fa::core::CallArgs& args, const fa_fp8* f, size_t* bytes) {
  if (!bytes) return fa::core::invalid("bytes is null");
  fa::core::AttnParams p;
  FA_RETURN_IF_ERROR(fa::core::make_fp8_params(args, f, &p));
  // The CPU backend keeps the quantised copies in the same layout (and honours reuse_quantized).
  size_t need = size_t(fa::core::fp8::layout(p.batch, p.seqlen_q, p.seqlen_k, p.heads_q,
                                             p.heads_kv, p.head_dim).bytes);
  if (fa::core::resolve_backend(p) == FA_BACKEND_CUDA) {
    if (!fa::cuda::built())
      return fa::core::unsupported("q is a CUDA tensor but this flashattn was built without CUDA");
    FA_RETURN_IF_ERROR(fa::cuda::fp8_workspace_size(p, *f, &need));
  }
  *bytes = need;
  return fa::core::Status::success();
}

}  // namespace

extern "C" {

void fa_options_init(fa_options* opt) {
  if (!opt) return;
  *opt = fa_options{};
  opt->softmax_scale = 0.f;
  opt->window_left = -1;
  opt->window_right = -1;
  opt->backend = FA_BACKEND_AUTO;
  opt->algo = FA_ALGO_AUTO;
}

const char* fa_last_error(void) { return g_last_error.c_str(); }

const char* fa_status_string(fa_status s) {
  switch (s) {
    case FA_OK: return "ok";
    case FA_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case FA_ERROR_UNSUPPORTED: return "unsupported";
    case FA_ERROR_CUDA: return "CUDA error";
    case FA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case FA_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* fa_version(void) { return "0.1.0"; }

fa_status fa_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v, fa_tensor* out,
                     fa_tensor* lse, const fa_options* opt) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.out = out, a.lse = lse, a.opt = opt;
    return run(a);
  });
}

fa_status fa_backward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                      const fa_tensor* out, const fa_tensor* lse, const fa_tensor* dout,
                      fa_tensor* dq, fa_tensor* dk, fa_tensor* dv, const fa_options* opt) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.out = out, a.lse = lse, a.dout = dout;
    a.dq = dq, a.dk = dk, a.dv = dv, a.opt = opt, a.backward = true;
    return run(a);
  });
}

fa_status fa_varlen_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                            const fa_varlen* vl, fa_tensor* out, fa_tensor* lse,
                            const fa_options* opt) {
  return guarded([&]() -> fa::core::Status {
    if (!vl) return fa::core::invalid("varlen description is null");
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.varlen = vl, a.out = out, a.lse = lse, a.opt = opt;
    return run(a);
  });
}

fa_status fa_varlen_backward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                             const fa_varlen* vl, const fa_tensor* out, const fa_tensor* lse,
                             const fa_tensor* dout, fa_tensor* dq, fa_tensor* dk, fa_tensor* dv,
                             const fa_options* opt) {
  return guarded([&]() -> fa::core::Status {
    if (!vl) return fa::core::invalid("varlen description is null");
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.varlen = vl, a.out = out, a.lse = lse, a.dout = dout;
    a.dq = dq, a.dk = dk, a.dv = dv, a.opt = opt, a.backward = true;
    return run(a);
  });
}

fa_status fa_forward_workspace_size(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                    const fa_varlen* vl, const fa_options* opt, size_t* bytes) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.varlen = vl, a.opt = opt, a.shapes_only = true;
    return workspace(a, bytes);
  });
}

fa_status fa_backward_workspace_size(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                     const fa_varlen* vl, const fa_options* opt, size_t* bytes) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.varlen = vl, a.opt = opt, a.shapes_only = true;
    a.backward = true;
    return workspace(a, bytes);
  });
}

fa_status fa_kvcache_forward(const fa_tensor* q, const fa_kvcache* kv, fa_tensor* out,
                             fa_tensor* lse, const fa_options* opt) {
  return guarded([&]() -> fa::core::Status {
    if (!kv) return fa::core::invalid("kv (the fa_kvcache description) is null");
    fa::core::CallArgs a;
    a.q = q, a.kvcache = kv, a.out = out, a.lse = lse, a.opt = opt;
    return run(a);
  });
}

fa_status fa_kvcache_workspace_size(const fa_tensor* q, const fa_kvcache* kv,
                                    const fa_options* opt, size_t* bytes) {
  return guarded([&]() -> fa::core::Status {
    if (!kv) return fa::core::invalid("kv (the fa_kvcache description) is null");
    fa::core::CallArgs a;
    a.q = q, a.kvcache = kv, a.opt = opt, a.shapes_only = true;
    return workspace(a, bytes);  // the CPU backend needs none
  });
}

void fa_fp8_init(fa_fp8* f) {
  if (!f) return;
  *f = fa_fp8{};
  f->scaling = FA_FP8_SCALING_BLOCK;
  f->incoherent = 1;
  f->seed = 0x5eed0f8a77e4b3c1ull;
  f->reuse_quantized = 0;
}

fa_status fa_fp8_forward(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                         const fa_fp8* f, fa_tensor* out, fa_tensor* lse, const fa_options* opt) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.out = out, a.lse = lse, a.opt = opt;
    return fp8_run(a, f);
  });
}

fa_status fa_fp8_workspace_size(const fa_tensor* q, const fa_tensor* k, const fa_tensor* v,
                                const fa_fp8* f, const fa_options* opt, size_t* bytes) {
  return guarded([&] {
    fa::core::CallArgs a;
    a.q = q, a.k = k, a.v = v, a.opt = opt, a.shapes_only = true;
    return fp8_workspace(a, f, bytes);
  });
}

int fa_cuda_built(void) { return fa::cuda::built() ? 1 : 0; }

int fa_cuda_device_count(void) {
  try {
    return fa::cuda::device_count();
  } catch (...) {
    return 0;
  }
}

const char* fa_build_info(void) {
  static const std::string info = [] {
    std::string s = std::string("flashattn ") + fa_version() + "\n";
    s += std::string("build: ") + FA_BUILD_TYPE + ", host compiler " + FA_CXX_COMPILER + "\n";
    s += std::string("cuda archs: ") + FA_CUDA_ARCHS_STR + "\n";
    s += fa::cuda::info();
    return s;
  }();
  return info.c_str();
}

}  // extern "C"
