// A device attribute, queried once per (attribute, device) and cached for the process: the launch
// paths ask on every call, and cudaDeviceGetAttribute is a driver round trip.
#pragma once

#include <cuda_runtime.h>

#include <atomic>

namespace fa::cuda {

// Returns 0 when the query fails (its error is cleared: it is not an error of the launch that
// follows) or gives 0. Lock-free on the hit path; two threads missing at once both query and store
// the same value. Devices past the cache's size are queried every time.
template <cudaDeviceAttr kAttr>
inline int device_attr(int device) {
  static std::atomic<int> cache[64];  // 0: not yet queried
  const bool cacheable = device >= 0 && device < 64;
  if (cacheable) {
    const int v = cache[device].load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int v = 0;
  if (cudaDeviceGetAttribute(&v, kAttr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (cacheable && v > 0) cache[device].store(v, std::memory_order_relaxed);
  return v > 0 ? v : 0;
}

}  // namespace fa::cuda
