// Properties of the CUDA path beyond accuracy: run-to-run bit-identical forward with a
// caller-provided workspace and a non-default stream, lse = NULL, and rejection of a CPU tensor
// given to the CUDA backend (the full misuse suite lives with the validation tests). The
// deterministic backward (100 runs per case over masks, varlen, head dims) is test_determinism.cpp.
#include <gtest/gtest.h>

#include <vector>

#include "harness.hpp"

namespace fa::cuda_test {
namespace {

Case determinism_case() {
  Case c;
  c.name = "bf16_d128_h8x2_b2_q1000_k1000_causal";
  c.dtype = FA_DTYPE_BFLOAT16;
  c.d = 128, c.batch = 2, c.hq = 8, c.hk = 2, c.nq = 1000, c.nk = 1000, c.causal = true;
  return c;
}

class CudaDeterminism : public ::testing::TestWithParam<fa_algo> {};

// Runs the call into fresh poisoned outputs each time and compares the bytes with run 0.
TEST_P(CudaDeterminism, ForwardBitIdentical) {
  FA_REQUIRE_GPU();
  const fa_algo algo = GetParam();
  const Case c = determinism_case();
  auto pb = make_problem(c);
  cudaStream_t stream;
  FA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  fa_options opt = options_for(c, algo);
  opt.stream = stream;
  size_t ws_bytes = 0;
  std::string msg;
  fa_status st = fa_forward_workspace_size(&pb->qkv.q, &pb->qkv.k, &pb->qkv.v, nullptr, &opt, &ws_bytes);
  CallOutcome oc = classify(st, c, algo, &msg);
  if (oc != CallOutcome::Ran) cudaStreamDestroy(stream);
  if (oc == CallOutcome::Unsupported) GTEST_SKIP() << msg;
  ASSERT_EQ(oc, CallOutcome::Ran) << msg;
  DeviceBuffer ws(ws_bytes);
  opt.workspace = ws_bytes ? ws.get() : nullptr;
  opt.workspace_bytes = ws_bytes;

  std::vector<uint8_t> o0, l0;
  for (int run = 0; run < 20; ++run) {
    TensorSet outs = make_outputs(*pb, false);
    fa_tensor lse_t;
    auto lse_buf = make_lse(*pb, &lse_t);
    st = fa_forward(&pb->qkv.q, &pb->qkv.k, &pb->qkv.v, &outs.q, &lse_t, &opt);
    ASSERT_EQ(st, FA_OK) << fa_last_error();
    FA_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint8_t> o = outs.buffers[0]->to_host_bytes(), l = lse_buf->to_host_bytes();
    if (run == 0) {
      o0 = std::move(o), l0 = std::move(l);
      continue;
    }
    ASSERT_TRUE(o == o0) << "forward O differs from run 0 at run " << run;
    ASSERT_TRUE(l == l0) << "forward LSE differs from run 0 at run " << run;
  }
  cudaStreamDestroy(stream);
}

INSTANTIATE_TEST_SUITE_P(Algos, CudaDeterminism,
                         ::testing::Values(FA_ALGO_AUTO, FA_ALGO_FA1, FA_ALGO_FA2, FA_ALGO_FA3),
                         [](const ::testing::TestParamInfo<fa_algo>& i) { return std::string(algo_name(i.param)); });

// lse = NULL is allowed in the forward and must not change O.
TEST(CudaApi, ForwardWithoutLseGivesSameOutput) {
  FA_REQUIRE_GPU();
  Case c = determinism_case();
  c.nq = c.nk = 300;
  auto pb = make_problem(c);
  const fa_options opt = options_for(c, FA_ALGO_AUTO);
  TensorSet a = make_outputs(*pb, false), b = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  std::string msg;
  const CallOutcome first =
      classify(fa_forward(&pb->qkv.q, &pb->qkv.k, &pb->qkv.v, &a.q, &lse_t, &opt), c, FA_ALGO_AUTO, &msg);
  // A build filtered to a few instances (FA_INSTANCE_FILTER) may lack this case's kernel.
  if (first == CallOutcome::Unsupported) GTEST_SKIP() << msg;
  ASSERT_EQ(first, CallOutcome::Ran) << msg;
  ASSERT_EQ(classify(fa_forward(&pb->qkv.q, &pb->qkv.k, &pb->qkv.v, &b.q, nullptr, &opt), c, FA_ALGO_AUTO, &msg),
            CallOutcome::Ran)
      << msg;
  FA_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(a.buffers[0]->to_host_bytes() == b.buffers[0]->to_host_bytes());
}

// Host memory described as a CPU tensor, or mixed with CUDA tensors, is refused before any
// kernel runs, and outputs stay untouched.
TEST(CudaApi, RejectsCpuTensorsForCudaBackend) {
  FA_REQUIRE_GPU();
  Case c = determinism_case();
  c.nq = c.nk = 64, c.batch = 1;
  auto pb = make_problem(c);
  TensorSet outs = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  const fa_options opt = options_for(c, FA_ALGO_AUTO);  // backend = CUDA

  // k is host memory marked CPU while q is on the GPU.
  std::vector<uint16_t> host_k(size_t(c.nk) * c.hk * c.d, 0x3c00);
  fa_tensor k_cpu = pb->qkv.k;
  k_cpu.data = host_k.data();
  k_cpu.device = FA_DEVICE_CPU;
  fa_status st = fa_forward(&pb->qkv.q, &k_cpu, &pb->qkv.v, &outs.q, &lse_t, &opt);
  EXPECT_EQ(st, FA_ERROR_INVALID_ARGUMENT) << fa_last_error();
  EXPECT_NE(std::string(fa_last_error()).find("k is on CPU"), std::string::npos) << fa_last_error();

  // Every tensor on the host, but backend = CUDA requested.
  std::vector<uint16_t> hq(size_t(c.nq) * c.hq * c.d, 0x3c00), hv(host_k), ho(hq.size(), 0xFFFF);
  fa_tensor q = pb->qkv.q, k = k_cpu, v = pb->qkv.v, o = outs.q;
  for (fa_tensor* t : {&q, &v, &o}) t->device = FA_DEVICE_CPU;
  q.data = hq.data(), v.data = hv.data(), o.data = ho.data();
  st = fa_forward(&q, &k, &v, &o, nullptr, &opt);
  EXPECT_EQ(st, FA_ERROR_INVALID_ARGUMENT) << fa_last_error();
  EXPECT_NE(std::string(fa_last_error()).find("CUDA backend"), std::string::npos) << fa_last_error();
  for (uint16_t x : ho) ASSERT_EQ(x, 0xFFFF) << "a rejected call wrote its output";

  // The GPU outputs of the first call were never written either.
  for (uint8_t x : outs.buffers[0]->to_host_bytes()) ASSERT_EQ(x, 0xFF);
  for (uint8_t x : lse_buf->to_host_bytes()) ASSERT_EQ(x, 0xFF);
}

}  // namespace
}  // namespace fa::cuda_test
