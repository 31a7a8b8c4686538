// Test helpers shared by the CPU and GPU test binaries (no CUDA here): random inputs with fresh
// seeds, an fp16/bf16 conversion written independently of the library's, building AttnParams for
// a test case (batch or varlen, dense or strided layouts) over host buffers with poisoned
// outputs, reading outputs back in the reference's dense layout, and error measures where NaN
// never passes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/params.hpp"

namespace fa::test {

// A fresh seed per call (std::random_device), unless FA_TEST_SEED is set: then that value, so a
// failure printed with its seed can be replayed.
uint64_t fresh_seed();

enum class Dist {
  Normal,     // N(0, 1)
  HeavyTail,  // Student-t with 3 degrees of freedom, times 3: large logits, peaked softmax rows
};
void fill_random(std::vector<float>& x, Dist dist, uint64_t seed, float scale = 1.f);

// Arithmetic (frexp/nearbyint) conversions: an independent check on the bit-twiddling ones in
// src/cpu/convert.hpp. All round to nearest, ties to even; overflow gives inf.
uint16_t to_f16_bits(double x);
uint16_t to_bf16_bits(double x);
double from_f16_bits(uint16_t h);
double from_bf16_bits(uint16_t h);
// x rounded to dtype t (F32, F16, BF16), as a double.
double round_to(core::DType t, double x);

enum class Layout {
  Dense,      // [B, N, H, D] (varlen: [T, H, D])
  Padded,     // same order, with gaps after each head and each row (strides != dense)
  HeadMajor,  // [B, H, N, D] storage (batch form only): row stride D, head stride N*D
};

struct CaseSpec {
  int batch = 1;
  int heads_q = 1;
  int heads_kv = 1;
  int head_dim = 64;
  int64_t seqlen_q = 1;
  int64_t seqlen_k = 1;
  std::vector<int> varlen_q, varlen_k;  // non-empty: varlen form, batch = size(), these lengths
  core::DType dtype = core::DType::F32;
  bool causal = false;
  int64_t window_left = -1;
  int64_t window_right = -1;
  float softcap = 0.f;
  Layout layout = Layout::Dense;
  Dist dist = Dist::Normal;
  bool backward = false;  // also allocate dout, dq, dk, dv
  int num_threads = 0;
  std::string name() const;
};

// Host buffers of one attention call plus the AttnParams that describe them.
struct Problem {
  CaseSpec spec;
  uint64_t seed = 0;
  core::AttnParams p;
  std::vector<uint8_t> q, k, v, o, dout, dq, dk, dv;  // raw dtype storage
  std::vector<float> lse;
  std::vector<int32_t> cu_q, cu_k;
};

// Random inputs (already representable in the dtype), outputs poisoned with NaN.
Problem make_problem(const CaseSpec& spec, uint64_t seed);
// Fills every byte of the outputs (including layout gaps) with NaN patterns of the dtype.
void poison_outputs(Problem& pr);

enum class Tensor { Q, K, V, O, DOut, DQ, DK, DV };
// Reads a tensor into the reference's dense double layout (see src/cpu/reference.hpp).
std::vector<double> read_dense(const Problem& pr, Tensor t);
// The LSE buffer in the reference's layout (it already is; converted to double).
std::vector<double> read_lse(const Problem& pr);
// Elements of an output's storage that are outside the logical tensor (layout gaps) and no
// longer hold the poison: a backend wrote out of bounds.
int64_t gaps_overwritten(const Problem& pr, Tensor t);

struct ErrorReport {
  double max_err = 0;     // max |ours - ref|; +inf on NaN or on a non-finite mismatch
  double ref_scale = 0;   // max |ref| over finite entries
  int64_t worst = -1;     // index of max_err
  double ours_at = 0, ref_at = 0;
  std::string str() const;
};
ErrorReport compare(const std::vector<double>& ours, const std::vector<double>& ref);

// The acceptance rule: 2 x (max error of rounding ref to the output dtype) + rel x max|ref| + 2e-5.
// The first term is what the best possible answer in that dtype would miss by; the second
// covers fp32 accumulation and must be small (1e-5 .. 1e-4).
double tolerance(const std::vector<double>& ref, core::DType out_dtype, double rel);

}  // namespace fa::test
