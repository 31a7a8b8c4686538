// The one table that maps (arch, algorithm, pass, dtype, head dim, features) to a kernel
// instance, and the CUDA backend's entry points around it: device selection, workspace,
// launch-error checking. The table itself is generated (registry.inc) from the instance list in
// scripts/gen_instances.py, so adding an instance is one line there.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "core/abi_names.hpp"
#include "core/backend.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm100/gate.hpp"

namespace fa::cuda {

// Declarations of every instance's launcher and of each family's workspace function.
namespace inst {
#define FA_WORKSPACE(fn) size_t fn(const core::AttnParams&);
#define FA_KERNEL(name, algo, pass, min_sm, max_sm, dtype, out, hd, masked, softcap, ws) \
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
#define FA_KERNEL(name, algo, pass, min_sm, max_sm, dtype, out, hd, masked, softcap, ws)    \
  KernelEntry{#name, algo, Pass::pass, min_sm, max_sm, DType::dtype, DType::out, hd, masked, \
              softcap, &inst::name, ws},
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
// per-call overhead at small shapes. Lock-free on the hit path (every call takes it); two threads
// missing at once both query and store the same value.
constexpr int kMaxCachedDevices = 64;

int device_sm(int dev) {
  static std::atomic<int> cache[kMaxCachedDevices];  // 0: not yet queried
  const bool cacheable = dev >= 0 && dev < kMaxCachedDevices;
  if (cacheable) {
    const int sm = cache[dev].load(std::memory_order_relaxed);
    if (sm > 0) return sm;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  const int sm = major * 10 + minor;
  if (cacheable && sm > 0) cache[dev].store(sm, std::memory_order_relaxed);
  return sm;
}

bool needs_mask(const core::AttnParams& p) { return p.window_left >= 0 || p.window_right >= 0; }

// The instances that can serve a request, best first: at most one per generation. Fixed capacity
// so the per-call path allocates nothing.
struct Candidates {
  const KernelEntry* e[3] = {nullptr, nullptr, nullptr};
  int n = 0;
  const KernelEntry* const* begin() const { return e; }
  const KernelEntry* const* end() const { return e + n; }
};

// What candidates() depends on; the memo below is keyed by it.
struct CandKey {
  Pass pass;
  core::DType dtype;
  int head_dim, sm;
  fa_algo algo;
  bool mask, cap;
  bool operator==(const CandKey& o) const {
    return pass == o.pass && dtype == o.dtype && head_dim == o.head_dim && sm == o.sm &&
           algo == o.algo && mask == o.mask && cap == o.cap;
  }
};

// The least general instance of one generation that fits (no mask/softcap support: no
// per-element checks), or null.
const KernelEntry* best_of(const CandKey& k, fa_algo algo) {
  const KernelEntry* best = nullptr;
  for (const KernelEntry& e : table()) {
    if (e.algo != algo || e.pass != k.pass || e.dtype != k.dtype || e.head_dim != k.head_dim)
      continue;
    if (k.sm < e.min_sm || k.sm > e.max_sm) continue;
    if ((k.mask && !e.masked) || (k.cap && !e.softcap)) continue;
    if (!sm100::entry_allowed(e.min_sm, sm100::env_value())) continue;  // compile-only, opt-in
    if (!best || (int(e.masked) + int(e.softcap) < int(best->masked) + int(best->softcap)))
      best = &e;
  }
  return best;
}

Candidates scan(const CandKey& k) {
  Candidates c;
  if (k.algo != FA_ALGO_AUTO) {
    if (const KernelEntry* e = best_of(k, k.algo)) c.e[c.n++] = e;
    return c;
  }
  // AUTO: the newest generation the device runs first, FA2 as the fallback when FA3 declines
  // (e.g. TMA alignment). FA1 only when neither exists (an instance-filtered build): it declines
  // on FA2's alignment rule (check_vector_alignment) and differs only in taking more than 65535
  // query heads, so as a third choice it rescues nothing real, while listing it made every AUTO
  // forward report FA1's workspace (fp32 O, m, l for every row) as the call's need, which
  // callers that honour fa_forward_workspace_size (the Python layer) allocated on every call.
  for (fa_algo a : {FA_ALGO_FA3, FA_ALGO_FA2})
    if (const KernelEntry* e = best_of(k, a)) c.e[c.n++] = e;
  if (c.n == 0)
    if (const KernelEntry* e = best_of(k, FA_ALGO_FA1)) c.e[c.n++] = e;
  return c;
}

core::Status candidates(const core::AttnParams& p, Pass pass, int sm, Candidates* out) {
  if (p.dtype != core::DType::F16 && p.dtype != core::DType::BF16)
    return core::unsupported(std::string("the CUDA backend takes float16 or bfloat16, got ") +
                             core::dtype_name(p.dtype));
  const CandKey key{pass, p.dtype, p.head_dim, sm, p.algo, needs_mask(p), p.softcap > 0.f};
  // The table scan walks every instance per generation; a call stream repeats a few keys (a
  // layer's forward and backward), so each thread remembers its last few answers. The table is
  // immutable after first use, so cached pointers into it stay valid.
  constexpr int kMemo = 4;
  thread_local CandKey memo_key[kMemo];
  thread_local Candidates memo_val[kMemo];
  thread_local int memo_n = 0, memo_next = 0;
  for (int i = 0; i < memo_n; ++i)
    if (memo_key[i] == key) {
      *out = memo_val[i];
      return core::Status::success();
    }
  *out = scan(key);
  if (out->n > 0) {
    memo_key[memo_next] = key;
    memo_val[memo_next] = *out;
    memo_next = (memo_next + 1) % kMemo;
    if (memo_n < kMemo) ++memo_n;
    return core::Status::success();
  }
  // A compile-only sm100 kernel would have served: say why it did not, and how to opt in.
  for (const KernelEntry& e : table())
    if (!sm100::entry_allowed(e.min_sm, sm100::env_value()) && sm >= e.min_sm &&
        sm <= e.max_sm && e.pass == pass && e.dtype == key.dtype &&
        e.head_dim == key.head_dim && (key.algo == FA_ALGO_AUTO || e.algo == key.algo) &&
        (!key.mask || e.masked) && (!key.cap || e.softcap))
      return core::unsupported(sm100::kRefusal);
  const char* pass_name = pass == Pass::Forward ? "forward" : pass == Pass::Backward ? "backward" : "KV-cache decode";
  return core::unsupported(std::string("no CUDA ") + pass_name +
                           " kernel for algo=" + core::algo_name(p.algo) + ", " +
                           core::dtype_name(p.dtype) + ", head_dim " + std::to_string(p.head_dim) +
                           (key.mask ? ", masked" : "") + (key.cap ? ", softcap" : "") + " on sm_" +
                           std::to_string(sm));
}

size_t workspace_of(const KernelEntry* e, const core::AttnParams& p) {
  return e->workspace ? e->workspace(p) : 0;
}

// A kernel may still decline a request its table key matched (e.g. TMA needs 16-byte aligned
// rows); it then returns "unsupported" before enqueuing anything, and under AUTO the next
// generation serves the call.
core::Status run(const core::AttnParams& p, Pass pass) {
  if (device_count() == 0) return {FA_ERROR_CUDA, "no CUDA device is available"};
  FA_RETURN_IF_ERROR(refuse_pending_error());
  DeviceGuard guard(p.device_id);
  Candidates cands;
  FA_RETURN_IF_ERROR(candidates(p, pass, device_sm(p.device_id), &cands));
  auto stream = static_cast<cudaStream_t>(p.stream);
  if (p.batch == 0) return core::Status::success();
  if (p.total_q == 0 && pass != Pass::Decode)  // no query (a decode call may still append): O and LSE are empty, every key's gradient is 0
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
  Candidates cands;
  FA_RETURN_IF_ERROR(candidates(p, pass, device_sm(p.device_id), &cands));
  size_t need = 0;
  for (const KernelEntry* e : cands) need = std::max(need, workspace_of(e, p));
  *bytes = need;
  return core::Status::success();
}

}  // namespace

// Launch failures are read back with cudaGetLastError(): an error this thread left pending
// before the call would be reported as ours and cleared. Refuse instead, naming it and leaving
// it in place for the code that caused it. cudaErrorNotReady (a stream/event query's "still
// running", which some runtimes record) is no error: it is cleared and the call proceeds.
core::Status refuse_pending_error() {
  cudaError_t pending = cudaPeekAtLastError();
  if (pending == cudaErrorNotReady) {
    (void)cudaGetLastError();
    pending = cudaPeekAtLastError();
  }
  if (pending != cudaSuccess)
    return {FA_ERROR_CUDA, std::string("a CUDA error was already pending on this thread before the call (") +
                               cudaGetErrorName(pending) + ": " + cudaGetErrorString(pending) +
                               "); nothing was launched. Clear it with cudaGetLastError() (if it is "
                               "sticky, the context must be reset)"};
  return core::Status::success();
}

core::Status check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda_error(e, what);
  return core::Status::success();
}

core::Status cuda_call_failed(cudaError_t e, const char* what) {
  (void)cudaGetLastError();  // the slot holds e, this failure's own record
  std::string msg = std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
  if (cudaPeekAtLastError() != cudaSuccess)
    msg += " (the CUDA context is in a sticky error state, possibly from earlier asynchronous work)";
  return {FA_ERROR_CUDA, msg};
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
  // Tests read this line: in an instance-filtered build, AUTO may lack a kernel a full build has.
  s += "kernels: " + std::to_string(table().size()) +
       (FA_INSTANCE_FILTERED ? " (instance-filtered build)" : "") + "\n";
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
// KV-cache decode: the table's Decode entries (one per dtype and head dim, masks and softcap at
// run time); the launcher appends k_new/v_new, then runs split-KV attention and its combine.
core::Status kvcache_workspace_size(const core::AttnParams& p, size_t* bytes) {
  return workspace_size(p, Pass::Decode, bytes);
}
core::Status kvcache_forward(const core::AttnParams& p) { return run(p, Pass::Decode); }
core::Status backward(const core::AttnParams& p) { return run(p, Pass::Backward); }

// The FP8 forward's kernel (F8E4M3 entries, keyed also by the output dtype). The quantised inputs
// have one layout (core/fp8.hpp), so there is no fallback generation: FA3 on sm90a or nothing.
// The least general instance that fits, as for the 16-bit forward.
core::Status fp8_attention(const core::AttnParams& p8) {
  if (device_count() == 0) return {FA_ERROR_CUDA, "no CUDA device is available"};
  FA_RETURN_IF_ERROR(refuse_pending_error());
  // The host path (src/cuda/fp8/) hands over only what the kernels implement; a caller that
  // does not gets a status, not a kernel reading the wrong layout.
  if (p8.dtype != core::DType::F8E4M3 || p8.varlen || p8.softcap > 0.f || p8.kvcache)
    return core::unsupported("the CUDA fp8 kernels take batch-form float8_e4m3 inputs without softcap");
  DeviceGuard guard(p8.device_id);
  const int sm = device_sm(p8.device_id);
  const bool mask = needs_mask(p8);
  const KernelEntry* best = nullptr;
  for (const KernelEntry& e : table()) {
    if (e.pass != Pass::Forward || e.dtype != core::DType::F8E4M3 ||
        e.out_dtype != p8.out_dtype || e.head_dim != p8.head_dim)
      continue;
    if (sm < e.min_sm || sm > e.max_sm || (mask && !e.masked)) continue;
    if (!best || int(e.masked) < int(best->masked)) best = &e;
  }
  if (!best)
    return core::unsupported(std::string("no CUDA fp8 forward kernel for head_dim ") +
                             std::to_string(p8.head_dim) + ", output " + core::dtype_name(p8.out_dtype) +
                             (mask ? ", masked" : "") + " on sm_" + std::to_string(sm) +
                             " (the fp8 kernels are sm90a only; not built, or filtered out of this build)");
  if (p8.batch == 0 || p8.seqlen_q == 0) return core::Status::success();
  return best->launch(p8, static_cast<cudaStream_t>(p8.stream), nullptr);
}

}  // namespace fa::cuda
