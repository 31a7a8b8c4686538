// The launch path's CUDA state handling:
//  - KernelsRunAfterDeviceReset: cudaFuncSetAttribute(max dynamic smem) is per context, and the
//    launch cache (src/cuda/common/launch_cache.hpp) keys it by context id. After a
//    cudaDeviceReset() the kernels (all > 48 KB of shared memory at d128) must still launch: a
//    memo keyed by device alone would skip the attribute and the launch would fail. The reset
//    would invalidate every other test's device memory, so the body runs in a child process
//    (this binary, re-run with a filter on the disabled child test).
//  - RefusesWhileAnErrorIsPending: an error the caller left pending must be neither reported as
//    ours by a launch check nor cleared: the call refuses, names it, and leaves it in place.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

#include "harness.hpp"

namespace fa::cuda_test {
namespace {

Case reset_case() {
  Case c;
  c.name = "bf16_d128_h4x2_q500_causal";
  c.dtype = FA_DTYPE_BFLOAT16;
  c.d = 128, c.batch = 1, c.hq = 4, c.hk = 2, c.nq = 500, c.nk = 500, c.causal = true;
  return c;
}

// One forward + backward through AUTO, checked against the reference. Everything it allocates
// is freed before it returns (the caller resets the device next).
void forward_backward_once(const char* phase) {
  SCOPED_TRACE(phase);
  const Case c = reset_case();
  auto pb = make_problem(c);
  Reference ref;
  compute_reference(*pb, true, &ref);
  TensorSet outs = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  // forward_for_backward throws on a forward failure other than a missing kernel.
  const std::string src = forward_for_backward(*pb, ref, outs.q, lse_t, nullptr);
  std::printf("%s: forward from %s\n", phase, src.c_str());
  if (src == "ours") {
    EXPECT_TRUE(check_rule("O", gather(*pb, outs.q, true), ref.o, ref.n_o, false, nullptr));
  }
  TensorSet g = make_outputs(*pb, true);
  std::string msg;
  switch (classify(run_backward_api(*pb, outs.q, lse_t, g, options_for(c, FA_ALGO_AUTO)), c, FA_ALGO_AUTO, &msg)) {
    case CallOutcome::Unsupported: GTEST_SKIP() << msg;
    case CallOutcome::Failed: FAIL() << msg;
    case CallOutcome::Ran: break;
  }
  FA_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(
      check_rule("dQ", gather(*pb, g.q, true), ref.dq, ref.n_dq, false, nullptr, &ref.flip_dq));
  EXPECT_TRUE(
      check_rule("dK", gather(*pb, g.k, false), ref.dk, ref.n_dk, false, nullptr, &ref.flip_dk));
}

// Run only as the child of KernelsRunAfterDeviceReset (disabled tests never run by default).
TEST(CudaContextChild, DISABLED_ForwardBackwardAcrossReset) {
  FA_REQUIRE_GPU();
  forward_backward_once("before cudaDeviceReset");
  if (HasFatalFailure() || IsSkipped()) return;
  FA_CUDA_CHECK(cudaDeviceReset());
  forward_backward_once("after cudaDeviceReset");
}

TEST(CudaContext, KernelsRunAfterDeviceReset) {
  FA_REQUIRE_GPU();
  std::array<char, 4096> exe{};
  const ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  ASSERT_GT(n, 0) << "cannot find this test binary (/proc/self/exe)";
  // GTEST_OUTPUT unset: the child must not overwrite the parent's report file.
  const std::string cmd = std::string("env -u GTEST_OUTPUT '") + exe.data() +
                          "' --gtest_also_run_disabled_tests "
                          "--gtest_filter=CudaContextChild.DISABLED_ForwardBackwardAcrossReset 2>&1";
  std::fflush(nullptr);
  FILE* f = popen(cmd.c_str(), "r");
  ASSERT_NE(f, nullptr) << "popen failed";
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t r = std::fread(buf.data(), 1, buf.size(), f)) out.append(buf.data(), r);
  const int status = pclose(f);
  if (out.find("[  SKIPPED ] 1 test") != std::string::npos)
    GTEST_SKIP() << "the child skipped (no kernel for the case in this build):\n" << out;
  EXPECT_EQ(status, 0) << "child process output:\n" << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << "child process output:\n" << out;
}

TEST(CudaContext, RefusesWhileAnErrorIsPending) {
  FA_REQUIRE_GPU();
  Case c = reset_case();
  c.nq = c.nk = 64;
  auto pb = make_problem(c);
  TensorSet outs = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  const fa_options opt = options_for(c, FA_ALGO_AUTO);
  FA_CUDA_CHECK(cudaGetLastError());

  // A failed allocation (1 EiB) the caller did not clear: a non-sticky error, pending on this
  // thread.
  void* huge = nullptr;
  const cudaError_t provoked = cudaMalloc(&huge, size_t(1) << 60);
  ASSERT_NE(provoked, cudaSuccess) << "a 1 EiB allocation succeeded";
  const fa_status st = run_forward_api(*pb, outs.q, &lse_t, opt);
  const std::string err = fa_last_error();
  EXPECT_EQ(st, FA_ERROR_CUDA) << err;
  EXPECT_NE(err.find("already pending"), std::string::npos) << err;
  EXPECT_NE(err.find(cudaGetErrorName(provoked)), std::string::npos) << err;
  EXPECT_EQ(cudaGetLastError(), provoked) << "the caller's pending error was cleared by the call";
  for (uint8_t x : outs.buffers[0]->to_host_bytes()) ASSERT_EQ(x, 0xFF) << "a refused call wrote its output";

  // Cleared, the same call runs (or is a visible skip where the build lacks the kernel).
  std::string msg;
  switch (classify(run_forward_api(*pb, outs.q, &lse_t, opt), c, FA_ALGO_AUTO, &msg)) {
    case CallOutcome::Unsupported: GTEST_SKIP() << msg;
    case CallOutcome::Failed: FAIL() << msg;
    case CallOutcome::Ran: break;
  }
  FA_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace fa::cuda_test
