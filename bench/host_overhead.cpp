// fa_host_overhead: the host-side cost of one attention call, layer by layer, at a shape small
// enough that the kernel is negligible. The Python layers on top are measured by
// bench/python_overhead.py, which can run this binary first (--host-bench) and print one table.
//
//   fa_host_overhead [--shape B,Nq,Nk,H,D] [--iters N] [--batch K] [--dtype bf16|fp16]
//
// Two numbers per row:
//   host us/call  CPU time spent issuing one call: calls are made in batches of K with no
//                 synchronisation inside a batch (timed), then the stream is drained (not
//                 timed). K stays well below the launch queue's depth, so no call waits for the
//                 GPU: this is the host overhead.
//   wall us/call  N calls back to back and one synchronisation, divided by N: what a loop of
//                 such calls achieves, i.e. max(host cost, GPU time per call).
// "Over the raw launch" = a row's host us/call minus the empty kernel's host us/call: what the
// library adds to the cheapest possible launch (a <<<>>> of an empty kernel, one cudaLaunchKernel).
// Without a GPU (or in a CPU-only build) only the validation row and the CPU backend's tiny call
// run, as a proxy for the host-side code path.
#include <flashattn/flashattn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "host_overhead.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int64_t b = 1, nq = 1, nk = 16, h = 2, d = 128;
  int iters = 20000;
  int batch = 200;
  fa_dtype dtype = FA_DTYPE_BFLOAT16;
};

struct Timing {
  double host_us = 0;  // median over batches of the per-call issue time
  double wall_us = 0;  // back to back, one sync
};

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// sync: drains the work issued so far (no-op for host-only rows).
Timing time_calls(const Args& a, const std::function<void()>& call, const std::function<void()>& sync) {
  for (int i = 0; i < std::max(50, a.iters / 20); ++i) call();  // warm-up: lazy init, caches
  sync();
  std::vector<double> per_call;
  for (int done = 0; done < a.iters; done += a.batch) {
    const auto t0 = Clock::now();
    for (int i = 0; i < a.batch; ++i) call();
    per_call.push_back(us_since(t0) / a.batch);
    sync();
  }
  std::nth_element(per_call.begin(), per_call.begin() + per_call.size() / 2, per_call.end());
  Timing t;
  t.host_us = per_call[per_call.size() / 2];
  const auto t0 = Clock::now();
  for (int i = 0; i < a.iters; ++i) call();
  sync();
  t.wall_us = us_since(t0) / a.iters;
  return t;
}

fa_tensor tensor4(void* data, fa_dtype dt, fa_device dev, int64_t b, int64_t n, int64_t h, int64_t d) {
  fa_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.device = dev;
  t.device_id = 0;
  t.rank = 4;
  const int64_t shape[4] = {b, n, h, d};
  for (int i = 0; i < 4; ++i) t.shape[i] = shape[i];
  t.strides[3] = 1;
  for (int i = 2; i >= 0; --i) t.strides[i] = t.strides[i + 1] * t.shape[i + 1];
  return t;
}

fa_tensor tensor3(void* data, fa_device dev, int64_t b, int64_t h, int64_t n) {
  fa_tensor t{};
  t.data = data;
  t.dtype = FA_DTYPE_FLOAT32;
  t.device = dev;
  t.rank = 3;
  t.shape[0] = b, t.shape[1] = h, t.shape[2] = n;
  t.strides[2] = 1, t.strides[1] = n, t.strides[0] = h * n;
  return t;
}

void print_row(const char* name, const Timing& t, double raw_host, const char* note) {
  if (raw_host >= 0)
    std::printf("%-44s %9.2f %9.2f %+10.2f  %s\n", name, t.host_us, t.wall_us, t.host_us - raw_host, note);
  else
    std::printf("%-44s %9.2f %9.2f %10s  %s\n", name, t.host_us, t.wall_us, "-", note);
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (s == "--shape") {
      const char* v = next();
      if (!v || std::sscanf(v, "%ld,%ld,%ld,%ld,%ld", &a->b, &a->nq, &a->nk, &a->h, &a->d) != 5) return false;
    } else if (s == "--iters") {
      const char* v = next();
      if (!v) return false;
      a->iters = std::atoi(v);
    } else if (s == "--batch") {
      const char* v = next();
      if (!v) return false;
      a->batch = std::atoi(v);
    } else if (s == "--dtype") {
      const char* v = next();
      if (!v) return false;
      const std::string d = v;
      if (d == "bf16") a->dtype = FA_DTYPE_BFLOAT16;
      else if (d == "fp16") a->dtype = FA_DTYPE_FLOAT16;
      else return false;
    } else {
      return false;
    }
  }
  return a->iters > 0 && a->batch > 0 && a->batch <= a->iters;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: fa_host_overhead [--shape B,Nq,Nk,H,D] [--iters N] [--batch K<=N] [--dtype bf16|fp16]\n");
    return 2;
  }
  const bool gpu = fa_cuda_built() && hob::cuda_available();
  std::printf("fa_host_overhead: shape q=[%ld,%ld,%ld,%ld] k/v=[%ld,%ld,%ld,%ld] %s, iters %d, batch %d, %s\n",
              a.b, a.nq, a.h, a.d, a.b, a.nk, a.h, a.d, gpu ? (a.dtype == FA_DTYPE_BFLOAT16 ? "bf16" : "fp16") : "fp32",
              a.iters, a.batch, gpu ? "CUDA" : "no GPU: CPU backend rows only");
  std::printf("%-44s %9s %9s %10s\n", "layer", "host us", "wall us", "over raw");

  const fa_device dev = gpu ? FA_DEVICE_CUDA : FA_DEVICE_CPU;
  const fa_dtype dt = gpu ? a.dtype : FA_DTYPE_FLOAT32;
  const size_t es = gpu ? 2 : 4;
  const size_t q_bytes = size_t(a.b * a.nq * a.h * a.d) * es, kv_bytes = size_t(a.b * a.nk * a.h * a.d) * es;
  const size_t lse_bytes = size_t(a.b * a.h * a.nq) * 4;
  auto alloc = [&](size_t n) -> void* {
    if (gpu) return hob::device_alloc(n);
    void* p = std::calloc(1, n);
    return p;
  };
  void* q = alloc(q_bytes);
  void* k = alloc(kv_bytes);
  void* v = alloc(kv_bytes);
  void* o = alloc(q_bytes);
  void* l = alloc(lse_bytes);
  const fa_tensor tq = tensor4(q, dt, dev, a.b, a.nq, a.h, a.d), tk = tensor4(k, dt, dev, a.b, a.nk, a.h, a.d),
                  tv = tensor4(v, dt, dev, a.b, a.nk, a.h, a.d);
  fa_tensor to = tensor4(o, dt, dev, a.b, a.nq, a.h, a.d), tl = tensor3(l, dev, a.b, a.h, a.nq);
  void* stream = gpu ? hob::make_stream() : nullptr;
  auto sync = [&] {
    if (gpu) hob::sync_stream(stream);
  };
  auto no_sync = [] {};
  auto options = [&](fa_algo algo) {
    fa_options opt;
    fa_options_init(&opt);
    opt.causal = a.nq > 1 ? 1 : 0;  // as python_overhead.py: one query row needs no mask
    opt.algo = algo;
    opt.stream = stream;
    opt.num_threads = 1;
    return opt;
  };
  auto forward = [&](fa_algo algo, const char* name) -> std::function<void()> {
    const fa_options opt = options(algo);
    size_t ws = 0;
    if (fa_forward_workspace_size(&tq, &tk, &tv, nullptr, &opt, &ws) != FA_OK || ws != 0 ||
        fa_forward(&tq, &tk, &tv, &to, &tl, &opt) != FA_OK) {
      std::printf("%-44s skipped: %s%s\n", name, fa_last_error(), ws ? " (needs workspace)" : "");
      return nullptr;
    }
    return [&tq, &tk, &tv, &to, &tl, opt] {
      if (fa_forward(&tq, &tk, &tv, &to, &tl, &opt) != FA_OK) {
        std::fprintf(stderr, "fa_forward failed: %s\n", fa_last_error());
        std::exit(1);
      }
    };
  };

  double raw = -1;
  if (gpu) {
    const Timing t = time_calls(a, [&] { hob::launch_empty(stream); }, sync);
    raw = t.host_us;
    print_row("raw launch: empty kernel <<<1,32>>>", t, raw, "the reference");
    print_row("raw launch: 1 KiB __grid_constant__ param", time_calls(a, [&] { hob::launch_big_param(stream); }, sync),
              raw, "sm90 fwd passes ~0.6-1 KiB (TMA descriptors)");
    print_row("cudaGetDevice", time_calls(a, hob::get_device, no_sync), -1, "DeviceGuard: once per call");
    print_row("cudaFuncSetAttribute (max dyn smem)", time_calls(a, hob::set_smem_attribute, no_sync), -1,
              "was per launch; now once per (kernel, context)");
    print_row("cuCtxGetId (current context)", time_calls(a, hob::get_context_id, no_sync), -1,
              "launch cache key: once per launch");
    print_row("cudaPeekAtLastError", time_calls(a, hob::peek_last_error, no_sync), -1,
              "pending-error check: once per call");
    print_row("cuTensorMapEncodeTiled (one 4-D bf16 map)", time_calls(a, hob::encode_tma_descriptor, no_sync), -1,
              "a direct driver call");
    print_row("cuTensorMapEncodeTiled, looked up per call", time_calls(a, hob::encode_tma_descriptor_via_entry_point, no_sync),
              -1, "as cute's make_tma_copy; the sm90 launchers memoise theirs");
  }
  {
    const fa_options opt = options(FA_ALGO_AUTO);
    size_t ws = 0;
    auto query = [&] {
      if (fa_forward_workspace_size(&tq, &tk, &tv, nullptr, &opt, &ws) != FA_OK) {
        std::fprintf(stderr, "fa_forward_workspace_size: %s\n", fa_last_error());
        std::exit(1);
      }
    };
    print_row("fa_forward_workspace_size (validate+lookup)", time_calls(a, query, no_sync), -1,
              "no launch: the library's fixed cost");
  }
  const struct {
    fa_algo algo;
    const char* name;
    const char* note;
  } rows[] = {
      {FA_ALGO_AUTO, "fa_forward (C ABI), algo auto", gpu ? "FA3 on sm90" : "CPU backend: includes the tiny compute"},
      {FA_ALGO_FA3, "fa_forward (C ABI), algo fa3", "TMA descriptors + launch"},
      {FA_ALGO_FA2, "fa_forward (C ABI), algo fa2", "sm80-class kernel, no TMA"},
  };
  for (const auto& r : rows) {
    if (!gpu && r.algo != FA_ALGO_AUTO) continue;
    auto fn = forward(r.algo, r.name);
    if (fn) print_row(r.name, time_calls(a, fn, sync), raw, r.note);
  }
  std::printf("host us: issue time per call (batches of %d, no sync inside, median batch); wall us: %d calls\n"
              "back to back + one sync; over raw: host us minus the empty kernel's host us.\n",
              a.batch, a.iters);
  for (void* p : {q, k, v, o, l}) gpu ? hob::device_free(p) : std::free(p);
  return 0;
}

#ifndef FA_HOST_OVERHEAD_CUDA
// CPU-only build: no CUDA rows.
namespace hob {
bool cuda_available() { return false; }
void* device_alloc(size_t) { return nullptr; }
void device_free(void*) {}
void* make_stream() { return nullptr; }
void sync_stream(void*) {}
void launch_empty(void*) {}
void launch_big_param(void*) {}
void set_smem_attribute() {}
void get_device() {}
void get_context_id() {}
void peek_last_error() {}
void encode_tma_descriptor() {}
void encode_tma_descriptor_via_entry_point() {}
}  // namespace hob
#endif
