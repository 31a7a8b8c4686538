// Unit tests of the CPU backend's building blocks: fp16/bf16 conversion (library bit version vs
// the tests' arithmetic version, over every 16-bit pattern, every rounding midpoint and a sweep of
// fp32 patterns), the tile product micro-kernel (vs a double-precision loop) and the vector exp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

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

// The span loaders (the compiler-vectorised branch-free code, the F16C code, the scalar loop, each
// with its remainder handling) against the scalar reference, bit for bit (NaN payloads and
// signalling NaNs included), over every 16-bit pattern. Each pass starts at a different element
// offset and walks the patterns in chunks whose lengths are not multiples of the vector width, so
// unaligned starts and every tail length are covered, and NaNs fall at every position of a vector
// block; sentinels either side of each chunk catch writes outside the span.
using SpanLoader = void (*)(const uint16_t*, int, float*);

void check_span_every_pattern(SpanLoader load, float (*scalar)(uint16_t)) {
  std::vector<uint16_t> src(65536 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint16_t(i);
  const int lengths[] = {1,  2,  3,  7,  8,   15,  16,  17,  31,   32,
                         33, 63, 64, 65, 100, 127, 128, 129, 1000, 4095};
  const uint32_t sentinel = 0x7fc0dead;
  std::vector<uint32_t> dst(4096 + 16);
  for (int start = 0; start < 17; ++start) {
    size_t pos = size_t(start), li = size_t(start);
    while (pos < 65536 + size_t(start)) {
      const int n = std::min<int>(lengths[li++ % std::size(lengths)], int(65536 + start - pos));
      const int doff = 1 + start % 5;  // misaligned destination too
      std::fill(dst.begin(), dst.end(), sentinel);
      float* out = reinterpret_cast<float*>(dst.data() + doff);
      load(src.data() + pos, n, out);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; ++i)
        if (dst[size_t(doff + i)] != bits_of(scalar(src[pos + size_t(i)]))) bad = i;
      ASSERT_EQ(bad, -1) << "pattern " << src[pos + size_t(std::max(bad, 0))] << " start " << start
                         << " n " << n;
      for (int i = 0; i < doff; ++i) ASSERT_EQ(dst[size_t(i)], sentinel) << "write before the span";
      ASSERT_EQ(dst[size_t(doff + n)], sentinel) << "write past the span, n " << n;
      pos += size_t(n);
    }
  }
  // Consecutive patterns put NaNs next to each other, so a vector block never holds a lone one;
  // a loader that sends only blocks with NaNs to an exact path could then hide a wrong NaN test.
  // So also: each pattern alone among zeros, at a lane that moves with the pattern, and every
  // fp16 inf/NaN (exponent field all ones) at every lane of a 40-element span.
  std::vector<uint16_t> row(40);
  std::vector<uint32_t> out(row.size() + 1);
  auto check_alone = [&](uint16_t pat, int lane) {
    std::fill(row.begin(), row.end(), uint16_t(0));
    row[size_t(lane)] = pat;
    std::fill(out.begin(), out.end(), sentinel);
    load(row.data(), int(row.size()), reinterpret_cast<float*>(out.data()));
    size_t bad = 0;  // first wrong lane + 1 (plain loop: a gtest assertion per lane is slow here)
    for (size_t i = 0; i < row.size() && !bad; ++i)
      if (out[i] != bits_of(scalar(row[i]))) bad = i + 1;
    ASSERT_EQ(bad, 0u) << "pattern " << pat << " alone at lane " << lane;
    ASSERT_EQ(out[row.size()], sentinel);
  };
  for (uint32_t h = 0; h < 65536; ++h) {
    check_alone(uint16_t(h), int(h % 40));
    if ((h & 0x7c00u) == 0x7c00u)
      for (int lane = 0; lane < 40; ++lane) check_alone(uint16_t(h), lane);
  }
}

TEST(Convert, F16BranchlessEveryPatternBitExact) {
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(bits_of(cpu::f16_to_f32_branchless(uint16_t(h))),
              bits_of(cpu::f16_to_f32(uint16_t(h))))
        << "pattern " << h;
}

TEST(Convert, F16SpanLoadersEveryPatternBitExact) {
  check_span_every_pattern(cpu::load_f16_span_portable, cpu::f16_to_f32);
  check_span_every_pattern(cpu::load_f16_span_scalar, cpu::f16_to_f32);
  // Without F16C in the build this is the portable loader again (the test says so).
  if (!cpu::kHaveF16c) std::printf("note: this build has no F16C; load_f16_span_f16c = portable\n");
  check_span_every_pattern(cpu::load_f16_span_f16c, cpu::f16_to_f32);
  // And through load_span, whichever loader FA_CPU_F16_CONVERT selected.
  check_span_every_pattern(
      [](const uint16_t* s, int n, float* d) { cpu::load_span(s, core::DType::F16, n, d); },
      cpu::f16_to_f32);
}

// The span stores against the scalar f32_to_f16/f32_to_bf16, bit for bit: ~1M fp32 patterns over
// the whole range (NaNs included), every fp16 value, its midpoint to the next one (the ties) and
// the floats either side of that midpoint, both signs, and NaN payload shapes; written in chunks
// of uneven lengths from every start offset modulo 16, with sentinels after each chunk.
using SpanStore = void (*)(const float*, int, uint16_t*);

void check_store_span(SpanStore store, uint16_t (*scalar)(float)) {
  std::vector<uint32_t> in;
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) in.push_back(uint32_t(u));
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const uint32_t lo = bits_of(float(test::from_f16_bits(uint16_t(h))));
    const uint32_t mid = bits_of(
        float(0.5 * (test::from_f16_bits(uint16_t(h)) + test::from_f16_bits(uint16_t(h + 1)))));
    for (uint32_t b : {lo, mid - 1, mid, mid + 1}) {
      in.push_back(b);
      in.push_back(b | 0x80000000u);
    }
  }
  for (int k = 0; k < 23; ++k)
    for (uint32_t m : {1u << k, (1u << k) - 1u, 0x7fffffu >> k, 0x400000u | (1u << k)})
      if (m) {
        in.push_back(0x7f800000u | m);
        in.push_back(0xff800000u | m);
      }
  std::vector<float> src(in.size() + 16);
  std::memcpy(src.data() + 16, in.data(), in.size() * 4);  // room for start offsets below
  const int lengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 127, 129, 1000, 4095};
  const uint16_t sentinel = 0x7e5a;
  std::vector<uint16_t> dst(4096 + 8);
  for (int start = 0; start < 16; ++start) {
    size_t pos = 16, li = size_t(start);
    while (pos < src.size()) {
      const int n = std::min<int>(lengths[li++ % std::size(lengths)], int(src.size() - pos));
      const float* s = src.data() + pos - size_t(start);  // shifted input: a different alignment
      std::fill(dst.begin(), dst.end(), sentinel);
      store(s, n, dst.data() + 1);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; ++i)
        if (dst[size_t(1 + i)] != scalar(s[i])) bad = i;
      ASSERT_EQ(bad, -1) << "fp32 bits " << bits_of(s[std::max(bad, 0)]) << " start " << start
                         << " n " << n;
      ASSERT_EQ(dst[0], sentinel) << "write before the span";
      ASSERT_EQ(dst[size_t(n + 1)], sentinel) << "write past the span, n " << n;
      pos += size_t(n);
    }
  }
  EXPECT_GT(in.size(), 1000000u);
}

TEST(Convert, F16SpanStoresBitExact) {
  check_store_span(cpu::store_f16_span_scalar, cpu::f32_to_f16);
  check_store_span(cpu::store_f16_span_f16c, cpu::f32_to_f16);
  check_store_span(
      [](const float* s, int n, uint16_t* d) { cpu::store_span(s, n, core::DType::F16, d); },
      cpu::f32_to_f16);
}

#if defined(__SSE2__)
// A host may run us with FTZ/DAZ on (torch.set_flush_denormal, -ffast-math code elsewhere in the
// process): the conversions must not change. Sets both MXCSR bits for this thread and repeats the
// fp16 checks (subnormal halves are the patterns at risk).
TEST(Convert, F16SpansUnderFtzDaz) {
  const unsigned int saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);  // FTZ (bit 15) | DAZ (bit 6)
  check_span_every_pattern(cpu::load_f16_span_portable, cpu::f16_to_f32);
  check_span_every_pattern(cpu::load_f16_span_f16c, cpu::f16_to_f32);
  check_store_span(cpu::store_f16_span_f16c, cpu::f32_to_f16);
  _mm_setcsr(saved);
}
#endif

TEST(Convert, BF16SpanStoresBitExact) {
  check_store_span(
      [](const float* s, int n, uint16_t* d) { cpu::store_span(s, n, core::DType::BF16, d); },
      cpu::f32_to_bf16);
}

TEST(Convert, BF16SpanEveryPatternBitExact) {
  check_span_every_pattern(
      [](const uint16_t* s, int n, float* d) { cpu::load_span(s, core::DType::BF16, n, d); },
      cpu::bf16_to_f32);
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
