// Per-(kernel, device) memo of cudaFuncSetAttribute(MaxDynamicSharedMemorySize).
//
// Why: the launchers raise a kernel's dynamic shared-memory limit before every launch, and the
// attribute call costs about a microsecond of host time (a driver lock and a lookup), which is a
// visible share of a small call's whole host overhead. The attribute belongs to the function in
// one device's context and stays set until that context is destroyed, so one successful call per
// (kernel, device, size) is enough.
//
// The attribute is an upper limit: a launch may use less dynamic shared memory than the limit in
// force. So the memo keeps, per (kernel, device), the largest limit set so far, a request at or
// under it is a hit, and a miss only ever raises the limit (monotone: the value in force is
// always the value recorded).
//
// Thread safety: the hit path is a lock-free probe of a fixed open-addressing table (acquire
// loads of slots published with release stores). A miss takes a mutex and, under it, re-checks,
// calls the runtime and records, so two threads cannot interleave a lower and a higher setting.
// A full table (more than kSlots kernel/device pairs in one process) degrades to calling the
// runtime each time, never to a wrong answer.
//
// Limit: a cudaDeviceReset() destroys the context and with it the attribute; the memo cannot see
// that. Nothing in the library resets devices; a host program that does must not rely on this.
// FA_NO_LAUNCH_CACHE=1 (read once) restores the uncached call for A/B measurements.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace fa::cuda {
namespace launch_cache_detail {

struct Slot {
  // Written once (func, device) under the mutex and published through `ready`; `max_bytes` only
  // grows afterwards, also under the mutex.
  std::atomic<const void*> func{nullptr};
  std::atomic<int> device{-1};
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
  static const bool off = [] {
    const char* v = std::getenv("FA_NO_LAUNCH_CACHE");
    return v && *v && *v != '0';
  }();
  return off;
}

inline unsigned slot_of(const void* func, int device) {
  // Kernel addresses are aligned: drop the low bits before mixing.
  uint64_t h = (reinterpret_cast<uintptr_t>(func) >> 4) * 0x9E3779B97F4A7C15ull;
  h ^= uint64_t(unsigned(device)) * 0xC2B2AE3D27D4EB4Full;
  return unsigned(h >> 40) & (kSlots - 1);
}

// The slot of (func, device), or the empty slot that ends its probe chain (slots are never
// freed, so an empty slot proves absence), or null when the table is full.
inline Slot* find(const void* func, int device) {
  Slot* t = slots();
  unsigned i = slot_of(func, device);
  for (int n = 0; n < kSlots; ++n, i = (i + 1) & (kSlots - 1)) {
    if (!t[i].ready.load(std::memory_order_acquire)) return &t[i];
    if (t[i].func.load(std::memory_order_relaxed) == func &&
        t[i].device.load(std::memory_order_relaxed) == device)
      return &t[i];
  }
  return nullptr;
}

inline bool covered(const Slot* s, int bytes) {
  return s && s->ready.load(std::memory_order_acquire) &&
         s->max_bytes.load(std::memory_order_acquire) >= bytes;
}

}  // namespace launch_cache_detail

// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) on the
// current device, skipped when this (kernel, device, bytes) was set before. `device` must be the
// current device (the dispatcher makes AttnParams::device_id current around every launch).
template <class Kernel>
cudaError_t set_max_dynamic_smem(Kernel* kernel, int bytes, int device) {
  namespace d = launch_cache_detail;
  if (d::disabled())
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  const void* f = reinterpret_cast<const void*>(kernel);
  if (d::covered(d::find(f, device), bytes)) return cudaSuccess;
  std::lock_guard<std::mutex> lock(d::miss_mutex());
  d::Slot* s = d::find(f, device);
  if (d::covered(s, bytes)) return cudaSuccess;  // another thread raised it meanwhile
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess || !s) return e;  // failure, or a full table: nothing recorded
  if (!s->ready.load(std::memory_order_relaxed)) {
    s->func.store(f, std::memory_order_relaxed);
    s->device.store(device, std::memory_order_relaxed);
    s->max_bytes.store(bytes, std::memory_order_relaxed);
    s->ready.store(true, std::memory_order_release);
  } else {
    s->max_bytes.store(bytes, std::memory_order_release);  // covered() failed: bytes is larger
  }
  return e;
}

}  // namespace fa::cuda
