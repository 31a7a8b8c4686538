// fa_kvcache_forward on CUDA (src/cuda/decode/) against the float64 GPU reference, 2x rule.
//
// Each case builds a cache (contiguous [Bc, C, Hk, D], optionally through cache_batch_idx, or
// paged [pages, page_size, Hk, D] with a shuffled block table), fresh random q/cache/k_new,
// poisoned out/lse (0xFF: NaN), and calls the C ABI. Checks:
//   - the cache afterwards, byte for byte: the k_new/v_new rows at cache_seqlens[b] + i exactly,
//     every other byte unchanged;
//   - O and LSE against the reference: the cache rows 0..L_b-1 of each sequence are gathered
//     (from the cache as the call left it) into a varlen K/V, and q runs as varlen with Nq rows per
//     sequence, so the reference's masks (core::Mask, bottom-right) and length handling are the
//     forward's own;
//   - NaN never passes (check_rule), empty sequences (L_b = 0) give O = 0 and LSE = -inf.
// Names: Kv/CudaKvcache.Matches/<case>. FA_TEST_SEED=<n> replays one case's inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>

#include "core/validate.hpp"
#include "cuda/decode/decode_plan.hpp"
#include "harness.hpp"

namespace fa::cuda_test {
namespace {
namespace decode = fa::cuda::decode;

struct KvCase {
  std::string name;
  fa_dtype dtype = FA_DTYPE_BFLOAT16;
  int batch = 1, hq = 8, hk = 2, d = 128;
  int64_t nq = 1;
  std::vector<int> lens;   // L_b: keys each sequence attends over (cache_seqlens[b] + nnew)
  int64_t capacity = 0;    // contiguous: Nc; paged: pages_per_seq * page_size (rounded up)
  int page_size = 0;       // 0: contiguous cache
  bool batch_idx = false;  // contiguous: sequences use shuffled cache entries (Bc = B + 2)
  bool no_seqlens = false; // cache_seqlens = NULL: every sequence holds the capacity
  int64_t nnew = 0;
  bool causal = false;
  int wl = -1, wr = -1;
  float softcap = 0.f;
  int splits = 0;
  bool caller_workspace = false;  // pass fa_kvcache_workspace_size bytes as opt.workspace
};

// gtest prints a parameter on failure and in --gtest_list_tests: the case name, not its bytes.
void PrintTo(const KvCase& c, std::ostream* os) { *os << c.name; }

uint64_t test_seed() {
  if (const char* e = std::getenv("FA_TEST_SEED")) return std::strtoull(e, nullptr, 10);
  return std::random_device{}() * 0x9E3779B97F4A7C15ull + 1;
}

fa_tensor dev_tensor(void* data, fa_dtype dt, std::vector<int64_t> shape) {
  fa_tensor t{};
  t.data = data, t.dtype = dt, t.device = FA_DEVICE_CUDA, t.device_id = 0;
  t.rank = int(shape.size());
  int64_t s = 1;
  for (int i = t.rank - 1; i >= 0; --i) t.shape[i] = shape[size_t(i)], t.strides[i] = s, s *= shape[size_t(i)];
  return t;
}

std::shared_ptr<DeviceBuffer> upload(const void* host, size_t bytes) {
  auto b = std::make_shared<DeviceBuffer>(std::max<size_t>(bytes, 16));
  cuda_ok(cudaMemcpy(b->get(), host, bytes, cudaMemcpyHostToDevice), "upload");
  return b;
}

bool filtered_build() { return std::string(fa_build_info()).find("instance-filtered") != std::string::npos; }

class CudaKvcache : public ::testing::TestWithParam<KvCase> {};

TEST_P(CudaKvcache, Matches) {
  FA_REQUIRE_GPU();
  const KvCase& c = GetParam();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("FA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const core::DType dt = c.dtype == FA_DTYPE_FLOAT16 ? core::DType::F16 : core::DType::BF16;
  const int B = c.batch, D = c.d;
  const size_t es = 2;
  const int64_t row_elems = int64_t(c.hk) * D;  // one cache row (all KV heads)

  // ---- the cache and its addressing ----------------------------------------------------------
  const bool paged = c.page_size > 0;
  int64_t C = c.capacity, entries = 0, rows_per_entry = 0, pages_per_seq = 0;
  std::vector<int32_t> table, bidx;
  if (paged) {
    pages_per_seq = (C + c.page_size - 1) / c.page_size;
    C = pages_per_seq * c.page_size;
    entries = B * pages_per_seq + 3;  // spare pages no sequence uses (must stay untouched)
    rows_per_entry = c.page_size;
    std::vector<int32_t> perm(static_cast<size_t>(entries));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    table.assign(perm.begin(), perm.begin() + B * pages_per_seq);
  } else {
    entries = c.batch_idx ? B + 2 : B;
    rows_per_entry = C;
    if (c.batch_idx) {
      std::vector<int32_t> perm(static_cast<size_t>(entries));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      bidx.assign(perm.begin(), perm.begin() + B);
    }
  }
  // Element offset of row j of sequence b (all heads follow: + h * D).
  auto row_offset = [&](int b, int64_t j) -> int64_t {
    if (paged) return (int64_t(table[size_t(b * pages_per_seq + j / c.page_size)]) * c.page_size + j % c.page_size) * row_elems;
    const int64_t e = c.batch_idx ? bidx[size_t(b)] : b;
    return (e * C + j) * row_elems;
  };
  std::vector<int> lens = c.lens;
  if (c.no_seqlens) lens.assign(size_t(B), int(C));
  ASSERT_EQ(int(lens.size()), B);
  std::vector<int32_t> seqlens0(static_cast<size_t>(B));
  for (int b = 0; b < B; ++b) {
    seqlens0[size_t(b)] = int32_t(lens[size_t(b)] - c.nnew);
    ASSERT_GE(seqlens0[size_t(b)], 0);
    // Past the capacity (CUDA only accepts it: it cannot check device-side values): new rows
    // beyond C are dropped and the sequence attends over C keys.
    lens[size_t(b)] = int(std::min<int64_t>(lens[size_t(b)], C));
  }

  const size_t cache_elems = size_t(entries * rows_per_entry * row_elems);
  DeviceBuffer kc(cache_elems * es), vc(cache_elems * es);
  const size_t q_elems = size_t(B * c.nq * c.hq * D);
  DeviceBuffer q(q_elems * es), out(q_elems * es), lse(size_t(B * c.hq * c.nq) * sizeof(float));
  const size_t new_elems = size_t(B * c.nnew * row_elems);
  DeviceBuffer kn(std::max<size_t>(new_elems * es, 16)), vn(std::max<size_t>(new_elems * es, 16));
  cuda_ok(fill_random(kc.get(), dt, cache_elems, seed + 1, Dist::Normal, 1.f, 0), "fill");
  cuda_ok(fill_random(vc.get(), dt, cache_elems, seed + 2, Dist::Normal, 1.f, 0), "fill");
  cuda_ok(fill_random(q.get(), dt, q_elems, seed + 3, Dist::Normal, 1.f, 0), "fill");
  if (new_elems) {
    cuda_ok(fill_random(kn.get(), dt, new_elems, seed + 4, Dist::Normal, 1.f, 0), "fill");
    cuda_ok(fill_random(vn.get(), dt, new_elems, seed + 5, Dist::Normal, 1.f, 0), "fill");
  }
  out.poison();
  lse.poison();
  cuda_ok(cudaDeviceSynchronize(), "fill");
  const std::vector<uint8_t> k_before = kc.to_host_bytes(), v_before = vc.to_host_bytes();
  const std::vector<uint8_t> kn_h = kn.to_host_bytes(), vn_h = vn.to_host_bytes();

  // ---- the call ------------------------------------------------------------------------------
  fa_tensor tq = dev_tensor(q.get(), c.dtype, {B, c.nq, c.hq, D});
  fa_tensor tout = dev_tensor(out.get(), c.dtype, {B, c.nq, c.hq, D});
  fa_tensor tlse = dev_tensor(lse.get(), FA_DTYPE_FLOAT32, {B, c.hq, c.nq});
  fa_tensor tkc = dev_tensor(kc.get(), c.dtype, {entries, rows_per_entry, c.hk, D});
  fa_tensor tvc = dev_tensor(vc.get(), c.dtype, {entries, rows_per_entry, c.hk, D});
  fa_tensor tkn = dev_tensor(kn.get(), c.dtype, {B, c.nnew, c.hk, D});
  fa_tensor tvn = dev_tensor(vn.get(), c.dtype, {B, c.nnew, c.hk, D});
  auto seqlens_buf = upload(seqlens0.data(), seqlens0.size() * 4);
  fa_tensor tsl = dev_tensor(seqlens_buf->get(), FA_DTYPE_INT32, {B});
  std::shared_ptr<DeviceBuffer> table_buf, bidx_buf;
  fa_tensor ttable{}, tbidx{};
  fa_kvcache kv{};
  kv.k_cache = &tkc, kv.v_cache = &tvc;
  kv.cache_seqlens = c.no_seqlens ? nullptr : &tsl;
  if (paged) {
    table_buf = upload(table.data(), table.size() * 4);
    ttable = dev_tensor(table_buf->get(), FA_DTYPE_INT32, {B, pages_per_seq});
    kv.block_table = &ttable;
  }
  if (c.batch_idx) {
    bidx_buf = upload(bidx.data(), bidx.size() * 4);
    tbidx = dev_tensor(bidx_buf->get(), FA_DTYPE_INT32, {B});
    kv.cache_batch_idx = &tbidx;
  }
  if (c.nnew > 0) kv.k_new = &tkn, kv.v_new = &tvn;
  kv.num_splits = c.splits;

  fa_options opt;
  fa_options_init(&opt);
  opt.causal = c.causal ? 1 : 0;
  opt.window_left = c.wl, opt.window_right = c.wr;
  opt.softcap = c.softcap;
  opt.backend = FA_BACKEND_CUDA;
  std::unique_ptr<DeviceBuffer> ws;
  if (c.caller_workspace) {
    size_t bytes = 0;
    const fa_status qs = fa_kvcache_workspace_size(&tq, &kv, &opt, &bytes);
    if (qs == FA_ERROR_UNSUPPORTED && filtered_build())
      GTEST_SKIP() << "instance-filtered build: " << fa_last_error();
    ASSERT_EQ(qs, FA_OK) << fa_last_error();
    if (c.splits > 1) {
      EXPECT_GT(bytes, 0u) << "a forced split needs partials";
    }
    if (bytes) {
      ws = std::make_unique<DeviceBuffer>(bytes);
      opt.workspace = ws->get(), opt.workspace_bytes = bytes;
    }
  }
  const fa_status st = fa_kvcache_forward(&tq, &kv, &tout, &tlse, &opt);
  if (st == FA_ERROR_UNSUPPORTED && filtered_build())
    GTEST_SKIP() << "instance-filtered build: " << fa_last_error();
  ASSERT_EQ(st, FA_OK) << fa_last_error();
  cuda_ok(cudaDeviceSynchronize(), "fa_kvcache_forward");

  // ---- the cache: new rows exactly, nothing else touched --------------------------------------
  {
    std::vector<uint8_t> k_expect = k_before, v_expect = v_before;
    for (int b = 0; b < B; ++b)
      for (int64_t i = 0; i < c.nnew; ++i) {
        const int64_t j = seqlens0[size_t(b)] + i;
        if (j >= C) continue;
        const size_t dst = size_t(row_offset(b, j)) * es, src = size_t((b * c.nnew + i) * row_elems) * es;
        std::memcpy(&k_expect[dst], &kn_h[src], size_t(row_elems) * es);
        std::memcpy(&v_expect[dst], &vn_h[src], size_t(row_elems) * es);
      }
    const std::vector<uint8_t> k_after = kc.to_host_bytes(), v_after = vc.to_host_bytes();
    size_t k_bad = 0, v_bad = 0;
    for (size_t e = 0; e < k_after.size(); ++e) k_bad += k_after[e] != k_expect[e];
    for (size_t e = 0; e < v_after.size(); ++e) v_bad += v_after[e] != v_expect[e];
    EXPECT_EQ(k_bad, 0u) << "k_cache bytes differing from (before + appended rows)";
    EXPECT_EQ(v_bad, 0u) << "v_cache bytes differing from (before + appended rows)";
  }

  // ---- the reference on the gathered cache -------------------------------------------------------
  std::vector<int32_t> cu_q(static_cast<size_t>(B + 1)), cu_k(static_cast<size_t>(B + 1));
  int max_len = 0;
  for (int b = 0; b < B; ++b) {
    cu_q[size_t(b + 1)] = cu_q[size_t(b)] + int32_t(c.nq);
    cu_k[size_t(b + 1)] = cu_k[size_t(b)] + lens[size_t(b)];
    max_len = std::max(max_len, lens[size_t(b)]);
  }
  const int64_t total_k = cu_k[size_t(B)];
  std::vector<uint8_t> kg(size_t(std::max<int64_t>(total_k, 1) * row_elems) * es), vg(kg.size());
  {
    const std::vector<uint8_t> k_after = kc.to_host_bytes(), v_after = vc.to_host_bytes();
    for (int b = 0; b < B; ++b)
      for (int64_t j = 0; j < lens[size_t(b)]; ++j) {
        const size_t src = size_t(row_offset(b, j)) * es, dst = size_t((cu_k[size_t(b)] + j) * row_elems) * es;
        std::memcpy(&kg[dst], &k_after[src], size_t(row_elems) * es);
        std::memcpy(&vg[dst], &v_after[src], size_t(row_elems) * es);
      }
  }
  auto kg_buf = upload(kg.data(), kg.size()), vg_buf = upload(vg.data(), vg.size());
  auto cuq_buf = upload(cu_q.data(), cu_q.size() * 4), cuk_buf = upload(cu_k.data(), cu_k.size() * 4);
  fa_tensor rq = dev_tensor(q.get(), c.dtype, {B * c.nq, c.hq, D});
  fa_tensor rk = dev_tensor(kg_buf->get(), c.dtype, {total_k, c.hk, D});
  fa_tensor rv = dev_tensor(vg_buf->get(), c.dtype, {total_k, c.hk, D});
  fa_tensor rout = dev_tensor(out.get(), c.dtype, {B * c.nq, c.hq, D});
  fa_tensor tcuq = dev_tensor(cuq_buf->get(), FA_DTYPE_INT32, {B + 1});
  fa_tensor tcuk = dev_tensor(cuk_buf->get(), FA_DTYPE_INT32, {B + 1});
  fa_varlen vl{};
  vl.cu_seqlens_q = &tcuq, vl.cu_seqlens_k = &tcuk, vl.max_seqlen_q = c.nq, vl.max_seqlen_k = max_len;
  core::CallArgs a;
  a.q = &rq, a.k = &rk, a.v = &rv, a.varlen = &vl, a.out = &rout, a.opt = &opt;
  core::AttnParams rp;
  const core::Status vst = core::make_params(a, &rp);
  ASSERT_TRUE(vst.ok()) << "the reference's varlen view was rejected: " << vst.message;

  const DenseDims dims = dense_dims(rp);
  DeviceBuffer ro(dims.o_elems() * 8), rl(dims.lse_elems() * 8), no(dims.o_elems() * 8), nl(dims.lse_elems() * 8);
  cuda_ok(reference_forward(rp, Precision::F64, ro.as<double>(), rl.as<double>(), 0), "reference");
  cuda_ok(reference_forward(rp, Precision::Naive, no.as<double>(), nl.as<double>(), 0), "reference");
  DeviceBuffer ours_o(dims.o_elems() * 8);
  cuda_ok(gather_to_f64(out.get(), dt, core::Strides{0, int64_t(c.hq) * D, D}, 1, B * c.nq, c.hq, D,
                        ours_o.as<double>(), 0), "gather");
  cuda_ok(cudaDeviceSynchronize(), "reference");
  const std::vector<double> o = to_host(ours_o.as<double>(), dims.o_elems());
  const std::vector<double> ref_o = to_host(ro.as<double>(), dims.o_elems());
  const std::vector<double> nav_o = to_host(no.as<double>(), dims.o_elems());
  const std::vector<double> ref_l = to_host(rl.as<double>(), dims.lse_elems());
  const std::vector<double> nav_l = to_host(nl.as<double>(), dims.lse_elems());
  // Ours [B, Hq, Nq] -> the varlen reference's [Hq, B*Nq].
  const std::vector<float> lse_b = to_host(lse.as<float>(), size_t(B * c.hq * c.nq));
  std::vector<double> l(dims.lse_elems());
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.nq; ++i)
        l[size_t(h * B * c.nq + b * c.nq + i)] = lse_b[size_t((b * c.hq + h) * c.nq + i)];

  RuleResult ro_res, rl_res;
  EXPECT_TRUE(check_rule("O", o, ref_o, nav_o, false, &ro_res));
  EXPECT_TRUE(check_rule("LSE", l, ref_l, nav_l, true, &rl_res));
  // Rows with no visible key: O exactly 0 (the rule's 1e-5 slack would let a small value pass).
  size_t nonzero = 0;
  for (size_t r = 0; r < size_t(B * c.nq); ++r)
    for (int h = 0; h < c.hq; ++h)
      if (std::isinf(ref_l[size_t(h) * size_t(B * c.nq) + r]))
        for (int e = 0; e < D; ++e) nonzero += o[(r * size_t(c.hq) + size_t(h)) * size_t(D) + size_t(e)] != 0.0;
  EXPECT_EQ(nonzero, 0u) << "O elements of rows without a visible key that are not 0";
}

// ---- the split plan (host only: runs without a GPU) --------------------------------------------
core::AttnParams plan_params(int b, int hq, int hk, int d, int64_t nq, int64_t cap, int splits) {
  core::AttnParams p;
  p.batch = b, p.heads_q = hq, p.heads_kv = hk, p.head_dim = d, p.seqlen_q = nq, p.seqlen_k = cap;
  p.num_splits = splits, p.kvcache = true;
  return p;
}

TEST(CudaKvcachePlan, SplitsFillWholeWaves) {
  constexpr int kSms = 132;  // H100/H200
  // B 1, Hk 8, one row block each: 8 CTAs; 64k keys allow up to 64 splits: 33 fill 264 slots.
  decode::Plan pl = decode::make_plan(plan_params(1, 32, 8, 128, 1, 65536, 0), kSms);
  EXPECT_EQ(pl.m_rows, 4);
  EXPECT_EQ(pl.m_blocks, 1);
  EXPECT_GE(pl.num_splits * 8, int(0.95 * 2 * kSms));
  EXPECT_LE(pl.num_splits * 8, 2 * kSms);
  EXPECT_EQ(pl.ws_bytes, size_t(pl.num_splits) * 32 * (128 + 1) * sizeof(float));
  // Enough CTAs already (B 32, Hk 8: 256 of 264 slots): no split, no workspace.
  pl = decode::make_plan(plan_params(32, 32, 8, 128, 1, 16384, 0), kSms);
  EXPECT_EQ(pl.num_splits, 1);
  EXPECT_EQ(pl.ws_bytes, 0u);
  // Short caches: no split shorter than kMinBlocksPerSplit key blocks (1024 keys / 64 = 16 blocks).
  pl = decode::make_plan(plan_params(1, 32, 32, 128, 1, 1024, 0), kSms);
  EXPECT_LE(pl.num_splits, 16 / decode::kMinBlocksPerSplit);
  EXPECT_GE(pl.num_splits, 2);
  // Forced counts are kept, clamped to the key blocks and to kMaxSplits.
  EXPECT_EQ(decode::make_plan(plan_params(2, 8, 2, 128, 1, 1024, 7), kSms).num_splits, 7);
  EXPECT_EQ(decode::make_plan(plan_params(2, 8, 2, 128, 1, 100, 7), kSms).num_splits, 2);
  EXPECT_EQ(decode::make_plan(plan_params(1, 8, 2, 128, 1, 1 << 20, 1000), kSms).num_splits, decode::kMaxSplits);
  EXPECT_EQ(decode::make_plan(plan_params(1, 8, 2, 128, 1, 1 << 20, 1), kSms).num_splits, 1);
  // GQA packing: Nq 17 x group 8 = 136 rows -> 3 row blocks of 64.
  pl = decode::make_plan(plan_params(1, 16, 2, 256, 17, 4096, 1), kSms);
  EXPECT_EQ(pl.m_rows, 136);
  EXPECT_EQ(pl.m_blocks, 3);
  EXPECT_FALSE(pl.key_split);
}

TEST(CudaKvcachePlan, KeySplitTileUpTo16Rows) {
  constexpr int kSms = 132;
  const char* env = std::getenv("FA_DECODE_KEY_SPLIT");
  const bool on = !(env && std::string(env) == "0");
  // Nq 4 x group 4 = 16 rows: the key-split tile at d <= 128 (one 16-row block, its key block).
  decode::Plan pl = decode::make_plan(plan_params(1, 8, 2, 128, 4, 4096, 1), kSms);
  EXPECT_EQ(pl.m_rows, 16);
  EXPECT_EQ(pl.key_split, on && decode::has_key_split_tile(128));
  EXPECT_EQ(pl.m_blocks, 1);
  // 17 rows (group 17): the 64-row tile.
  pl = decode::make_plan(plan_params(1, 17, 1, 128, 1, 4096, 1), kSms);
  EXPECT_FALSE(pl.key_split);
  EXPECT_EQ(pl.m_blocks, 1);
  // d 192/256 have no key-split tile.
  EXPECT_FALSE(decode::make_plan(plan_params(1, 8, 2, 256, 1, 4096, 1), kSms).key_split);
  EXPECT_FALSE(decode::has_key_split_tile(192));
  // The split cap counts the tile's own key blocks: 1024 keys at d64 are 8 blocks of 128.
  if (on && decode::has_key_split_tile(64)) {
    EXPECT_EQ(decode::make_plan(plan_params(1, 8, 2, 64, 1, 1024, 60), kSms).num_splits, 1024 / decode::ks_block_n(64));
  }
}

// ---- the grid ----------------------------------------------------------------------------------
KvCase kc(std::string name, int d, int b, int hq, int hk, int64_t nq, std::vector<int> lens, int64_t cap) {
  KvCase c;
  c.name = std::move(name), c.d = d, c.batch = b, c.hq = hq, c.hk = hk, c.nq = nq, c.lens = std::move(lens);
  c.capacity = cap;
  return c;
}
KvCase fp16(KvCase c) { return c.dtype = FA_DTYPE_FLOAT16, c.name += "_fp16", c; }
KvCase paged(KvCase c, int ps) { return c.page_size = ps, c.name += "_page" + std::to_string(ps), c; }
KvCase splits(KvCase c, int s) { return c.splits = s, c.name += "_split" + std::to_string(s), c; }
KvCase causal(KvCase c) { return c.causal = true, c.name += "_causal", c; }
KvCase window(KvCase c, int l, int r) {
  return c.wl = l, c.wr = r, c.name += "_w" + std::to_string(l) + "_" + std::to_string(r), c;
}
KvCase softcap(KvCase c, float s) { return c.softcap = s, c.name += "_cap" + std::to_string(int(s)), c; }
KvCase append(KvCase c, int64_t n) { return c.nnew = n, c.name += "_new" + std::to_string(n), c; }
KvCase bidx(KvCase c) { return c.batch_idx = true, c.name += "_bidx", c; }

std::vector<KvCase> quick_cases() {
  std::vector<KvCase> v;
  // Decode (Nq = 1), GQA 4, contiguous, auto splits; lengths not multiples of the key block.
  v.push_back(kc("d128_gqa4_q1", 128, 3, 8, 2, 1, {1, 100, 1000}, 1024));
  v.push_back(fp16(kc("d128_gqa4_q1", 128, 3, 8, 2, 1, {1, 100, 1000}, 1024)));
  // Forced splits 1/2/3/7 (7 > the blocks of the short sequences: empty splits) and caller workspace.
  for (int s : {1, 2, 3, 7}) {
    KvCase c = splits(kc("d128_gqa4_q1", 128, 2, 8, 2, 1, {333, 1000}, 1024), s);
    c.caller_workspace = true;
    v.push_back(c);
  }
  // Paged, shuffled tables, page sizes 1/16/64/256, lengths not multiples of them.
  for (int ps : {1, 16, 64, 256}) v.push_back(paged(kc("d128_gqa4_q1", 128, 3, 8, 2, 1, {7, 300, 517}, 600), ps));
  v.push_back(paged(append(causal(kc("d64_gqa8_q4", 64, 2, 16, 2, 4, {37, 200}, 256)), 4), 16));
  // cache_batch_idx, append, causal with Nq > 1 (bottom-right), GQA 8, MQA, MHA.
  v.push_back(bidx(kc("d128_gqa8_q1", 128, 2, 16, 2, 1, {50, 129}, 160)));
  v.push_back(append(bidx(kc("d128_gqa4_q1", 128, 2, 8, 2, 1, {50, 129}, 160)), 1));
  v.push_back(append(causal(kc("d128_gqa4_q4", 128, 2, 8, 2, 4, {4, 130}, 192)), 4));
  v.push_back(causal(kc("d128_gqa8_q17", 128, 2, 16, 2, 17, {17, 300}, 320)));
  v.push_back(causal(kc("d64_mqa_q17", 64, 2, 8, 1, 17, {40, 300}, 320)));
  v.push_back(causal(kc("d64_mha_q4", 64, 2, 4, 4, 4, {5, 70}, 80)));
  // Window, softcap, an empty sequence (L_b = 0), no cache_seqlens (L_b = capacity).
  v.push_back(window(kc("d128_gqa4_q17", 128, 2, 8, 2, 17, {300, 1000}, 1024), 50, 0));
  v.push_back(splits(window(kc("d128_gqa4_q4", 128, 2, 8, 2, 4, {300, 1000}, 1024), 100, 2), 3));
  v.push_back(softcap(causal(kc("d128_gqa4_q4", 128, 2, 8, 2, 4, {90, 700}, 768)), 30.f));
  v.push_back(splits(kc("d128_empty_q1", 128, 3, 8, 2, 1, {0, 77, 0}, 128), 2));
  v.push_back(kc("d128_empty_q4", 128, 2, 8, 2, 4, {0, 65}, 128));
  {
    KvCase c = kc("d64_full_q1", 64, 2, 8, 2, 1, {}, 200);
    c.no_seqlens = true, c.name += "_noseqlens";
    v.push_back(c);
  }
  // Append past the capacity: cache_seqlens 63 + 2 new rows in 64, row 64 is dropped, L_b = 64.
  v.push_back(append(kc("d64_clamp_q2", 64, 1, 4, 2, 2, {65}, 64), 2));
  // Head dims 32..256 (decode, paged 16, causal with Nq = 2), fp16 and bf16.
  for (int d : {32, 64, 96, 192, 256}) {
    v.push_back(paged(kc("d" + std::to_string(d) + "_gqa4_q1", d, 2, 8, 2, 1, {33, 250}, 256), 16));
    v.push_back(fp16(causal(kc("d" + std::to_string(d) + "_gqa2_q2", d, 2, 4, 2, 2, {2, 190}, 256))));
  }
  v.push_back(splits(append(causal(kc("d256_gqa4_q4", 256, 2, 8, 2, 4, {100, 400}, 512)), 4), 3));
  // The two tiles at their boundary (decode_plan.hpp): M = Nq * group = 16 takes the key-split
  // tile, 17 the 64-row one; the same shape otherwise (d64: 128-key blocks on the key-split tile),
  // forced splits, lengths not multiples of either key block.
  v.push_back(splits(kc("d64_m16_q1", 64, 2, 16, 1, 1, {333, 1000}, 1024), 3));
  v.push_back(splits(kc("d64_m17_q1", 64, 2, 17, 1, 1, {333, 1000}, 1024), 3));
  // Key-split tile with masks: causal + left window over Nq 2 x group 8 (keys seen by some warps of
  // a block but not others), paged, 5 splits; d96 causal Nq 4 x group 4; a 10-key window at Nq 1,
  // where most warps of the one or two visible blocks (and most splits) see no key at all.
  v.push_back(paged(splits(window(kc("d128_gqa8_q2", 128, 2, 16, 2, 2, {700, 1500}, 1536), 300, 0), 5), 64));
  v.push_back(splits(causal(kc("d96_gqa4_q4", 96, 1, 8, 2, 4, {1000}, 1024)), 4));
  v.push_back(splits(window(kc("d128_gqa4_q1", 128, 2, 8, 2, 1, {500, 1000}, 1024), 10, 0), 3));
  // A long sequence, auto splits. At most ~28k keys: the float64 reference keeps a row of scores in
  // shared memory ((N + 256) doubles beside its static buffers in 227 KB); on the H200 28001 keys
  // fit, 28600 and 32k failed there with "invalid argument".
  v.push_back(kc("d128_gqa8_long", 128, 1, 16, 2, 1, {28001}, 28672));
  v.push_back(paged(fp16(kc("d128_gqa4_long", 128, 2, 8, 2, 1, {20000, 27001}, 27136)), 256));
  return v;
}

INSTANTIATE_TEST_SUITE_P(Kv, CudaKvcache, ::testing::ValuesIn(quick_cases()),
                         [](const ::testing::TestParamInfo<KvCase>& i) { return i.param.name; });

}  // namespace
}  // namespace fa::cuda_test
