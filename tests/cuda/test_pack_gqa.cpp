// GQA/MQA head packing of the Hopper forward (src/cuda/sm90/fwd_pack_gqa.hpp): short queries with
// G query heads per KV head, where a packed tile holds rows (query position, head in group).
// Every case runs FA3 and AUTO against the float64 reference with the 2x rule (O, LSE, fully
// masked rows = 0). Under FA_SM90_PACK_GQA=auto (default) the short-Nq cases with G = 2, 4, 8
// pack and G = 7 does not (G must divide the 128-row tile); run the suite again with
// FA_SM90_PACK_GQA=1 (every G | 128 packs, long queries too) and =0 (nothing packs) to cover
// both paths of every case: the switch is read once per process.
//
// Test names: PackGqa/CudaPackGqa.Matches/<case>_<algo>.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "harness.hpp"

namespace fa::cuda_test {
namespace {

struct Spec {
  fa_dtype dt = FA_DTYPE_BFLOAT16;
  int d = 128, batch = 1, hk = 1, group = 2;
  int64_t nq = 1, nk = 1;
  bool causal = false;
  int wl = -1, wr = -1;
  float softcap = 0.f;
  Layout layout = Layout::Contiguous;
  std::vector<int> sq, sk, used;  // varlen when sq is non-empty
};

Case to_case(const Spec& s) {
  Case c;
  c.dtype = s.dt, c.d = s.d, c.batch = s.batch, c.hq = s.hk * s.group, c.hk = s.hk;
  c.nq = s.nq, c.nk = s.nk, c.causal = s.causal, c.window_left = s.wl, c.window_right = s.wr;
  c.softcap = s.softcap, c.layout = s.layout;
  c.seqlens_q = s.sq, c.seqlens_k = s.sk, c.seqused_k = s.used;
  if (c.varlen()) c.batch = int(s.sq.size()), c.nq = c.nk = 0;
  std::ostringstream n;
  n << (s.dt == FA_DTYPE_FLOAT16 ? "fp16" : "bf16") << "_d" << s.d << "_g" << s.group << "_hk"
    << s.hk;
  if (c.varlen())
    n << "_varlen" << s.sq.size() << (s.used.empty() ? "" : "_used");
  else
    n << "_b" << s.batch << "_q" << s.nq << "_k" << s.nk;
  if (s.causal) n << "_causal";
  if (s.wl >= 0 || s.wr >= 0)
    n << "_w" << (s.wl < 0 ? std::string("inf") : std::to_string(s.wl)) << "_"
      << (s.wr < 0 ? std::string("inf") : std::to_string(s.wr));
  if (s.softcap > 0) n << "_cap" << int(s.softcap);
  if (s.layout != Layout::Contiguous) n << "_" << layout_name(s.layout);
  c.name = n.str();
  return c;
}

std::vector<Case> pack_cases() {
  std::vector<Spec> v;
  // 1. The grid of the issue: G = 2, 4, 8 (pack) and 7 (falls back), short Nq, Nk from 1 to
  //    past a few key blocks, causal and not. Hk = 2 for G = 2, 4 (two KV heads per CTA walk).
  for (int g : {2, 4, 8, 7})
    for (int64_t nq : {1, 3, 17, 64})
      for (int64_t nk : {1, 100, 4097})
        for (bool causal : {false, true}) {
          Spec s;
          s.group = g, s.hk = g <= 4 ? 2 : 1, s.nq = nq, s.nk = nk, s.causal = causal;
          v.push_back(s);
        }
  // 2. Windows: left/right bounded, right-only, and rows that see no key (Nk < Nq with a
  //    causal-like right bound).
  for (int64_t nq : {17, 64})
    for (int64_t nk : {100, 4097}) {
      Spec s;
      s.group = 8, s.hk = 2, s.nq = nq, s.nk = nk;
      s.wl = 32, s.wr = 0;
      v.push_back(s);
      s.wl = 16, s.wr = 16;
      v.push_back(s);
      s.wl = -1, s.wr = 8;
      v.push_back(s);
    }
  {
    Spec s;
    s.group = 4, s.hk = 2, s.nq = 64, s.nk = 17, s.causal = true;  // rows < 47 see no key
    v.push_back(s);
    s.causal = false, s.wl = 4, s.wr = 4, s.nk = 30;  // narrow band, rows past Nk + 4 see nothing
    v.push_back(s);
  }
  // 3. Several packed tiles per KV head (Nq·G > 128), a partial last tile, MQA with G = 16, 32.
  for (auto [g, nq] : {std::pair<int, int64_t>{8, 200}, {8, 129}, {4, 100}, {16, 33}, {32, 5}}) {
    Spec s;
    s.group = g, s.hk = 1, s.nq = nq, s.nk = 1000;
    v.push_back(s);
    s.causal = true;
    v.push_back(s);
  }
  // 4. Many tiles: several waves on 132 SMs through the persistent scheduler.
  {
    Spec s;
    s.group = 4, s.hk = 16, s.batch = 16, s.nq = 33, s.nk = 700, s.causal = true;
    v.push_back(s);
    s.group = 8, s.hk = 4, s.batch = 8, s.nq = 1, s.nk = 8192, s.causal = false;  // decode-like
    v.push_back(s);
  }
  // 5. Other head dims (Q's swizzle chunks: d64 1, d96 3 of 32 columns, d192 3, d256 4), fp16,
  //    softcap.
  for (int d : {64, 96, 192, 256}) {
    Spec s;
    s.d = d, s.group = 4, s.hk = 2, s.batch = 2, s.nq = 17, s.nk = 300, s.causal = true;
    v.push_back(s);
  }
  // Unmasked d64 has 192-row tiles (FA_SM90_FWD_D64_BLOCK_M, 3 warpgroups; masked: 128): one
  // packed tile, and 8 × 50 = 400 rows = two full tiles and a 16-row partial one.
  for (auto [g, nq] : {std::pair<int, int64_t>{4, 17}, {8, 50}}) {
    Spec s;
    s.d = 64, s.group = g, s.hk = 2, s.batch = 2, s.nq = nq, s.nk = 300;
    v.push_back(s);
  }
  {
    Spec s;
    s.dt = FA_DTYPE_FLOAT16, s.group = 8, s.hk = 2, s.batch = 2, s.nq = 3, s.nk = 1000;
    v.push_back(s);
    s.dt = FA_DTYPE_BFLOAT16, s.softcap = 30.f, s.wl = 64, s.wr = 0, s.nq = 17;
    v.push_back(s);
  }
  // 6. Layouts: head-major storage (head stride > row stride), padded strides, packed qkv.
  for (Layout l : {Layout::HeadMajor, Layout::Padded, Layout::PackedQKV}) {
    Spec s;
    s.group = 8, s.hk = 2, s.batch = 2, s.nq = 17, s.nk = 333, s.causal = true, s.layout = l;
    // One qkv buffer holds as many key rows as query rows: a short prompt attending to itself.
    if (l == Layout::PackedQKV) s.nk = s.nq;
    v.push_back(s);
  }
  // 7. Varlen (packs by the longest sequence): empty sequences, seqused_k, a window.
  {
    Spec s;
    s.group = 4, s.hk = 2, s.causal = true;
    s.sq = {1, 0, 17, 64, 3}, s.sk = {100, 5, 0, 4097, 3};
    v.push_back(s);
    s.used = {50, 5, 0, 1000, 1};
    v.push_back(s);
    s.used.clear(), s.causal = false, s.wl = 16, s.wr = 16, s.group = 8;
    s.sq = {33, 7, 0}, s.sk = {200, 1, 64};
    v.push_back(s);
  }
  std::vector<Case> out;
  std::map<std::string, int> seen;
  for (const Spec& s : v) {
    Case c = to_case(s);
    if (int n = seen[c.name]++) c.name += "_" + std::to_string(n);
    out.push_back(c);
  }
  return out;
}

using Param = std::tuple<Case, fa_algo>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param).name + "_" + algo_name(std::get<1>(info.param));
}

class CudaPackGqa : public ::testing::TestWithParam<Param> {};

TEST_P(CudaPackGqa, Matches) {
  FA_REQUIRE_GPU();
  const auto& [c, algo] = GetParam();
  CachedProblem& cache = cached_problem(c, false);
  const Problem& pb = *cache.pb;
  const char* mode = std::getenv("FA_SM90_PACK_GQA");
  SCOPED_TRACE(c.describe() + ", algo " + algo_name(algo) +
               ", FA_SM90_PACK_GQA=" + (mode ? mode : "auto") + ", seed " +
               std::to_string(pb.seed) + " (FA_TEST_SEED replays it)");

  TensorSet outs = make_outputs(pb, false);
  fa_tensor lse_t;
  auto lse_buf = make_lse(pb, &lse_t);
  const fa_options opt = options_for(c, algo);
  const fa_status st = run_forward_api(pb, outs.q, &lse_t, opt);
  std::string msg;
  switch (classify(st, c, algo, &msg)) {
    case CallOutcome::Unsupported:
      GTEST_SKIP() << msg;
    case CallOutcome::Failed:
      FAIL() << msg;
    case CallOutcome::Ran:
      break;
  }
  FA_CUDA_CHECK(cudaDeviceSynchronize());
  FA_CUDA_CHECK(cudaGetLastError());

  const std::vector<double> o = gather(pb, outs.q, true);
  const std::vector<double> lse = lse_to_host(pb, lse_t);
  RuleResult ro, rl;
  EXPECT_TRUE(check_rule("O", o, cache.ref.o, cache.ref.n_o, false, &ro));
  EXPECT_TRUE(
      check_rule("LSE", lse, cache.ref.lse, cache.ref.n_lse, true, &rl, &cache.ref.lse_allowance));
  EXPECT_TRUE(check_masked_rows_zero(pb, o, cache.ref.lse));
  // The packed epilogue scatters rows over heads: nothing outside O's view may be written.
  if (c.layout == Layout::Padded || c.layout == Layout::HeadMajor) {
    EXPECT_TRUE(check_untouched_outside(*outs.buffers[0], {&outs.q}));
  }
  RecordProperty("err_O", rule_property(ro));
  RecordProperty("err_LSE", rule_property(rl));
}

INSTANTIATE_TEST_SUITE_P(PackGqa, CudaPackGqa,
                         ::testing::Combine(::testing::ValuesIn(pack_cases()),
                                            ::testing::Values(FA_ALGO_AUTO, FA_ALGO_FA3)),
                         param_name);

}  // namespace
}  // namespace fa::cuda_test
