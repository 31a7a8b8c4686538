// Misuse of the C ABI (and the C++ API over it): every bad argument must give the right status,
// a message with the words the user will read, and leave every buffer it was given untouched.
//
// Each test starts from a valid call (checked to succeed in ValidCallsSucceed, so a failure below
// is caused by the one thing the test breaks), breaks one argument, and checks all three. Buffers
// are filled with a byte pattern first and compared byte for byte afterwards, inputs included.
#include <flashattn/flashattn.h>
#include <flashattn/flashattn.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/abi_names.hpp"

namespace {

constexpr uint8_t kPattern = 0xA5;

// A contiguous (row-major) descriptor.
fa_tensor make_tensor(void* data, fa_dtype dt, std::vector<int64_t> shape,
                      fa_device dev = FA_DEVICE_CPU) {
  fa_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.device = dev;
  t.rank = int(shape.size());
  int64_t st = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.shape[d] = shape[size_t(d)];
    t.strides[d] = st;
    st *= shape[size_t(d)];
  }
  return t;
}

// One named buffer with its pristine copy.
struct Buffer {
  std::string name;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> snapshot;
};

// Owns the memory of a small valid problem and the descriptors pointing into it. Tests edit the
// descriptors (never the memory) to build the misuse they check.
class Problem {
 public:
  // Batch form: q [B, Nq, Hq, D], k/v [B, Nk, Hk, D], lse [B, Hq, Nq].
  static constexpr int64_t B = 2, Nq = 16, Nk = 24, Hq = 4, Hk = 2, D = 64;
  // Varlen form: three sequences, the middle one empty on both sides.
  static constexpr int64_t kTq = 12, kTk = 20;

  explicit Problem(fa_dtype dt = FA_DTYPE_FLOAT16) {
    const int64_t e = int64_t(fa::core::dtype_size(dt));
    auto add = [&](const char* name, int64_t n) {
      buffers_.push_back({name, std::vector<uint8_t>(size_t(n)), {}});
      return buffers_.size() - 1;
    };
    const size_t iq = add("q", B * Nq * Hq * D * e), ik = add("k", B * Nk * Hk * D * e),
                 iv = add("v", B * Nk * Hk * D * e), io = add("out", B * Nq * Hq * D * e),
                 il = add("lse", B * Hq * Nq * 4), ido = add("dout", B * Nq * Hq * D * e),
                 idq = add("dq", B * Nq * Hq * D * e), idk = add("dk", B * Nk * Hk * D * e),
                 idv = add("dv", B * Nk * Hk * D * e), icq = add("cu_seqlens_q", 4 * 4),
                 ick = add("cu_seqlens_k", 4 * 4), iu = add("seqused_k", 3 * 4);
    for (Buffer& b : buffers_) std::memset(b.bytes.data(), kPattern, b.bytes.size());
    // Inputs must be finite numbers for the control calls: small fp16/bf16/fp32 values.
    for (size_t i : {iq, ik, iv, io, ido}) fill_small(buffers_[i].bytes, dt);
    const float lse_value = 1.f;
    for (size_t i = 0; i < buffers_[il].bytes.size(); i += 4)
      std::memcpy(&buffers_[il].bytes[i], &lse_value, 4);
    const int32_t cq[4] = {0, 5, 5, int32_t(kTq)}, ck[4] = {0, 7, 7, int32_t(kTk)},
                  used[3] = {6, 0, 13};
    std::memcpy(buffers_[icq].bytes.data(), cq, sizeof cq);
    std::memcpy(buffers_[ick].bytes.data(), ck, sizeof ck);
    std::memcpy(buffers_[iu].bytes.data(), used, sizeof used);
    for (Buffer& b : buffers_) b.snapshot = b.bytes;

    auto ptr = [&](size_t i) { return static_cast<void*>(buffers_[i].bytes.data()); };
    q = make_tensor(ptr(iq), dt, {B, Nq, Hq, D});
    k = make_tensor(ptr(ik), dt, {B, Nk, Hk, D});
    v = make_tensor(ptr(iv), dt, {B, Nk, Hk, D});
    out = make_tensor(ptr(io), dt, {B, Nq, Hq, D});
    lse = make_tensor(ptr(il), FA_DTYPE_FLOAT32, {B, Hq, Nq});
    dout = make_tensor(ptr(ido), dt, {B, Nq, Hq, D});
    dq = make_tensor(ptr(idq), dt, {B, Nq, Hq, D});
    dk = make_tensor(ptr(idk), dt, {B, Nk, Hk, D});
    dv = make_tensor(ptr(idv), dt, {B, Nk, Hk, D});
    // Varlen views of the same memory (the buffers are large enough).
    vq = make_tensor(ptr(iq), dt, {kTq, Hq, D});
    vk = make_tensor(ptr(ik), dt, {kTk, Hk, D});
    vv = make_tensor(ptr(iv), dt, {kTk, Hk, D});
    vout = make_tensor(ptr(io), dt, {kTq, Hq, D});
    vlse = make_tensor(ptr(il), FA_DTYPE_FLOAT32, {Hq, kTq});
    vdout = make_tensor(ptr(ido), dt, {kTq, Hq, D});
    vdq = make_tensor(ptr(idq), dt, {kTq, Hq, D});
    vdk = make_tensor(ptr(idk), dt, {kTk, Hk, D});
    vdv = make_tensor(ptr(idv), dt, {kTk, Hk, D});
    cu_q = make_tensor(ptr(icq), FA_DTYPE_INT32, {4});
    cu_k = make_tensor(ptr(ick), FA_DTYPE_INT32, {4});
    seqused = make_tensor(ptr(iu), FA_DTYPE_INT32, {3});
    vl = fa_varlen{&cu_q, &cu_k, nullptr, 7, 13};
    fa_options_init(&opt);
    opt.num_threads = 1;
  }

  int32_t* cu_q_data() { return static_cast<int32_t*>(cu_q.data); }
  int32_t* cu_k_data() { return static_cast<int32_t*>(cu_k.data); }
  int32_t* seqused_data() { return static_cast<int32_t*>(seqused.data); }
  // Tests that edit the int32 metadata on purpose call this so the edit is the new baseline.
  void rebaseline() {
    for (Buffer& b : buffers_) b.snapshot = b.bytes;
  }

  fa_status forward() { return fa_forward(&q, &k, &v, &out, &lse, &opt); }
  fa_status backward() {
    return fa_backward(&q, &k, &v, &out, &lse, &dout, &dq, &dk, &dv, &opt);
  }
  fa_status varlen_forward() { return fa_varlen_forward(&vq, &vk, &vv, &vl, &vout, &vlse, &opt); }
  fa_status varlen_backward() {
    return fa_varlen_backward(&vq, &vk, &vv, &vl, &vout, &vlse, &vdout, &vdq, &vdk, &vdv, &opt);
  }

  // Names of the buffers whose bytes changed since construction (or the last rebaseline).
  std::string touched() const {
    std::string names;
    for (const Buffer& b : buffers_)
      if (b.bytes != b.snapshot) names += (names.empty() ? "" : ", ") + b.name;
    return names;
  }

  fa_tensor q, k, v, out, lse, dout, dq, dk, dv;
  fa_tensor vq, vk, vv, vout, vlse, vdout, vdq, vdk, vdv, cu_q, cu_k, seqused;
  fa_varlen vl;
  fa_options opt;

 private:
  static void fill_small(std::vector<uint8_t>& bytes, fa_dtype dt) {
    // 0.25 in each dtype: exact everywhere, keeps the control calls finite.
    if (dt == FA_DTYPE_FLOAT32) {
      const float x = 0.25f;
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) std::memcpy(&bytes[i], &x, 4);
    } else if (dt == FA_DTYPE_FLOAT16 || dt == FA_DTYPE_BFLOAT16) {
      const uint16_t x = dt == FA_DTYPE_FLOAT16 ? 0x3400 : 0x3e80;
      for (size_t i = 0; i + 2 <= bytes.size(); i += 2) std::memcpy(&bytes[i], &x, 2);
    }
  }

  std::vector<Buffer> buffers_;
};

// The status, the message (a substring the user will read verbatim) and untouched memory.
::testing::AssertionResult Fails(fa_status got, fa_status want, const std::string& words,
                                 const Problem& p) {
  const std::string msg = fa_last_error();
  if (got != want)
    return ::testing::AssertionFailure()
           << "status " << fa_status_string(got) << " (" << int(got) << "), expected "
           << fa_status_string(want) << "; message: \"" << msg << "\"";
  if (msg.find(words) == std::string::npos)
    return ::testing::AssertionFailure()
           << "message \"" << msg << "\" does not contain \"" << words << "\"";
  const std::string t = p.touched();
  if (!t.empty())
    return ::testing::AssertionFailure() << "failed call wrote to: " << t << " (\"" << msg << "\")";
  return ::testing::AssertionSuccess();
}

constexpr fa_status kInvalid = FA_ERROR_INVALID_ARGUMENT;
constexpr fa_status kUnsupported = FA_ERROR_UNSUPPORTED;

// ---------------------------------------------------------------------------------------------
// Controls: the unmodified problem is valid, so each failure below has exactly one cause.
// ---------------------------------------------------------------------------------------------
TEST(Misuse, ValidCallsSucceed) {
  for (fa_dtype dt : {FA_DTYPE_FLOAT16, FA_DTYPE_BFLOAT16, FA_DTYPE_FLOAT32}) {
    Problem p(dt);
    EXPECT_EQ(p.forward(), FA_OK) << fa_last_error();
    EXPECT_STREQ(fa_last_error(), "");  // success clears the previous message
    EXPECT_EQ(p.backward(), FA_OK) << fa_last_error();
    EXPECT_EQ(p.varlen_forward(), FA_OK) << fa_last_error();
    EXPECT_EQ(p.varlen_backward(), FA_OK) << fa_last_error();
    p.vl.seqused_k = &p.seqused;
    EXPECT_EQ(p.varlen_forward(), FA_OK) << fa_last_error();
    size_t bytes = 123;
    EXPECT_EQ(fa_forward_workspace_size(&p.q, &p.k, &p.v, nullptr, &p.opt, &bytes), FA_OK);
    EXPECT_EQ(bytes, 0u);  // the CPU backend needs no workspace
  }
}

// ---------------------------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------------------------
TEST(Misuse, KeyDtypeDiffersFromQuery) {
  Problem p;
  p.k.dtype = FA_DTYPE_BFLOAT16;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k: expected dtype float16, got bfloat16", p));
}

TEST(Misuse, ValueDtypeDiffersFromQuery) {
  Problem p(FA_DTYPE_BFLOAT16);
  p.v.dtype = FA_DTYPE_FLOAT16;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "v: expected dtype bfloat16, got float16", p));
}

TEST(Misuse, Int32Query) {
  Problem p;
  p.q.dtype = p.k.dtype = p.v.dtype = p.out.dtype = FA_DTYPE_INT32;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "q: unsupported dtype int32", p));
}

TEST(Misuse, UnknownDtypeValueIsNamed) {
  Problem p;
  p.q.dtype = static_cast<fa_dtype>(42);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "q: unsupported dtype 42", p));
}

TEST(Misuse, Float8IsNotAvailableYet) {
  Problem p;
  p.q.dtype = p.k.dtype = p.v.dtype = p.out.dtype = FA_DTYPE_FLOAT8_E4M3;
  EXPECT_TRUE(Fails(p.forward(), kUnsupported, "float8_e4m3 attention is not available", p));
}

TEST(Misuse, LseNotFloat32) {
  Problem p;
  p.lse.dtype = FA_DTYPE_FLOAT16;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "lse: expected dtype float32, got float16", p));
}

TEST(Misuse, OutputDtypeDiffersFromQuery) {
  Problem p;
  p.out.dtype = FA_DTYPE_FLOAT32;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "out: expected dtype float16, got float32", p));
}

TEST(Misuse, GradientDtypeDiffersFromQuery) {
  Problem p;
  p.dk.dtype = FA_DTYPE_BFLOAT16;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dk: expected dtype float16, got bfloat16", p));
}

// ---------------------------------------------------------------------------------------------
// Shapes and ranks
// ---------------------------------------------------------------------------------------------
TEST(Misuse, BatchMismatch) {
  Problem p;
  p.k.shape[0] = 1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k: batch size 1 does not match q's 2", p));
}

TEST(Misuse, HeadDimMismatch) {
  Problem p;
  p.k.shape[3] = 32;
  p.k.strides[2] = 32;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k: head_dim 32 does not match q's 64", p));
}

TEST(Misuse, KeyAndValueLengthsDiffer) {
  Problem p;
  p.v.shape[1] = 23;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "v: expected shape [2, 24, 2, 64], got [2, 23, 2, 64]", p));
}

TEST(Misuse, ValueHeadsDiffer) {
  Problem p;
  p.v.shape[2] = 1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "v: expected shape [2, 24, 2, 64], got [2, 24, 1, 64]", p));
}

TEST(Misuse, OutShape) {
  Problem p;
  p.out.shape[1] = 15;
  EXPECT_TRUE(Fails(p.forward(), kInvalid,
                    "out: expected shape [2, 16, 4, 64] (as q), got [2, 15, 4, 64]", p));
}

TEST(Misuse, LseShapeTransposed) {
  Problem p;
  p.lse = make_tensor(p.lse.data, FA_DTYPE_FLOAT32, {Problem::B, Problem::Nq, Problem::Hq});
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "lse: expected shape [2, 4, 16], got [2, 16, 4]", p));
}

TEST(Misuse, LseShapeInBackward) {
  Problem p;
  p.lse.shape[2] = 17;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "lse: expected shape [2, 4, 16], got [2, 4, 17]", p));
}

TEST(Misuse, DoutShape) {
  Problem p;
  p.dout.shape[2] = 2;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dout: expected shape [2, 16, 4, 64] (as q)", p));
}

TEST(Misuse, DqShape) {
  Problem p;
  p.dq.shape[0] = 1;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dq: expected shape [2, 16, 4, 64] (as q), got [1, 16, 4, 64]", p));
}

TEST(Misuse, DkShapeIsKeysNotQueries) {
  Problem p;
  p.dk = make_tensor(p.dk.data, p.q.dtype, {Problem::B, Problem::Nk, Problem::Hq, Problem::D});
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dk: expected shape [2, 24, 2, 64] (as k), got [2, 24, 4, 64]", p));
}

TEST(Misuse, DvShape) {
  Problem p;
  p.dv.shape[1] = 16;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dv: expected shape [2, 24, 2, 64] (as v)", p));
}

TEST(Misuse, NegativeSize) {
  Problem p;
  p.k.shape[1] = -1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k: negative size in shape [2, -1, 2, 64]", p));
}

TEST(Misuse, RankTooLowForBatchForm) {
  Problem p;
  EXPECT_TRUE(Fails(fa_forward(&p.vq, &p.k, &p.v, &p.out, &p.lse, &p.opt), kInvalid,
                    "q: expected rank 4, got 3", p));
}

TEST(Misuse, RankTooHighForVarlenForm) {
  Problem p;
  EXPECT_TRUE(Fails(fa_varlen_forward(&p.vq, &p.k, &p.vv, &p.vl, &p.vout, &p.vlse, &p.opt),
                    kInvalid, "k: expected rank 3, got 4", p));
}

TEST(Misuse, RankAboveMaximum) {
  Problem p;
  p.out.rank = FA_MAX_RANK + 3;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "out: expected rank 4, got 7", p));
}

TEST(Misuse, LseRankInVarlen) {
  Problem p;
  EXPECT_TRUE(Fails(fa_varlen_forward(&p.vq, &p.vk, &p.vv, &p.vl, &p.vout, &p.lse, &p.opt),
                    kInvalid, "lse: expected rank 2, got 3", p));
}

// ---------------------------------------------------------------------------------------------
// Strides
// ---------------------------------------------------------------------------------------------
TEST(Misuse, LastDimNotContiguous) {
  Problem p;
  p.q.strides[3] = 2;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "q: last dimension must be contiguous (stride 1), got stride 2", p));
}

TEST(Misuse, OutputLastDimNotContiguous) {
  Problem p;
  p.dq.strides[3] = 0;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dq: last dimension must be contiguous", p));
}

TEST(Misuse, LseRowsNotContiguous) {
  Problem p;
  p.lse.strides[2] = Problem::Hq;  // a [B, Nq, Hq] buffer viewed as [B, Hq, Nq]
  p.lse.strides[1] = 1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "lse: last dimension must be contiguous (stride 1), got stride 4", p));
}

TEST(Misuse, NegativeStride) {
  Problem p;
  p.k.strides[1] = -p.k.strides[1];
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k: negative stride in dimension 1", p));
}

// ---------------------------------------------------------------------------------------------
// Null pointers
// ---------------------------------------------------------------------------------------------
TEST(Misuse, NullQuery) {
  Problem p;
  EXPECT_TRUE(Fails(fa_forward(nullptr, &p.k, &p.v, &p.out, &p.lse, &p.opt), kInvalid, "q is null", p));
}

TEST(Misuse, NullQueryData) {
  Problem p;
  p.q.data = nullptr;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "q.data is null", p));
}

TEST(Misuse, NullValue) {
  Problem p;
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, nullptr, &p.out, &p.lse, &p.dout, &p.dq, &p.dk, &p.dv, &p.opt),
                    kInvalid, "v is null", p));
}

TEST(Misuse, NullOut) {
  Problem p;
  EXPECT_TRUE(Fails(fa_forward(&p.q, &p.k, &p.v, nullptr, &p.lse, &p.opt), kInvalid, "out is null", p));
}

TEST(Misuse, NullOutData) {
  Problem p;
  p.out.data = nullptr;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "out.data is null", p));
}

TEST(Misuse, NullLseInBackward) {
  Problem p;
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, &p.v, &p.out, nullptr, &p.dout, &p.dq, &p.dk, &p.dv, &p.opt),
                    kInvalid, "lse is null (the backward needs the forward's log-sum-exp)", p));
}

TEST(Misuse, NullDout) {
  Problem p;
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, &p.v, &p.out, &p.lse, nullptr, &p.dq, &p.dk, &p.dv, &p.opt),
                    kInvalid, "dout is null", p));
}

TEST(Misuse, NullGradients) {
  Problem p;
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, &p.v, &p.out, &p.lse, &p.dout, nullptr, &p.dk, &p.dv, &p.opt),
                    kInvalid, "dq is null", p));
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, &p.v, &p.out, &p.lse, &p.dout, &p.dq, nullptr, &p.dv, &p.opt),
                    kInvalid, "dk is null", p));
  EXPECT_TRUE(Fails(fa_backward(&p.q, &p.k, &p.v, &p.out, &p.lse, &p.dout, &p.dq, &p.dk, nullptr, &p.opt),
                    kInvalid, "dv is null", p));
  p.dv.data = nullptr;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dv.data is null", p));
}

TEST(Misuse, NullVarlenDescription) {
  Problem p;
  EXPECT_TRUE(Fails(fa_varlen_forward(&p.vq, &p.vk, &p.vv, nullptr, &p.vout, &p.vlse, &p.opt),
                    kInvalid, "varlen description is null", p));
  EXPECT_TRUE(Fails(fa_varlen_backward(&p.vq, &p.vk, &p.vv, nullptr, &p.vout, &p.vlse, &p.vdout,
                                       &p.vdq, &p.vdk, &p.vdv, &p.opt),
                    kInvalid, "varlen description is null", p));
}

TEST(Misuse, NullCuSeqlens) {
  Problem p;
  p.vl.cu_seqlens_q = nullptr;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "cu_seqlens_q is null", p));
  p.vl.cu_seqlens_q = &p.cu_q;
  p.cu_k.data = nullptr;
  EXPECT_TRUE(Fails(p.varlen_backward(), kInvalid, "cu_seqlens_k.data is null", p));
}

TEST(Misuse, NullBytesInWorkspaceQuery) {
  Problem p;
  EXPECT_TRUE(Fails(fa_forward_workspace_size(&p.q, &p.k, &p.v, nullptr, &p.opt, nullptr),
                    kInvalid, "bytes is null", p));
  EXPECT_TRUE(Fails(fa_backward_workspace_size(&p.vq, &p.vk, &p.vv, &p.vl, &p.opt, nullptr),
                    kInvalid, "bytes is null", p));
}

TEST(Misuse, WorkspaceQueryValidatesInputs) {
  Problem p;
  p.k.dtype = FA_DTYPE_FLOAT32;
  size_t bytes = 77;
  EXPECT_TRUE(Fails(fa_backward_workspace_size(&p.q, &p.k, &p.v, nullptr, &p.opt, &bytes),
                    kInvalid, "k: expected dtype float16, got float32", p));
  EXPECT_EQ(bytes, 77u);  // not written on failure
}

// ---------------------------------------------------------------------------------------------
// Head dims and heads
// ---------------------------------------------------------------------------------------------
// Re-describes every tensor of the batch problem with a new head_dim / head counts, inside the
// same memory (the sizes used here never exceed the original ones).
void reshape(Problem& p, int64_t hq, int64_t hk, int64_t d) {
  const fa_dtype dt = p.q.dtype;
  p.q = make_tensor(p.q.data, dt, {Problem::B, Problem::Nq, hq, d});
  p.k = make_tensor(p.k.data, dt, {Problem::B, Problem::Nk, hk, d});
  p.v = make_tensor(p.v.data, dt, {Problem::B, Problem::Nk, hk, d});
  p.out = make_tensor(p.out.data, dt, {Problem::B, Problem::Nq, hq, d});
  p.lse = make_tensor(p.lse.data, FA_DTYPE_FLOAT32, {Problem::B, hq, Problem::Nq});
}

TEST(Misuse, HeadDimNotMultipleOf8) {
  Problem p;
  reshape(p, 4, 2, 12);
  EXPECT_TRUE(Fails(p.forward(), kUnsupported,
                    "head_dim 12 is not supported: it must be a multiple of 8 in [8, 256]", p));
}

TEST(Misuse, HeadDimTooLarge) {
  Problem p;
  reshape(p, 1, 1, 264);
  EXPECT_TRUE(Fails(p.forward(), kUnsupported, "head_dim 264 is not supported", p));
}

TEST(Misuse, HeadDimZero) {
  Problem p;
  reshape(p, 4, 2, 0);
  EXPECT_TRUE(Fails(p.forward(), kUnsupported, "head_dim 0 is not supported", p));
}

TEST(Misuse, HeadsNotDivisible) {
  Problem p;
  reshape(p, 6, 4, 32);
  EXPECT_TRUE(Fails(p.forward(), kInvalid,
                    "q has 6 heads, not a multiple of k's 4 (GQA/MQA needs heads_q % heads_kv == 0)", p));
}

TEST(Misuse, ZeroHeads) {
  Problem p;
  reshape(p, 4, 0, 64);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "number of heads must be positive (q has 4, k has 0)", p));
  reshape(p, 0, 2, 64);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "number of heads must be positive (q has 0, k has 2)", p));
}

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------
TEST(Misuse, NegativeWindowLeft) {
  Problem p;
  p.opt.window_left = -2;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "window_left must be -1 (unbounded) or >= 0, got -2", p));
}

TEST(Misuse, NegativeWindowRight) {
  Problem p;
  p.opt.window_right = -5;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "window_right must be -1 (unbounded) or >= 0, got -5", p));
}

TEST(Misuse, NegativeSoftcap) {
  Problem p;
  p.opt.softcap = -1.f;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "softcap must be finite and >= 0 (0 disables it)", p));
}

TEST(Misuse, InfiniteSoftcap) {
  Problem p;
  p.opt.softcap = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "softcap must be finite and >= 0", p));
}

TEST(Misuse, NanSoftmaxScale) {
  Problem p;
  p.opt.softmax_scale = std::nanf("");
  EXPECT_TRUE(Fails(p.forward(), kInvalid,
                    "softmax_scale must be finite and >= 0 (0 selects 1/sqrt(head_dim)), got nan", p));
}

TEST(Misuse, NegativeSoftmaxScale) {
  Problem p;
  p.opt.softmax_scale = -0.125f;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "softmax_scale must be finite and >= 0", p));
}

TEST(Misuse, NegativeThreads) {
  Problem p;
  p.opt.num_threads = -1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "num_threads must be >= 0 (0 = all hardware threads), got -1", p));
}

TEST(Misuse, UnknownBackend) {
  Problem p;
  p.opt.backend = static_cast<fa_backend>(7);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "unknown backend 7 (expected FA_BACKEND_AUTO, FA_BACKEND_CPU or FA_BACKEND_CUDA)", p));
}

TEST(Misuse, UnknownAlgo) {
  Problem p;
  p.opt.algo = static_cast<fa_algo>(-1);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "unknown algo -1 (expected FA_ALGO_AUTO, FA_ALGO_FA1, FA_ALGO_FA2 or FA_ALGO_FA3)", p));
}

TEST(Misuse, WorkspaceBytesWithoutWorkspace) {
  Problem p;
  p.opt.workspace_bytes = 1024;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "workspace_bytes is 1024 but workspace is null", p));
}

// The kernels access the workspace with 16-byte vector and TMA bulk operations; a misaligned base
// must be refused before anything runs, not fault on the device.
TEST(Misuse, WorkspaceMisaligned) {
  Problem p;
  alignas(16) static unsigned char scratch[4096 + 16];
  p.opt.workspace = scratch + 8;
  p.opt.workspace_bytes = 4096;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "workspace must be 16-byte aligned", p));
}

TEST(Misuse, AlgoOnCpuBackend) {
  Problem p;
  p.opt.algo = FA_ALGO_FA2;
  EXPECT_TRUE(Fails(p.forward(), kUnsupported,
                    "algo selects a CUDA kernel generation; the CPU backend has one algorithm", p));
}

// ---------------------------------------------------------------------------------------------
// Varlen metadata (host-checked on the CPU backend)
// ---------------------------------------------------------------------------------------------
TEST(Misuse, CuSeqlensNotMonotonic) {
  Problem p;
  p.cu_q_data()[2] = 3;  // {0, 5, 3, 12}
  p.rebaseline();
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid,
                    "cu_seqlens_q must be non-decreasing: cu_seqlens_q[2] = 3 < cu_seqlens_q[1] = 5", p));
}

TEST(Misuse, CuSeqlensDoesNotStartAtZero) {
  Problem p;
  p.cu_k_data()[0] = 1;
  p.rebaseline();
  EXPECT_TRUE(Fails(p.varlen_backward(), kInvalid, "cu_seqlens_k[0] must be 0, got 1", p));
}

TEST(Misuse, CuSeqlensLastIsNotTotal) {
  Problem p;
  p.cu_q_data()[3] = 11;
  p.rebaseline();
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid,
                    "cu_seqlens_q[3] = 11 must equal the number of rows of q (q.shape[0] = 12)", p));
}

TEST(Misuse, CuSeqlensKeysLastIsNotTotal) {
  Problem p;
  p.vk.shape[0] = p.vv.shape[0] = 21;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid,
                    "cu_seqlens_k[3] = 20 must equal the number of rows of k (k.shape[0] = 21)", p));
}

TEST(Misuse, CuSeqlensWrongDtype) {
  Problem p;
  p.cu_q.dtype = FA_DTYPE_FLOAT32;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "cu_seqlens_q: expected dtype int32, got float32", p));
}

TEST(Misuse, CuSeqlensEntryCountsDiffer) {
  Problem p;
  p.cu_k.shape[0] = 3;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "cu_seqlens_k has 3 entries but cu_seqlens_q has 4", p));
}

TEST(Misuse, CuSeqlensEmpty) {
  Problem p;
  p.cu_q.shape[0] = 0;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "cu_seqlens_q must have at least one entry", p));
}

TEST(Misuse, SequenceLongerThanMaxSeqlen) {
  Problem p;
  p.vl.max_seqlen_q = 6;  // the third sequence has 7 queries
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "sequence 2 has 7 queries, more than max_seqlen_q 6", p));
  p.vl.max_seqlen_q = 7;
  p.vl.max_seqlen_k = 12;  // ... and 13 keys
  EXPECT_TRUE(Fails(p.varlen_backward(), kInvalid, "sequence 2 has 13 keys, more than max_seqlen_k 12", p));
}

TEST(Misuse, NegativeMaxSeqlen) {
  Problem p;
  p.vl.max_seqlen_k = -1;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "max_seqlen_q and max_seqlen_k must be >= 0", p));
}

TEST(Misuse, SequsedKOutOfRange) {
  Problem p;
  p.vl.seqused_k = &p.seqused;
  p.seqused_data()[0] = 8;  // sequence 0 has 7 keys
  p.rebaseline();
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "seqused_k[0] = 8 is outside [0, 7]", p));
  p.seqused_data()[0] = -1;
  p.rebaseline();
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "seqused_k[0] = -1 is outside [0, 7]", p));
}

TEST(Misuse, SequsedKShape) {
  Problem p;
  p.vl.seqused_k = &p.seqused;
  p.seqused.shape[0] = 2;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "seqused_k: expected shape [3], got [2]", p));
}

TEST(Misuse, VarlenLseShape) {
  Problem p;
  p.vlse = make_tensor(p.vlse.data, FA_DTYPE_FLOAT32, {Problem::kTq, Problem::Hq});
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "lse: expected shape [4, 12], got [12, 4]", p));
}

// ---------------------------------------------------------------------------------------------
// Devices and backends
// ---------------------------------------------------------------------------------------------
void all_on_cuda(Problem& p) {
  for (fa_tensor* t : {&p.q, &p.k, &p.v, &p.out, &p.lse, &p.dout, &p.dq, &p.dk, &p.dv})
    t->device = FA_DEVICE_CUDA;
}

TEST(Misuse, CudaTensorsToCpuBackend) {
  Problem p;
  all_on_cuda(p);
  p.opt.backend = FA_BACKEND_CPU;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "the CPU backend was asked for but q is a CUDA tensor", p));
}

TEST(Misuse, CpuTensorsToCudaBackend) {
  Problem p;
  p.opt.backend = FA_BACKEND_CUDA;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "the CUDA backend was asked for but q is a CPU tensor", p));
}

TEST(Misuse, MixedDevices) {
  Problem p;
  p.k.device = FA_DEVICE_CUDA;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "k is on CUDA but q is on CPU", p));
}

TEST(Misuse, OutputOnAnotherDevice) {
  Problem p;
  all_on_cuda(p);
  p.dq.device = FA_DEVICE_CPU;
  EXPECT_TRUE(Fails(p.backward(), kInvalid, "dq is on CPU but q is on CUDA", p));
}

TEST(Misuse, MixedCudaOrdinals) {
  Problem p;
  all_on_cuda(p);
  p.v.device_id = 1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "v is on CUDA device 1 but q is on CUDA device 0", p));
}

TEST(Misuse, NegativeCudaOrdinal) {
  Problem p;
  all_on_cuda(p);
  for (fa_tensor* t : {&p.q, &p.k, &p.v, &p.out, &p.lse}) t->device_id = -1;
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "q: CUDA device_id must be >= 0, got -1", p));
}

TEST(Misuse, UnknownDevice) {
  Problem p;
  p.lse.device = static_cast<fa_device>(3);
  EXPECT_TRUE(Fails(p.forward(), kInvalid, "lse: unknown device 3", p));
}

TEST(Misuse, VarlenMetadataOnAnotherDevice) {
  Problem p;
  p.cu_k.device = FA_DEVICE_CUDA;
  EXPECT_TRUE(Fails(p.varlen_forward(), kInvalid, "cu_seqlens_k is on CUDA but q is on CPU", p));
}

// CUDA tensors where no GPU can serve them: a clear error, never a crash or a write. (The host
// pointers are never dereferenced: the call must stop before any kernel or copy.)
TEST(Misuse, CudaTensorsWithoutUsableGpu) {
  if (fa_cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present: this checks the no-GPU path";
  Problem p;
  all_on_cuda(p);
  size_t bytes = 5;
  if (fa_cuda_built()) {
    EXPECT_TRUE(Fails(p.forward(), FA_ERROR_CUDA, "no CUDA device is available", p));
    EXPECT_TRUE(Fails(p.backward(), FA_ERROR_CUDA, "no CUDA device is available", p));
    EXPECT_TRUE(Fails(fa_forward_workspace_size(&p.q, &p.k, &p.v, nullptr, &p.opt, &bytes),
                      FA_ERROR_CUDA, "no CUDA device is available", p));
  } else {
    EXPECT_TRUE(Fails(p.forward(), kUnsupported, "q is a CUDA tensor but this flashattn was built without CUDA", p));
    EXPECT_TRUE(Fails(p.backward(), kUnsupported, "built without CUDA", p));
    EXPECT_TRUE(Fails(fa_forward_workspace_size(&p.q, &p.k, &p.v, nullptr, &p.opt, &bytes),
                      kUnsupported, "built without CUDA", p));
  }
  EXPECT_EQ(bytes, 5u);  // the size query writes nothing on failure either
}

// ---------------------------------------------------------------------------------------------
// The error channel itself
// ---------------------------------------------------------------------------------------------
TEST(Misuse, LastErrorIsPerThread) {
  Problem p;
  p.opt.num_threads = -3;
  ASSERT_EQ(p.forward(), kInvalid);
  std::string other;
  std::thread([&] {
    Problem p2;
    p2.k.dtype = FA_DTYPE_BFLOAT16;
    (void)p2.forward();
    other = fa_last_error();
  }).join();
  EXPECT_NE(std::string(fa_last_error()).find("num_threads"), std::string::npos);
  EXPECT_NE(other.find("k: expected dtype"), std::string::npos);
}

TEST(Misuse, StatusStrings) {
  EXPECT_STREQ(fa_status_string(FA_OK), "ok");
  EXPECT_STREQ(fa_status_string(FA_ERROR_INVALID_ARGUMENT), "invalid argument");
  EXPECT_STREQ(fa_status_string(FA_ERROR_UNSUPPORTED), "unsupported");
  EXPECT_STREQ(fa_status_string(static_cast<fa_status>(99)), "unknown status");
}

// ---------------------------------------------------------------------------------------------
// KV-cache decode (fa_kvcache_forward). A valid paged call with an append: q [2, 1, 4, 64],
// cache [6 pages, 4 rows, 2 heads, 64] (as a contiguous cache: [3, 8, 2, 64]), block_table
// [2, 3], cache_seqlens {5, 9}, k_new/v_new [2, 1, 2, 64]. The cache is one of the checked
// buffers: a failed call must not have appended anything.
// ---------------------------------------------------------------------------------------------
class KvProblem {
 public:
  static constexpr int64_t B = 2, Nq = 1, Hq = 4, Hk = 2, D = 64, Pages = 6, Ps = 4, P = 3;

  KvProblem() {
    auto add = [&](const char* name, int64_t n) {
      buffers_.push_back({name, std::vector<uint8_t>(size_t(n)), {}});
      return buffers_.size() - 1;
    };
    const size_t iq = add("q", B * Nq * Hq * D * 2), ik = add("k_cache", Pages * Ps * Hk * D * 2),
                 iv = add("v_cache", Pages * Ps * Hk * D * 2), ikn = add("k_new", B * Hk * D * 2),
                 ivn = add("v_new", B * Hk * D * 2), io = add("out", B * Nq * Hq * D * 2),
                 il = add("lse", B * Hq * Nq * 4), is = add("cache_seqlens", B * 4),
                 it = add("block_table", B * P * 4), ii = add("cache_batch_idx", B * 4);
    for (size_t i : {iq, ik, iv, ikn, ivn, io}) {
      const uint16_t x = i == ikn || i == ivn ? 0x3800 : 0x3400;  // 0.5 / 0.25 in fp16
      for (size_t j = 0; j < buffers_[i].bytes.size(); j += 2)
        std::memcpy(&buffers_[i].bytes[j], &x, 2);
    }
    std::memset(buffers_[il].bytes.data(), kPattern, buffers_[il].bytes.size());
    const int32_t seqlens[B] = {5, 9}, table[B * P] = {4, 0, -1, 2, 5, 1}, idx[B] = {2, 0};
    std::memcpy(buffers_[is].bytes.data(), seqlens, sizeof seqlens);
    std::memcpy(buffers_[it].bytes.data(), table, sizeof table);  // -1: a page sequence 0 never uses
    std::memcpy(buffers_[ii].bytes.data(), idx, sizeof idx);
    for (Buffer& b : buffers_) b.snapshot = b.bytes;
    auto ptr = [&](size_t i) { return static_cast<void*>(buffers_[i].bytes.data()); };
    q = make_tensor(ptr(iq), FA_DTYPE_FLOAT16, {B, Nq, Hq, D});
    k_cache = make_tensor(ptr(ik), FA_DTYPE_FLOAT16, {Pages, Ps, Hk, D});
    v_cache = make_tensor(ptr(iv), FA_DTYPE_FLOAT16, {Pages, Ps, Hk, D});
    k_new = make_tensor(ptr(ikn), FA_DTYPE_FLOAT16, {B, 1, Hk, D});
    v_new = make_tensor(ptr(ivn), FA_DTYPE_FLOAT16, {B, 1, Hk, D});
    out = make_tensor(ptr(io), FA_DTYPE_FLOAT16, {B, Nq, Hq, D});
    lse = make_tensor(ptr(il), FA_DTYPE_FLOAT32, {B, Hq, Nq});
    seqlens_t = make_tensor(ptr(is), FA_DTYPE_INT32, {B});
    table_t = make_tensor(ptr(it), FA_DTYPE_INT32, {B, P});
    idx_t = make_tensor(ptr(ii), FA_DTYPE_INT32, {B});
    kv = fa_kvcache{&k_cache, &v_cache, &seqlens_t, &table_t, nullptr, &k_new, &v_new, 0};
    fa_options_init(&opt);
    opt.num_threads = 1;
  }
  // The same memory as a contiguous cache [3, 8, 2, 64] selected by cache_batch_idx {2, 0}, with
  // cache_seqlens {5, 6} (capacity 8).
  void make_contiguous() {
    for (fa_tensor* t : {&k_cache, &v_cache}) *t = make_tensor(t->data, t->dtype, {3, 8, Hk, D});
    kv.block_table = nullptr;
    kv.cache_batch_idx = &idx_t;
    seqlens()[1] = 6;
    rebaseline();
  }
  int32_t* seqlens() { return static_cast<int32_t*>(seqlens_t.data); }
  int32_t* table() { return static_cast<int32_t*>(table_t.data); }
  int32_t* idx() { return static_cast<int32_t*>(idx_t.data); }
  void rebaseline() {
    for (Buffer& b : buffers_) b.snapshot = b.bytes;
  }
  std::string touched() const {
    std::string names;
    for (const Buffer& b : buffers_)
      if (b.bytes != b.snapshot) names += (names.empty() ? "" : ", ") + b.name;
    return names;
  }
  fa_status forward() { return fa_kvcache_forward(&q, &kv, &out, &lse, &opt); }

  fa_tensor q, k_cache, v_cache, k_new, v_new, out, lse, seqlens_t, table_t, idx_t;
  fa_kvcache kv;
  fa_options opt;

 private:
  std::vector<Buffer> buffers_;
};

::testing::AssertionResult KvFails(fa_status got, fa_status want, const std::string& words,
                                   const KvProblem& p) {
  const std::string msg = fa_last_error();
  if (got != want)
    return ::testing::AssertionFailure()
           << "status " << fa_status_string(got) << " (" << int(got) << "), expected "
           << fa_status_string(want) << "; message: \"" << msg << "\"";
  if (msg.find(words) == std::string::npos)
    return ::testing::AssertionFailure()
           << "message \"" << msg << "\" does not contain \"" << words << "\"";
  const std::string t = p.touched();
  if (!t.empty())
    return ::testing::AssertionFailure() << "failed call wrote to: " << t << " (\"" << msg << "\")";
  return ::testing::AssertionSuccess();
}

TEST(MisuseKvcache, ValidCallsSucceed) {
  {
    KvProblem p;
    EXPECT_EQ(p.forward(), FA_OK) << fa_last_error();
    EXPECT_NE(p.touched().find("k_cache"), std::string::npos);  // the append happened
    size_t bytes = 7;
    EXPECT_EQ(fa_kvcache_workspace_size(&p.q, &p.kv, &p.opt, &bytes), FA_OK) << fa_last_error();
    EXPECT_EQ(bytes, 0u);  // the CPU backend needs no workspace
  }
  {
    KvProblem p;
    p.make_contiguous();
    EXPECT_EQ(p.forward(), FA_OK) << fa_last_error();
    p.kv.k_new = p.kv.v_new = nullptr;
    p.kv.cache_seqlens = nullptr;  // every sequence holds the whole capacity
    EXPECT_EQ(p.forward(), FA_OK) << fa_last_error();
    EXPECT_EQ(fa_kvcache_forward(&p.q, &p.kv, &p.out, nullptr, &p.opt), FA_OK) << fa_last_error();
  }
}

TEST(MisuseKvcache, NullDescription) {
  KvProblem p;
  EXPECT_TRUE(KvFails(fa_kvcache_forward(&p.q, nullptr, &p.out, &p.lse, &p.opt), kInvalid,
                      "kv (the fa_kvcache description) is null", p));
  size_t bytes = 3;
  EXPECT_TRUE(KvFails(fa_kvcache_workspace_size(&p.q, nullptr, &p.opt, &bytes), kInvalid,
                      "kv (the fa_kvcache description) is null", p));
  EXPECT_EQ(bytes, 3u);
}

TEST(MisuseKvcache, KNewWithoutVNew) {
  KvProblem p;
  p.kv.v_new = nullptr;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_new is given without v_new", p));
}

TEST(MisuseKvcache, NewKeysNeedCacheSeqlens) {
  KvProblem p;
  p.kv.cache_seqlens = nullptr;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_new/v_new need cache_seqlens", p));
}

TEST(MisuseKvcache, BlockTableWithBatchIdx) {
  KvProblem p;
  p.kv.cache_batch_idx = &p.idx_t;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "cache_batch_idx cannot be combined with block_table", p));
}

TEST(MisuseKvcache, IndexDtype) {
  KvProblem p;
  p.seqlens_t.dtype = FA_DTYPE_FLOAT32;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "cache_seqlens: expected dtype int32, got float32", p));
  p.seqlens_t.dtype = FA_DTYPE_INT32;
  p.table_t.dtype = FA_DTYPE_FLOAT16;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table: expected dtype int32, got float16", p));
}

TEST(MisuseKvcache, IndexShapes) {
  KvProblem p;
  p.table_t.shape[0] = 1;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table: expected 2 rows (q's batch)", p));
  p.table_t.shape[0] = 2;
  p.seqlens_t.shape[0] = 3;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "cache_seqlens: expected shape [2], got [3]", p));
  p.seqlens_t.shape[0] = 2;
  p.table_t.rank = 1;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table: expected rank 2, got 1", p));
}

TEST(MisuseKvcache, SeqlensPastCapacity) {
  KvProblem p;
  p.seqlens()[1] = 12;  // + 1 new key > 3 pages x 4 rows
  p.rebaseline();
  EXPECT_TRUE(KvFails(p.forward(), kInvalid,
                      "cache_seqlens[1] = 12 plus 1 new keys exceeds the cache capacity 12", p));
}

TEST(MisuseKvcache, NegativeSeqlens) {
  KvProblem p;
  p.seqlens()[0] = -1;
  p.rebaseline();
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "cache_seqlens[0] = -1 is negative", p));
}

TEST(MisuseKvcache, BlockTableEntryOutOfRange) {
  KvProblem p;
  p.table()[5] = 6;  // sequence 1's third page (it uses all three: 9 + 1 keys)
  p.rebaseline();
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table[1, 2] = 6 is outside [0, 6)", p));
  p.table()[5] = 1;
  p.table()[0] = -2;
  p.rebaseline();
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table[0, 0] = -2 is outside [0, 6)", p));
}

TEST(MisuseKvcache, BatchIdxOutOfRange) {
  KvProblem p;
  p.make_contiguous();
  p.idx()[1] = 3;
  p.rebaseline();
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "cache_batch_idx[1] = 3 is outside [0, 3)", p));
}

TEST(MisuseKvcache, ContiguousCacheSmallerThanBatch) {
  KvProblem p;
  p.make_contiguous();
  p.kv.cache_batch_idx = nullptr;
  p.k_cache.shape[0] = p.v_cache.shape[0] = 1;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_cache holds 1 sequences but q has batch 2", p));
}

TEST(MisuseKvcache, NewKeysShape) {
  KvProblem p;
  p.k_new.shape[2] = 4;  // query heads instead of KV heads
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_new: expected shape [2, 1, 2, 64], got [2, 1, 4, 64]", p));
  p.k_new.shape[2] = 2;
  p.v_new.shape[1] = 2;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "v_new: expected shape [2, 1, 2, 64], got [2, 2, 2, 64]", p));
}

TEST(MisuseKvcache, CacheShapesAndDtypes) {
  KvProblem p;
  p.v_cache.shape[1] = 2;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "v_cache: expected shape [6, 4, 2, 64], got [6, 2, 2, 64]", p));
  p.v_cache.shape[1] = 4;
  p.k_cache.dtype = FA_DTYPE_BFLOAT16;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_cache: expected dtype float16, got bfloat16", p));
  p.k_cache.dtype = FA_DTYPE_FLOAT16;
  p.k_cache.shape[3] = p.v_cache.shape[3] = 32;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "k_cache: head_dim 32 does not match q's 64", p));
  p.k_cache.shape[3] = p.v_cache.shape[3] = 64;
  p.k_cache.shape[2] = p.v_cache.shape[2] = 3;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "q has 4 heads, not a multiple of k_cache's 3", p));
  p.k_cache.shape[2] = p.v_cache.shape[2] = 2;
  p.k_cache.shape[1] = p.v_cache.shape[1] = 0;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "page_size (k_cache.shape[1]) must be >= 1", p));
}

TEST(MisuseKvcache, OutputShapes) {
  KvProblem p;
  p.lse.shape[1] = 2;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "lse: expected shape [2, 4, 1], got [2, 2, 1]", p));
  p.lse.shape[1] = 4;
  p.out.shape[2] = 2;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "out: expected shape [2, 1, 4, 64], got [2, 1, 2, 64]", p));
  p.out.shape[2] = 4;
  EXPECT_TRUE(KvFails(fa_kvcache_forward(&p.q, &p.kv, nullptr, &p.lse, &p.opt), kInvalid,
                      "out is null", p));
}

TEST(MisuseKvcache, NumSplitsAndAlgo) {
  KvProblem p;
  p.kv.num_splits = -1;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "num_splits must be >= 0", p));
  p.kv.num_splits = 4;  // ignored on the CPU: valid
  p.opt.algo = FA_ALGO_FA3;
  EXPECT_TRUE(KvFails(p.forward(), kUnsupported, "no FA1/FA3 decode kernel", p));
  p.opt.algo = FA_ALGO_FA1;
  EXPECT_TRUE(KvFails(p.forward(), kUnsupported, "no FA1/FA3 decode kernel", p));
  p.opt.algo = FA_ALGO_FA2;
  EXPECT_TRUE(KvFails(p.forward(), kUnsupported, "the CPU backend has one algorithm", p));
}

TEST(MisuseKvcache, MixedDevicesAndCudaFloat32) {
  KvProblem p;
  p.table_t.device = FA_DEVICE_CUDA;
  EXPECT_TRUE(KvFails(p.forward(), kInvalid, "block_table is on CUDA but q is on CPU", p));
  p.table_t.device = FA_DEVICE_CPU;
  // All on CUDA in float32: refused by validation, before any backend (no GPU needed).
  for (fa_tensor* t : {&p.q, &p.k_cache, &p.v_cache, &p.k_new, &p.v_new, &p.out})
    t->dtype = FA_DTYPE_FLOAT32;
  for (fa_tensor* t : {&p.q, &p.k_cache, &p.v_cache, &p.k_new, &p.v_new, &p.out, &p.lse,
                       &p.seqlens_t, &p.table_t})
    t->device = FA_DEVICE_CUDA;
  EXPECT_TRUE(KvFails(p.forward(), kUnsupported, "CUDA KV-cache kernels take float16 or bfloat16", p));
}

// ---------------------------------------------------------------------------------------------
// The C++ API: the same checks surface as fa::Error carrying the status.
// ---------------------------------------------------------------------------------------------
template <class F>
void expect_error(F&& call, fa_status want, const std::string& words) {
  try {
    call();
    ADD_FAILURE() << "no fa::Error thrown";
  } catch (const fa::Error& e) {
    EXPECT_EQ(e.status(), want) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(MisuseCpp, ForwardThrowsWithStatus) {
  std::vector<uint16_t> q(2 * 8 * 2 * 64), kv(2 * 8 * 1 * 64), out(q.size());
  fa::Tensor tq(q.data(), FA_DTYPE_FLOAT16, {2, 8, 2, 64});
  fa::Tensor tk(kv.data(), FA_DTYPE_FLOAT16, {2, 8, 1, 64});
  fa::Tensor tv(kv.data(), FA_DTYPE_BFLOAT16, {2, 8, 1, 64});
  fa::Tensor to(out.data(), FA_DTYPE_FLOAT16, {2, 8, 2, 64});
  expect_error([&] { fa::forward(tq, tk, tv, to, nullptr); }, kInvalid,
               "v: expected dtype float16, got bfloat16");
  const auto before = out;
  tv.dtype = FA_DTYPE_FLOAT16;
  expect_error([&] { fa::forward(tq, tk, tv, to, nullptr, fa::Options().window(-3, 0)); },
               kInvalid, "window_left must be -1 (unbounded) or >= 0, got -3");
  EXPECT_EQ(out, before);
  fa::Tensor bad(q.data(), FA_DTYPE_FLOAT16, {2, 8, 2, 12});
  expect_error([&] { fa::forward(bad, tk, tv, to, nullptr); }, kUnsupported,
               "head_dim 12 is not supported");
}

TEST(MisuseCpp, BackwardThrowsWithStatus) {
  Problem p;
  fa::Tensor q, k, v, out, lse, dout, dq, dk, dv;
  static_cast<fa_tensor&>(q) = p.q, static_cast<fa_tensor&>(k) = p.k;
  static_cast<fa_tensor&>(v) = p.v, static_cast<fa_tensor&>(out) = p.out;
  static_cast<fa_tensor&>(lse) = p.lse, static_cast<fa_tensor&>(dout) = p.dout;
  static_cast<fa_tensor&>(dq) = p.dq, static_cast<fa_tensor&>(dk) = p.dk;
  static_cast<fa_tensor&>(dv) = p.dv;
  dk.shape[1] = 3;
  expect_error([&] { fa::backward(q, k, v, out, lse, dout, dq, dk, dv, fa::Options().threads(1)); },
               kInvalid, "dk: expected shape [2, 24, 2, 64] (as k), got [2, 3, 2, 64]");
  dk.shape[1] = Problem::Nk;
  expect_error([&] {
    fa::backward(q, k, v, out, lse, dout, dq, dk, dv, fa::Options().set_algo(FA_ALGO_FA3));
  }, kUnsupported, "the CPU backend has one algorithm");
  EXPECT_EQ(p.touched(), "");
}

TEST(MisuseCpp, KvcacheThrowsWithStatus) {
  KvProblem p;
  fa::Tensor q, kc, vc, out, lse, lens, table, kn, vn;
  static_cast<fa_tensor&>(q) = p.q, static_cast<fa_tensor&>(kc) = p.k_cache;
  static_cast<fa_tensor&>(vc) = p.v_cache, static_cast<fa_tensor&>(out) = p.out;
  static_cast<fa_tensor&>(lse) = p.lse, static_cast<fa_tensor&>(lens) = p.seqlens_t;
  static_cast<fa_tensor&>(table) = p.table_t, static_cast<fa_tensor&>(kn) = p.k_new;
  static_cast<fa_tensor&>(vn) = p.v_new;
  fa::KvCache kv(kc, vc);
  kv.pages(table).append(kn, vn);  // no seqlens: where would the new keys go?
  expect_error([&] { fa::kvcache_forward(q, kv, out, &lse); }, kInvalid,
               "k_new/v_new need cache_seqlens");
  kv.seqlens(lens).splits(-1);
  expect_error([&] { fa::kvcache_forward(q, kv, out, &lse); }, kInvalid, "num_splits must be >= 0");
  EXPECT_EQ(p.touched(), "");
  kv.splits(0);
  fa::kvcache_forward(q, kv, out, &lse, fa::Options().threads(1));  // the valid call appends
  EXPECT_NE(p.touched().find("k_cache"), std::string::npos);
}

TEST(MisuseCpp, VarlenThrowsWithStatus) {
  Problem p;
  p.cu_q_data()[1] = 13;
  p.rebaseline();
  fa::Tensor q, k, v, out, lse, cq, ck;
  static_cast<fa_tensor&>(q) = p.vq, static_cast<fa_tensor&>(k) = p.vk;
  static_cast<fa_tensor&>(v) = p.vv, static_cast<fa_tensor&>(out) = p.vout;
  static_cast<fa_tensor&>(lse) = p.vlse, static_cast<fa_tensor&>(cq) = p.cu_q;
  static_cast<fa_tensor&>(ck) = p.cu_k;
  fa::Varlen vl(cq, ck, 7, 13);
  expect_error([&] { fa::varlen_forward(q, k, v, vl, out, &lse); }, kInvalid,
               "cu_seqlens_q must be non-decreasing");
  EXPECT_EQ(p.touched(), "");
}

}  // namespace
