// The per-thread memo of TMA descriptors (src/cuda/common/tma_memo.hpp).
//   Key*, SitesKeepTheirOwn   on the host (CI): every address, shape and stride value is part of
//                             the key, entries are reused only on an exact match, and two call
//                             sites never share entries.
//   Fa3*SameAddressNewStrides on the GPU: a call on a padded layout, then one over the same
//                             addresses seen as a contiguous layout (the same logical values
//                             re-uploaded). A memo that answered the second call with the first
//                             call's descriptors would read the new bytes through the old strides
//                             and fail the 2x rule; the counters also show the second call built
//                             new descriptors, and a repeated call built none.
#include <gtest/gtest.h>

#include <cute/tensor.hpp>

#include <cstdint>
#include <vector>

#include "cuda/common/tma_memo.hpp"
#include "harness.hpp"

namespace fa::cuda_test {
namespace {

using fa::cuda::memo_tma;
using Counters = fa::cuda::tma_memo_detail::Counters;

Counters now() { return fa::cuda::tma_memo_detail::counters(); }

bool memo_off() {
  const char* v = std::getenv("FA_NO_TMA_MEMO");
  return v && *v && *v != '0';
}

struct Built {
  int serial;
};

// A stand-in for make_tma_copy: each build gets a new serial number.
int g_serial = 0;
auto make_stub = [](const auto&) { return Built{++g_serial}; };

auto view(const void* base, int64_t rows, int64_t d, int64_t row_stride) {
  return cute::make_tensor(cute::make_gmem_ptr(static_cast<const cute::half_t*>(base)),
                           cute::make_layout(cute::make_shape(rows, d), cute::make_stride(row_stride, cute::_1{})));
}

TEST(TmaMemo, KeyCoversAddressShapeAndStrides) {
  if (memo_off()) GTEST_SKIP() << "FA_NO_TMA_MEMO is set: every call builds";
  alignas(16) static cute::half_t buf[4096];
  const int first = memo_tma(view(buf, 16, 64, 64), make_stub).serial;
  EXPECT_EQ(memo_tma(view(buf, 16, 64, 64), make_stub).serial, first) << "exact repeat must hit";
  EXPECT_NE(memo_tma(view(buf + 8, 16, 64, 64), make_stub).serial, first) << "address";
  EXPECT_NE(memo_tma(view(buf, 32, 64, 64), make_stub).serial, first) << "shape";
  EXPECT_NE(memo_tma(view(buf, 16, 64, 72), make_stub).serial, first) << "stride";
  // Four entries a site: one more key evicts the oldest, the first.
  memo_tma(view(buf, 16, 32, 64), make_stub);
  const int again = memo_tma(view(buf, 16, 64, 64), make_stub).serial;
  EXPECT_NE(again, first) << "an evicted entry must be rebuilt";
  EXPECT_EQ(memo_tma(view(buf, 16, 64, 64), make_stub).serial, again);
}

TEST(TmaMemo, SitesKeepTheirOwn) {
  if (memo_off()) GTEST_SKIP() << "FA_NO_TMA_MEMO is set: every call builds";
  alignas(16) static cute::half_t buf[1024];
  auto other_site = [](const auto&) { return Built{-1}; };
  const int a = memo_tma(view(buf, 8, 64, 64), make_stub).serial;
  EXPECT_EQ(memo_tma(view(buf, 8, 64, 64), other_site).serial, -1) << "another site's entry was returned";
  EXPECT_EQ(memo_tma(view(buf, 8, 64, 64), make_stub).serial, a);
}

// The contiguous case over the same device memory as `pb` (a padded layout): same logical values.
Problem contiguous_over(const Problem& pb) {
  Problem c = pb;
  c.c.layout = Layout::Contiguous;
  auto restride = [](fa_tensor& t) {
    const int64_t heads = t.shape[2], d = t.shape[3], rows = t.shape[1];
    t.strides[3] = 1, t.strides[2] = d, t.strides[1] = heads * d, t.strides[0] = rows * heads * d;
  };
  const std::vector<double> q = gather(pb, pb.qkv.q, true), k = gather(pb, pb.qkv.k, false),
                            v = gather(pb, pb.qkv.v, false), dout = gather(pb, pb.dout_set.q, true);
  restride(c.qkv.q), restride(c.qkv.k), restride(c.qkv.v), restride(c.dout_set.q);
  upload_dense(c, q, c.qkv.q, true);
  upload_dense(c, k, c.qkv.k, false);
  upload_dense(c, v, c.qkv.v, false);
  upload_dense(c, dout, c.dout_set.q, true);
  return c;
}

Case padded_case() {
  Case c;
  c.name = "bf16_d128_h4x2_q192_k320_padded";
  c.dtype = FA_DTYPE_BFLOAT16;
  c.d = 128, c.batch = 2, c.hq = 4, c.hk = 2, c.nq = 192, c.nk = 320;
  c.layout = Layout::Padded;
  return c;
}

// One FA3 forward; false (with a skip recorded) when the build or GPU has none.
bool forward_fa3(const Problem& pb, const Reference& ref, const char* what) {
  SCOPED_TRACE(what);
  TensorSet outs = make_outputs(pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(pb, &lse_t);
  std::string msg;
  switch (classify(run_forward_api(pb, outs.q, &lse_t, options_for(pb.c, FA_ALGO_FA3)), pb.c, FA_ALGO_FA3, &msg)) {
    case CallOutcome::Unsupported: return false;
    case CallOutcome::Failed: ADD_FAILURE() << msg; return false;
    case CallOutcome::Ran: break;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(check_rule("O", gather(pb, outs.q, true), ref.o, ref.n_o, false, nullptr));
  EXPECT_TRUE(check_rule("LSE", lse_to_host(pb, lse_t), ref.lse, ref.n_lse, true, nullptr));
  return true;
}

TEST(TmaMemo, Fa3ForwardSameAddressNewStrides) {
  FA_REQUIRE_GPU();
  auto pb = make_problem(padded_case());
  Reference ref;
  compute_reference(*pb, false, &ref);
  if (!forward_fa3(*pb, ref, "padded, first call")) GTEST_SKIP() << "no FA3 forward for this case here";
  const Counters before_repeat = now();
  ASSERT_TRUE(forward_fa3(*pb, ref, "padded, repeated"));
  if (!memo_off()) {
    EXPECT_EQ(now().builds, before_repeat.builds) << "a repeated call rebuilt its descriptors";
    EXPECT_GE(now().hits - before_repeat.hits, 3u);
  }
  const Problem same_memory = contiguous_over(*pb);
  const Counters before_new = now();
  ASSERT_TRUE(forward_fa3(same_memory, ref, "contiguous over the same addresses"));
  if (!memo_off()) EXPECT_GE(now().builds - before_new.builds, 3u) << "Q, K and V changed strides";
}

// Backward: Q and dO share one call site, K and V one each; all four change strides.
bool backward_fa3(const Problem& pb, const Reference& ref, const char* what, Counters* before_bwd) {
  SCOPED_TRACE(what);
  TensorSet outs = make_outputs(pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(pb, &lse_t);
  forward_for_backward(pb, ref, outs.q, lse_t, nullptr);
  TensorSet g = make_outputs(pb, true);
  *before_bwd = now();
  std::string msg;
  switch (classify(run_backward_api(pb, outs.q, lse_t, g, options_for(pb.c, FA_ALGO_FA3)), pb.c, FA_ALGO_FA3, &msg)) {
    case CallOutcome::Unsupported: return false;
    case CallOutcome::Failed: ADD_FAILURE() << msg; return false;
    case CallOutcome::Ran: break;
  }
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(
      check_rule("dQ", gather(pb, g.q, true), ref.dq, ref.n_dq, false, nullptr, &ref.flip_dq));
  EXPECT_TRUE(
      check_rule("dK", gather(pb, g.k, false), ref.dk, ref.n_dk, false, nullptr, &ref.flip_dk));
  EXPECT_TRUE(
      check_rule("dV", gather(pb, g.v, false), ref.dv, ref.n_dv, false, nullptr, &ref.flip_dv));
  return true;
}

TEST(TmaMemo, Fa3BackwardSameAddressNewStrides) {
  FA_REQUIRE_GPU();
  Case c = padded_case();
  c.causal = true;
  auto pb = make_problem(c);
  Reference ref;
  compute_reference(*pb, true, &ref);
  Counters before{};
  if (!backward_fa3(*pb, ref, "padded", &before)) GTEST_SKIP() << "no FA3 backward for this case here";
  const Problem same_memory = contiguous_over(*pb);
  ASSERT_TRUE(backward_fa3(same_memory, ref, "contiguous over the same addresses", &before));
  if (!memo_off()) EXPECT_GE(now().builds - before.builds, 4u) << "Q, dO, K and V changed strides";
}

}  // namespace
}  // namespace fa::cuda_test
