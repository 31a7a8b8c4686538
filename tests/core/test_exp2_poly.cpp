// core/exp2_poly.hpp, the software exp2 that the sm90 forward softmax can use for part of its
// scores (FA_SM90_FWD_POLY_EXP2): the relative error of each degree against exp2 in double, over a
// dense sweep of the softmax's range, stays within the bound the header documents; integers are
// exact; the clamp turns −127 and below (masked scores: −inf) into +0 exactly.
// The host path computes floor(x) with std::floor where the device uses an FADD.RM; both give the
// same bits (the sum of two integers below 2^24 is exact), so this checks the device arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/exp2_poly.hpp"

namespace {

using fa::core::exp2_poly;

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The sweep: every float in [−2, −1) (all f = x − floor(x) on the 2^-23 grid), every 53rd float
// of [−1, −2^-30) (f = x + 1 rounded: the one inexact f), 2^20 evenly spaced points of [−126, 0],
// integers and half-integers of [−126, 0] with their neighbours, tiny |x| down to the smallest
// subnormal, −0 and +0.
std::vector<float> sweep_points() {
  std::vector<float> xs;
  for (uint32_t u = bits(-1.f); u < bits(-2.f); ++u) xs.push_back(from_bits(u));
  for (uint32_t u = bits(-0x1p-30f); u <= bits(-1.f); u += 53) xs.push_back(from_bits(u));
  constexpr int kSteps = 1 << 20;
  for (int i = 0; i <= kSteps; ++i) xs.push_back(-126.f * float(i) / float(kSteps));
  for (int j = -126; j <= 0; ++j) {
    for (float x : {float(j), float(j) + 0.5f, float(j) - 0.5f}) {
      for (float y : {x, std::nextafter(x, -kInf), std::nextafter(x, kInf)}) {
        if (y >= -126.f && y <= 0.f) xs.push_back(y);
      }
    }
  }
  for (float x = -0x1p-1f; x != 0.f; x *= 0.5f) xs.push_back(x);
  xs.push_back(-std::numeric_limits<float>::denorm_min());
  xs.push_back(-0.f);
  xs.push_back(0.f);
  xs.push_back(-125.9f);
  return xs;
}

template <int kDegree>
double max_relative_error(const std::vector<float>& xs, const std::vector<double>& ref,
                          float* worst_x) {
  double worst = 0.0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double err = std::fabs(double(exp2_poly<kDegree>(xs[i])) / ref[i] - 1.0);
    if (!(err <= worst)) {  // a NaN result is the worst
      worst = err;
      *worst_x = xs[i];
    }
  }
  return worst;
}

template <int kDegree>
void check_degree(const std::vector<float>& xs, const std::vector<double>& ref, double bound) {
  float worst_x = 0.f;
  const double err = max_relative_error<kDegree>(xs, ref, &worst_x);
  char text[32];
  std::snprintf(text, sizeof text, "%.3e", err);
  ::testing::Test::RecordProperty("max_rel_err_degree_" + std::to_string(kDegree), text);
  EXPECT_LE(err, bound) << "degree " << kDegree << ": max relative error " << err
                        << " at x = " << worst_x;
  // Also a lower bound: the documented figures are measured, not loose.
  EXPECT_GE(err, 0.5 * bound) << "degree " << kDegree << ": the documented bound is stale";
}

TEST(Exp2Poly, RelativeErrorWithinDocumentedBoundPerDegree) {
  const std::vector<float> xs = sweep_points();
  ASSERT_GT(xs.size(), size_t(10'000'000));
  std::vector<double> ref(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(xs[i] >= -126.f && xs[i] <= 0.f) << xs[i];  // where the result is a normal float
    ref[i] = std::exp2(double(xs[i]));
  }
  check_degree<3>(xs, ref, 8.6e-5);
  check_degree<4>(xs, ref, 3.0e-6);
  check_degree<5>(xs, ref, 1.6e-7);
  check_degree<6>(xs, ref, 8.2e-8);
}

// The softmax's argument s·c − m can exceed 0 by a rounding error; the result stays right far
// beyond that, up to the largest exponent.
TEST(Exp2Poly, PositiveArgumentsUpTo127) {
  float worst_x = 0.f;
  double worst = 0.0;
  constexpr int kSteps = 1 << 18;
  for (int i = 0; i <= kSteps; ++i) {
    const float x = 127.9f * float(i) / float(kSteps);
    const double err = std::fabs(double(exp2_poly<5>(x)) / std::exp2(double(x)) - 1.0);
    if (!(err <= worst)) {
      worst = err;
      worst_x = x;
    }
  }
  EXPECT_LE(worst, 1.5e-7) << "at x = " << worst_x;
}

// p(0) = 1 exactly, so integer arguments (a row's maximum score: P = 2^0) are exact.
TEST(Exp2Poly, IntegersAreExact) {
  for (int j = -126; j <= 127; ++j) {
    const float expect = std::ldexp(1.f, j);
    EXPECT_EQ(exp2_poly<3>(float(j)), expect) << j;
    EXPECT_EQ(exp2_poly<5>(float(j)), expect) << j;
    EXPECT_EQ(exp2_poly<6>(float(j)), expect) << j;
  }
  EXPECT_EQ(exp2_poly<5>(-0.f), 1.f);
}

// Masked scores are −inf and a row without an allowed key yet has offset 0: P must be +0 exactly
// (not −0, not a subnormal, not NaN), and the clamp makes everything at or below −127 so.
TEST(Exp2Poly, ClampedBottomGivesPositiveZero) {
  for (float x :
       {-kInf, -std::numeric_limits<float>::max(), -1e30f, -1000.f, -128.f, -127.5f, -127.f}) {
    EXPECT_EQ(bits(exp2_poly<5>(x)), 0u) << x;
    EXPECT_EQ(bits(exp2_poly<3>(x)), 0u) << x;
    EXPECT_EQ(bits(exp2_poly<6>(x)), 0u) << x;
  }
  // (−127, −126): a subnormal pattern within 2^-126 of 2^x (an FTZ consumer reads 0, as it does
  // MUFU.EX2.FTZ's result).
  for (float x = std::nextafter(-127.f, 0.f); x < -126.f; x += 1.f / 4096.f) {
    const float y = exp2_poly<5>(x);
    EXPECT_GE(y, 0.f) << x;
    EXPECT_LE(std::fabs(double(y) - std::exp2(double(x))), 0x1p-126) << x;
  }
  const float y = exp2_poly<5>(-126.9f);
  EXPECT_GE(y, 0.f);
  EXPECT_LE(std::fabs(double(y) - std::exp2(-126.9)), 0x1p-126);
}

}  // namespace
