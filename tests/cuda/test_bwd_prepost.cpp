// The sm90 backward's pre/post passes on tensors their 16-byte vector form cannot touch
// (src/cuda/sm90/bwd_prepost.cuh): the preprocess reads O and dO, the dQ convert writes dQ, each
// with 16-byte accesses when a CTA's rows are 16-byte aligned and scalar ones otherwise (a
// per-CTA choice). The TMA loads need q/k/v/dO aligned and dK/dV only 4-byte alignment, so what
// can be off is: O (any offset/stride), dQ (any offset/stride) and dK/dV by an even element
// count. Each case builds such views over poisoned memory (O copied from an aligned forward
// output), runs the FA3 backward and checks dQ/dK/dV against the float64 reference with the 2x
// rule, and that nothing outside the views was written.
//
// Test names: CudaBwdPrepost.Unaligned/<case>. Skipped visibly when the build has no sm90
// backward kernel for the case (or the GPU is not sm90).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "harness.hpp"

namespace fa::cuda_test {
namespace {

// How one tensor of the [B, N, H, D] / [T, H, D] family is placed: an element offset from a
// 256-byte aligned allocation, and extra elements added to the head and row strides (0 keeps the
// contiguous value). Offsets/strides that are not multiples of 8 elements break 16-byte alignment.
struct Placement {
  int64_t offset = 0;
  int64_t head_pad = 0;
  int64_t row_pad = 0;
};

struct PrepostCase {
  Case c;
  Placement o, dq, dkv;
};

// A view of `rows` x `heads` x d over its own poisoned allocation, placed as `pl`.
struct PlacedView {
  std::shared_ptr<DeviceBuffer> buf;
  fa_tensor t{};
};

PlacedView placed_view(const Problem& pb, bool like_q, const Placement& pl) {
  const Case& c = pb.c;
  const bool vl = c.varlen();
  const int64_t rows = vl ? (like_q ? pb.total_q : pb.total_k) : (like_q ? c.nq : c.nk);
  const int64_t heads = like_q ? c.hq : c.hk, d = c.d, batch = vl ? 1 : c.batch;
  const int64_t hs = d + pl.head_pad, rs = heads * hs + pl.row_pad, bs = rows * rs;
  const size_t elems = size_t(pl.offset + batch * bs + 8);
  PlacedView v;
  v.buf = std::make_shared<DeviceBuffer>(elems * dtype_size(c.dtype));
  v.buf->poison();
  fa_tensor& t = v.t;
  t.data = static_cast<char*>(v.buf->get()) + pl.offset * int64_t(dtype_size(c.dtype));
  t.dtype = c.dtype;
  t.device = FA_DEVICE_CUDA;
  cudaGetDevice(&t.device_id);
  if (vl) {
    t.rank = 3;
    t.shape[0] = rows, t.shape[1] = heads, t.shape[2] = d;
    t.strides[0] = rs, t.strides[1] = hs, t.strides[2] = 1;
  } else {
    t.rank = 4;
    t.shape[0] = batch, t.shape[1] = rows, t.shape[2] = heads, t.shape[3] = d;
    t.strides[0] = bs, t.strides[1] = rs, t.strides[2] = hs, t.strides[3] = 1;
  }
  return v;
}

Case base(const char* name, int d, int batch, int hq, int hk, int64_t nq, int64_t nk, bool causal) {
  Case c;
  c.name = name;
  c.dtype = FA_DTYPE_BFLOAT16;
  c.d = d, c.batch = batch, c.hq = hq, c.hk = hk, c.nq = nq, c.nk = nk, c.causal = causal;
  return c;
}

std::vector<PrepostCase> cases() {
  std::vector<PrepostCase> v;
  // O one element off: every preprocess CTA takes the scalar O/dO loop.
  v.push_back({base("d128_o_off1", 128, 2, 4, 2, 300, 300, true), {1, 0, 0}, {}, {}});
  // dQ one element off: every convert CTA stores dQ element by element.
  v.push_back({base("d128_dq_off1", 128, 2, 4, 2, 300, 300, true), {}, {1, 0, 0}, {}});
  // Odd head stride, 16-byte row stride: head h is aligned only when h % 8 == 0, so vector and
  // scalar CTAs run in the same launch (both passes).
  v.push_back({base("d128_mixed_heads", 128, 1, 10, 2, 200, 333, false), {0, 1, 6}, {0, 1, 6}, {}});
  // Odd row strides (no CTA can vectorise), and dK/dV 4-byte but not 16-byte aligned (the main
  // kernel's paired 32-bit stores).
  v.push_back({base("d128_odd_rows_dkv_off2", 128, 1, 4, 4, 257, 300, false), {0, 0, 3}, {3, 0, 1}, {2, 2, 0}});
  // Varlen with empty and partial-block sequences, O and dQ off by one.
  {
    Case c = base("d128_varlen_o_dq_off1", 128, 0, 4, 2, 0, 0, true);
    c.seqlens_q = {17, 0, 300, 129, 1};
    c.seqlens_k = {40, 5, 300, 200, 0};
    v.push_back({c, {1, 0, 0}, {1, 0, 1}, {}});
  }
  // Other head dims (the vector form's lane grouping differs; the scalar one is generic).
  v.push_back({base("d64_o_dq_off1", 64, 1, 8, 2, 333, 400, true), {1, 0, 0}, {5, 0, 0}, {2, 0, 0}});
  v.push_back({base("d256_o_dq_off3", 256, 1, 2, 1, 200, 200, false), {3, 0, 0}, {3, 2, 0}, {}});
  {
    Case c = base("d128_softcap_window_dq_stride", 128, 1, 4, 2, 500, 500, false);
    c.softcap = 30.f, c.window_left = 64, c.window_right = 64;
    v.push_back({c, {0, 0, 1}, {0, 0, 7}, {}});
  }
  return v;
}

class CudaBwdPrepost : public ::testing::TestWithParam<PrepostCase> {};

TEST_P(CudaBwdPrepost, Unaligned) {
  FA_REQUIRE_GPU();
  const PrepostCase& pc = GetParam();
  const Case& c = pc.c;
  auto pb = make_problem(c);
  SCOPED_TRACE(c.describe() + ", algo fa3, seed " + std::to_string(pb->seed) + " (FA_TEST_SEED replays it)");
  Reference ref;
  compute_reference(*pb, true, &ref);

  // O from an aligned forward (or the reference), then copied into the placed view.
  TensorSet outs = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  RecordProperty("forward", forward_for_backward(*pb, ref, outs.q, lse_t, nullptr));
  PlacedView o = placed_view(*pb, true, pc.o);
  upload_dense(*pb, gather(*pb, outs.q, true), o.t, true);

  PlacedView dq = placed_view(*pb, true, pc.dq), dk = placed_view(*pb, false, pc.dkv),
             dv = placed_view(*pb, false, pc.dkv);
  TensorSet g;
  g.q = dq.t, g.k = dk.t, g.v = dv.t;
  const fa_options opt = options_for(c, FA_ALGO_FA3);
  std::string msg;
  switch (classify(run_backward_api(*pb, o.t, lse_t, g, opt), c, FA_ALGO_FA3, &msg)) {
    case CallOutcome::Unsupported: GTEST_SKIP() << msg;
    case CallOutcome::Failed: FAIL() << msg;
    case CallOutcome::Ran: break;
  }
  FA_CUDA_CHECK(cudaDeviceSynchronize());
  FA_CUDA_CHECK(cudaGetLastError());

  EXPECT_TRUE(
      check_rule("dQ", gather(*pb, g.q, true), ref.dq, ref.n_dq, false, nullptr, &ref.flip_dq));
  EXPECT_TRUE(
      check_rule("dK", gather(*pb, g.k, false), ref.dk, ref.n_dk, false, nullptr, &ref.flip_dk));
  EXPECT_TRUE(
      check_rule("dV", gather(*pb, g.v, false), ref.dv, ref.n_dv, false, nullptr, &ref.flip_dv));
  EXPECT_TRUE(check_untouched_outside(*dq.buf, {&g.q})) << "dQ";
  EXPECT_TRUE(check_untouched_outside(*dk.buf, {&g.k})) << "dK";
  EXPECT_TRUE(check_untouched_outside(*dv.buf, {&g.v})) << "dV";
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaBwdPrepost, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<PrepostCase>& i) { return i.param.c.name; });

}  // namespace
}  // namespace fa::cuda_test
