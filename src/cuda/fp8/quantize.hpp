// The CUDA quantiser of the FP8 forward: fp16/bf16 Q, K, V -> the e4m3 copies and scales of
// core/fp8.hpp, bit-identical to the CPU quantiser (src/cpu/fp8.hpp states the arithmetic).
#pragma once

#include <cuda_runtime.h>
#include <flashattn/flashattn.h>

#include <cstdint>

#include "core/fp8.hpp"
#include "core/params.hpp"
#include "core/status.hpp"

namespace fa::cuda::fp8 {

// The workspace: core::fp8::layout's regions, then the quantiser's own scratch, the per-block
// amax that a per-head (or V's per-sequence) scale is reduced from. Offsets in bytes, 16-aligned.
struct Workspace {
  core::fp8::Layout l;
  int64_t q_amax = 0, k_amax = 0, v_amax = 0, bytes = 0;
};
Workspace workspace(const core::AttnParams& p);

// Quantises what `q` / `kv` ask for into ws (device memory of workspace(p).bytes) on `stream`.
// p: a validated fa_fp8_forward call (CUDA tensors, fp16/bf16, head dim 64/128/256).
core::Status quantize(const core::AttnParams& p, const fa_fp8& f, bool q, bool kv, uint8_t* ws,
                      cudaStream_t stream);

}  // namespace fa::cuda::fp8
