// Misuse of fa_fp8_forward / fa_fp8_workspace_size (and fa::fp8_forward): the right status, a
// message naming the argument, and every buffer (inputs, out, lse, the workspace) untouched.
// Each test breaks one thing of a call that FP8Misuse.ValidCallSucceeds shows to be valid.
#include <flashattn/flashattn.h>
#include <flashattn/flashattn.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// CPU tensors of a small valid fp8 call: q [2, 16, 4, 64], k/v [2, 24, 2, 64] bf16 (0.25),
// out like q, lse [2, 4, 16], and a caller workspace.
class Fp8Call {
 public:
  static constexpr int64_t B = 2, Nq = 16, Nk = 24, Hq = 4, Hk = 2, D = 64;

  Fp8Call() {
    add("q", B * Nq * Hq * D * 2), add("k", B * Nk * Hk * D * 2), add("v", B * Nk * Hk * D * 2);
    add("out", B * Nq * Hq * D * 2), add("lse", B * Hq * Nq * 4), add("workspace", 1 << 20);
    for (int i = 0; i < 3; ++i)
      for (size_t e = 0; e + 1 < bufs_[size_t(i)].bytes.size(); e += 2) {
        bufs_[size_t(i)].bytes[e] = 0x80, bufs_[size_t(i)].bytes[e + 1] = 0x3e;  // bf16 0.25
      }
    for (auto& b : bufs_) b.snapshot = b.bytes;
    q = tensor(0, FA_DTYPE_BFLOAT16, {B, Nq, Hq, D});
    k = tensor(1, FA_DTYPE_BFLOAT16, {B, Nk, Hk, D});
    v = tensor(2, FA_DTYPE_BFLOAT16, {B, Nk, Hk, D});
    out = tensor(3, FA_DTYPE_BFLOAT16, {B, Nq, Hq, D});
    lse = tensor(4, FA_DTYPE_FLOAT32, {B, Hq, Nq});
    fa_fp8_init(&f);
    fa_options_init(&opt);
    opt.num_threads = 1;
  }
  void* workspace() { return bufs_[5].bytes.data(); }
  size_t workspace_capacity() const { return bufs_[5].bytes.size(); }
  fa_status forward() { return fa_fp8_forward(&q, &k, &v, &f, &out, &lse, &opt); }
  fa_status workspace_size(size_t* bytes) {
    return fa_fp8_workspace_size(&q, &k, &v, &f, &opt, bytes);
  }
  void rebaseline() {
    for (auto& b : bufs_) b.snapshot = b.bytes;
  }
  std::string touched() const {
    std::string s;
    for (const auto& b : bufs_)
      if (b.bytes != b.snapshot) s += (s.empty() ? "" : ", ") + b.name;
    return s;
  }

  fa_tensor q{}, k{}, v{}, out{}, lse{};
  fa_fp8 f{};
  fa_options opt{};

 private:
  struct Buf {
    std::string name;
    std::vector<uint8_t> bytes, snapshot;
  };
  void add(const char* name, int64_t n) {
    bufs_.push_back({name, std::vector<uint8_t>(size_t(n), 0xA5), {}});
  }
  fa_tensor tensor(size_t i, fa_dtype dt, std::vector<int64_t> shape) {
    fa_tensor t{};
    t.data = bufs_[i].bytes.data(), t.dtype = dt, t.device = FA_DEVICE_CPU,
    t.rank = int(shape.size());
    int64_t st = 1;
    for (int d = t.rank - 1; d >= 0; --d)
      t.shape[d] = shape[size_t(d)], t.strides[d] = st, st *= shape[size_t(d)];
    return t;
  }
  std::vector<Buf> bufs_;
};

::testing::AssertionResult Fails(fa_status got, fa_status want, const std::string& words,
                                 const Fp8Call& c) {
  const std::string msg = fa_last_error();
  if (got != want)
    return ::testing::AssertionFailure()
           << "status " << fa_status_string(got) << ", expected " << fa_status_string(want)
           << "; message: \"" << msg << "\"";
  if (msg.find(words) == std::string::npos)
    return ::testing::AssertionFailure()
           << "message \"" << msg << "\" does not contain \"" << words << "\"";
  const std::string t = c.touched();
  if (!t.empty())
    return ::testing::AssertionFailure() << "failed call wrote to: " << t << " (\"" << msg << "\")";
  return ::testing::AssertionSuccess();
}

constexpr fa_status kInvalid = FA_ERROR_INVALID_ARGUMENT;
constexpr fa_status kUnsupported = FA_ERROR_UNSUPPORTED;

TEST(Fp8Misuse, ValidCallSucceeds) {
  Fp8Call c;
  ASSERT_EQ(c.forward(), FA_OK) << fa_last_error();
  EXPECT_NE(c.touched().find("out"), std::string::npos);
  // With the caller's workspace, then reusing it.
  Fp8Call w;
  size_t bytes = 0;
  ASSERT_EQ(w.workspace_size(&bytes), FA_OK) << fa_last_error();
  EXPECT_GT(bytes, size_t(0));
  ASSERT_LE(bytes, w.workspace_capacity());
  w.opt.workspace = w.workspace(), w.opt.workspace_bytes = bytes;
  ASSERT_EQ(w.forward(), FA_OK) << fa_last_error();
  w.f.reuse_quantized = 1;
  ASSERT_EQ(w.forward(), FA_OK) << fa_last_error();
}

TEST(Fp8Misuse, NullOptionsStruct) {
  Fp8Call c;
  EXPECT_TRUE(Fails(fa_fp8_forward(&c.q, &c.k, &c.v, nullptr, &c.out, &c.lse, &c.opt), kInvalid,
                    "f (the fa_fp8 options) is null", c));
  size_t bytes = 7;
  EXPECT_TRUE(Fails(fa_fp8_workspace_size(&c.q, &c.k, &c.v, nullptr, &c.opt, &bytes), kInvalid,
                    "f (the fa_fp8 options) is null", c));
  EXPECT_EQ(bytes, size_t(7));
}

TEST(Fp8Misuse, Float32Inputs) {
  Fp8Call c;
  c.q.dtype = FA_DTYPE_FLOAT32;
  EXPECT_TRUE(
      Fails(c.forward(), kInvalid, "q: the fp8 forward takes float16 or bfloat16 inputs", c));
}

TEST(Fp8Misuse, AlreadyQuantisedInputs) {
  Fp8Call c;
  c.q.dtype = c.k.dtype = c.v.dtype = c.out.dtype = FA_DTYPE_FLOAT8_E4M3;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "got float8_e4m3", c));
}

TEST(Fp8Misuse, KeyDtypeDiffers) {
  Fp8Call c;
  c.k.dtype = FA_DTYPE_FLOAT16;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "k: expected dtype bfloat16, got float16", c));
}

TEST(Fp8Misuse, OutNotInQueryDtype) {
  Fp8Call c;
  c.out.dtype = FA_DTYPE_FLOAT16;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "out: expected dtype bfloat16, got float16", c));
}

TEST(Fp8Misuse, HeadDimNotAPowerOfTwo) {
  Fp8Call c;
  c.q.shape[3] = c.k.shape[3] = c.v.shape[3] = c.out.shape[3] = 96;  // fits in the buffers
  EXPECT_TRUE(
      Fails(c.forward(), kUnsupported, "head_dim 96 is not supported by the fp8 forward", c));
}

TEST(Fp8Misuse, Softcap) {
  Fp8Call c;
  c.opt.softcap = 30.f;
  EXPECT_TRUE(Fails(c.forward(), kUnsupported, "softcap is not available in the fp8 forward", c));
}

TEST(Fp8Misuse, UnknownScaling) {
  Fp8Call c;
  c.f.scaling = static_cast<fa_fp8_scaling>(7);
  EXPECT_TRUE(Fails(c.forward(), kInvalid,
                    "f->scaling must be FA_FP8_SCALING_BLOCK or FA_FP8_SCALING_PER_HEAD, got 7",
                    c));
}

TEST(Fp8Misuse, IncoherentNotABoolean) {
  Fp8Call c;
  c.f.incoherent = 2;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "f->incoherent must be 0 or 1, got 2", c));
}

TEST(Fp8Misuse, ReuseOutOfRange) {
  Fp8Call c;
  c.opt.workspace = c.workspace(), c.opt.workspace_bytes = c.workspace_capacity();
  c.f.reuse_quantized = 3;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "f->reuse_quantized must be 0", c));
  c.f.reuse_quantized = -1;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "got -1", c));
}

TEST(Fp8Misuse, ReuseWithoutCallerWorkspace) {
  for (int r : {1, 2}) {
    Fp8Call c;
    c.f.reuse_quantized = r;
    EXPECT_TRUE(Fails(c.forward(), kInvalid, "needs the caller's workspace (opt->workspace)", c))
        << r;
  }
}

TEST(Fp8Misuse, WorkspaceTooSmall) {
  Fp8Call c;
  size_t bytes = 0;
  ASSERT_EQ(c.workspace_size(&bytes), FA_OK);
  c.opt.workspace = c.workspace(), c.opt.workspace_bytes = bytes - 16;
  EXPECT_TRUE(Fails(c.forward(), kInvalid,
                    "bytes is too small: this call needs " + std::to_string(bytes), c));
}

TEST(Fp8Misuse, HeadsNotDivisible) {
  Fp8Call c;
  c.q.shape[2] = c.out.shape[2] = 3;
  c.lse.shape[1] = 3;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "q has 3 heads, not a multiple of k's 2", c));
}

TEST(Fp8Misuse, OutputsChecked) {
  Fp8Call c;
  EXPECT_TRUE(Fails(fa_fp8_forward(&c.q, &c.k, &c.v, &c.f, nullptr, &c.lse, &c.opt), kInvalid,
                    "out is null", c));
  c.out.shape[1] = 15;
  EXPECT_TRUE(Fails(c.forward(), kInvalid, "out: expected shape [2, 16, 4, 64] (as q)", c));
  Fp8Call l;
  l.lse.shape[2] = 15;
  EXPECT_TRUE(Fails(l.forward(), kInvalid, "lse: expected shape [2, 4, 16]", l));
  Fp8Call v;
  v.v.shape[1] = 23;
  EXPECT_TRUE(Fails(v.forward(), kInvalid, "v: expected shape", v));
}

TEST(Fp8Misuse, AlgoOnTheCpu) {
  Fp8Call c;
  c.opt.algo = FA_ALGO_FA2;
  EXPECT_TRUE(Fails(c.forward(), kUnsupported, "algo", c));
}

TEST(Fp8Misuse, WorkspaceQuery) {
  Fp8Call c;
  EXPECT_TRUE(Fails(c.workspace_size(nullptr), kInvalid, "bytes is null", c));
  size_t bytes = 3;
  c.q.dtype = FA_DTYPE_FLOAT32;
  EXPECT_TRUE(
      Fails(c.workspace_size(&bytes), kInvalid, "q: the fp8 forward takes float16 or bfloat16", c));
  EXPECT_EQ(bytes, size_t(3));
}

TEST(Fp8Misuse, CudaTensorWithoutCuda) {
  if (fa_cuda_built()) GTEST_SKIP() << "this build has CUDA";
  Fp8Call c;
  c.q.device = c.k.device = c.v.device = c.out.device = c.lse.device = FA_DEVICE_CUDA;
  EXPECT_TRUE(Fails(c.forward(), kUnsupported, "built without CUDA", c));
}

TEST(Fp8Misuse, CppApiThrowsWithStatus) {
  Fp8Call c;
  fa::Tensor q, k, v, out, lse;
  static_cast<fa_tensor&>(q) = c.q, static_cast<fa_tensor&>(k) = c.k,
  static_cast<fa_tensor&>(v) = c.v;
  static_cast<fa_tensor&>(out) = c.out, static_cast<fa_tensor&>(lse) = c.lse;
  fa::Fp8 f;
  f.set_incoherent(true).set_scaling(FA_FP8_SCALING_PER_HEAD).reuse(1);  // no workspace: invalid
  try {
    fa::fp8_forward(q, k, v, out, &lse, f);
    FAIL() << "no exception";
  } catch (const fa::Error& e) {
    EXPECT_EQ(e.status(), FA_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("reuse_quantized = 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.touched(), "");
  f.reuse(0);
  fa::Options opt;
  opt.threads(1);
  EXPECT_GT(fa::fp8_workspace_size(q, k, v, f, opt), size_t(0));
  fa::fp8_forward(q, k, v, out, &lse, f, opt);
  EXPECT_NE(c.touched(), "");
}

}  // namespace
