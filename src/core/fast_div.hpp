// Division of a non-negative 32-bit integer by a divisor fixed on the host: one multiply-high and
// a shift instead of the ~20-instruction integer division sequence (Granlund and Montgomery's
// round-up method, the form CUTLASS's FastDivmod uses). Exact for dividends in [0, 2^31).
// Why: the persistent FA3 forward maps (CTA, round) to its tile with three or four divisions by
// runtime values in every role of the CTA; at short sequences a tile is a few key blocks and that
// arithmetic showed as ~4% (d128 N512) to ~9% (d64 causal N512) of the kernel's stall samples
// (H200, ncu source counters, session 10).
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace fa::core {

struct FastDiv {
  int32_t d = 1;
  uint32_t mul = 0;  // ceil(2^(31 + ceil(log2 d)) / d) < 2^32; unused for d == 1
  uint32_t shr = 0;  // ceil(log2 d) - 1

  FastDiv() = default;
  // divisor >= 1 (host side; values below 1 are treated as 1).
  explicit FastDiv(int32_t divisor) : d(divisor < 1 ? 1 : divisor) {
    if (d > 1) {
      uint32_t l = 0;
      while ((int64_t(1) << l) < d) ++l;
      const uint32_t p = 31 + l;
      mul = uint32_t(((uint64_t(1) << p) + uint64_t(d) - 1) / uint64_t(d));
      shr = p - 32;
    }
  }

  // n / d for 0 <= n < 2^31.
  FA_HD int32_t div(int32_t n) const {
    if (d == 1) return n;
#if defined(__CUDA_ARCH__)
    return int32_t(__umulhi(uint32_t(n), mul) >> shr);
#else
    return int32_t(((uint64_t(uint32_t(n)) * mul) >> 32) >> shr);
#endif
  }
  // n / d and n % d.
  FA_HD int32_t divmod(int32_t n, int32_t& rem) const {
    const int32_t q = div(n);
    rem = n - q * d;
    return q;
  }
};

}  // namespace fa::core
