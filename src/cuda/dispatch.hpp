// The kernel table's entry type. Every kernel instance (src/cuda/instances/, one per file) is a
// function with the Launch signature; the generated registry.inc lists them with the key that
// dispatch.cu matches requests against.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/common/launch_cache.hpp"  // set_max_dynamic_smem, used by every launcher

namespace fa::cuda {

enum class Pass { Forward, Backward, Decode };  // Decode: fa_kvcache_forward (src/cuda/decode/)

// ws: device scratch of at least Workspace(p) bytes (null when that is 0).
using Launch = core::Status (*)(const core::AttnParams& p, cudaStream_t stream, void* ws);
using Workspace = size_t (*)(const core::AttnParams& p);

struct KernelEntry {
  const char* name;
  fa_algo algo;
  Pass pass;
  int min_sm;      // compute capability x10 the instance needs (80, 90)
  int max_sm;      // and the highest it is built to run on (sm90a code runs only on 90)
  core::DType dtype;
  core::DType out_dtype;  // O's element type: dtype, except for F8E4M3 inputs (BF16 or F16 out)
  int head_dim;    // exact head dim the instance is compiled for
  bool masked;     // handles causal / sliding-window masks (false: no-mask fast path only)
  bool softcap;    // handles softcap (false: softcap must be 0)
  Launch launch;
  Workspace workspace;  // null: needs none
};

// Zeroes dK/dV rows no query reaches (all rows when the call has no queries; in varlen, keys past
// seqused_k). The dispatcher runs it around every backward, whatever the generation.
core::Status zero_unreached_kv_grads(const core::AttnParams& p, cudaStream_t stream, bool all_rows);

// Makes dev current for the call and restores the caller's afterwards.
// One cudaGetDevice per call: nothing between construction and destruction changes the current
// device except this guard, so the common case (already current) costs no set and no re-query.
struct DeviceGuard {
  int prev = -1;
  bool switched = false;
  explicit DeviceGuard(int dev) {
    cudaGetDevice(&prev);
    if (prev != dev) switched = cudaSetDevice(dev) == cudaSuccess;
  }
  ~DeviceGuard() {
    if (switched && prev >= 0) cudaSetDevice(prev);
  }
};

// Refuses a call while this thread has a CUDA error pending (launch failures are read back with
// cudaGetLastError(), so one left by someone else would be reported as ours); clears a
// cudaErrorNotReady (not an error). Every host entry point calls it before launching.
core::Status refuse_pending_error();

// Converts the last CUDA error into a Status; kernels' launchers end with this. Errors pending
// before the call never reach it: run() refuses to start while one is pending.
core::Status check_launch(const char* what);

// A runtime call of a launcher (e.g. set_max_dynamic_smem) returned e != cudaSuccess: the status
// names that call and that error, never whatever cudaGetLastError() would hold. The last-error
// slot this failure set is cleared so it cannot surface later as someone else's error (a sticky
// error stays: the context is unusable, and the message says so).
core::Status cuda_call_failed(cudaError_t e, const char* what);

}  // namespace fa::cuda
