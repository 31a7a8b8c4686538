// The one table that maps (arch, algorithm, pass, dtype, head dim, features) to a kernel
// instance, and the CUDA backend's entry points around it: device selection, workspace,
// launch-error checking. The table itself is generated (registry.inc) from the instance list in
// scripts/gen_instances.py, so adding an instance is one line there.
#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cuda/dispatch.hpp"

namespace fa::cuda {

// Declarations of every instance's launcher and of each family's workspace function.
namespace inst {
#define FA_WORKSPACE(fn) size_t fn(const core::AttnParams&);
#define FA_KERNEL(name, algo, pass, min_sm, max_sm, dtype, hd, masked, softcap, ws) \
  core::Status name(const core::AttnParams&, cudaStream_t, void*);
#include "cuda/instances/registry.inc"
#undef FA_KERNEL
#undef FA_WORKSPACE
}  // namespace inst

namespace {

const std::vector<KernelEntry>& table() {
  using core::DType;
  static const std::vector<KernelEntry> t = {
#define FA_WORKSPACE(fn)
#define FA_KERNEL(name, algo, pass, min_sm, max_sm, dtype, hd, masked, softcap, ws) \
  KernelEntry{#name, algo, Pass::pass, min_sm, max_sm, DType::dtype, hd, masked, softcap, &inst::name, ws},
#include "cuda/instances/registry.inc"
#undef FA_KERNEL
#undef FA_WORKSPACE
  };
  return t;
}

core::Status cuda_error(cudaError_t e, const char* what) {
  return {FA_ERROR_CUDA, std::string(what) + ": " + cudaGetErrorString(e)};
}

// Compute capability x10 of a device, cached: cudaGetDeviceProperties is slow enough to show in
// per-call overhead at small shapes.
int device_sm(int dev) {
  static std::mutex mu;
  static std::vector<int> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (dev >= int(cache.size())) cache.resize(dev + 1, -1);
  if (cache[dev] < 0) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    cache[dev] = major * 10 + minor;
  }
  return cache[dev];
}

const char* algo_name(fa_algo a) {
  switch (a) {
    case FA_ALGO_AUTO: return "auto";
    case FA_ALGO_FA1: return "fa1";
    case FA_ALGO_FA2: return "fa2";
    case FA_ALGO_FA3: return "fa3";
  }
  return "?";
}

bool needs_mask(const core::AttnParams& p) { return p.window_left >= 0 || p.window_right >= 0; }

// The instances that can serve a request, best first: one per generation, the newest the device
// runs first under AUTO (a single one when the caller names the algorithm). Within a generation
// the least general instance that fits wins (no mask/softcap support: no per-element checks).
core::Status candidates(const core::AttnParams& p, Pass pass, int sm,
                        std::vector<const KernelEntry*>* out) {
  if (p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("the CUDA backend takes float16 or bfloat16, got ") +
                             core::dtype_name(p.dtype));
  const bool mask = needs_mask(p);
  const bool cap = p.softcap > 0.f;
  const fa_algo order_auto[] = {FA_ALGO_FA3, FA_ALGO_FA2, FA_ALGO_FA1};
  const fa_algo order_one[] = {p.algo};
  const fa_algo* order = p.algo == FA_ALGO_AUTO ? order_auto : order_one;
  const int n_order = p.algo == FA_ALGO_AUTO ? 3 : 1;
  out->clear();
  for (int oi = 0; oi < n_order; ++oi) {
    const KernelEntry* best = nullptr;
    for (const KernelEntry& e : table()) {
      if (e.algo != order[oi] || e.pass != pass || e.dtype != p.dtype || e.head_dim != p.head_dim)
        continue;
      if (sm < e.min_sm || sm > e.max_sm) continue;
      if ((mask && !e.masked) || (cap && !e.softcap)) continue;
      if (!best || (int(e.masked) + int(e.softcap) < int(best->masked) + int(best->softcap)))
        best = &e;
    }
    if (best) out->push_back(best);
  }
  if (!out->empty()) return core::Status::success();
  return core::unsupported(std::string("no CUDA ") + (pass == Pass::Forward ? "forward" : "backward") +
                           " kernel for algo=" + algo_name(p.algo) + ", " +
                           core::dtype_name(p.dtype) + ", head_dim " + std::to_string(p.head_dim) +
                           (mask ? ", masked" : "") + (cap ? ", softcap" : "") + " on sm_" +
                           std::to_string(sm));
}

// Makes p's device current for the call and restores the caller's afterwards.
struct DeviceGuard {
  int prev = -1;
  explicit DeviceGuard(int dev) {
    cudaGetDevice(&prev);
    if (prev != dev) cudaSetDevice(dev);
  }
  ~DeviceGuard() {
    int cur = -1;
    cudaGetDevice(&cur);
    if (prev >= 0 && cur != prev) cudaSetDevice(prev);
  }
};

size_t workspace_of(const KernelEntry* e, const core::AttnParams& p) {
  return e->workspace ? e->workspace(p) : 0;
}

// A kernel may still decline a request its table key matched (e.g. TMA needs 16-byte aligned
// rows); it then returns "unsupported" before enqueuing anything, and under AUTO the next
// generation serves the call.
core::Status run(const core::AttnParams& p, Pass pass) {
  if (device_count() == 0) return {FA_ERROR_CUDA, "no CUDA device is available"};
  DeviceGuard guard(p.device_id);
  std::vector<const KernelEntry*> cands;
  FA_RETURN_IF_ERROR(candidates(p, pass, device_sm(p.device_id), &cands));
  auto stream = static_cast<cudaStream_t>(p.stream);
  if (p.batch == 0) return core::Status::success();
  if (p.total_q == 0)  // no query: O and LSE are empty, every key's gradient is 0
    return pass == Pass::Backward ? zero_unreached_kv_grads(p, stream, true) : core::Status::success();
  core::Status st;
  for (const KernelEntry* e : cands) {
    const size_t need = workspace_of(e, p);
    void* ws = p.workspace;
    bool owned = false;
    if (need > 0 && (!ws || p.workspace_bytes < need)) {
      if (ws)
        return core::invalid("workspace of " + std::to_string(p.workspace_bytes) +
                             " bytes is too small: this call needs " + std::to_string(need));
      // Stream-ordered allocation keeps the call asynchronous; callers that capture CUDA graphs
      // pass their own workspace (see fa_*_workspace_size).
      cudaError_t err = cudaMallocAsync(&ws, need, stream);
      if (err != cudaSuccess) {
        cudaGetLastError();
        return {FA_ERROR_OUT_OF_MEMORY, "could not allocate " + std::to_string(need) +
                                            " bytes of workspace: " + cudaGetErrorString(err)};
      }
      owned = true;
    }
    st = e->launch(p, stream, ws);
    if (owned) cudaFreeAsync(ws, stream);
    if (st.ok() && pass == Pass::Backward) st = zero_unreached_kv_grads(p, stream, false);
    if (st.code != FA_ERROR_UNSUPPORTED) return st;
  }
  return st;
}

// The largest need among the candidates, so a caller's workspace also fits a fallback.
core::Status workspace_size(const core::AttnParams& p, Pass pass, size_t* bytes) {
  if (device_count() == 0) return {FA_ERROR_CUDA, "no CUDA device is available"};
  std::vector<const KernelEntry*> cands;
  FA_RETURN_IF_ERROR(candidates(p, pass, device_sm(p.device_id), &cands));
  size_t need = 0;
  for (const KernelEntry* e : cands) need = std::max(need, workspace_of(e, p));
  *bytes = need;
  return core::Status::success();
}

}  // namespace

core::Status check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda_error(e, what);
  return core::Status::success();
}

bool built() { return true; }

int device_count() {
  static const int n = [] {
    int c = 0;
    if (cudaGetDeviceCount(&c) != cudaSuccess) {
      cudaGetLastError();  // no driver/GPU: clear the sticky error, report none
      return 0;
    }
    return c;
  }();
  return n;
}

std::string info() {
  std::string s = std::string("cuda: built for ") + FA_CUDA_ARCHS_STR + "\n";
  int n = device_count();
  s += "devices: " + std::to_string(n) + "\n";
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess)
      s += "  [" + std::to_string(d) + "] " + prop.name + " sm_" + std::to_string(prop.major) +
           std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs\n";
  }
  s += "kernels: " + std::to_string(table().size()) + "\n";
  for (const KernelEntry& e : table())
    s += std::string("  ") + e.name + "\n";
  return s;
}

core::Status forward_workspace_size(const core::AttnParams& p, size_t* bytes) {
  return workspace_size(p, Pass::Forward, bytes);
}
core::Status backward_workspace_size(const core::AttnParams& p, size_t* bytes) {
  return workspace_size(p, Pass::Backward, bytes);
}
core::Status forward(const core::AttnParams& p) { return run(p, Pass::Forward); }
core::Status backward(const core::AttnParams& p) { return run(p, Pass::Backward); }

}  // namespace fa::cuda
