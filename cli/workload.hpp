// One attention problem as the `fa` tool runs it: random inputs made on the host, tensors on the
// chosen backend's device, timed calls through the C ABI, and a check of the results against the
// float64 reference (fa::ref) that stays cheap at large sizes by checking a sample.
#pragma once

#include <flashattn/flashattn.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/abi_names.hpp"
#include "device.hpp"

namespace fa::core {
struct AttnParams;
}

namespace fa::cli {

// A failed library call: its status and fa_last_error() text.
struct LibraryError : std::runtime_error {
  LibraryError(fa_status s, const std::string& msg) : std::runtime_error(msg), status(s) {}
  fa_status status;
};

struct Problem {
  int64_t batch = 1;
  int64_t heads_q = 8;
  int64_t heads_kv = 8;
  int64_t seqlen_q = 2048;
  int64_t seqlen_k = 2048;
  int64_t head_dim = 128;
  fa_dtype dtype = FA_DTYPE_BFLOAT16;
  bool causal = true;
  int64_t window_left = -1;
  int64_t window_right = -1;
  double softcap = 0;
  double scale = 0;  // 0: 1/sqrt(head_dim)
  bool gpu = false;
  fa_algo algo = FA_ALGO_AUTO;
  int64_t threads = 0;
  bool deterministic = false;
  uint64_t seed = 1;

  std::string shape_text() const;  // "B 2, H 16/16, N 4096/4096, d 128"
  std::string mask_text() const;   // "causal", "window (128, 0)", "none", "+ softcap 30"
  // FLOPs of one forward: 4 * B * Hq * d * (visible query-key pairs). Without a window that is
  // the convention of the FlashAttention papers and docs/../GPU.md: Nq * Nk pairs, halved for
  // causal. With a window the pairs are counted exactly. The backward is 2.5x this.
  double forward_flops() const;
  fa_options options() const;
};

// Largest |ours - ref| over the checked elements and the largest |ref|; NaN/inf mismatches count
// as infinite error. Passes when max_err <= tolerance() = 1e-5 + rtol * max|ref|.
struct ErrorStat {
  double max_err = 0;
  double max_ref = 0;
  int64_t count = 0;
  double rtol = 0;
  void add(double ours, double ref);
  double tolerance() const { return 1e-5 + rtol * max_ref; }
  bool ok() const { return count == 0 || max_err <= tolerance(); }
};

struct CheckResult {
  ErrorStat o, lse, dq, dk, dv;
  std::string sample;  // what was checked, in words
  bool backward = false;
  bool cache_ok = true;  // decode: the appended K/V rows landed where they belong, bit-exact
  bool passed() const;
};

// Random q, k, v with host copies for the reference, and out and lse, in p's dense layout on p's
// device; tensors describe the device side. Seeded from p.seed the same way for every workload, so
// `fa run` and `fa run --fp8` see the same inputs for the same --seed.
struct ForwardTensors {
  ForwardTensors() = default;
  explicit ForwardTensors(const Problem& p);
  std::vector<uint8_t> q_h, k_h, v_h;
  Buffer q, k, v, out, lse;
  fa_tensor tq{}, tk{}, tv{}, tout{}, tlse{};
};

class Workload {
 public:
  // Validates the request through the library before allocating, then allocates and fills the
  // inputs. Throws LibraryError on a rejected request.
  Workload(const Problem& p, bool with_backward);

  const Problem& problem() const { return p_; }
  void forward();   // one call; throws LibraryError
  void backward();  // one call (needs a forward first); throws LibraryError
  // Median time in ms of `repeats` calls after `warmup` calls.
  double time_ms(bool backward, int warmup, int repeats, std::vector<double>* all = nullptr);
  // Poisons the outputs, runs forward (and backward), and compares with fa::ref. max_rows > 0
  // limits the check to the last max_rows query rows of `heads` sampled KV heads (a tail block
  // keeps the bottom-right mask alignment exact); max_rows = 0 checks everything.
  CheckResult check(int64_t max_rows, int heads);

 private:
  Problem p_;
  bool with_backward_;
  fa_options opt_;
  ForwardTensors io_;
  // The backward's: dO on the host (the reference reads it) and the gradients.
  std::vector<uint8_t> do_h_;
  Buffer do_, dq_, dk_, dv_;
  fa_tensor tdo_{}, tdq_{}, tdk_{}, tdv_{};
};

// Helpers shared with the decode workload (decode.cpp).
int64_t elem_bytes(fa_dtype t);
void throw_if_failed(fa_status s);  // LibraryError with fa_last_error() unless FA_OK
// n random values (uniform, mean 0, variance 1) in dtype dt, reproducible from seed.
void fill_random(std::vector<uint8_t>& out, int64_t n, fa_dtype dt, uint64_t seed);
double load_elem(const std::vector<uint8_t>& buf, fa_dtype dt, int64_t i);
// A dense row-major descriptor of data.
fa_tensor describe(void* data, fa_dtype dt, const std::vector<int64_t>& shape, bool gpu);
// Shared with the FP8 workload (fp8.cpp):
// Median ms of `repeats` timed calls (at least one) after `warmup` untimed ones; all: every time.
double median_ms(bool gpu, int warmup, int repeats, const std::function<void()>& call,
                 std::vector<double>* all);
// The library's own view of a call on the host copies (q, k, v, out in p's dense layout), run on
// the CPU backend: the reference then sees exactly the scale, window and softcap the backend saw.
// opt is the call's options; backend, algo and workspace are replaced. Throws LibraryError.
core::AttnParams host_params(const Problem& p, fa_options opt, void* q, void* k, void* v,
                             void* out);
// `heads` (batch, KV head) pairs spread over all of them, first and last included (0 = all).
std::vector<std::pair<int64_t, int64_t>> sample_kv_heads(int64_t batch, int64_t heads_kv,
                                                         int heads);
// The reference's sub-problem of one sampled (batch b, KV head kvh) of full: its query heads and
// query rows [row0, row0 + rows) as one batch entry, on io's host copies (e bytes an element).
core::AttnParams sub_problem(const core::AttnParams& full, const ForwardTensors& io, int64_t e,
                             int64_t b, int64_t kvh, int64_t row0, int64_t rows);
// "all rows and heads" or "last 128 of 4096 query rows of 2 of 32 (batch, kv head) pairs".
std::string sample_text(int64_t rows, int64_t seqlen_q, int64_t pairs, int64_t total_pairs);
double rtol_for(fa_dtype t);      // O (gradients: twice this)
double rtol_lse_for(fa_dtype t);  // LSE

fa_dtype parse_dtype(const std::string& s);  // throws UsageError
const char* dtype_name(fa_dtype t);
fa_algo parse_algo(const std::string& s);
using core::algo_name;

}  // namespace fa::cli
