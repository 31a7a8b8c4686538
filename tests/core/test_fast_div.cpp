// core::FastDiv against the hardware division: every divisor up to 4096 and selected large ones,
// with dividends at the edges of [0, 2^31) and a pseudo-random sample.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/fast_div.hpp"

namespace {

using fa::core::FastDiv;

std::vector<int32_t> dividends(int32_t d) {
  std::vector<int32_t> v = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, INT32_MAX, INT32_MAX - 1, INT32_MAX - d};
  uint64_t x = 0x9e3779b97f4a7c15ull ^ uint64_t(d);
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v.push_back(int32_t((x >> 33) & 0x7fffffff));
  }
  for (int32_t k : {1, 7, 1000, 65535, 1 << 20}) {
    const int64_t m = int64_t(d) * k;  // exact multiples and their neighbours
    for (int64_t n : {m - 1, m, m + 1})
      if (n >= 0 && n <= INT32_MAX) v.push_back(int32_t(n));
  }
  return v;
}

void check(int32_t d) {
  const FastDiv f(d);
  for (int32_t n : dividends(d)) {
    if (n < 0) continue;
    int32_t r = -1;
    const int32_t q = f.divmod(n, r);
    ASSERT_EQ(q, n / d) << "n=" << n << " d=" << d;
    ASSERT_EQ(r, n % d) << "n=" << n << " d=" << d;
    ASSERT_EQ(f.div(n), n / d) << "n=" << n << " d=" << d;
  }
}

TEST(FastDiv, SmallDivisors) {
  for (int32_t d = 1; d <= 4096; ++d) check(d);
}

TEST(FastDiv, LargeDivisors) {
  for (int32_t d : {4097, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1, 123456789, (1 << 30) - 1, 1 << 30,
                    (1 << 30) + 1, INT32_MAX - 1, INT32_MAX})
    check(d);
}

TEST(FastDiv, NonPositiveDivisorIsOne) {
  EXPECT_EQ(FastDiv(0).div(17), 17);
  EXPECT_EQ(FastDiv(-3).div(17), 17);
}

}  // namespace
