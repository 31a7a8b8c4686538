// Validates the float64 reference itself: its backward against central finite differences of the
// scalar loss L = sum(O * dO) computed with its own forward (tiny shapes, every mask feature),
// and its forward against a direct softmax on a hand-checkable case; the float32 peer against it.
#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.hpp"
#include "cpu/reference.hpp"

namespace fa {
namespace {

double loss(const core::AttnParams& p, const ref::Inputs& in) {
  std::vector<double> o, lse;
  ref::forward(p, in, o, lse);
  double l = 0;
  for (size_t i = 0; i < o.size(); ++i) l += o[i] * in.dout[i];
  return l;
}

// max |analytic - numeric| / max(1, |numeric|) over every input element of q, k and v.
void check_fd(const test::CaseSpec& spec) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE(spec.name() + " seed " + std::to_string(seed));
  test::Problem pr = test::make_problem(spec, seed);
  ref::Inputs in = ref::load(pr.p);
  std::vector<double> dq, dk, dv;
  ref::backward(pr.p, in, dq, dk, dv);
  const double h = 1e-6;  // central differences: O(h^2) truncation, O(eps/h) rounding ~ 1e-10
  int64_t checked = 0;
  for (auto [vec, grad, name] : {std::make_tuple(&in.q, &dq, "dq"), std::make_tuple(&in.k, &dk, "dk"),
                                 std::make_tuple(&in.v, &dv, "dv")}) {
    for (size_t i = 0; i < vec->size(); ++i) {
      const double x = (*vec)[i];
      (*vec)[i] = x + h;
      const double lp = loss(pr.p, in);
      (*vec)[i] = x - h;
      const double lm = loss(pr.p, in);
      (*vec)[i] = x;
      const double numeric = (lp - lm) / (2 * h);
      ASSERT_NEAR((*grad)[i], numeric, 1e-6 * std::max(1.0, std::fabs(numeric))) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Reference, BackwardMatchesFiniteDifferences) {
  test::CaseSpec s;
  s.heads_q = 2;
  s.heads_kv = 1;  // GQA: dk/dv sum over the group
  s.head_dim = 4;
  s.seqlen_q = 3;
  s.seqlen_k = 5;
  s.backward = true;
  check_fd(s);
  s.causal = true;
  check_fd(s);
  s.seqlen_q = 6;  // causal with Nq > Nk: first rows see no key (zero gradients)
  s.seqlen_k = 4;
  check_fd(s);
  s.causal = false;
  s.window_left = 1;
  s.window_right = 1;
  check_fd(s);
  s.softcap = 0.7f;  // strong cap so tanh' differs a lot from 1
  s.dist = test::Dist::HeavyTail;
  check_fd(s);
  test::CaseSpec v;
  v.varlen_q = {2, 0, 3};
  v.varlen_k = {3, 2, 0};
  v.heads_q = 3;
  v.heads_kv = 3;
  v.head_dim = 3;
  v.backward = true;
  v.causal = true;
  check_fd(v);
}

// The float32 peers compute the same outputs and gradients as the reference (to float32
// accuracy), and they really are float32: on generic inputs not bit-identical to the double
// evaluation.
TEST(Reference, Float32PeerTracksReference) {
  test::CaseSpec s;
  s.heads_q = 4;
  s.heads_kv = 2;
  s.head_dim = 32;
  s.seqlen_q = 40;
  s.seqlen_k = 50;
  s.causal = true;
  s.backward = true;
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  test::Problem pr = test::make_problem(s, seed);
  const ref::Inputs in = ref::load(pr.p);
  std::vector<double> o, lse, fo, flse, dq, dk, dv, fq, fk, fv;
  ref::forward(pr.p, in, o, lse);
  ref::forward_float32(pr.p, in, fo, flse);
  ref::backward(pr.p, in, dq, dk, dv);
  ref::backward_float32(pr.p, in, fq, fk, fv);
  for (auto [want, got, name] : {std::make_tuple(&o, &fo, "o"), std::make_tuple(&lse, &flse, "lse"),
                                 std::make_tuple(&dq, &fq, "dq"), std::make_tuple(&dk, &fk, "dk"),
                                 std::make_tuple(&dv, &fv, "dv")}) {
    ASSERT_EQ(want->size(), got->size()) << name;
    const test::ErrorReport e = test::compare(*got, *want);
    EXPECT_GT(e.max_err, 0.0) << name << ": the peer matched the double evaluation exactly";
    EXPECT_LE(e.max_err, 1e-4 * std::max(1.0, e.ref_scale)) << name << ": " << e.str();
  }
}

TEST(Reference, ForwardHandChecked) {
  // One query, two keys, d = 1, scale 1: p = softmax(q*k) and o = p . v.
  test::CaseSpec s;
  s.head_dim = 1;
  s.seqlen_q = 1;
  s.seqlen_k = 2;
  test::Problem pr = test::make_problem(s, 1);
  ref::Inputs in;
  in.q = {2.0};
  in.k = {0.5, -1.0};
  in.v = {3.0, -4.0};
  std::vector<double> o, lse;
  ref::forward(pr.p, in, o, lse);  // scale = 1/sqrt(1) = 1
  const double e0 = std::exp(1.0), e1 = std::exp(-2.0);
  EXPECT_NEAR(o[0], (3.0 * e0 - 4.0 * e1) / (e0 + e1), 1e-15);
  EXPECT_NEAR(lse[0], std::log(e0 + e1), 1e-15);
  // Window (0, 0), bottom-right aligned: the only query sits on key 1 and sees only it.
  pr.p.window_left = 0;
  pr.p.window_right = 0;
  ref::forward(pr.p, in, o, lse);
  EXPECT_NEAR(o[0], -4.0, 1e-15);
  EXPECT_NEAR(lse[0], -2.0, 1e-15);
  // One key: the query now sits on key 0 and sees only it.
  pr.p.seqlen_k = 1;
  in.k.resize(1);
  in.v.resize(1);
  ref::forward(pr.p, in, o, lse);
  EXPECT_NEAR(o[0], 3.0, 1e-15);
  // Causal with more queries than keys: the first rows see no key at all.
  pr.p.seqlen_q = 3;
  pr.p.total_q = 3;
  pr.p.window_left = -1;
  in.q = {1.0, 1.0, 1.0};
  ref::forward(pr.p, in, o, lse);
  EXPECT_EQ(o[0], 0.0);
  EXPECT_EQ(lse[0], -INFINITY);
  EXPECT_EQ(o[1], 0.0);
  EXPECT_NEAR(o[2], 3.0, 1e-15);
}

}  // namespace
}  // namespace fa
