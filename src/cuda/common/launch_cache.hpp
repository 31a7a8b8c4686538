// Per-(kernel, CUDA context) memo of cudaFuncSetAttribute(MaxDynamicSharedMemorySize).
//
// Why: the launchers raise a kernel's dynamic shared-memory limit before every launch, and the
// attribute call costs about half a microsecond of host time (a driver lock and a lookup), a
// visible share of a small call's whole host overhead. The attribute belongs to the function in
// one context and stays set until that context is destroyed, so one successful call per
// (kernel, context, size) is enough.
//
// The key is the current context's unique id (cuCtxGetId), not the device ordinal: a
// cudaDeviceReset(), or a host program that creates and destroys its own driver contexts, gives
// the same device a new context in which the attribute is unset again. Context ids are never
// reused within a process (unlike CUcontext handles, whose addresses can come back), so a new
// context is a miss and gets the attribute. The id lookup is one driver call that reads the
// thread's current context, expected far cheaper than the attribute call it saves (not yet
// measured on its own; the fwd/bwd overhead benchmark with FA_NO_LAUNCH_CACHE=1 is the A/B).
// No current context, or a driver that cannot say: the runtime call is made, uncached.
//
// The attribute is an upper limit: a launch may use less dynamic shared memory than the limit in
// force. So the memo keeps, per (kernel, context), the largest limit set so far, a request at or
// under it is a hit, and a miss only ever raises the limit (monotone: the value in force is
// always the value recorded).
//
// Thread safety: the hit path is a lock-free probe of a fixed open-addressing table (acquire
// loads of slots published with release stores). A miss takes a mutex and, under it, re-checks,
// calls the runtime and records, so two threads cannot interleave a lower and a higher setting.
// A full table (more than kSlots kernel/context pairs in one process: slots of destroyed contexts
// are never reclaimed) degrades to calling the runtime each time, never to a wrong answer.
// FA_NO_LAUNCH_CACHE=1 (read once) restores the uncached call for A/B measurements.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "cuda/common/env.hpp"

namespace fa::cuda {
namespace launch_cache_detail {

struct Slot {
  // Written once (func, ctx) under the mutex and published through `ready`; `max_bytes` only
  // grows afterwards, also under the mutex.
  std::atomic<const void*> func{nullptr};
  std::atomic<unsigned long long> ctx{0};
  std::atomic<int> max_bytes{0};
  std::atomic<bool> ready{false};
};

constexpr int kSlots = 1024;  // power of two; a process uses tens of kernels, not thousands

inline Slot* slots() {
  static Slot table[kSlots];
  return table;
}

inline std::mutex& miss_mutex() {
  static std::mutex mu;
  return mu;
}

inline bool disabled() {
  static const bool off = env_flag("FA_NO_LAUNCH_CACHE");
  return off;
}

// cuCtxGetId through the runtime's driver entry point, resolved once. A direct call would make
// every binary that links the library need libcuda.so.1 at load time, and so fail to start on a
// machine without the driver (the CPU backend must run there). nullptr: the driver lacks it.
using CtxGetIdFn = CUresult (*)(CUcontext, unsigned long long*);
inline CtxGetIdFn ctx_get_id_fn() {
  static const CtxGetIdFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetId", &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // a failed lookup must not be left pending for the caller
      return CtxGetIdFn(nullptr);
    }
    return reinterpret_cast<CtxGetIdFn>(p);
  }();
  return fn;
}

// The unique id of the calling thread's current context; false when there is none (the runtime
// will bind or create one in the call that follows) or the driver cannot tell.
inline bool current_context_id(unsigned long long* id) {
  const CtxGetIdFn fn = ctx_get_id_fn();
  return fn && fn(nullptr, id) == CUDA_SUCCESS;
}

inline unsigned slot_of(const void* func, unsigned long long ctx) {
  // Kernel addresses are aligned: drop the low bits before mixing.
  uint64_t h = (reinterpret_cast<uintptr_t>(func) >> 4) * 0x9E3779B97F4A7C15ull;
  h ^= uint64_t(ctx) * 0xC2B2AE3D27D4EB4Full;
  return unsigned(h >> 40) & (kSlots - 1);
}

// The slot of (func, ctx), or the empty slot that ends its probe chain (slots are never freed,
// so an empty slot proves absence), or null when the table is full.
inline Slot* find(const void* func, unsigned long long ctx) {
  Slot* t = slots();
  unsigned i = slot_of(func, ctx);
  for (int n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    if (!t[i].ready.load(std::memory_order_acquire)) return &t[i];
    if (t[i].func.load(std::memory_order_relaxed) == func &&
        t[i].ctx.load(std::memory_order_relaxed) == ctx)
      return &t[i];
  }
  return nullptr;
}

inline bool covered(const Slot* s, int bytes) {
  return s && s->ready.load(std::memory_order_acquire) &&
         s->max_bytes.load(std::memory_order_acquire) >= bytes;
}

}  // namespace launch_cache_detail

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) in the
// current context, skipped when this (kernel, context, bytes) was set before. `device` must be
// the current device (the dispatcher makes AttnParams::device_id current around every launch);
// the context, not the device, keys the memo.
template <class Kernel>
cudaError_t set_max_dynamic_smem(Kernel* kernel, int bytes, int /*device*/) {
  namespace d = launch_cache_detail;
  unsigned long long ctx = 0;
  if (d::disabled() || !d::current_context_id(&ctx))
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  const void* f = reinterpret_cast<const void*>(kernel);
  if (d::covered(d::find(f, ctx), bytes)) return cudaSuccess;
  std::lock_guard<std::mutex> lock(d::miss_mutex());
  d::Slot* s = d::find(f, ctx);
  if (d::covered(s, bytes)) return cudaSuccess;  // another thread raised it meanwhile
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess || !s) return e;  // failure, or a full table: nothing recorded
  if (!s->ready.load(std::memory_order_relaxed)) {
    s->func.store(f, std::memory_order_relaxed);
    s->ctx.store(ctx, std::memory_order_relaxed);
    s->max_bytes.store(bytes, std::memory_order_relaxed);
    s->ready.store(true, std::memory_order_release);
  } else {
    s->max_bytes.store(bytes, std::memory_order_release);  // covered() failed: bytes is larger
  }
  return e;
}

}  // namespace fa::cuda
