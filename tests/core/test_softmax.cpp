// The online-softmax algebra of core/softmax.hpp: folding a row block by block (RowState) and
// merging split-KV partial results (lse_combine) must equal the one-shot softmax; the backward's
// score_transform_grad must be the derivative of score_transform.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/softmax.hpp"

namespace {

using fa::core::lse_combine;
using fa::core::lse_for_backward;
using fa::core::RowState;
using fa::core::score_transform;
using fa::core::score_transform_grad;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A random score row; masked entries are -inf (possibly all of them).
std::vector<float> random_row(std::mt19937& rng, int n, float masked_fraction, float spread) {
  std::normal_distribution<float> normal(0.f, spread);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> s(static_cast<size_t>(n));
  for (float& x : s) x = u(rng) < masked_fraction ? kNegInf : normal(rng);
  return s;
}

// One-shot float64 softmax of s applied to values v: the lse and o = sum p_j v_j.
void one_shot(const std::vector<float>& s, const std::vector<float>& v, double* lse, double* o) {
  double m = -std::numeric_limits<double>::infinity();
  for (float x : s) m = std::max(m, double(x));
  if (m == -std::numeric_limits<double>::infinity()) {
    *lse = m;
    *o = 0;
    return;
  }
  double l = 0, acc = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    const double p = std::exp(double(s[j]) - m);
    l += p;
    acc += p * v[j];
  }
  *lse = m + std::log(l);
  *o = acc / l;
}

// The kernels' recurrence on [begin, end): per block, update the max, rescale the accumulator by
// the returned factor, add exp(s - m) terms. Returns the unnormalised accumulator.
float fold(RowState& st, const std::vector<float>& s, const std::vector<float>& v, size_t begin,
           size_t end, std::vector<size_t> cuts, float acc) {
  cuts.push_back(end);
  size_t b0 = begin;
  for (size_t b1 : cuts) {
    if (b1 <= b0) continue;
    float block_max = kNegInf;
    for (size_t j = b0; j < b1; ++j) block_max = std::max(block_max, s[j]);
    const float factor = st.update_max(block_max);
    acc *= factor;
    for (size_t j = b0; j < b1; ++j) {
      // A masked entry of a row that has seen nothing yet: m = -inf, must add 0, not NaN.
      const float p = s[j] == kNegInf ? 0.f : std::exp(s[j] - st.m);
      st.l += p;
      acc += p * v[j];
    }
    b0 = b1;
  }
  return acc;
}

TEST(RowState, BlockwiseFoldEqualsOneShot) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 300)(rng);
    const float masked = trial % 5 == 0 ? 1.f : trial % 3 == 0 ? 0.6f : 0.f;
    const float spread = trial % 2 ? 1.f : 20.f;  // large spread: the max changes a lot
    const auto s = random_row(rng, n, masked, spread);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);

    std::vector<size_t> cuts;
    for (int c = std::uniform_int_distribution<int>(0, 6)(rng); c > 0; --c)
      cuts.push_back(size_t(std::uniform_int_distribution<int>(0, n)(rng)));
    std::sort(cuts.begin(), cuts.end());

    RowState st;
    const float acc = fold(st, s, v, 0, size_t(n), cuts, 0.f);
    double lse, o;
    one_shot(s, v, &lse, &o);
    if (lse == -std::numeric_limits<double>::infinity()) {
      EXPECT_EQ(st.lse(), kNegInf);
      EXPECT_EQ(st.inv_sum(), 0.f);
      EXPECT_EQ(acc * st.inv_sum(), 0.f);  // fully masked row: O = 0, not NaN
      continue;
    }
    EXPECT_NEAR(st.lse(), lse, 2e-5 * std::max(1.0, std::fabs(lse))) << "n=" << n;
    EXPECT_NEAR(acc * st.inv_sum(), o, 2e-5) << "n=" << n;
  }
}

// Split-KV: two workers fold disjoint key ranges; the combine weights each part's normalised
// output by exp(lse_part - lse) and must reproduce the one-shot result.
TEST(RowState, SplitAndMergeEqualsOneShot) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 200)(rng);
    const auto s = random_row(rng, n, trial % 4 == 0 ? 0.7f : 0.f, trial % 2 ? 2.f : 15.f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
    const size_t split = size_t(std::uniform_int_distribution<int>(0, n)(rng));

    RowState a, b;
    const float acc_a = fold(a, s, v, 0, split, {}, 0.f);
    const float acc_b = fold(b, s, v, split, size_t(n), {}, 0.f);
    const float lse = lse_combine(a.lse(), b.lse());
    double ref_lse, ref_o;
    one_shot(s, v, &ref_lse, &ref_o);
    if (ref_lse == -std::numeric_limits<double>::infinity()) {
      EXPECT_EQ(lse, kNegInf);
      continue;
    }
    EXPECT_NEAR(lse, ref_lse, 2e-5 * std::max(1.0, std::fabs(ref_lse)));
    // Empty or fully masked parts have lse -inf and weight exactly 0.
    const float wa = a.lse() == kNegInf ? 0.f : std::exp(a.lse() - lse);
    const float wb = b.lse() == kNegInf ? 0.f : std::exp(b.lse() - lse);
    const float o = wa * acc_a * a.inv_sum() + wb * acc_b * b.inv_sum();
    EXPECT_NEAR(o, ref_o, 3e-5);
  }
}

TEST(LseCombine, IdentitiesAndLargeMagnitudes) {
  EXPECT_EQ(lse_combine(kNegInf, kNegInf), kNegInf);
  EXPECT_EQ(lse_combine(kNegInf, 3.5f), 3.5f);
  EXPECT_EQ(lse_combine(-2.f, kNegInf), -2.f);
  EXPECT_NEAR(lse_combine(0.f, 0.f), std::log(2.f), 1e-6);
  // No overflow when both are large (exp(1000) would be inf without the max shift).
  EXPECT_NEAR(lse_combine(1000.f, 1000.f), 1000.f + std::log(2.f), 1e-3);
  EXPECT_NEAR(lse_combine(-1000.f, -999.f), -999.f + std::log1p(std::exp(-1.f)), 1e-3);
  // Commutative.
  EXPECT_EQ(lse_combine(1.25f, -3.f), lse_combine(-3.f, 1.25f));
}

TEST(LseForBackward, FullyMaskedRowGivesZeroProbabilities) {
  const float lse = lse_for_backward(kNegInf);
  EXPECT_EQ(lse, std::numeric_limits<float>::infinity());
  // Every score of such a row is -inf (masked): P = exp(-inf - +inf) = 0, not NaN.
  EXPECT_EQ(std::exp(kNegInf - lse), 0.f);
  EXPECT_EQ(lse_for_backward(1.5f), 1.5f);
}

TEST(RowState, EmptyRow) {
  RowState st;
  EXPECT_EQ(st.lse(), kNegInf);
  EXPECT_EQ(st.inv_sum(), 0.f);
  // A block of only masked keys keeps the state empty and the rescale factor finite.
  const float f = st.update_max(kNegInf);
  EXPECT_EQ(f, 0.f);
  EXPECT_EQ(st.m, kNegInf);
  EXPECT_EQ(st.l, 0.f);
}

TEST(ScoreTransform, NoSoftcapIsScaling) {
  EXPECT_EQ(score_transform(3.f, 0.125f, 0.f), 0.375f);
  EXPECT_EQ(score_transform_grad(0.375f, 0.125f, 0.f), 0.125f);
}

TEST(ScoreTransform, SoftcapBoundsScores) {
  for (float qk : {-1e4f, -30.f, 0.f, 7.f, 1e4f}) {
    const float s = score_transform(qk, 0.1f, 5.f);
    EXPECT_LE(std::fabs(s), 5.f);
  }
  EXPECT_NEAR(score_transform(1.f, 0.1f, 5.f), 5.f * std::tanh(0.1f / 5.f), 1e-7);
}

// d score / d qk from score_transform_grad(score) against a central difference of
// score_transform, evaluated in double around float inputs.
TEST(ScoreTransform, GradientMatchesFiniteDifferences) {
  std::mt19937 rng(3);
  for (float cap : {0.f, 1.f, 5.f, 30.f, 50.f}) {
    for (float scale : {0.0625f, 0.125f, 0.088388f, 1.f}) {
      for (int t = 0; t < 200; ++t) {
        const float qk = std::normal_distribution<float>(0.f, 40.f)(rng);
        const float s = score_transform(qk, scale, cap);
        const float g = score_transform_grad(s, scale, cap);
        // Step large enough that float rounding of f (~|f| * 6e-8) is negligible next to it,
        // small enough that the O(h^2) truncation error is below the tolerance.
        // The step actually taken is (qk + h) - (qk - h) after float rounding, not 2h.
        const float hi = qk + 0.05f, lo = qk - 0.05f;
        const double fd = (double(score_transform(hi, scale, cap)) -
                           double(score_transform(lo, scale, cap))) /
                          (double(hi) - double(lo));
        EXPECT_NEAR(g, fd, 1e-3 * scale + 5e-5)
            << "cap=" << cap << " scale=" << scale << " qk=" << qk;
        EXPECT_GE(g, 0.f);
        EXPECT_LE(g, scale * (1.f + 1e-6f));
      }
    }
  }
}

}  // namespace
