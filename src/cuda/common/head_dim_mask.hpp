// Build switches that apply per head dim (FA_SM80_FWD_*, FA_SM80_BWD_*, FA_SM90_FWD_* masks) take
// a set of head dims as one integer, so one -D value names any subset and the A/B scripts can pass
// it through CMake unchanged.
#pragma once

namespace fa::cuda {

// Bit of a head dim in those masks: d32 1, d64 2, d96 4, d128 8, d192 16, d256 32 (63: all).
constexpr int head_dim_bit(int d) {
  return d == 32 ? 1 : d == 64 ? 2 : d == 96 ? 4 : d == 128 ? 8 : d == 192 ? 16 : d == 256 ? 32 : 0;
}

}  // namespace fa::cuda
