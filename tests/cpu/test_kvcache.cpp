// CPU KV-cache attention (fa_kvcache_forward, through the C ABI) against the float64 reference
// (ref::kvcache_forward: the cache gathered per sequence, with its own addressing, then the
// varlen reference), with the 2x rule of test_attention.cpp. Fresh random inputs per case, out and
// lse poisoned with NaN, cache rows no sequence uses poisoned too (a read past L_b shows up as
// NaN). After each call the cache must hold k_new/v_new bit-exactly at rows cache_seqlens[b] ..
// and be byte-identical to its old contents everywhere else.
//
// Grid: contiguous and paged caches (page sizes 1, 3, 16, 64 with lengths that are not multiples,
// shuffled block tables with unused pages), cache_batch_idx, append, GQA 1/4/8, Nq 1 and 5 (and
// a prefill-sized 70), causal, windows, softcap, an empty sequence (L_b = 0: out 0, lse -inf),
// lse on/off, fp32/fp16/bf16, d 64/128, head-major cache storage (fp32 in-place reads), GQA
// packing on and off (FA_CPU_KVCACHE_PACK_GQA is read once, so "off" is checked by running
// heads_kv = heads_q, where a task holds one head, against the same reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "common/test_util.hpp"
#include "core/validate.hpp"
#include "cpu/reference.hpp"

namespace fa {
namespace {

using core::DType;

struct KvSpec {
  int batch = 2;
  int hq = 4;
  int hk = 2;
  int d = 64;
  int64_t nq = 1;
  int page_size = 0;             // 0: contiguous cache
  int64_t capacity = 100;        // keys per sequence the cache can hold (paged: rounded up)
  std::vector<int32_t> seqlens;  // old lengths; empty: no cache_seqlens (L_b = capacity)
  int64_t nnew = 0;              // appended keys (needs seqlens)
  bool batch_idx = false;        // contiguous: more cache entries than sequences, shuffled
  bool head_major = false;       // cache stored [entries, Hk, rows, D]
  DType dtype = DType::F32;
  bool causal = false;
  int64_t wl = -1, wr = -1;
  float softcap = 0.f;
  bool lse = true;
  int threads = 0;

  std::string name() const {
    std::ostringstream s;
    s << "B" << batch << " Hq" << hq << " Hk" << hk << " d" << d << " Nq" << nq
      << (page_size ? " page" + std::to_string(page_size) : std::string(" contiguous")) << " C"
      << capacity << " seqlens[";
    for (size_t i = 0; i < seqlens.size(); ++i) s << (i ? "," : "") << seqlens[i];
    s << "] new" << nnew << (batch_idx ? " batch_idx" : "") << (head_major ? " head-major" : "")
      << " " << core::dtype_name(dtype) << (causal ? " causal" : "") << " window(" << wl << ","
      << wr << ")" << (softcap > 0 ? " softcap" : "") << (lse ? "" : " no-lse");
    return s.str();
  }
};

int esize(DType t) {
  return t == DType::F32 ? 4 : 2;
}

// Stores x (already representable) as dtype t at element index i of buf.
void put(std::vector<uint8_t>& buf, DType t, int64_t i, double x) {
  if (t == DType::F32) {
    const float f = float(x);
    std::memcpy(&buf[size_t(i) * 4], &f, 4);
  } else {
    const uint16_t h = t == DType::F16 ? test::to_f16_bits(x) : test::to_bf16_bits(x);
    std::memcpy(&buf[size_t(i) * 2], &h, 2);
  }
}
double get(const std::vector<uint8_t>& buf, DType t, int64_t i) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, &buf[size_t(i) * 4], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &buf[size_t(i) * 2], 2);
  return t == DType::F16 ? test::from_f16_bits(h) : test::from_bf16_bits(h);
}

std::vector<uint8_t> random_tensor(int64_t n, DType t, std::mt19937_64& gen) {
  std::vector<float> x(static_cast<size_t>(n));
  test::fill_random(x, test::Dist::Normal, gen());
  std::vector<uint8_t> buf(size_t(n) * size_t(esize(t)));
  for (int64_t i = 0; i < n; ++i) put(buf, t, i, test::round_to(t, x[size_t(i)]));
  return buf;
}

fa_tensor desc(void* data, DType t, std::vector<int64_t> shape, std::vector<int64_t> strides) {
  fa_tensor x{};
  x.data = data;
  x.dtype = t == DType::F32   ? FA_DTYPE_FLOAT32
            : t == DType::F16 ? FA_DTYPE_FLOAT16
                              : FA_DTYPE_BFLOAT16;
  x.device = FA_DEVICE_CPU;
  x.rank = int(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) x.shape[i] = shape[i], x.strides[i] = strides[i];
  return x;
}
fa_tensor dense(void* data, DType t, std::vector<int64_t> shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * shape[size_t(i) + 1];
  return desc(data, t, shape, st);
}
fa_tensor i32(std::vector<int32_t>& v, std::vector<int64_t> shape) {
  fa_tensor x = dense(v.data(), DType::F32, shape);
  x.dtype = FA_DTYPE_INT32;
  return x;
}

// Checks one case; returns the output bytes. seed 0: a fresh one.
std::vector<uint8_t> check_kvcache(const KvSpec& s, uint64_t seed = 0) {
  if (seed == 0) seed = test::fresh_seed();
  SCOPED_TRACE(s.name() + "  (FA_TEST_SEED=" + std::to_string(seed) + ")");
  std::mt19937_64 gen(seed);
  const DType t = s.dtype;
  const int B = s.batch;
  const bool paged = s.page_size > 0;
  const int64_t pages_per_seq = paged ? (s.capacity + s.page_size - 1) / s.page_size : 0;
  const int64_t rows = paged ? s.page_size : s.capacity;  // cache.shape[1]
  const int64_t entries = paged ? B * pages_per_seq + 3 : (s.batch_idx ? B + 2 : B);
  const int64_t cap = paged ? pages_per_seq * s.page_size : s.capacity;

  std::vector<uint8_t> q = random_tensor(B * s.nq * s.hq * s.d, t, gen);
  std::vector<uint8_t> kc = random_tensor(entries * rows * s.hk * s.d, t, gen);
  std::vector<uint8_t> vc = random_tensor(entries * rows * s.hk * s.d, t, gen);
  std::vector<uint8_t> kn = random_tensor(B * s.nnew * s.hk * s.d, t, gen);
  std::vector<uint8_t> vn = random_tensor(B * s.nnew * s.hk * s.d, t, gen);
  std::vector<int32_t> seqlens = s.seqlens;
  std::vector<int32_t> table, idx;
  if (paged) {
    table.resize(size_t(B * pages_per_seq));
    std::vector<int32_t> perm(static_cast<size_t>(entries));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    std::copy(perm.begin(), perm.begin() + int64_t(table.size()), table.begin());
  }
  if (s.batch_idx) {
    std::vector<int32_t> perm(static_cast<size_t>(entries));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), gen);
    idx.assign(perm.begin(), perm.begin() + B);
  }
  // Strides of the cache: [entries, rows, Hk, D] or head-major storage [entries, Hk, rows, D].
  const std::vector<int64_t> cshape{entries, rows, s.hk, s.d};
  const std::vector<int64_t> cstr =
      s.head_major ? std::vector<int64_t>{s.hk * rows * s.d, s.d, rows * s.d, 1}
                   : std::vector<int64_t>{rows * s.hk * s.d, s.hk * s.d, s.d, 1};
  // Element index of (sequence b, key j, head h) in the cache, and of every row no sequence reads.
  auto cache_elem = [&](int b, int64_t j, int h) {
    const int64_t e = paged ? table[size_t(b * pages_per_seq + j / s.page_size)]
                            : (s.batch_idx ? idx[size_t(b)] : b);
    const int64_t r = paged ? j % s.page_size : j;
    return e * cstr[0] + r * cstr[1] + h * cstr[2];
  };
  auto len_of = [&](int b) { return seqlens.empty() ? cap : seqlens[size_t(b)] + s.nnew; };
  {
    // Poison every cache row no sequence attends to (NaN, so reading one fails the comparison).
    std::vector<char> used(size_t(entries * rows * s.hk), 0);
    for (int b = 0; b < B; ++b)
      for (int64_t j = 0; j < len_of(b); ++j)
        for (int h = 0; h < s.hk; ++h) used[size_t(cache_elem(b, j, h) / s.d)] = 1;
    for (size_t r = 0; r < used.size(); ++r)
      if (!used[r])
        for (int c = 0; c < s.d; ++c) {
          put(kc, t, int64_t(r) * s.d + c, NAN);
          put(vc, t, int64_t(r) * s.d + c, NAN);
        }
  }
  const std::vector<uint8_t> kc_old = kc, vc_old = vc;
  std::vector<uint8_t> out(q.size());
  std::vector<float> lse(size_t(B * s.hq * s.nq + 1), NAN);  // one extra: must stay NaN
  std::fill(out.begin(), out.end(), uint8_t(0xFF));          // NaN in every dtype

  fa_tensor tq = dense(q.data(), t, {B, s.nq, s.hq, s.d});
  fa_tensor tkc = desc(kc.data(), t, cshape, cstr), tvc = desc(vc.data(), t, cshape, cstr);
  fa_tensor tkn = dense(kn.data(), t, {B, s.nnew, s.hk, s.d}),
            tvn = dense(vn.data(), t, {B, s.nnew, s.hk, s.d});
  fa_tensor tsl = i32(seqlens, {B}), ttab = i32(table, {B, pages_per_seq}), tidx = i32(idx, {B});
  fa_tensor tout = dense(out.data(), t, {B, s.nq, s.hq, s.d});
  fa_tensor tlse = desc(lse.data(), DType::F32, {B, s.hq, s.nq}, {s.hq * s.nq, s.nq, 1});
  tlse.dtype = FA_DTYPE_FLOAT32;
  fa_kvcache kv{};
  kv.k_cache = &tkc;
  kv.v_cache = &tvc;
  kv.cache_seqlens = seqlens.empty() ? nullptr : &tsl;
  kv.block_table = paged ? &ttab : nullptr;
  kv.cache_batch_idx = s.batch_idx ? &tidx : nullptr;
  kv.k_new = s.nnew ? &tkn : nullptr;
  kv.v_new = s.nnew ? &tvn : nullptr;
  fa_options opt;
  fa_options_init(&opt);
  opt.causal = s.causal;
  opt.window_left = int(s.wl);
  opt.window_right = int(s.wr);
  opt.softcap = s.softcap;
  opt.num_threads = s.threads;

  // The reference sees the inputs as they were: the same descriptors over copies of the old cache.
  std::vector<uint8_t> kc_ref = kc_old, vc_ref = vc_old;
  fa_tensor rkc = desc(kc_ref.data(), t, cshape, cstr), rvc = desc(vc_ref.data(), t, cshape, cstr);
  fa_kvcache rkv = kv;
  rkv.k_cache = &rkc;
  rkv.v_cache = &rvc;
  core::CallArgs args;
  args.q = &tq, args.kvcache = &rkv, args.out = &tout, args.lse = &tlse, args.opt = &opt;
  core::AttnParams p;
  const core::Status vs = core::make_params(args, &p);
  EXPECT_TRUE(vs.ok()) << vs.message;
  if (!vs.ok()) return {};
  std::vector<double> o_ref, lse_ref;
  ref::kvcache_forward(p, o_ref, lse_ref);

  const fa_status st = fa_kvcache_forward(&tq, &kv, &tout, s.lse ? &tlse : nullptr, &opt);
  EXPECT_EQ(st, FA_OK) << fa_last_error();
  if (st != FA_OK) return {};

  std::vector<double> o(o_ref.size());
  for (size_t i = 0; i < o.size(); ++i) o[i] = get(out, t, int64_t(i));
  const test::ErrorReport eo = test::compare(o, o_ref);
  const double tol = test::tolerance(o_ref, t, 2e-5);
  EXPECT_LE(eo.max_err, tol) << "O: " << eo.str();
  if (s.lse) {
    std::vector<double> l(lse_ref.size());
    for (size_t i = 0; i < l.size(); ++i) l[i] = lse[i];
    double m = 1;
    for (double x : lse_ref)
      if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    const test::ErrorReport el = test::compare(l, lse_ref);
    EXPECT_LE(el.max_err, 2e-6 * m) << "LSE: " << el.str();
  } else {
    for (size_t i = 0; i + 1 < lse.size(); ++i) EXPECT_TRUE(std::isnan(lse[i])) << "lse written";
  }
  EXPECT_TRUE(std::isnan(lse.back())) << "LSE written past its end";

  // The cache: new rows bit-exact where they belong, every other byte as before.
  std::vector<uint8_t> kc_want = kc_old, vc_want = vc_old;
  const size_t rb = size_t(s.d) * size_t(esize(t));
  for (int b = 0; b < B; ++b)
    for (int64_t i = 0; i < s.nnew; ++i)
      for (int h = 0; h < s.hk; ++h) {
        const size_t dst = size_t(cache_elem(b, seqlens[size_t(b)] + i, h)) * size_t(esize(t));
        const size_t src = size_t(((b * s.nnew + i) * s.hk + h) * s.d) * size_t(esize(t));
        std::memcpy(&kc_want[dst], &kn[src], rb);
        std::memcpy(&vc_want[dst], &vn[src], rb);
      }
  EXPECT_TRUE(kc == kc_want) << "k_cache: appended rows wrong or other rows touched";
  EXPECT_TRUE(vc == vc_want) << "v_cache: appended rows wrong or other rows touched";
  return out;
}

KvSpec base(int64_t nq, int hq, int hk, std::vector<int32_t> seqlens, int64_t cap) {
  KvSpec s;
  s.nq = nq;
  s.hq = hq;
  s.hk = hk;
  s.batch = int(seqlens.empty() ? 2 : seqlens.size());
  s.seqlens = std::move(seqlens);
  s.capacity = cap;
  return s;
}

TEST(CpuKvcache, Contiguous) {
  for (int64_t nq : {1, 5}) {
    check_kvcache(base(nq, 4, 2, {37, 100, 64}, 100));
    check_kvcache(base(nq, 4, 4, {}, 77));  // no cache_seqlens: every sequence is full
  }
}

TEST(CpuKvcache, Paged) {
  for (int ps : {1, 3, 16, 64}) {
    for (int64_t nq : {1, 5}) {
      KvSpec s = base(nq, 8, 2, {1, 150, 63, 64}, 150);
      s.page_size = ps;
      check_kvcache(s);
    }
    KvSpec s = base(1, 4, 1, {}, 131);  // full caches, the last page partly past the capacity
    s.page_size = ps;
    check_kvcache(s);
  }
}

TEST(CpuKvcache, BatchIdx) {
  KvSpec s = base(1, 4, 2, {90, 3, 0}, 96);
  s.batch_idx = true;
  check_kvcache(s);
  s.nnew = 2;
  s.nq = 2;
  s.causal = true;
  check_kvcache(s);
}

TEST(CpuKvcache, Append) {
  for (int ps : {0, 1, 3, 16, 64}) {
    for (int64_t nnew : {1, 5}) {
      KvSpec s = base(nnew, 8, 2, {0, 60, 131 - int32_t(nnew), 64}, 131);
      s.page_size = ps;
      s.nnew = nnew;
      s.causal = true;
      check_kvcache(s);
    }
  }
  // Nq != Nnew (flash_attn allows it): bottom-right alignment to the grown length.
  KvSpec s = base(3, 4, 4, {10, 40}, 64);
  s.nnew = 7;
  s.causal = true;
  s.page_size = 16;
  check_kvcache(s);
}

TEST(CpuKvcache, GqaRatios) {
  for (int g : {1, 4, 8}) {
    for (int64_t nq : {1, 5}) {
      KvSpec s = base(nq, 2 * g, 2, {200, 17}, 200);
      s.page_size = 16;
      check_kvcache(s);
      s.causal = true;
      s.page_size = 0;
      check_kvcache(s);
    }
  }
  // More query rows than one packed tile holds (5 x 16 > 64) and a prefill-sized Nq.
  check_kvcache(base(5, 16, 1, {100, 80}, 128));
  KvSpec s = base(70, 8, 2, {90, 200}, 300);
  s.nnew = 70;
  s.causal = true;
  s.page_size = 64;
  check_kvcache(s);
}

TEST(CpuKvcache, MasksAndSoftcap) {
  for (auto [l, r] : {std::pair<int64_t, int64_t>{16, 0}, {5, 2}, {-1, 3}, {40, -1}, {0, 0}}) {
    KvSpec s = base(5, 8, 2, {100, 3, 64}, 128);
    s.wl = l;
    s.wr = r;
    s.page_size = 3;
    s.nnew = 2;
    check_kvcache(s);
  }
  KvSpec s = base(5, 8, 2, {100, 30}, 128);
  s.softcap = 15.f;
  check_kvcache(s);
  s.causal = true;
  s.page_size = 16;
  check_kvcache(s);
}

TEST(CpuKvcache, EmptySequence) {
  // L_b = 0: out 0, lse -inf; with Nq > L_b under causal, the first rows see nothing either.
  KvSpec s = base(1, 4, 2, {0, 50, 0}, 64);
  check_kvcache(s);
  s.page_size = 16;
  s.nq = 5;
  s.causal = true;
  check_kvcache(s);
  s.lse = false;
  check_kvcache(s);
}

TEST(CpuKvcache, DtypesAndHeadDims) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int d : {64, 128}) {
      KvSpec s = base(1, 8, 2, {129, 7}, 160);
      s.dtype = t;
      s.d = d;
      s.page_size = 16;
      s.nnew = 1;
      check_kvcache(s);
      s.page_size = 0;
      s.nq = 5;
      s.nnew = 5;
      s.causal = true;
      s.lse = false;
      check_kvcache(s);
    }
}

TEST(CpuKvcache, HeadMajorCache) {
  // fp32 with row stride D: K and V are read in place (within a page when paged).
  for (int ps : {0, 16, 3}) {
    KvSpec s = base(5, 4, 1, {100, 33}, 112);
    s.head_major = true;
    s.page_size = ps;
    s.nnew = 3;
    check_kvcache(s);
    s.dtype = DType::BF16;
    check_kvcache(s);
  }
}

TEST(CpuKvcache, ThreadCountsAgree) {
  // Each task runs in a fixed order: any thread count gives the same bits.
  const uint64_t seed = test::fresh_seed();
  KvSpec s = base(5, 8, 2, {100, 60, 33}, 128);
  s.page_size = 16;
  s.nnew = 2;
  s.causal = true;
  s.dtype = DType::BF16;
  s.threads = 1;
  const std::vector<uint8_t> one = check_kvcache(s, seed);
  for (int threads : {2, 3, 7}) {
    s.threads = threads;
    EXPECT_TRUE(check_kvcache(s, seed) == one) << threads << " threads differ from 1";
  }
}

}  // namespace
}  // namespace fa
