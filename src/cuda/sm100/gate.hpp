// The opt-in for the sm100a (Blackwell) kernels, which are COMPILE-ONLY: built and checked for
// spills and SASS, never run on hardware (the project has no Blackwell GPU). The dispatcher skips
// table entries with min_sm >= kMinSm unless FA_SM100_UNVERIFIED=1, so a Blackwell user gets an
// explicit refusal (kRefusal) instead of silently unverified results. Host-only, no CUDA: the
// decision (entry_allowed) is a pure function so it can be tested on a CPU.
#pragma once

#include <cstdlib>
#include <cstring>

namespace fa::cuda::sm100 {

constexpr int kMinSm = 100;  // entries at or above this compute capability are the gated ones
constexpr const char* kEnvVar = "FA_SM100_UNVERIFIED";
constexpr const char* kRefusal =
    "unsupported: the sm_100a kernels are compile-only (never run on hardware); set "
    "FA_SM100_UNVERIFIED=1 to try them";

// May an entry built for entry_min_sm be picked, given the variable's value (null: unset)?
// Exactly "1" opts in: "0", "", "true" or a typo leave the gate closed.
inline bool entry_allowed(int entry_min_sm, const char* env_value) {
  if (entry_min_sm < kMinSm) return true;
  return env_value != nullptr && std::strcmp(env_value, "1") == 0;
}

// The environment, read once per process (the dispatcher memoises its answers per thread, so a
// later change could not take effect consistently anyway).
inline const char* env_value() {
  static const char* const v = std::getenv(kEnvVar);
  return v;
}

}  // namespace fa::cuda::sm100
