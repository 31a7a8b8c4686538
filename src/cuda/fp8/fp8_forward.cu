// fa_fp8_forward on CUDA: the workspace (the caller's, or allocated stream-ordered per call as the
// 16-bit paths do), the quantiser (quantize.cu; reuse_quantized skips parts of it), then the
// dispatch table's sm90a fp8 kernel (fa::cuda::fp8_attention) on the kernel's view of the call.
#include <cuda_runtime.h>

#include <string>

#include "core/backend.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/fp8/quantize.hpp"

namespace fa::cuda {
namespace {

// p8: what the kernel sees (core/params.hpp): the quantised copies in ws, contiguous, Vᵀ's
// strides, the scales; the caller's o/lse in q's dtype.
core::AttnParams kernel_view(const core::AttnParams& p, const fp8::Workspace& w, uint8_t* ws) {
  core::AttnParams p8 = p;
  const int64_t d = p.head_dim, hq = p.heads_q, hk = p.heads_kv;
  p8.dtype = core::DType::F8E4M3;
  p8.out_dtype = p.dtype;
  p8.q = ws + w.l.q8;
  p8.k = ws + w.l.k8;
  p8.v = ws + w.l.vt8;
  p8.q_str = {p.seqlen_q * hq * d, hq * d, d};
  p8.k_str = {p.seqlen_k * hk * d, hk * d, d};
  p8.v_str.batch = hk * d * w.l.vt_keys;
  p8.v_str.head = d * w.l.vt_keys;
  p8.v_str.row = w.l.vt_keys;  // between two head-dim rows of Vᵀ
  p8.q_scale = reinterpret_cast<const float*>(ws + w.l.q_scale);
  p8.k_scale = reinterpret_cast<const float*>(ws + w.l.k_scale);
  p8.v_scale = reinterpret_cast<const float*>(ws + w.l.v_scale);
  p8.q_blocks = w.l.q_blocks;
  p8.k_blocks = w.l.k_blocks;
  p8.vt_keys = w.l.vt_keys;
  p8.workspace = nullptr;  // the workspace now holds the inputs
  p8.workspace_bytes = 0;
  return p8;
}

}  // namespace

core::Status fp8_workspace_size(const core::AttnParams& p, const fa_fp8&, size_t* bytes) {
  *bytes = size_t(fp8::workspace(p).bytes);
  return core::Status::success();
}

core::Status fp8_forward(const core::AttnParams& p, const fa_fp8& f) {
  if (device_count() == 0) return {FA_ERROR_CUDA, "no CUDA device is available"};
  FA_RETURN_IF_ERROR(refuse_pending_error());
  DeviceGuard guard(p.device_id);
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, p.device_id);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, p.device_id);
  if (major != 9 || minor != 0)
    return core::unsupported("fp8 attention needs an sm90a GPU (Hopper); device " +
                             std::to_string(p.device_id) + " is sm_" + std::to_string(major) +
                             std::to_string(minor));

  const fp8::Workspace w = fp8::workspace(p);
  const size_t need = size_t(w.bytes);
  auto stream = static_cast<cudaStream_t>(p.stream);
  auto* ws = static_cast<uint8_t*>(p.workspace);
  bool owned = false;
  if (ws && p.workspace_bytes < need)
    return core::invalid("workspace of " + std::to_string(p.workspace_bytes) +
                         " bytes is too small: this call needs " + std::to_string(need) +
                         " (fa_fp8_workspace_size)");
  if (!ws && need > 0) {
    void* mem = nullptr;
    const cudaError_t err = cudaMallocAsync(&mem, need, stream);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return {FA_ERROR_OUT_OF_MEMORY, "could not allocate " + std::to_string(need) +
                                          " bytes of fp8 workspace: " + cudaGetErrorString(err)};
    }
    ws = static_cast<uint8_t*>(mem);
    owned = true;
  }
  core::Status st = fp8::quantize(p, f, f.reuse_quantized != 1, f.reuse_quantized == 0, ws, stream);
  if (st.ok() && p.batch > 0 && p.seqlen_q > 0) st = fp8_attention(kernel_view(p, w, ws));
  if (owned) cudaFreeAsync(ws, stream);
  return st;
}

}  // namespace fa::cuda
