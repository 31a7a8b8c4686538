// Unit tests of the CPU backend's building blocks: fp16/bf16 conversion (library bit version vs
// the tests' arithmetic version, over every 16-bit pattern, every rounding midpoint and a sweep of
// fp32 patterns), the tile product micro-kernel (vs a double-precision loop) and the vector exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/softmax.hpp"
#include "common/test_util.hpp"
#include "cpu/convert.hpp"
#include "cpu/kernels.hpp"
#include "cpu/mask_rows.hpp"

namespace fa {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Convert, F16DecodeEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = cpu::f16_to_f32(uint16_t(h));
    const double want = test::from_f16_bits(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(ours)) << h;
      continue;
    }
    ASSERT_EQ(double(ours), want) << "pattern " << h;
    // Every finite/inf half survives the round trip bit for bit (signed zeros included).
    ASSERT_EQ(cpu::f32_to_f16(ours), uint16_t(h)) << "pattern " << h;
  }
}

TEST(Convert, BF16DecodeEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = cpu::bf16_to_f32(uint16_t(h));
    const double want = test::from_bf16_bits(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(ours)) << h;
      EXPECT_TRUE(std::isnan(cpu::bf16_to_f32(cpu::f32_to_bf16(ours))));
      continue;
    }
    ASSERT_EQ(double(ours), want) << "pattern " << h;
    ASSERT_EQ(cpu::f32_to_bf16(ours), uint16_t(h)) << "pattern " << h;
  }
}

// Midpoints between neighbouring values are the ties: they must go to the even neighbour.
TEST(Convert, TiesToEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const double mid = 0.5 * (test::from_f16_bits(uint16_t(h)) + test::from_f16_bits(uint16_t(h + 1)));
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    ASSERT_EQ(cpu::f32_to_f16(float(mid)), even) << h;
    ASSERT_EQ(test::to_f16_bits(mid), even) << h;
  }
  for (uint32_t h = 0; h < 0x7f7f; ++h) {
    const double mid = 0.5 * (test::from_bf16_bits(uint16_t(h)) + test::from_bf16_bits(uint16_t(h + 1)));
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    ASSERT_EQ(cpu::f32_to_bf16(float(mid)), even) << h;
  }
  EXPECT_EQ(cpu::f32_to_f16(65519.f), 0x7bff);  // just below the overflow midpoint
  EXPECT_EQ(cpu::f32_to_f16(65520.f), 0x7c00);  // the midpoint to 65536 rounds to inf
  EXPECT_EQ(cpu::f32_to_f16(-1e-8f), 0x8000);   // signed zero
}

TEST(Convert, SweepOfFloatPatterns) {
  // ~1M fp32 patterns spread over the whole range (a prime stride), both signs.
  int64_t checked = 0;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
    float f;
    const uint32_t u32 = uint32_t(u);
    std::memcpy(&f, &u32, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(cpu::f32_to_f16(f), test::to_f16_bits(f)) << "bits " << bits_of(f);
    ASSERT_EQ(cpu::f32_to_bf16(f), test::to_bf16_bits(f)) << "bits " << bits_of(f);
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

void naive_gemm(int M, int N, int K, const std::vector<float>& A, int lda, const std::vector<float>& B,
                int ldb, std::vector<double>& C, int ldc) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = C[size_t(m * ldc + n)];
      for (int k = 0; k < K; ++k) acc += double(A[size_t(m * lda + k)]) * B[size_t(k * ldb + n)];
      C[size_t(m * ldc + n)] = acc;
    }
}

TEST(Kernels, TileProductMatchesDouble) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " isa " + cpu::gemm_tile_isa());
  int iter = 0;
  for (int M : {1, 5, 6, 7, 13, 64})
    for (int N : {16, 48, 64, 80, 144})
      for (int K : {1, 7, 64, 256})
        for (bool acc : {false, true}) {
          const int lda = K + 3, ldb = N + 16, ldc = N + 32;  // leading dims larger than the shape
          std::vector<float> A(size_t(M * lda)), B(size_t(K * ldb)), C(size_t(M * ldc));
          test::fill_random(A, test::Dist::Normal, seed + 3 * iter);
          test::fill_random(B, test::Dist::Normal, seed + 3 * iter + 1);
          test::fill_random(C, test::Dist::Normal, seed + 3 * iter + 2);
          ++iter;
          std::vector<double> want(size_t(M * ldc));
          for (size_t i = 0; i < want.size(); ++i) want[i] = acc ? C[i] : 0.0;
          naive_gemm(M, N, K, A, lda, B, ldb, want, ldc);
          std::vector<float> fast = C, portable = C;
          cpu::gemm_tile(M, N, K, A.data(), lda, B.data(), ldb, fast.data(), ldc, acc);
          cpu::gemm_tile_portable(M, N, K, A.data(), lda, B.data(), ldb, portable.data(), ldc, acc);
          for (int m = 0; m < M; ++m) {
            for (int n = 0; n < N; ++n) {
              const size_t i = size_t(m * ldc + n);
              const double tol = 1e-5 * std::sqrt(double(K) + 1) * 4;
              ASSERT_NEAR(fast[i], want[i], tol) << M << "x" << N << "x" << K << " at " << m << "," << n;
              ASSERT_NEAR(portable[i], want[i], tol) << M << "x" << N << "x" << K;
            }
            // Beyond N the row of C is untouched.
            for (int n = N; n < ldc; ++n) ASSERT_EQ(bits_of(fast[size_t(m * ldc + n)]), bits_of(C[size_t(m * ldc + n)]));
          }
        }
}

TEST(Kernels, TransposedTileProductMatchesDouble) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  int iter = 0;
  for (int M : {1, 6, 11, 64})
    for (int N : {16, 64, 96})
      for (int K : {1, 9, 64}) {
        const int lda = M + 5, ldb = N + 16, ldc = N;  // At is K x M
        std::vector<float> At(size_t(K * lda)), B(size_t(K * ldb)), C(size_t(M * ldc));
        test::fill_random(At, test::Dist::Normal, seed + 3 * iter);
        test::fill_random(B, test::Dist::Normal, seed + 3 * iter + 1);
        test::fill_random(C, test::Dist::Normal, seed + 3 * iter + 2);
        ++iter;
        std::vector<float> A(size_t(M * K));  // explicit transpose for the double check
        for (int m = 0; m < M; ++m)
          for (int k = 0; k < K; ++k) A[size_t(m * K + k)] = At[size_t(k * lda + m)];
        std::vector<double> want(C.begin(), C.end());
        naive_gemm(M, N, K, A, K, B, ldb, want, ldc);
        std::vector<float> fast = C, portable = C;
        cpu::gemm_tile_at(M, N, K, At.data(), lda, B.data(), ldb, fast.data(), ldc, true);
        cpu::gemm_tile_at_portable(M, N, K, At.data(), lda, B.data(), ldb, portable.data(), ldc, true);
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(fast[i], want[i], 1e-4) << M << "x" << N << "x" << K;
          ASSERT_NEAR(portable[i], want[i], 1e-4) << M << "x" << N << "x" << K;
        }
      }
}

// The vectorised online-softmax step against RowState's scalar recurrence, including columns that
// are fully masked in the first block and become visible in the second.
TEST(Kernels, SoftmaxColumnsFollowRowState) {
  const int nk = 37, ncols = 32, ld = 48;
  std::vector<float> st(size_t(nk * ld));
  std::vector<float> m(ncols, -INFINITY), l(ncols, 0.f), f(ncols), mp = m, lp = l, fp(ncols);
  std::vector<core::RowState> rs(ncols);
  const float scale = 0.3f;
  for (int step = 0; step < 2; ++step) {
    test::fill_random(st, test::Dist::HeavyTail, test::fresh_seed() + step);
    for (int c = 0; c < ncols; c += 3)
      for (int j = 0; j < nk; ++j)
        if (step == 0 || j % 2) st[size_t(j * ld + c)] = -INFINITY;
    std::vector<float> sp = st;
    std::vector<double> want_sum(ncols, 0.0);
    std::vector<float> factor_want(ncols);
    for (int c = 0; c < ncols; ++c) {
      float bm = -INFINITY;
      for (int j = 0; j < nk; ++j) bm = std::max(bm, st[size_t(j * ld + c)] * scale);
      factor_want[size_t(c)] = rs[size_t(c)].update_max(bm);
    }
    cpu::softmax_update_cols(st.data(), ld, nk, ncols, scale, m.data(), l.data(), f.data());
    cpu::softmax_update_cols_portable(sp.data(), ld, nk, ncols, scale, mp.data(), lp.data(), fp.data());
    for (int c = 0; c < ncols; ++c) {
      for (int j = 0; j < nk; ++j) {
        const float x = st[size_t(j * ld + c)];
        ASSERT_FALSE(std::isnan(x));
        ASSERT_NEAR(x, sp[size_t(j * ld + c)], 1e-6f);
        rs[size_t(c)].l += x;
      }
      ASSERT_EQ(m[size_t(c)], rs[size_t(c)].m) << c;
      ASSERT_NEAR(f[size_t(c)], factor_want[size_t(c)], 1e-6f) << c;
      ASSERT_NEAR(l[size_t(c)], rs[size_t(c)].l, 1e-5f * std::max(1.f, rs[size_t(c)].l)) << c;
      ASSERT_NEAR(lp[size_t(c)], l[size_t(c)], 1e-5f * std::max(1.f, l[size_t(c)])) << c;
    }
  }
}

TEST(Kernels, MaskIntervalsMatchAllowed) {
  for (int64_t nq : {1, 5, 13})
    for (int64_t nk : {1, 4, 13, 20})
      for (int64_t left : {-1, 0, 2, 7})
        for (int64_t right : {-1, 0, 3}) {
          const core::Mask mask(nq, nk, left, right);
          for (int64_t i0 = 0; i0 < nq; i0 += 3)
            for (int64_t j0 = 0; j0 < nk; j0 += 4) {
              const int64_t m = std::min<int64_t>(4, nq - i0), n = std::min<int64_t>(5, nk - j0);
              for (int64_t i = i0; i < i0 + m; ++i) {
                int64_t lo, hi;
                cpu::visible_keys(mask, i, j0, n, &lo, &hi);
                for (int64_t j = j0; j < j0 + n; ++j)
                  ASSERT_EQ(mask.allowed(i, j), j - j0 >= lo && j - j0 < hi) << i << "," << j;
              }
              for (int64_t j = j0; j < j0 + n; ++j) {
                int64_t lo, hi;
                cpu::visible_queries(mask, j, i0, m, &lo, &hi);
                for (int64_t i = i0; i < i0 + m; ++i)
                  ASSERT_EQ(mask.allowed(i, j), i - i0 >= lo && i - i0 < hi) << i << "," << j;
              }
            }
        }
}

TEST(Kernels, SoftcapMatchesTanh) {
  for (float cap : {0.7f, 5.f, 30.f}) {
    std::vector<float> x;
    for (float v = -400.f; v <= 400.f; v += 0.00731f * (std::fabs(v) + 0.01f)) x.push_back(v);
    x.push_back(0.f);
    x.push_back(-0.f);
    x.push_back(-INFINITY);
    std::vector<float> y = x;
    const float scale = 0.125f;
    cpu::softcap_span(y.data(), int(y.size()), scale, cap);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = double(cap) * std::tanh(double(x[i]) * (double(scale) / cap));
      if (std::isinf(x[i])) {
        ASSERT_EQ(y[i], float(want));
        continue;
      }
      // A few ulp of the result (the argument itself is rounded once, like tanhf's).
      ASSERT_NEAR(y[i], want, 4e-7 * std::fabs(want) + 1e-30) << "x = " << x[i] << " cap " << cap;
      ASSERT_EQ(std::signbit(y[i]), std::signbit(x[i])) << x[i];
    }
  }
}

TEST(Kernels, ExpIsAccurateAndSafe) {
  std::vector<float> x;
  for (float v = -110.f; v <= 88.f; v += 0.0137f) x.push_back(v);
  x.push_back(0.f);
  x.push_back(-INFINITY);
  x.push_back(-1e30f);
  std::vector<float> y(x.size());
  cpu::exp_span(x.data(), int(x.size()), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(double(x[i]));
    // Relative accuracy of a few ulp above FLT_MIN. Below it the AVX-512 path gives subnormals
    // and the AVX2 path flushes to 0 (softmax weights that small never matter): never negative.
    if (want < 1.2e-38) {
      ASSERT_GE(y[i], 0.f) << "x = " << x[i];
      ASSERT_LE(y[i], 1.2e-38f) << "x = " << x[i];
      continue;
    }
    ASSERT_NEAR(y[i], want, 3e-7 * want) << "x = " << x[i];
  }
  EXPECT_EQ(y[x.size() - 2], 0.f);  // exp(-inf) = 0 exactly
  // exp_sub_sum with an odd length exercises the masked tail; -inf entries give 0.
  std::vector<float> r = {1.f, -INFINITY, 0.5f, 2.f, -INFINITY, 3.f, 0.f};
  const float sum = cpu::exp_sub_sum(r.data(), int(r.size()), 3.f);
  double want_sum = 0;
  for (float v : {1.f, 0.5f, 2.f, 3.f, 0.f}) want_sum += std::exp(double(v) - 3.0);
  EXPECT_NEAR(sum, want_sum, 1e-6);
  EXPECT_EQ(r[1], 0.f);
  EXPECT_FLOAT_EQ(r[5], 1.f);
  EXPECT_EQ(cpu::row_max(r.data(), 0), -INFINITY);
}

}  // namespace
}  // namespace fa
