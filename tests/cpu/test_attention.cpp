// CPU backend vs the float64 reference, forward and backward, over the shape grid of STYLE.md:
// odd lengths (1, 17, 128, 1000, 4097), Nq != Nk both ways, head dims 32..256 (and ones that are
// not a multiple of the vector width), causal and local windows, softcap, GQA 1/4/7, varlen with
// empty sequences, fully masked rows, fp32/fp16/bf16, strided layouts; plus determinism.
//
// Error rule (tests/common/test_util.hpp: tolerance): max|ours - ref| <= 2 x max|round(ref) - ref|
// + rel x max|ref|, where round() rounds to the output dtype and ref is evaluated on the same
// (already rounded) inputs. rel is 2e-5 for outputs; gradients of half-precision inputs get
// a larger rel (and every comparison 2e-5 absolute, for gradients that are 0 in exact arithmetic)
// because the backward's D = rowsum(dO * O) uses the output O as stored, i.e. rounded
// to the dtype (as FlashAttention does), which perturbs dS by P * (D_rounded - D). O and the
// gradients may also miss by up to twice the error of the naive float32 peers (ref::*_float32,
// whose D uses O stored in the dtype) on the same inputs: with heavy-tailed inputs and no softcap
// the scores reach the hundreds, and any fp32 implementation then misses by more than
// rel x max|ref| (the GQA-7 causal backward: about 2% of seeds).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/test_util.hpp"
#include "core/backend.hpp"
#include "cpu/reference.hpp"

namespace fa {
namespace {

using core::DType;
using test::CaseSpec;

double lse_tolerance(const std::vector<double>& ref) {
  double m = 1;
  for (double x : ref)
    if (std::isfinite(x)) m = std::max(m, std::fabs(x));
  return 2e-6 * m;
}

// FA_TEST_VERBOSE=1 prints every comparison's error and tolerance (for calibrating the rule).
void report(const std::string& what, const test::ErrorReport& e, double tol) {
  if (std::getenv("FA_TEST_VERBOSE"))
    std::printf("  %-6s err %.3e tol %.3e (%.2f of tol) scale %.3e\n", what.c_str(), e.max_err, tol,
                e.max_err / tol, e.ref_scale);
}

double grad_rel(DType t) { return t == DType::F32 ? 3e-5 : t == DType::F16 ? 5e-4 : 4e-3; }

// The fixed rule, or twice the naive float32 peer's error where the problem's conditioning
// (scores of heavy-tailed inputs in the hundreds, sums over GQA groups) makes any fp32
// implementation miss by more than rel x max|ref|.
double tolerance_with_peer(const std::vector<double>& ref, const std::vector<double>& peer, DType t,
                           double rel) {
  const double rule = test::tolerance(ref, t, rel);
  const double peer_err = test::compare(peer, ref).max_err;
  if (std::getenv("FA_TEST_VERBOSE"))
    std::printf("         peer err %.3e rule %.3e\n", peer_err, rule);
  return std::max(rule, 2 * peer_err + 2e-5);
}

void check_forward(const CaseSpec& spec) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE(spec.name() + "  (FA_TEST_SEED=" + std::to_string(seed) + ")");
  test::Problem pr = test::make_problem(spec, seed);
  const core::Status st = cpu::forward(pr.p);
  ASSERT_TRUE(st.ok()) << st.message;
  const ref::Inputs in = ref::load(pr.p);
  std::vector<double> o_ref, lse_ref, o_peer, lse_peer;
  ref::forward(pr.p, in, o_ref, lse_ref);
  ref::forward_float32(pr.p, in, o_peer, lse_peer);
  const test::ErrorReport eo = test::compare(test::read_dense(pr, test::Tensor::O), o_ref);
  const double tol_o = tolerance_with_peer(o_ref, o_peer, spec.dtype, 2e-5);
  report("O", eo, tol_o);
  EXPECT_LE(eo.max_err, tol_o) << "O: " << eo.str();
  const test::ErrorReport el = test::compare(test::read_lse(pr), lse_ref);
  EXPECT_LE(el.max_err, lse_tolerance(lse_ref)) << "LSE: " << el.str();
  EXPECT_TRUE(std::isnan(pr.lse.back())) << "LSE written past its end";
  EXPECT_EQ(test::gaps_overwritten(pr, test::Tensor::O), 0) << "O written outside the tensor";
}

void check_backward(const CaseSpec& spec_in) {
  CaseSpec spec = spec_in;
  spec.backward = true;
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE(spec.name() + " backward  (FA_TEST_SEED=" + std::to_string(seed) + ")");
  test::Problem pr = test::make_problem(spec, seed);
  core::Status st = cpu::forward(pr.p);
  ASSERT_TRUE(st.ok()) << st.message;
  st = cpu::backward(pr.p);
  ASSERT_TRUE(st.ok()) << st.message;
  const ref::Inputs in = ref::load(pr.p);
  std::vector<double> dq, dk, dv, peer_dq, peer_dk, peer_dv;
  ref::backward(pr.p, in, dq, dk, dv);
  ref::backward_float32(pr.p, in, peer_dq, peer_dk, peer_dv);
  const double rel = grad_rel(spec.dtype);
  for (auto [t, want, peer, name] : {std::make_tuple(test::Tensor::DQ, &dq, &peer_dq, "dQ"),
                                     std::make_tuple(test::Tensor::DK, &dk, &peer_dk, "dK"),
                                     std::make_tuple(test::Tensor::DV, &dv, &peer_dv, "dV")}) {
    const test::ErrorReport e = test::compare(test::read_dense(pr, t), *want);
    const double tol = tolerance_with_peer(*want, *peer, spec.dtype, rel);
    report(name, e, tol);
    EXPECT_LE(e.max_err, tol) << name << ": " << e.str();
    EXPECT_EQ(test::gaps_overwritten(pr, t), 0) << name << " written outside the tensor";
  }
}

CaseSpec shape(int64_t nq, int64_t nk, int d, int hq = 2, int hk = 2, int b = 1) {
  CaseSpec s;
  s.seqlen_q = nq;
  s.seqlen_k = nk;
  s.head_dim = d;
  s.heads_q = hq;
  s.heads_kv = hk;
  s.batch = b;
  return s;
}

TEST(CpuForward, SeqLens) {
  for (int64_t n : {1, 17, 128, 1000}) {
    check_forward(shape(n, n, 64));
    CaseSpec c = shape(n, n, 64);
    c.causal = true;
    check_forward(c);
  }
  // 4097: one head (the float64 reference dominates the run time).
  CaseSpec c = shape(4097, 4097, 64, 1, 1);
  c.causal = true;
  check_forward(c);
  check_forward(shape(17, 4097, 64, 1, 1));
  check_forward(shape(4097, 130, 32, 1, 1));
}

TEST(CpuForward, UnequalLengths) {
  for (auto [nq, nk] : {std::pair<int64_t, int64_t>{17, 128}, {128, 17}, {1000, 1}, {1, 1000}, {65, 63}}) {
    check_forward(shape(nq, nk, 64, 2, 1, 2));
    CaseSpec c = shape(nq, nk, 64, 2, 1, 2);
    c.causal = true;  // Nq > Nk: the first Nq - Nk rows see no key
    check_forward(c);
  }
}

TEST(CpuForward, HeadDims) {
  for (int d : {32, 64, 96, 128, 256, 8, 40, 200}) {
    check_forward(shape(130, 77, d));
    CaseSpec c = shape(77, 130, d);
    c.causal = true;
    check_forward(c);
  }
}

TEST(CpuForward, WindowsAndSoftcap) {
  for (auto [l, r] : {std::pair<int64_t, int64_t>{16, 0}, {32, 8}, {-1, 4}, {5, -1}, {0, 0}, {100, 300}}) {
    CaseSpec c = shape(300, 257, 64);
    c.window_left = l;
    c.window_right = r;
    check_forward(c);
  }
  CaseSpec c = shape(200, 200, 64);
  c.softcap = 30.f;
  check_forward(c);
  c.dist = test::Dist::HeavyTail;  // large logits: the cap actually bites, softmax is peaked
  check_forward(c);
  c.softcap = 0.f;
  check_forward(c);
  c.causal = true;
  c.softcap = 5.f;
  check_forward(c);
}

TEST(CpuForward, Gqa) {
  for (int ratio : {1, 4, 7}) {
    check_forward(shape(100, 150, 64, 2 * ratio, 2));
    CaseSpec c = shape(150, 100, 64, ratio, 1);
    c.causal = true;
    check_forward(c);
  }
}

TEST(CpuForward, VarlenWithEmptySequences) {
  CaseSpec c;
  c.varlen_q = {5, 0, 130, 64, 3, 1};
  c.varlen_k = {7, 9, 0, 200, 3, 70};  // q=130 against k=0: every row fully masked
  c.heads_q = 4;
  c.heads_kv = 2;
  c.head_dim = 64;
  check_forward(c);
  c.causal = true;
  check_forward(c);
  c.causal = false;
  c.window_left = 10;
  c.window_right = 3;
  c.layout = test::Layout::Padded;
  check_forward(c);
}

TEST(CpuForward, StridedLayouts) {
  for (test::Layout lay : {test::Layout::Padded, test::Layout::HeadMajor}) {
    CaseSpec c = shape(70, 90, 64, 4, 2, 2);
    c.layout = lay;
    check_forward(c);
    c.dtype = DType::BF16;
    c.causal = true;
    check_forward(c);
  }
}

TEST(CpuForward, HalfPrecision) {
  for (DType t : {DType::F16, DType::BF16}) {
    for (int64_t n : {1, 17, 128, 1000}) {
      CaseSpec c = shape(n, n, 128, 2, 1);
      c.dtype = t;
      c.causal = n > 100;
      check_forward(c);
    }
    CaseSpec c = shape(200, 100, 96);
    c.dtype = t;
    c.softcap = 20.f;
    c.dist = test::Dist::HeavyTail;
    check_forward(c);
  }
}

// Rows that see no key: O exactly 0 and LSE exactly -inf (not merely within tolerance).
TEST(CpuForward, FullyMaskedRowsAreExact) {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    CaseSpec c = shape(100, 30, 64, 2, 1);
    c.dtype = t;
    c.causal = true;  // rows 0..69 see nothing
    test::Problem pr = test::make_problem(c, test::fresh_seed());
    ASSERT_TRUE(cpu::forward(pr.p).ok());
    const std::vector<double> o = test::read_dense(pr, test::Tensor::O);
    for (int h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 100; ++i) {
        const bool masked = i < 70;
        ASSERT_EQ(std::isinf(pr.lse[size_t(h * 100 + i)]) && pr.lse[size_t(h * 100 + i)] < 0, masked) << i;
        for (int ch = 0; ch < 64; ++ch) {
          const double x = o[size_t((i * 2 + h) * 64 + ch)];
          if (masked) ASSERT_EQ(x, 0.0) << i;
          else ASSERT_TRUE(std::isfinite(x));
        }
      }
  }
}

TEST(CpuForward, NullLseIsNotWritten) {
  CaseSpec c = shape(70, 70, 32);
  test::Problem pr = test::make_problem(c, test::fresh_seed());
  pr.p.lse = nullptr;
  ASSERT_TRUE(cpu::forward(pr.p).ok());
  for (float x : pr.lse) ASSERT_TRUE(std::isnan(x));
  std::vector<double> o_ref, lse_ref;
  ref::forward(pr.p, o_ref, lse_ref);
  const test::ErrorReport e = test::compare(test::read_dense(pr, test::Tensor::O), o_ref);
  EXPECT_LE(e.max_err, test::tolerance(o_ref, DType::F32, 2e-5)) << e.str();
}

// Tasks are independent and each is computed in a fixed order: any thread count gives the same
// bits. The backward's ordered dQ accumulation gives the same guarantee there.
TEST(CpuDeterminism, ThreadCountDoesNotChangeBits) {
  CaseSpec dense = shape(300, 333, 64, 4, 2, 2);
  dense.causal = true;
  CaseSpec varlen;  // uneven sequences: tasks of different lengths interleave across workers
  varlen.varlen_q = {130, 0, 257, 64};
  varlen.varlen_k = {70, 33, 300, 0};
  varlen.heads_q = 4;
  varlen.heads_kv = 1;
  varlen.head_dim = 40;
  varlen.window_left = 50;
  varlen.window_right = 10;
  varlen.dtype = DType::F16;
  for (CaseSpec c : {dense, varlen}) {
    c.backward = true;
    const uint64_t seed = test::fresh_seed();
    SCOPED_TRACE(c.name() + "  (FA_TEST_SEED=" + std::to_string(seed) + ")");
    std::vector<uint8_t> o1, dq1, dk1, dv1;
    std::vector<float> lse1;
    for (int threads : {1, 2, 3, 8}) {
      test::Problem pr = test::make_problem(c, seed);
      pr.p.num_threads = threads;
      ASSERT_TRUE(cpu::forward(pr.p).ok());
      ASSERT_TRUE(cpu::backward(pr.p).ok());
      if (threads == 1) {
        o1 = pr.o, lse1 = pr.lse, dq1 = pr.dq, dk1 = pr.dk, dv1 = pr.dv;
        continue;
      }
      // Byte comparisons (NaN poison in layout gaps compares equal bytewise, unlike floats).
      EXPECT_EQ(o1, pr.o) << threads << " threads: O";
      EXPECT_EQ(std::memcmp(lse1.data(), pr.lse.data(), 4 * lse1.size()), 0) << threads << " threads: LSE";
      EXPECT_EQ(dq1, pr.dq) << threads << " threads: dQ";
      EXPECT_EQ(dk1, pr.dk) << threads << " threads: dK";
      EXPECT_EQ(dv1, pr.dv) << threads << " threads: dV";
    }
  }
}

// The forward keeps its tiles on the calling thread between calls, NaN-filled when they grow: the
// first call (fresh tiles) matches the reference, and the same call after others that left
// different data there (another head dim, softcap, more workers) gives the same bits.
TEST(CpuDeterminism, ReusedScratchDoesNotChangeBits) {
  CaseSpec small = shape(17, 70, 40, 2, 1);  // d not a multiple of 16: padded tile columns
  small.causal = true;
  small.dtype = DType::BF16;
  small.num_threads = 1;
  CaseSpec big = shape(200, 333, 256, 4, 2);
  big.softcap = 20.f;
  big.num_threads = 3;
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("FA_TEST_SEED=" + std::to_string(seed));
  check_forward(small);
  test::Problem a = test::make_problem(small, seed);
  ASSERT_TRUE(cpu::forward(a.p).ok());
  for (const CaseSpec& other : {big, shape(64, 64, 16, 1, 1)}) {
    test::Problem o = test::make_problem(other, seed + 1);
    ASSERT_TRUE(cpu::forward(o.p).ok());
    test::Problem b = test::make_problem(small, seed);
    ASSERT_TRUE(cpu::forward(b.p).ok());
    EXPECT_EQ(a.o, b.o) << "O after " << other.name();
    EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), 4 * a.lse.size()), 0)
        << "LSE after " << other.name();
  }
}

TEST(CpuBackward, SeqLens) {
  for (int64_t n : {1, 17, 128, 1000}) {
    CaseSpec c = shape(n, n, 64, n > 500 ? 1 : 2, 1);
    check_backward(c);
    c.causal = true;
    check_backward(c);
  }
}

TEST(CpuBackward, UnequalLengthsAndHeadDims) {
  for (auto [nq, nk] : {std::pair<int64_t, int64_t>{17, 128}, {128, 17}, {200, 1}, {1, 200}}) {
    CaseSpec c = shape(nq, nk, 64, 2, 1, 2);
    check_backward(c);
    c.causal = true;
    check_backward(c);
  }
  for (int d : {32, 96, 128, 256, 40}) {
    CaseSpec c = shape(90, 130, d);
    c.causal = d == 128;
    check_backward(c);
  }
}

TEST(CpuBackward, WindowsSoftcapGqa) {
  for (auto [l, r] : {std::pair<int64_t, int64_t>{16, 0}, {32, 8}, {-1, 4}, {5, -1}}) {
    CaseSpec c = shape(150, 140, 64, 4, 1);
    c.window_left = l;
    c.window_right = r;
    check_backward(c);
  }
  CaseSpec c = shape(130, 130, 64, 7, 1);  // GQA 7
  c.softcap = 10.f;
  c.dist = test::Dist::HeavyTail;
  check_backward(c);
  c.softcap = 0.f;
  c.causal = true;
  check_backward(c);
  CaseSpec g = shape(100, 120, 64, 8, 2);  // GQA 4
  check_backward(g);
}

TEST(CpuBackward, VarlenAndLayouts) {
  CaseSpec c;
  c.varlen_q = {5, 0, 130, 64, 3, 1};
  c.varlen_k = {7, 9, 0, 200, 3, 70};
  c.heads_q = 4;
  c.heads_kv = 2;
  c.head_dim = 64;
  check_backward(c);
  c.causal = true;
  c.layout = test::Layout::Padded;
  check_backward(c);
  CaseSpec h = shape(70, 90, 64, 4, 2, 2);
  h.layout = test::Layout::HeadMajor;
  h.window_left = 20;
  check_backward(h);
}

TEST(CpuBackward, HalfPrecision) {
  for (DType t : {DType::F16, DType::BF16}) {
    CaseSpec c = shape(200, 150, 128, 4, 1);
    c.dtype = t;
    check_backward(c);
    c.causal = true;
    c.softcap = 15.f;
    check_backward(c);
    CaseSpec v;
    v.varlen_q = {3, 0, 80};
    v.varlen_k = {0, 5, 100};
    v.heads_q = 2;
    v.heads_kv = 1;
    v.head_dim = 64;
    v.dtype = t;
    check_backward(v);
  }
}

// seqused_k: keys past the used count are invisible and get zero gradients.
TEST(CpuBackward, SeqUsedK) {
  CaseSpec c;
  c.varlen_q = {40, 70, 5};
  c.varlen_k = {50, 90, 8};
  c.heads_q = 2;
  c.heads_kv = 1;
  c.head_dim = 32;
  c.backward = true;
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seqused_k (FA_TEST_SEED=" + std::to_string(seed) + ")");
  test::Problem pr = test::make_problem(c, seed);
  const std::vector<int32_t> used = {20, 90, 0};
  pr.p.seqused_k = used.data();
  ASSERT_TRUE(cpu::forward(pr.p).ok());
  ASSERT_TRUE(cpu::backward(pr.p).ok());
  std::vector<double> o, lse, dq, dk, dv;
  ref::forward(pr.p, o, lse);
  ref::backward(pr.p, dq, dk, dv);
  const auto eo = test::compare(test::read_dense(pr, test::Tensor::O), o);
  EXPECT_LE(eo.max_err, test::tolerance(o, DType::F32, 2e-5)) << eo.str();
  for (auto [t, want] : {std::make_pair(test::Tensor::DQ, &dq), std::make_pair(test::Tensor::DK, &dk),
                         std::make_pair(test::Tensor::DV, &dv)}) {
    const auto e = test::compare(test::read_dense(pr, t), *want);
    EXPECT_LE(e.max_err, test::tolerance(*want, DType::F32, grad_rel(DType::F32))) << e.str();
  }
  const std::vector<double> dk_ours = test::read_dense(pr, test::Tensor::DK);
  for (int64_t r = 20; r < 50; ++r)  // sequence 0's unused keys: exactly zero
    for (int ch = 0; ch < 32; ++ch) ASSERT_EQ(dk_ours[size_t(r * 32 + ch)], 0.0) << r;
}

// No query rows at all: the LSE is empty (its pointer may be null, as an empty framework tensor's
// is) and is never read; every key's gradient is exactly 0.
TEST(CpuBackward, NoQueriesNeedsNoLse) {
  CaseSpec c;
  c.varlen_q = {0, 0};
  c.varlen_k = {5, 7};
  c.heads_q = 2;
  c.heads_kv = 2;
  c.head_dim = 32;
  c.backward = true;
  test::Problem pr = test::make_problem(c, test::fresh_seed());
  pr.p.lse = nullptr;
  const core::Status st = cpu::backward(pr.p);
  ASSERT_TRUE(st.ok()) << st.message;
  for (test::Tensor t : {test::Tensor::DK, test::Tensor::DV})
    for (double x : test::read_dense(pr, t)) ASSERT_EQ(x, 0.0);
}

// Rows that see no key contribute nothing and get dQ = 0 exactly.
TEST(CpuBackward, FullyMaskedRowsHaveZeroGradient) {
  CaseSpec c = shape(100, 30, 64, 2, 1);
  c.causal = true;
  c.backward = true;
  test::Problem pr = test::make_problem(c, test::fresh_seed());
  ASSERT_TRUE(cpu::forward(pr.p).ok());
  ASSERT_TRUE(cpu::backward(pr.p).ok());
  const std::vector<double> dq = test::read_dense(pr, test::Tensor::DQ);
  for (int64_t i = 0; i < 70; ++i)
    for (int ch = 0; ch < 2 * 64; ++ch) ASSERT_EQ(dq[size_t(i * 128 + ch)], 0.0) << i;
}

}  // namespace
}  // namespace fa
