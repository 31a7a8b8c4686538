// One attention problem as the `fa` tool runs it: random inputs made on the host, tensors on the
// chosen backend's device, timed calls through the C ABI, and a check of the results against the
// float64 reference (fa::ref) that stays cheap at large sizes by checking a sample.
#pragma once

#include <flashattn/flashattn.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "device.hpp"

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
  // Host copies of the inputs (the reference reads these) and device (or host) buffers.
  std::vector<uint8_t> q_h_, k_h_, v_h_, do_h_;
  Buffer q_, k_, v_, out_, lse_, do_, dq_, dk_, dv_;
  fa_tensor tq_{}, tk_{}, tv_{}, tout_{}, tlse_{}, tdo_{}, tdq_{}, tdk_{}, tdv_{};
};

// Helpers shared with the decode workload (decode.cpp).
int64_t elem_bytes(fa_dtype t);
void throw_if_failed(fa_status s);  // LibraryError with fa_last_error() unless FA_OK
// n random values (uniform, mean 0, variance 1) in dtype dt, reproducible from seed.
void fill_random(std::vector<uint8_t>& out, int64_t n, fa_dtype dt, uint64_t seed);
double load_elem(const std::vector<uint8_t>& buf, fa_dtype dt, int64_t i);
// A dense row-major descriptor of data.
fa_tensor describe(void* data, fa_dtype dt, const std::vector<int64_t>& shape, bool gpu);
double rtol_for(fa_dtype t);      // O (gradients: twice this)
double rtol_lse_for(fa_dtype t);  // LSE

fa_dtype parse_dtype(const std::string& s);  // throws UsageError
const char* dtype_name(fa_dtype t);
fa_algo parse_algo(const std::string& s);
const char* algo_name(fa_algo a);

}  // namespace fa::cli
