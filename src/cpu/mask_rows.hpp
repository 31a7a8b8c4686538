// Row and column views of core::Mask for masking partial tiles: under a causal/local window the
// keys one query sees, and the queries one key is seen by, are each one contiguous interval, so
// a partial tile is masked with two short fills per row instead of a test per element. These are
// derived from Mask's definition (j in [diag(i) - left, diag(i) + right], 0 <= j < k_len) and
// tests/cpu checks them against Mask::allowed element by element.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/mask.hpp"

namespace fa::cpu {

// Keys of [j0, j0 + n) that query row i sees, as offsets [*lo, *hi) from j0 (empty: lo == hi).
inline void visible_keys(const core::Mask& mask, int64_t i, int64_t j0, int64_t n, int64_t* lo,
                         int64_t* hi) {
  int64_t a = mask.left >= 0 ? mask.diag(i) - mask.left : 0;
  int64_t b = mask.right >= 0 ? mask.diag(i) + mask.right + 1 : mask.k_len;
  a = std::max<int64_t>(a, 0);
  b = std::min<int64_t>(b, mask.k_len);
  *lo = std::clamp<int64_t>(a - j0, 0, n);
  *hi = std::max(*lo, std::clamp<int64_t>(b - j0, 0, n));
}

// Queries of [i0, i0 + m) that see key j, as offsets [*lo, *hi) from i0.
inline void visible_queries(const core::Mask& mask, int64_t j, int64_t i0, int64_t m, int64_t* lo,
                            int64_t* hi) {
  if (j < 0 || j >= mask.k_len) {
    *lo = *hi = 0;
    return;
  }
  const int64_t off = mask.k_len - mask.q_len;  // diag(i) = i + off
  // j <= diag(i) + right  <=>  i >= j - right - off ;  j >= diag(i) - left  <=>  i <= j + left - off
  const int64_t a = mask.right >= 0 ? j - mask.right - off : i0;
  const int64_t b = mask.left >= 0 ? j + mask.left - off + 1 : i0 + m;
  *lo = std::clamp<int64_t>(a - i0, 0, m);
  *hi = std::max(*lo, std::clamp<int64_t>(b - i0, 0, m));
}

}  // namespace fa::cpu
