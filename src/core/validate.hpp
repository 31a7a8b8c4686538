// Argument validation: the only place that reads the C ABI's tensor descriptors. It checks every
// argument once and produces AttnParams; device code and backends assume its output is valid.
#pragma once

#include <flashattn/flashattn.h>

#include "core/params.hpp"
#include "core/status.hpp"

namespace fa::core {

// A caller's fa_options::workspace must be aligned to this (flashattn.h states it).
constexpr unsigned kWorkspaceAlignment = 16;

// The tensors of one call; backward-only members are null in the forward.
struct CallArgs {
  const fa_tensor* q = nullptr;
  const fa_tensor* k = nullptr;
  const fa_tensor* v = nullptr;
  const fa_varlen* varlen = nullptr;  // null: batch form
  const fa_tensor* out = nullptr;
  const fa_tensor* lse = nullptr;
  const fa_tensor* dout = nullptr;
  const fa_tensor* dq = nullptr;
  const fa_tensor* dk = nullptr;
  const fa_tensor* dv = nullptr;
  const fa_options* opt = nullptr;  // null: defaults
  // fa_kvcache_forward: the cache description; k/v/varlen are then unused (the cache replaces them).
  const fa_kvcache* kvcache = nullptr;
  bool backward = false;
  // Workspace queries validate q/k/v and options only; outputs may be absent.
  bool shapes_only = false;
};

// Validates and fills *p. On failure *p is unspecified and nothing was written anywhere.
Status make_params(const CallArgs& args, AttnParams* p);

// fa_fp8_forward / fa_fp8_workspace_size (batch form): make_params' checks plus the FP8 path's
// own (fp16/bf16 inputs, head dim 64/128/256, no softcap, the fa_fp8 options). p describes the
// 16-bit call; the backends derive the quantised view from it (core/fp8.hpp).
Status make_fp8_params(const CallArgs& args, const fa_fp8* f, AttnParams* p);

// The backend a validated call runs on (FA_BACKEND_CPU or FA_BACKEND_CUDA).
fa_backend resolve_backend(const AttnParams& p);

}  // namespace fa::core
