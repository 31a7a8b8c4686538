// The FP8 forward workload of `fa run --fp8`, `fa bench --fp8` and `fa check`'s fp8 rows:
// fa_fp8_forward on random fp16/bf16 inputs (the call quantises them to e4m3 into a workspace the
// tool allocates), timed, and checked with the fp8 bound of tests/cpu/test_fp8.cpp and
// tests/cuda/test_fp8.cpp: with ref = float64 attention on the ORIGINAL inputs and naive = the
// backend's own arithmetic in float64 on the call's quantised bytes (read back from the workspace),
//   max|ours - ref| <= 2 max|naive - ref| + 1e-5   for O and for LSE, and
//   rms(ours - ref) <= 1.25 rms(naive - ref) + 1e-5.
// The max rule alone is loose for e4m3 (one element's rounding error is a few % of |O|): a 10%
// scale error of O passed it. The RMS over every checked element is statistically stable, and ours
// and the naive have the same error model (ratio 1.0 on the CPU backend), so 1.25x catches a 5%
// scale error of O, which 1.5x did not.
// The backend's arithmetic: the CPU backend dequantises and runs float32 attention (naive: plain
// attention on the dequantised inputs); the sm90 kernel also rounds P to e4m3 before P·V (naive:
// P = exp(S - rowmax) rounded to e4m3, l summed unrounded).
#pragma once

#include <flashattn/flashattn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace fa::cli {

struct Fp8Spec {
  fa_fp8_scaling scaling = FA_FP8_SCALING_BLOCK;
  bool incoherent = true;
  uint64_t seed = 0;  // 0 here: fa_fp8_init's seed (see fp8())
  bool seed_given = false;
  bool reuse_quantized = false;  // timed calls skip the quantiser: the kernel alone

  fa_fp8 fp8() const;
  std::string text() const;  // "block scales, incoherent", "per-head scales", "+ kernel only"
};

fa_fp8_scaling parse_fp8_scaling(const std::string& s);  // throws UsageError

struct Fp8Check {
  ErrorStat o, lse;              // ours vs float64 on the original inputs (rtol unused)
  ErrorStat naive_o, naive_lse;  // the naive vs the same reference
  // RMS errors over the checked elements (finite reference LSE only); rel_rms = rms_o / rms(ref).
  double rms_o = 0, naive_rms_o = 0, rms_lse = 0, naive_rms_lse = 0, rel_rms = 0;
  std::string sample;      // what was checked, in words
  std::string naive_kind;  // the naive's arithmetic, in words
  double bound_o() const { return 2 * naive_o.max_err + 1e-5; }
  double bound_lse() const { return 2 * naive_lse.max_err + 1e-5; }
  double bound_rms_o() const { return 1.25 * naive_rms_o + 1e-5; }
  double bound_rms_lse() const { return 1.25 * naive_rms_lse + 1e-5; }
  bool o_ok() const { return o.max_err <= bound_o() && rms_o <= bound_rms_o(); }
  bool lse_ok() const { return lse.max_err <= bound_lse() && rms_lse <= bound_rms_lse(); }
  bool passed() const { return o_ok() && lse_ok(); }
  double worst() const;  // the largest of err / bound over the four bounds
};

class Fp8Workload {
 public:
  // Validates the request through the library (placeholder pointers) before allocating.
  Fp8Workload(const Problem& p, const Fp8Spec& s);

  void forward(bool reuse = false);  // one call; throws LibraryError
  // Median ms of `repeats` calls after `warmup` calls (reuse_quantized per the spec after a first
  // full call).
  double time_ms(int warmup, int repeats, std::vector<double>* all = nullptr);
  // A full call (quantiser included) on poisoned outputs, checked on the last max_rows query rows
  // (0 = all) of `heads` sampled (batch, KV head) pairs (0 = all), as Workload::check samples.
  Fp8Check check(int64_t max_rows, int heads);

 private:
  Problem p_;
  Fp8Spec s_;
  fa_options opt_;
  ForwardTensors io_;
  Buffer ws_;
};

}  // namespace fa::cli
