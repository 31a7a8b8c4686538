// Deterministic backward (fa_options.deterministic = 1): 100 runs per case must give
// byte-identical dQ, dK and dV (issue 6), and run 0 must pass the 2x rule against the float64
// reference. The cases cover what changes the order or the set of dQ contributions: causal and
// sliding-window masks (skipped key blocks), query blocks that see no key at all (Nq > Nk causal,
// windows past the keys), varlen with empty q and k sequences, seqused_k, softcap, head dims
// 64/128/256, GQA/MQA (several KV heads' CTAs adding into one dQ block), Nq << Nk (every key
// block of a query block contends) and grids of several waves. Each call runs under a watchdog:
// an ordered dQ turn that is skipped would deadlock, and the test then fails with a message
// instead of hanging the suite.
//
// Test names: Cases/CudaBwdDeterminism.BitIdentical100Runs/<case>_<algo> (algo: fa2, fa3, the
// generations with a deterministic mode). A kernel the build lacks is a visible skip.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/common/env.hpp"
#include "harness.hpp"

namespace fa::cuda_test {
namespace {

// Under compute-sanitizer a run is 10-100x slower: FA_TEST_DET_RUNS (>= 2) and
// FA_TEST_WATCHDOG_S (seconds) let a sanitizer pass check a couple of runs per case with a longer
// watchdog; unset, the suite's own numbers.
int det_runs() {
  const int n = cuda::env_int("FA_TEST_DET_RUNS", 100);
  return n >= 2 ? n : 100;
}
double watchdog_seconds() {
  const int s = cuda::env_int("FA_TEST_WATCHDOG_S", 10);
  return s > 0 ? s : 10;
}

Case mk(const char* name, int d, int batch, int hq, int hk, int64_t nq, int64_t nk) {
  Case c;
  c.name = name;
  c.dtype = FA_DTYPE_BFLOAT16;
  c.d = d, c.batch = batch, c.hq = hq, c.hk = hk, c.nq = nq, c.nk = nk;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  {  // The original issue-6 case: causal GQA 4:1.
    Case c = mk("d128_causal_gqa", 128, 2, 8, 2, 1000, 1000);
    c.causal = true;
    v.push_back(c);
  }
  {  // Non-causal MQA, few queries, many keys: every key block adds into every dQ block.
    v.push_back(mk("d128_mqa_q300_k1000", 128, 1, 8, 1, 300, 1000));
  }
  {  // Causal with Nq > Nk (bottom-right): rows < 700 see no key, whole query blocks get no turn.
    Case c = mk("d128_causal_q1000_k300", 128, 1, 4, 2, 1000, 300);
    c.causal = true;
    v.push_back(c);
  }
  {  // Sliding window: each query block meets a few key blocks, others are skipped.
    Case c = mk("d128_window64_64", 128, 1, 4, 2, 1000, 1000);
    c.window_left = 64, c.window_right = 64;
    v.push_back(c);
  }
  {  // Window past the keys: rows < 436 see nothing, keys are read by some query blocks only.
    Case c = mk("d128_window64_64_q1000_k500", 128, 1, 4, 2, 1000, 500);
    c.window_left = 64, c.window_right = 64;
    v.push_back(c);
  }
  {  // Softcap (its own instance) with causal.
    Case c = mk("d128_causal_softcap30", 128, 1, 6, 2, 600, 600);
    c.causal = true, c.softcap = 30.f;
    v.push_back(c);
  }
  {  // Varlen with empty q and k sequences, a 1-row sequence with no keys, causal.
    Case c = mk("d128_varlen_empty_causal", 128, 0, 4, 2, 0, 0);
    c.causal = true;
    c.seqlens_q = {0, 300, 777, 1, 0, 129};
    c.seqlens_k = {5, 300, 1000, 0, 0, 200};
    v.push_back(c);
  }
  {  // The same with seqused_k: keys past it are unread (their dK/dV must be 0).
    Case c = mk("d128_varlen_seqused_k", 128, 0, 4, 2, 0, 0);
    c.causal = true;
    c.seqlens_q = {0, 300, 777, 1, 0, 129};
    c.seqlens_k = {5, 300, 1000, 0, 0, 200};
    c.seqused_k = {3, 300, 600, 0, 0, 64};
    v.push_back(c);
  }
  {  // Head dim 64, causal GQA.
    Case c = mk("d64_causal_gqa", 64, 2, 8, 2, 700, 700);
    c.causal = true;
    v.push_back(c);
  }
  {  // Head dim 256, causal MQA, and a varlen d256 case with an empty sequence.
    Case c = mk("d256_causal_mqa", 256, 1, 4, 1, 500, 500);
    c.causal = true;
    v.push_back(c);
    Case w = mk("d256_varlen_window", 256, 0, 4, 2, 0, 0);
    w.window_left = 100, w.window_right = 0;
    w.seqlens_q = {333, 0, 500};
    w.seqlens_k = {400, 17, 500};
    v.push_back(w);
  }
  {  // Several waves of CTAs (256 CTAs, one per SM at a time): a turn held by a CTA that is not
     // resident yet must not be waited for by all resident ones (forward progress), in ascending
     // (causal) and in descending (right-bounded window: reversed key-block order) turn order.
    Case c = mk("d128_causal_waves", 128, 4, 16, 8, 700, 1024);
    c.causal = true;
    v.push_back(c);
    Case w = mk("d128_window_waves", 128, 4, 8, 8, 1024, 1024);
    w.window_left = 256, w.window_right = 0;
    v.push_back(w);
  }
  {  // ~4 waves of FA3 CTAs on 132 SMs: later CTAs wait for turns of CTAs of earlier waves;
     // ascending (causal) and descending (right-bounded window) order, and d256 (the consumers
     // wait, RED path).
    Case c = mk("d128_causal_tiles4", 128, 8, 16, 16, 512, 512);
    c.causal = true;
    v.push_back(c);
    Case w = mk("d128_window_tiles4", 128, 8, 16, 16, 512, 512);
    w.window_left = 128, w.window_right = 0;
    v.push_back(w);
    Case d = mk("d256_causal_tiles", 256, 4, 16, 8, 512, 512);
    d.causal = true;
    v.push_back(d);
  }
  {  // No mask, d128 (the 80-query tile with FA_SM90_BWD_D128_NC_BLOCK_M=80: its blocks' turn
     // counters): varlen with empty sequences and lengths around multiples of 80, and ~4 waves.
    Case c = mk("d128_varlen_noncausal", 128, 0, 4, 2, 0, 0);
    c.seqlens_q = {0, 79, 241, 1, 320, 81};
    c.seqlens_k = {5, 300, 1000, 0, 0, 200};
    v.push_back(c);
    v.push_back(mk("d128_noncausal_tiles4", 128, 8, 16, 8, 400, 512));
  }
  {  // More than 32 key blocks of 128, past the first-adder store's limit outside this mode (the
     // deterministic mode always takes it: turn 0 stores, the others add), non-causal and causal.
    v.push_back(mk("d128_noncausal_k4200", 128, 1, 4, 2, 500, 4200));
    // The same path at a size racecheck and synccheck finish: 18 key blocks taking turns on one
    // 80-row dQ block (turn 0 stores, 17 add).
    v.push_back(mk("d128_q80_k2300", 128, 1, 1, 1, 80, 2300));
    Case c = mk("d128_causal_long", 128, 1, 2, 1, 4200, 4200);
    c.causal = true;
    v.push_back(c);
  }
  {  // Head dim 64 with softcap and a window on MQA.
    Case c = mk("d64_window_softcap_mqa", 64, 1, 8, 1, 900, 900);
    c.window_left = 128, c.window_right = 32, c.softcap = 30.f;
    v.push_back(c);
  }
  return v;
}

using Param = std::tuple<Case, fa_algo>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param).name + "_" + algo_name(std::get<1>(info.param));
}

class CudaBwdDeterminism : public ::testing::TestWithParam<Param> {};

TEST_P(CudaBwdDeterminism, BitIdentical100Runs) {
  FA_REQUIRE_GPU();
  const auto& [c, algo] = GetParam();
  CachedProblem& cache = cached_problem(c, true);
  const Problem* pb = cache.pb.get();
  const Reference& ref = cache.ref;
  SCOPED_TRACE(c.describe() + ", algo " + algo_name(algo) + ", deterministic, seed " + std::to_string(pb->seed) +
               " (FA_TEST_SEED replays it)");

  cudaStream_t stream;
  FA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};

  TensorSet outs = make_outputs(*pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(*pb, &lse_t);
  const std::string fwd_source = forward_for_backward(*pb, ref, outs.q, lse_t, stream);
  RecordProperty("forward", fwd_source);

  fa_options opt = options_for(c, algo);
  opt.deterministic = 1;
  opt.stream = stream;
  std::string msg;
  size_t ws_bytes = 0;
  fa_status st =
      fa_backward_workspace_size(&pb->qkv.q, &pb->qkv.k, &pb->qkv.v, pb->varlen(), &opt, &ws_bytes);
  switch (classify(st, c, algo, &msg)) {
    case CallOutcome::Unsupported: GTEST_SKIP() << msg;
    case CallOutcome::Failed: FAIL() << "workspace size: " << msg;
    case CallOutcome::Ran: break;
  }
  // A caller workspace: runs reuse the same scratch (turn counters and the dQ accumulator are
  // re-initialised by every call, which is part of what is checked).
  DeviceBuffer ws(ws_bytes);
  opt.workspace = ws_bytes ? ws.get() : nullptr;
  opt.workspace_bytes = ws_bytes;

  TensorSet g = make_outputs(*pb, true);
  std::vector<uint8_t> first[3];
  const int runs = det_runs();
  const double watchdog = watchdog_seconds();
  for (int run = 0; run < runs; ++run) {
    for (auto& b : g.buffers)  // fresh poison: an element written only sometimes differs
      FA_CUDA_CHECK(cudaMemsetAsync(b->get(), 0xFF, b->bytes(), stream));
    st = run_backward_api(*pb, outs.q, lse_t, g, opt);
    if (run == 0) {
      switch (classify(st, c, algo, &msg)) {
        case CallOutcome::Unsupported: GTEST_SKIP() << msg;
        case CallOutcome::Failed: FAIL() << msg;
        case CallOutcome::Ran: break;
      }
    } else {
      ASSERT_EQ(st, FA_OK) << "run " << run << ": " << fa_last_error();
    }
    ASSERT_TRUE(wait_with_watchdog(stream, watchdog,
                                   std::string("deterministic backward run ") + std::to_string(run)));
    if (run == 0) {
      EXPECT_TRUE(
          check_rule("dQ", gather(*pb, g.q, true), ref.dq, ref.n_dq, false, nullptr, &ref.flip_dq));
      EXPECT_TRUE(check_rule("dK", gather(*pb, g.k, false), ref.dk, ref.n_dk, false, nullptr,
                             &ref.flip_dk));
      EXPECT_TRUE(check_rule("dV", gather(*pb, g.v, false), ref.dv, ref.n_dv, false, nullptr,
                             &ref.flip_dv));
    }
    for (int t = 0; t < 3; ++t) {
      std::vector<uint8_t> b = g.buffers[size_t(t)]->to_host_bytes();
      if (run == 0) {
        first[t] = std::move(b);
        continue;
      }
      if (b.size() != first[t].size() || std::memcmp(b.data(), first[t].data(), b.size()) != 0) {
        size_t at = 0;
        while (at < b.size() && b[at] == first[t][at]) ++at;
        FAIL() << "d" << "QKV"[t] << " differs from run 0 at run " << run << " (first differing byte " << at
               << " of " << b.size() << ") with deterministic = 1";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaBwdDeterminism,
                         ::testing::Combine(::testing::ValuesIn(cases()), ::testing::Values(FA_ALGO_FA3, FA_ALGO_FA2)),
                         param_name);

}  // namespace
}  // namespace fa::cuda_test
