// `fa`: run, time and check flashattn from the command line.
//
//   fa run     one realistic workload (GPU if present, else CPU), timed and spot-checked;
//              --decode: token-by-token generation over a KV cache (fa_kvcache_forward);
//              --fp8: the FP8 (e4m3) forward (fa_fp8_forward), checked with the fp8 bound
//   fa bench   a sweep over sequence lengths and head dims, optional JSON and plot;
//              --decode: a sweep over cache lengths and batch sizes; --fp8: the FP8 forward
//   fa check   a correctness sweep against the float64 reference (forward, backward, KV-cache
//              decode and the FP8 forward); non-zero exit on failure
//   fa info    version, build flags, archs, devices, kernels
//
// Exit codes: 0 success, 1 a check failed or the library failed at run time, 2 bad usage (a bad
// flag, or a shape/option the library rejects; its message is printed as fa_last_error() gave it).
#include <flashattn/flashattn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "decode.hpp"
#include "device.hpp"
#include "fp8.hpp"
#include "workload.hpp"

namespace fa::cli {
namespace {

// ---------------------------------------------------------------------------------------------
// Shared option handling
// ---------------------------------------------------------------------------------------------

// Options every workload-running command shares, bound to one Problem.
struct CommonOpts {
  std::string backend = "auto";
  std::string dtype = "bf16";
  std::string algo = "auto";
  std::vector<int64_t> window;  // L,R
  double softcap = 0;
  double scale = 0;
  int64_t threads = 0;
  int64_t seed = 1;
  bool deterministic = false;

  void declare(Args& a) {
    a.option("backend", &backend, "auto (GPU when present), cpu or cuda");
    a.option("dtype", &dtype, "bf16, fp16 or fp32 (fp32: CPU only)");
    a.option("algo", &algo, "CUDA kernel generation: auto, fa1, fa2 or fa3");
    a.option("window", &window, "sliding window LEFT,RIGHT (-1 = unbounded)");
    a.option("softcap", &softcap, "score soft-capping: softcap * tanh(s / softcap); 0 = off");
    a.option("scale", &scale, "softmax scale; 0 = 1/sqrt(head_dim)");
    a.option("threads", &threads, "CPU backend threads; 0 = all");
    a.option("seed", &seed, "random input seed");
    a.flag("deterministic", &deterministic, "backward: fixed-order dQ accumulation");
  }

  // Fills the option part of p; resolves "auto" to a backend that exists here.
  void apply(Problem& p) const {
    if (backend == "auto")
      p.gpu = gpu_available();
    else if (backend == "cpu")
      p.gpu = false;
    else if (backend == "cuda") {
      if (!gpu_available())
        throw UsageError(std::string("--backend cuda: ") +
                         (fa_cuda_built() ? "no CUDA device is available"
                                          : "this fa was built without CUDA"));
      p.gpu = true;
    } else {
      throw UsageError("--backend must be auto, cpu or cuda, got '" + backend + "'");
    }
    p.dtype = parse_dtype(dtype);
    p.algo = parse_algo(algo);
    if (!window.empty()) {
      if (window.size() != 2) throw UsageError("--window expects LEFT,RIGHT (two integers)");
      p.window_left = window[0];
      p.window_right = window[1];
    }
    p.softcap = softcap;
    p.scale = scale;
    p.threads = threads;
    p.deterministic = deterministic;
    if (seed < 0) throw UsageError("--seed must be >= 0");
    p.seed = uint64_t(seed);
  }
};

std::string backend_text(const Problem& p) {
  if (p.gpu) return "cuda (" + gpu_name() + "), algo " + algo_name(p.algo);
  const int t = p.threads > 0 ? int(p.threads) : int(std::max(1u, std::thread::hardware_concurrency()));
  return "cpu (" + std::to_string(t) + " thread" + (t == 1 ? "" : "s") + ")";
}

// FLOP/s in the unit that reads best: TFLOP/s on GPUs, GFLOP/s on CPUs.
std::string rate_text(double flops, double ms) {
  char buf[64];
  const double per_s = flops / (ms * 1e-3);
  if (per_s >= 1e12)
    std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", per_s * 1e-12);
  else
    std::snprintf(buf, sizeof buf, "%.1f GFLOP/s", per_s * 1e-9);
  return buf;
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", x);
  return buf;
}

void check_sizes(const Problem& p) {
  auto need = [](int64_t v, int64_t min, const char* name) {
    if (v < min)
      throw UsageError(std::string("--") + name + " must be >= " + std::to_string(min) + ", got " +
                       std::to_string(v));
  };
  need(p.batch, 1, "batch");
  need(p.heads_q, 1, "heads");
  need(p.heads_kv, 1, "kv-heads");
  need(p.seqlen_q, 1, "seqlen");
  need(p.seqlen_k, 0, "seqlen-k");
  need(p.head_dim, 1, "head-dim");
  need(p.threads, 0, "threads");
}

// ---------------------------------------------------------------------------------------------
// fa run
// ---------------------------------------------------------------------------------------------
void print_check(const CheckResult& r) {
  std::printf("  check     float64 reference on %s\n", r.sample.c_str());
  auto line = [&](const char* name, const ErrorStat& s) {
    if (s.count == 0) return;
    std::printf("            %-4s max err %s  (tol %s = 1e-5 + %.2g x max|ref| %s)  %s\n", name,
                sci(s.max_err).c_str(), sci(s.tolerance()).c_str(), s.rtol,
                sci(s.max_ref).c_str(), s.ok() ? "ok" : "FAIL");
  };
  line("O", r.o);
  line("LSE", r.lse);
  if (r.backward) {
    line("dQ", r.dq);
    line("dK", r.dk);
    line("dV", r.dv);
  }
  std::printf("  result    %s\n", r.passed() ? "PASS" : "FAIL");
}

// The shape, timing and check options of `fa run` and `fa run --fp8`, with the defaults both
// document. Declared in two parts so each command keeps its own options between them.
struct RunOpts {
  int64_t batch = 0, heads = 0, kv_heads = 0, seqlen = 0, seqlen_k = 0, head_dim = 128;
  int64_t warmup = -1, repeats = -1, check_rows = 128, check_heads = 2;
  bool causal = true, check = true;

  void declare_shape(Args& a, const char* head_dim_help) {
    a.option("batch", &batch, "batch size (0 = the backend's default)");
    a.option("heads", &heads, "query heads (0 = default)");
    a.option("kv-heads", &kv_heads, "key/value heads, divides --heads (0 = --heads)");
    a.option("seqlen", &seqlen, "query length, and key length unless --seqlen-k (0 = default)");
    a.option("seqlen-k", &seqlen_k, "key length (0 = --seqlen)");
    a.option("head-dim", &head_dim, head_dim_help);
    a.flag("causal", &causal, "causal mask (bottom-right aligned)");
  }
  void declare_timing(Args& a, const char* check_help) {
    a.option("warmup", &warmup, "untimed calls first (-1 = 3 on GPU, 1 on CPU)");
    a.option("repeats", &repeats, "timed calls; the median is reported (-1 = 10 GPU, 3 CPU)");
    a.flag("check", &check, check_help);
    a.option("check-rows", &check_rows, "query rows checked per sampled head (0 = all)");
    a.option("check-heads", &check_heads, "(batch, kv head) pairs checked (0 = all)");
  }
  // After CommonOpts::apply (the defaults depend on p.gpu); resolves warmup and repeats too.
  void apply(const Args& a, Problem& p) {
    // An explicit window replaces the default causal mask (causal would force window_right = 0).
    p.causal = a.given("window") && !a.given("causal") ? false : causal;
    p.batch = batch ? batch : p.gpu ? 2 : 1;
    p.heads_q = heads ? heads : p.gpu ? 16 : 8;
    p.heads_kv = kv_heads ? kv_heads : p.heads_q;
    p.seqlen_q = seqlen ? seqlen : p.gpu ? 4096 : 2048;
    p.seqlen_k = a.given("seqlen-k") ? seqlen_k : p.seqlen_q;
    p.head_dim = head_dim;
    check_sizes(p);
    if (warmup < 0) warmup = p.gpu ? 3 : 1;
    if (repeats < 0) repeats = p.gpu ? 10 : 3;
  }
};

bool wants_decode(int argc, char** argv);
int cmd_run_decode(int argc, char** argv);
bool wants_fp8(int argc, char** argv);
int cmd_run_fp8(int argc, char** argv);

int cmd_run(int argc, char** argv) {
  if (wants_fp8(argc, argv)) return cmd_run_fp8(argc, argv);
  if (wants_decode(argc, argv)) return cmd_run_decode(argc, argv);
  Problem p;
  CommonOpts common;
  RunOpts run;
  bool backward = false;
  Args a("run",
         "Runs one attention workload, times it and spot-checks it against the float64 reference.\n"
         "Default: batch 2, 16 heads, seqlen 4096, head dim 128, causal, bf16 on the GPU; on the\n"
         "CPU backend batch 1, 8 heads, seqlen 2048 (a few seconds on 2 cores).\n"
         "FLOPs: 4*B*H*Nq*Nk*d, halved for causal (windows: visible pairs counted); backward 2.5x.");
  run.declare_shape(a, "head dimension");
  a.flag("backward", &backward, "also time and check the backward");
  common.declare(a);
  run.declare_timing(a, "compare with the float64 reference");
  if (!a.parse(argc, argv, 2)) return 0;
  common.apply(p);
  run.apply(a, p);

  Workload w(p, backward);
  std::printf("fa run: %s, %s, mask %s\n", backward ? "forward + backward" : "forward",
              dtype_name(p.dtype), p.mask_text().c_str());
  std::printf("  backend   %s\n", backend_text(p).c_str());
  std::printf("  shape     %s\n", p.shape_text().c_str());
  std::fflush(stdout);
  const double flops = p.forward_flops();
  std::vector<double> all;
  const double fwd_ms = w.time_ms(false, int(run.warmup), int(run.repeats), &all);
  std::printf("  forward   %9.3f ms  %s  (median of %zu, min %.3f ms, %.3g GFLOP)\n", fwd_ms,
              rate_text(flops, fwd_ms).c_str(), all.size(), *std::min_element(all.begin(), all.end()),
              flops * 1e-9);
  std::fflush(stdout);
  if (backward) {
    const double bwd_ms = w.time_ms(true, int(run.warmup), int(run.repeats), &all);
    std::printf("  backward  %9.3f ms  %s  (median of %zu, min %.3f ms)\n", bwd_ms,
                rate_text(2.5 * flops, bwd_ms).c_str(), all.size(),
                *std::min_element(all.begin(), all.end()));
  }
  if (!run.check) return 0;
  std::fflush(stdout);
  const CheckResult r = w.check(run.check_rows, int(run.check_heads));
  print_check(r);
  return r.passed() ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// fa run --fp8
// ---------------------------------------------------------------------------------------------
// Options of the FP8 forward shared by run and bench.
struct Fp8Opts {
  bool fp8_flag = true;
  std::string scaling = "block";
  bool incoherent = true;
  int64_t fp8_seed = -1;
  bool kernel_only = false;

  void declare(Args& a) {
    a.flag("fp8", &fp8_flag, "the FP8 (e4m3) forward, fa_fp8_forward (sm90 GPUs; the CPU backend quantises the same way)");
    a.option("scaling", &scaling, "fp8 scales: block (per 64 query rows / 128 keys) or per-head");
    a.flag("incoherent", &incoherent, "random signs + Hadamard on q and k before quantising");
    a.option("fp8-seed", &fp8_seed, "seed of the incoherent-processing signs (-1 = the library's default)");
    a.flag("kernel-only", &kernel_only, "time the kernel alone (quantise once, then reuse_quantized = 1)");
  }
  Fp8Spec spec() const {
    if (!fp8_flag) throw UsageError("--no-fp8 contradicts --fp8");
    Fp8Spec s;
    s.scaling = parse_fp8_scaling(scaling);
    s.incoherent = incoherent;
    if (fp8_seed < -1) throw UsageError("--fp8-seed must be >= 0 (or -1 for the default), got " + std::to_string(fp8_seed));
    s.seed_given = fp8_seed >= 0;
    s.seed = uint64_t(std::max<int64_t>(fp8_seed, 0));
    s.reuse_quantized = kernel_only;
    return s;
  }
};

bool wants_fp8(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--fp8") return true;
  return false;
}

void print_fp8_check(const Fp8Check& r) {
  std::printf("  check     float64 reference on %s\n", r.sample.c_str());
  std::printf("            naive: %s, in float64 on the call's quantised bytes\n", r.naive_kind.c_str());
  auto line = [&](const char* name, const char* what, double err, double naive, const char* factor, double bound) {
    std::printf("            %-4s %s err %s  (bound %s = %s x naive %s + 1e-5)  %s\n", name, what, sci(err).c_str(),
                sci(bound).c_str(), factor, sci(naive).c_str(), err <= bound ? "ok" : "FAIL");
  };
  line("O", "max", r.o.max_err, r.naive_o.max_err, "2", r.bound_o());
  line("O", "rms", r.rms_o, r.naive_rms_o, "1.25", r.bound_rms_o());
  line("LSE", "max", r.lse.max_err, r.naive_lse.max_err, "2", r.bound_lse());
  line("LSE", "rms", r.rms_lse, r.naive_rms_lse, "1.25", r.bound_rms_lse());
  std::printf("            O relative RMS error %s\n", sci(r.rel_rms).c_str());
  std::printf("  result    %s\n", r.passed() ? "PASS" : "FAIL");
}

int cmd_run_fp8(int argc, char** argv) {
  Problem p;
  CommonOpts common;
  Fp8Opts f8;
  RunOpts run;
  Args a("run --fp8",
         "Runs the FP8 (e4m3) forward (fa_fp8_forward: the call quantises fp16/bf16 q, k, v into a\n"
         "workspace, then runs attention on the e4m3 copies), times it (quantiser included unless\n"
         "--kernel-only) and checks it: max|ours - ref| <= 2 max|naive - ref| + 1e-5 and\n"
         "rms(ours - ref) <= 1.25 rms(naive - ref) + 1e-5 for O and LSE, ref = float64 attention on\n"
         "the original inputs, naive = the backend's arithmetic in float64 on the call's quantised\n"
         "bytes. Defaults as fa run (head dims 64, 128, 256 only).");
  run.declare_shape(a, "head dimension: 64, 128 or 256");
  f8.declare(a);
  common.declare(a);
  run.declare_timing(a, "check against the float64 reference");
  if (!a.parse(argc, argv, 2)) return 0;
  common.apply(p);
  const Fp8Spec spec = f8.spec();
  run.apply(a, p);

  Fp8Workload w(p, spec);
  std::printf("fa run --fp8: forward, %s -> e4m3, mask %s\n", dtype_name(p.dtype), p.mask_text().c_str());
  std::printf("  backend   %s\n", backend_text(p).c_str());
  std::printf("  shape     %s\n", p.shape_text().c_str());
  std::printf("  fp8       %s\n", spec.text().c_str());
  std::fflush(stdout);
  const double flops = p.forward_flops();
  std::vector<double> all;
  const double ms = w.time_ms(int(run.warmup), int(run.repeats), &all);
  std::printf("  forward   %9.3f ms  %s  (median of %zu, min %.3f ms, %.3g GFLOP)\n", ms, rate_text(flops, ms).c_str(),
              all.size(), *std::min_element(all.begin(), all.end()), flops * 1e-9);
  if (!run.check) return 0;
  std::fflush(stdout);
  const Fp8Check r = w.check(run.check_rows, int(run.check_heads));
  print_fp8_check(r);
  return r.passed() ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// fa run --decode
// ---------------------------------------------------------------------------------------------
// Options of the decode workload shared by run and bench.
struct DecodeOpts {
  int64_t heads = 32, kv_heads = 8, head_dim = 128, nq = 1;
  DecodeSpec spec;

  void declare(Args& a, bool sweep) {
    a.flag("decode", &decode_flag, "KV-cache decode (fa_kvcache_forward) instead of the forward");
    a.option("heads", &heads, "query heads");
    a.option("kv-heads", &kv_heads, "key/value heads (the cache's), divides --heads");
    a.option("head-dim", &head_dim, "head dimension");
    a.option("nq", &nq, "queries per sequence and step (1 = plain decoding)");
    if (!sweep) a.option("cache-len", &spec.cache_len, "keys in each cache before the first step");
    a.option("append", &spec.append, "new key/value rows per sequence and step (0 = static cache)");
    a.option("page-size", &spec.page_size, "paged cache with this many rows per page (0 = contiguous)");
    a.option("splits", &spec.splits, "split-KV CTAs per (sequence, KV head): 0 = auto, 1 = off");
    a.flag("ragged", &spec.ragged, "per-sequence start lengths drawn from [cache-len/2, cache-len]");
  }
  void apply(Problem& p) const {
    auto need = [](int64_t v, int64_t min, const char* name) {
      if (v < min)
        throw UsageError(std::string("--") + name + " must be >= " + std::to_string(min) + ", got " +
                         std::to_string(v));
    };
    need(heads, 1, "heads");
    need(kv_heads, 1, "kv-heads");
    need(head_dim, 1, "head-dim");
    need(nq, 1, "nq");
    need(spec.cache_len, 0, "cache-len");
    need(spec.append, 0, "append");
    need(spec.page_size, 0, "page-size");
    need(spec.splits, 0, "splits");
    p.heads_q = heads;
    p.heads_kv = kv_heads;
    p.head_dim = head_dim;
    p.seqlen_q = nq;
    p.seqlen_k = spec.cache_len;
  }
  bool decode_flag = true;
};

// `fa run --decode` / `fa bench --decode` pick the decode form before the options are declared.
bool wants_decode(int argc, char** argv) {
  for (int i = 2; i < argc; ++i)
    if (std::string(argv[i]) == "--decode") return true;
  return false;
}

std::string decode_shape_text(const Problem& p, const DecodeSpec& s, int64_t capacity) {
  std::ostringstream o;
  o << "B " << p.batch << ", H " << p.heads_q << "/" << p.heads_kv << ", d " << p.head_dim << ", Nq "
    << p.seqlen_q << ", cache " << s.cache_len << " keys (capacity " << capacity << ")";
  return o.str();
}

int cmd_run_decode(int argc, char** argv) {
  Problem p;
  CommonOpts common;
  DecodeOpts dec;
  int64_t batch = 0, warmup = -1, steps = -1, check_seqs = 2;
  bool check = true, causal = true;
  Args a("run --decode",
         "Token-by-token decoding over a KV cache (fa_kvcache_forward), timed and spot-checked.\n"
         "Each step appends --append new K/V rows per sequence at cache_seqlens and attends --nq\n"
         "queries over the cache; cache_seqlens then advances. Default: Llama-style GQA, bf16,\n"
         "Hq 32, Hk 8, d 128, cache 4096 keys, batch 8 on the GPU (2 on the CPU).\n"
         "Reported: us/step, steps/s, tokens/s (batch x steps/s) and GB/s of K/V read (the keys\n"
         "each step can see, K and V, in the cache's dtype).");
  a.option("batch", &batch, "sequences decoded together (0 = 8 GPU, 2 CPU)");
  dec.declare(a, false);
  a.flag("causal", &causal, "causal mask (bottom-right aligned; no effect with --nq 1)");
  common.declare(a);
  a.option("warmup", &warmup, "untimed steps first (-1 = 20 GPU, 1 CPU)");
  a.option("steps", &steps, "timed steps, back to back (-1 = 200 GPU, 5 CPU)");
  a.flag("check", &check, "compare one more step with the float64 reference");
  a.option("check-seqs", &check_seqs, "sequences checked, all heads (0 = all)");
  if (!a.parse(argc, argv, 2)) return 0;
  common.apply(p);
  dec.apply(p);
  if (!dec.decode_flag) throw UsageError("--no-decode contradicts --decode");
  p.causal = a.given("window") && !a.given("causal") ? false : causal;
  p.batch = batch ? batch : p.gpu ? 8 : 2;
  if (p.batch < 1) throw UsageError("--batch must be >= 1, got " + std::to_string(p.batch));
  if (p.threads < 0) throw UsageError("--threads must be >= 0");
  if (warmup < 0) warmup = p.gpu ? 20 : 1;
  if (steps < 0) steps = p.gpu ? 200 : 5;
  // Every step needs its own cache rows (the capacity grows with the step count).
  if (steps < 1 || steps > 100000) throw UsageError("--steps must be in [1, 100000]");
  if (warmup > 100000) throw UsageError("--warmup must be <= 100000");
  if (check_seqs < 0) throw UsageError("--check-seqs must be >= 0");
  DecodeSpec spec = dec.spec;
  spec.max_steps = warmup + steps + (check ? 1 : 0);

  DecodeWorkload w(p, spec);
  std::printf("fa run --decode: %s, mask %s\n", dtype_name(p.dtype), p.mask_text().c_str());
  std::printf("  backend   %s\n", backend_text(p).c_str());
  std::printf("  shape     %s\n", decode_shape_text(p, spec, w.capacity()).c_str());
  std::printf("  cache     %s\n", spec.cache_text().c_str());
  std::fflush(stdout);
  const DecodeTiming t = w.time(int(warmup), int(steps));
  std::printf("  decode    %9.1f us/step  %.1f steps/s  %.0f tokens/s  %.1f GB/s K/V read  (%lld steps)\n",
              t.us_per_step(), 1e6 / t.us_per_step(), double(p.batch) * 1e6 / t.us_per_step(),
              t.gb_per_s(), (long long)t.steps);
  if (!check) return 0;
  std::fflush(stdout);
  const CheckResult r = w.check(int(check_seqs));
  print_check(r);
  return r.passed() ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// fa bench
// ---------------------------------------------------------------------------------------------
struct BenchRow {
  Problem p;
  double fwd_ms = 0, bwd_ms = 0;
  std::string status = "ok";
};

void progress(size_t done, size_t total, const std::string& what) {
  const int width = 30;
  const int filled = total ? int(width * done / total) : width;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40s", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), '.').c_str(), done, total, what.c_str());
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

// fp8: "" for the 16-bit forward, else the fp8 options in words (fa bench --fp8).
void write_json(const std::string& path, const std::vector<BenchRow>& rows, bool backward, const std::string& fp8) {
  std::ofstream f(path);
  if (!f) throw UsageError("--json: cannot write " + path);
  const Problem& p0 = rows.front().p;
  f << "{\n  \"tool\": \"fa bench\",\n  \"version\": \"" << fa_version() << "\",\n"
    << "  \"backend\": \"" << json_escape(backend_text(p0)) << "\",\n"
    << "  \"dtype\": \"" << dtype_name(p0.dtype) << "\",\n";
  if (!fp8.empty()) f << "  \"fp8\": \"" << json_escape(fp8) << "\",\n";
  f << "  \"results\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    const double flops = r.p.forward_flops();
    f << "    {\"batch\": " << r.p.batch << ", \"heads\": " << r.p.heads_q
      << ", \"kv_heads\": " << r.p.heads_kv << ", \"seqlen\": " << r.p.seqlen_q
      << ", \"head_dim\": " << r.p.head_dim << ", \"causal\": " << (r.p.causal ? "true" : "false")
      << ", \"mask\": \"" << r.p.mask_text() << "\", \"status\": \"" << json_escape(r.status) << "\"";
    if (r.status == "ok") {
      f << ", \"fwd_ms\": " << r.fwd_ms << ", \"fwd_tflops\": " << flops / (r.fwd_ms * 1e9);
      if (backward) f << ", \"bwd_ms\": " << r.bwd_ms << ", \"bwd_tflops\": " << 2.5 * flops / (r.bwd_ms * 1e9);
    }
    f << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
}

// The plot script lives next to this source file (cli/plot_bench.py); FA_PLOT_SCRIPT overrides.
std::string plot_script() {
  if (const char* env = std::getenv("FA_PLOT_SCRIPT")) return env;
  std::string here = __FILE__;
  const size_t slash = here.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : here.substr(0, slash)) + "/plot_bench.py";
}

void make_plot(const std::string& json, const std::string& png) {
  if (std::system("python3 -c 'import matplotlib' >/dev/null 2>&1") != 0) {
    std::printf("plot: unavailable (needs python3 with matplotlib); the data is in %s\n", json.c_str());
    return;
  }
  const std::string cmd = "python3 '" + plot_script() + "' '" + json + "' '" + png + "'";
  if (std::system(cmd.c_str()) == 0)
    std::printf("plot: wrote %s\n", png.c_str());
  else
    std::printf("plot: %s failed; the data is in %s\n", plot_script().c_str(), json.c_str());
}

int cmd_bench_decode(int argc, char** argv) {
  CommonOpts common;
  DecodeOpts dec;
  std::vector<int64_t> cache_lens, batches;
  int64_t warmup = -1, steps = -1;
  std::string json;
  Args a("bench --decode",
         "Times KV-cache decoding (as fa run --decode) over cache lengths x batch sizes and prints\n"
         "us/step and GB/s of K/V read. Defaults: GPU cache 1024..32768, batch 1,8,32; CPU cache\n"
         "512,2048,8192, batch 1,4; Hq 32, Hk 8, d 128, bf16.");
  a.option("cache-lens", &cache_lens, "keys in each cache before the first step (default: per backend)");
  a.option("batches", &batches, "batch sizes (default: per backend)");
  dec.declare(a, true);
  common.declare(a);
  a.option("warmup", &warmup, "untimed steps per point (-1 = 20 GPU, 1 CPU)");
  a.option("steps", &steps, "timed steps per point (-1 = 200 GPU, 3 CPU)");
  a.option("json", &json, "write the results as JSON to this file");
  if (!a.parse(argc, argv, 2)) return 0;
  Problem base;
  common.apply(base);
  dec.apply(base);
  if (!dec.decode_flag) throw UsageError("--no-decode contradicts --decode");
  base.causal = a.given("window") ? false : true;
  const bool gpu = base.gpu;
  if (cache_lens.empty())
    cache_lens = gpu ? std::vector<int64_t>{1024, 4096, 16384, 32768} : std::vector<int64_t>{512, 2048, 8192};
  if (batches.empty()) batches = gpu ? std::vector<int64_t>{1, 8, 32} : std::vector<int64_t>{1, 4};
  if (warmup < 0) warmup = gpu ? 20 : 1;
  if (steps < 0) steps = gpu ? 200 : 3;
  if (steps < 1 || steps > 100000) throw UsageError("--steps must be in [1, 100000]");
  if (warmup > 100000) throw UsageError("--warmup must be <= 100000");
  if (base.threads < 0) throw UsageError("--threads must be >= 0");
  for (int64_t l : cache_lens)
    if (l < 0) throw UsageError("--cache-lens must be >= 0, got " + std::to_string(l));
  for (int64_t b : batches)
    if (b < 1) throw UsageError("--batches must be >= 1, got " + std::to_string(b));

  struct Row {
    int64_t batch, cache_len;
    DecodeTiming t;
    std::string status = "ok";
  };
  std::vector<Row> rows;
  for (int64_t b : batches)
    for (int64_t l : cache_lens) rows.push_back({b, l, {}, "ok"});
  std::printf("fa bench --decode: %s, %s, H %lld/%lld, d %lld, Nq %lld, %s, %zu points\n",
              backend_text(base).c_str(), dtype_name(base.dtype), (long long)base.heads_q,
              (long long)base.heads_kv, (long long)base.head_dim, (long long)base.seqlen_q,
              dec.spec.cache_text().c_str(), rows.size());
  std::fflush(stdout);
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& r = rows[i];
    progress(i, rows.size(), "B " + std::to_string(r.batch) + " cache " + std::to_string(r.cache_len));
    Problem p = base;
    p.batch = r.batch;
    p.seqlen_k = r.cache_len;
    DecodeSpec spec = dec.spec;
    spec.cache_len = r.cache_len;
    spec.max_steps = warmup + steps;
    try {
      DecodeWorkload w(p, spec);
      r.t = w.time(int(warmup), int(steps));
    } catch (const LibraryError& e) {
      r.status = std::string(fa_status_string(e.status)) + ": " + e.what();
    }
  }
  progress(rows.size(), rows.size(), "done");
  std::printf("%5s %8s %11s %12s %9s\n", "B", "cache", "us/step", "tokens/s", "GB/s");
  for (const Row& r : rows) {
    std::printf("%5lld %8lld", (long long)r.batch, (long long)r.cache_len);
    if (r.status != "ok")
      std::printf(" %s\n", r.status.c_str());
    else
      std::printf(" %11.1f %12.0f %9.1f\n", r.t.us_per_step(),
                  double(r.batch) * 1e6 / r.t.us_per_step(), r.t.gb_per_s());
  }
  if (!json.empty()) {
    std::ofstream f(json);
    if (!f) throw UsageError("--json: cannot write " + json);
    f << "{\n  \"tool\": \"fa bench\",\n  \"mode\": \"decode\",\n  \"version\": \"" << fa_version()
      << "\",\n  \"backend\": \"" << json_escape(backend_text(base)) << "\",\n"
      << "  \"dtype\": \"" << dtype_name(base.dtype) << "\",\n  \"heads\": " << base.heads_q
      << ",\n  \"kv_heads\": " << base.heads_kv << ",\n  \"head_dim\": " << base.head_dim
      << ",\n  \"nq\": " << base.seqlen_q << ",\n  \"append\": " << dec.spec.append
      << ",\n  \"page_size\": " << dec.spec.page_size << ",\n  \"splits\": " << dec.spec.splits
      << ",\n  \"ragged\": " << (dec.spec.ragged ? "true" : "false") << ",\n  \"results\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      f << "    {\"batch\": " << r.batch << ", \"cache_len\": " << r.cache_len << ", \"status\": \""
        << json_escape(r.status) << "\"";
      if (r.status == "ok")
        f << ", \"steps\": " << r.t.steps << ", \"us_per_step\": " << r.t.us_per_step()
          << ", \"tokens_per_s\": " << double(r.batch) * 1e6 / r.t.us_per_step()
          << ", \"kv_gbps\": " << r.t.gb_per_s();
      f << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    std::printf("json: wrote %s\n", json.c_str());
  }
  return 0;
}

int cmd_bench(int argc, char** argv) {
  if (wants_decode(argc, argv)) return cmd_bench_decode(argc, argv);
  CommonOpts common;
  std::vector<int64_t> seqlens, head_dims, causal_modes = {0, 1};
  int64_t tokens = 0, hidden = 0, warmup = -1, repeats = -1, kv_ratio = 1;
  bool backward = false;
  std::string json, plot;
  Fp8Opts f8;
  f8.fp8_flag = false;
  Args a("bench",
         "Times a sweep over sequence lengths x head dims x causal. Each point keeps tokens per\n"
         "batch and hidden size fixed (FlashAttention-3 paper grid: B = tokens/N, H = hidden/d).\n"
         "Defaults: GPU N 512..16384, d 64,128,256, 16k tokens, hidden 2048; CPU N 256..2048,\n"
         "d 64,128, 2048 tokens, hidden 512. --fp8: the FP8 forward (fa_fp8_forward), forward only.");
  a.option("seqlens", &seqlens, "sequence lengths (default: per backend)");
  a.option("head-dims", &head_dims, "head dims (default: per backend)");
  a.option("causal", &causal_modes, "causal modes to sweep: 0, 1 or 0,1");
  a.option("tokens", &tokens, "tokens per batch, B = tokens / N (0 = default)");
  a.option("hidden", &hidden, "hidden size, H = hidden / d (0 = default)");
  a.option("gqa", &kv_ratio, "query heads per KV head");
  a.flag("backward", &backward, "also time the backward");
  f8.declare(a);
  common.declare(a);
  a.option("warmup", &warmup, "untimed calls per point (-1 = 3 GPU, 1 CPU)");
  a.option("repeats", &repeats, "timed calls per point, median reported (-1 = 10 GPU, 3 CPU)");
  a.option("json", &json, "write the results as JSON to this file");
  a.option("plot", &plot, "write a PNG plot (python3 + matplotlib; optional)");
  if (!a.parse(argc, argv, 2)) return 0;
  Problem base;
  common.apply(base);
  const bool gpu = base.gpu;
  if (seqlens.empty()) seqlens = gpu ? std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384}
                                     : std::vector<int64_t>{256, 512, 1024, 2048};
  if (head_dims.empty()) head_dims = gpu ? std::vector<int64_t>{64, 128, 256} : std::vector<int64_t>{64, 128};
  if (!tokens) tokens = gpu ? 16384 : 2048;
  if (!hidden) hidden = gpu ? 2048 : 512;
  if (warmup < 0) warmup = gpu ? 3 : 1;
  if (repeats < 0) repeats = gpu ? 10 : 3;
  if (kv_ratio < 1) throw UsageError("--gqa must be >= 1");
  for (int64_t c : causal_modes)
    if (c != 0 && c != 1) throw UsageError("--causal takes 0 and/or 1, got " + std::to_string(c));
  const bool fp8 = f8.fp8_flag;
  Fp8Spec fp8_spec;
  if (fp8) {
    if (backward) throw UsageError("--fp8 is forward only (there is no fp8 backward); drop --backward");
    fp8_spec = f8.spec();
  }

  std::vector<BenchRow> rows;
  for (int64_t d : head_dims)
    for (int64_t n : seqlens)
      for (int64_t c : causal_modes) {
        BenchRow r;
        r.p = base;
        r.p.head_dim = d;
        r.p.seqlen_q = r.p.seqlen_k = n;
        r.p.batch = std::max<int64_t>(1, tokens / std::max<int64_t>(n, 1));
        r.p.heads_q = std::max<int64_t>(kv_ratio, hidden / std::max<int64_t>(d, 1) / kv_ratio * kv_ratio);
        r.p.heads_kv = r.p.heads_q / kv_ratio;
        r.p.causal = c != 0;
        check_sizes(r.p);
        rows.push_back(r);
      }

  std::printf("fa bench: %s, %s, %zu points%s%s\n", backend_text(base).c_str(), dtype_name(base.dtype),
              rows.size(), backward ? ", forward + backward" : "",
              fp8 ? (", fp8 forward (" + fp8_spec.text() + ")").c_str() : "");
  std::fflush(stdout);
  for (size_t i = 0; i < rows.size(); ++i) {
    BenchRow& r = rows[i];
    progress(i, rows.size(), "d " + std::to_string(r.p.head_dim) + " N " + std::to_string(r.p.seqlen_q) +
                                 (r.p.causal ? " causal" : ""));
    try {
      if (fp8) {
        Fp8Workload w(r.p, fp8_spec);
        r.fwd_ms = w.time_ms(int(warmup), int(repeats));
      } else {
        Workload w(r.p, backward);
        r.fwd_ms = w.time_ms(false, int(warmup), int(repeats));
        if (backward) r.bwd_ms = w.time_ms(true, int(warmup), int(repeats));
      }
    } catch (const LibraryError& e) {
      // An unsupported point (say, a head dim without a kernel) is reported, not fatal.
      r.status = std::string(fa_status_string(e.status)) + ": " + e.what();
    }
  }
  progress(rows.size(), rows.size(), "done");

  const char* unit = gpu ? "TFLOP/s" : "GFLOP/s";
  const double div = gpu ? 1e9 : 1e6;  // flops / ms / div
  std::printf("%5s %6s %4s %4s %-7s %10s %9s", "d", "N", "B", "H", "mask", "fwd ms", unit);
  if (backward) std::printf(" %10s %9s", "bwd ms", unit);
  std::printf("\n");
  for (const BenchRow& r : rows) {
    std::printf("%5lld %6lld %4lld %4lld %-7s", (long long)r.p.head_dim, (long long)r.p.seqlen_q,
                (long long)r.p.batch, (long long)r.p.heads_q, r.p.causal ? "causal" : "none");
    if (r.status != "ok") {
      std::printf(" %s\n", r.status.c_str());
      continue;
    }
    const double f = r.p.forward_flops();
    std::printf(" %10.3f %9.1f", r.fwd_ms, f / r.fwd_ms / div);
    if (backward) std::printf(" %10.3f %9.1f", r.bwd_ms, 2.5 * f / r.bwd_ms / div);
    std::printf("\n");
  }

  if (!plot.empty() && json.empty()) json = plot + ".json";
  if (!json.empty()) {
    write_json(json, rows, backward, fp8 ? fp8_spec.text() : "");
    std::printf("json: wrote %s\n", json.c_str());
  }
  if (!plot.empty()) make_plot(json, plot);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// fa check
// ---------------------------------------------------------------------------------------------
struct CheckShape {
  int64_t b, nq, nk, hq, hk;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int cmd_check(int argc, char** argv) {
  CommonOpts common;
  common.backend = "cpu";
  std::string dtypes;
  std::vector<int64_t> head_dims = {32, 64, 128, 256};
  bool backward = true, quiet = false, kvcache = true, fp8 = true;
  Args a("check",
         "Correctness sweep against the float64 reference (fa::ref) over a small grid: shapes with\n"
         "odd lengths, Nq != Nk both ways, GQA 7:1, no keys at all; masks none / causal / window /\n"
         "causal + softcap; every listed dtype and head dim; forward outputs, LSE and gradients.\n"
         "Every element is checked; outputs are poisoned first. Tolerance: 1e-5 + rtol * max|ref|\n"
         "with rtol 4 * 2^-8 (bf16), 4 * 2^-11 (fp16), 1e-4 (fp32), twice that for gradients;\n"
         "LSE rtol 1e-3 (1e-4 fp32).\n"
         "KV-cache decode (fa_kvcache_forward): paged caches with shuffled block tables and odd page\n"
         "sizes, contiguous caches, k_new/v_new appended over two steps before the checked one,\n"
         "GQA, ragged lengths, forced splits; O, LSE and the appended cache rows (bit-exact).\n"
         "FP8 forward (fa_fp8_forward; bf16/fp16, head dims 64/128/256, shapes with keys): masks\n"
         "none / causal / window, block scales + incoherent, and per-head scales on causal; O and\n"
         "LSE within 2x the backend's arithmetic on the call's quantised bytes (fa run --fp8's\n"
         "bound; worst/tol is err / bound).\n"
         "Exits 1 on any failure.");
  a.option("dtypes", &dtypes, "comma-separated (default: bf16,fp16,fp32 on CPU; bf16,fp16 on CUDA)");
  a.option("head-dims", &head_dims, "head dims");
  a.flag("backward", &backward, "check gradients too");
  a.flag("quiet", &quiet, "print failures and the summary only");
  a.flag("kvcache", &kvcache, "check the KV-cache decode cases too");
  a.flag("fp8", &fp8, "check the FP8 forward cases too");
  common.declare(a);
  if (!a.parse(argc, argv, 2)) return 0;
  if (a.given("window") || a.given("softcap"))
    throw UsageError("fa check sweeps its own masks; use fa run for one --window / --softcap");
  Problem base;
  common.apply(base);
  if (dtypes.empty()) dtypes = base.gpu ? "bf16,fp16" : "bf16,fp16,fp32";

  const std::vector<CheckShape> shapes = {
      {1, 1, 1, 2, 1},    {2, 17, 17, 4, 2},   {1, 64, 128, 2, 2},
      {2, 128, 33, 3, 1}, {1, 100, 257, 7, 1}, {2, 5, 0, 2, 2},
  };
  struct MaskCase {
    const char* name;
    bool causal;
    int64_t left, right;
    double softcap;
  };
  const std::vector<MaskCase> masks = {
      {"none", false, -1, -1, 0}, {"causal", true, -1, -1, 0},
      {"window(16,4)", false, 16, 4, 0}, {"causal+cap30", true, -1, -1, 30}};

  // KV-cache decode cases ("kv B,Nq,L,Hq,Hk": L = keys in the cache before the first step).
  struct KvCase {
    const char* name;
    int64_t b, nq, len, hq, hk, append, page, splits;
    bool ragged, causal;
    int64_t left;
  };
  const std::vector<KvCase> kv_cases = {
      {"paged16+3", 3, 3, 37, 8, 2, 3, 16, 0, true, true, -1},
      {"contig+1 s3", 2, 1, 100, 6, 1, 1, 0, 3, false, true, -1},
      {"paged7 win16", 2, 2, 50, 4, 4, 2, 7, 0, true, true, 16},
      {"paged5 static", 2, 1, 33, 4, 2, 0, 5, 2, false, false, -1},
  };

  // FP8 forward cases (their own masks: the fp8 forward has no softcap).
  struct Fp8Case {
    const char* name;
    bool causal;
    int64_t left, right;
    fa_fp8_scaling scaling;
    bool incoherent;
  };
  const std::vector<Fp8Case> fp8_cases = {
      {"fp8 none", false, -1, -1, FA_FP8_SCALING_BLOCK, true},
      {"fp8 causal", true, -1, -1, FA_FP8_SCALING_BLOCK, true},
      {"fp8 win(16,4)", false, 16, 4, FA_FP8_SCALING_BLOCK, true},
      {"fp8 causal/ph", true, -1, -1, FA_FP8_SCALING_PER_HEAD, false},
  };

  std::printf("fa check: %s, reference float64, %s\n", backend_text(base).c_str(),
              backward ? "forward + backward" : "forward");
  std::printf("%-5s %-22s %4s %-13s %9s %9s %9s %9s %9s %9s  %s\n", "dtype", "B,Nq,Nk,Hq,Hk", "d",
              "mask", "O", "LSE", "dQ", "dK", "dV", "worst/tol", "result");
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& dts : split_list(dtypes)) {
    const fa_dtype dt = parse_dtype(dts);
    for (int64_t d : head_dims)
      for (const CheckShape& s : shapes)
        for (const MaskCase& m : masks) {
          Problem p = base;
          p.dtype = dt;
          p.batch = s.b, p.seqlen_q = s.nq, p.seqlen_k = s.nk, p.heads_q = s.hq, p.heads_kv = s.hk;
          p.head_dim = d;
          p.causal = m.causal, p.window_left = m.left, p.window_right = m.right, p.softcap = m.softcap;
          char shape[64];
          std::snprintf(shape, sizeof shape, "%lld,%lld,%lld,%lld,%lld", (long long)s.b,
                        (long long)s.nq, (long long)s.nk, (long long)s.hq, (long long)s.hk);
          std::string result;
          CheckResult r;
          bool ok = false, ran = false;
          try {
            Workload w(p, backward);
            r = w.check(0, 0);
            ran = true;
            ok = r.passed();
          } catch (const LibraryError& e) {
            if (e.status != FA_ERROR_UNSUPPORTED) throw;
            result = std::string("SKIP (") + e.what() + ")";
          }
          if (!ran) {
            ++skipped;
            if (!quiet)
              std::printf("%-5s %-22s %4lld %-13s %s\n", dts.c_str(), shape, (long long)d, m.name,
                          result.c_str());
            continue;
          }
          ok ? ++passed : ++failed;
          if (quiet && ok) continue;
          auto cell = [&](const ErrorStat& e) { return e.count ? sci(e.max_err) : std::string("-"); };
          double worst = 0;
          for (const ErrorStat* e : {&r.o, &r.lse, &r.dq, &r.dk, &r.dv})
            if (e->count) worst = std::max(worst, e->max_err / e->tolerance());
          std::printf("%-5s %-22s %4lld %-13s %9s %9s %9s %9s %9s %9.3f  %s\n", dts.c_str(), shape,
                      (long long)d, m.name, cell(r.o).c_str(), cell(r.lse).c_str(),
                      cell(r.dq).c_str(), cell(r.dk).c_str(), cell(r.dv).c_str(), worst,
                      ok ? "PASS" : "FAIL");
          std::fflush(stdout);
        }
    for (int64_t d : kvcache ? head_dims : std::vector<int64_t>{})
      for (const KvCase& c : kv_cases) {
        Problem p = base;
        p.dtype = dt;
        p.batch = c.b, p.seqlen_q = c.nq, p.seqlen_k = c.len, p.heads_q = c.hq, p.heads_kv = c.hk;
        p.head_dim = d;
        p.causal = c.causal, p.window_left = c.left, p.window_right = -1, p.softcap = 0;
        DecodeSpec spec;
        spec.cache_len = c.len;
        spec.append = c.append;
        spec.page_size = c.page;
        spec.splits = c.splits;
        spec.ragged = c.ragged;
        spec.max_steps = 3;  // two steps move cache_seqlens and fill rows; the third is checked
        char shape[64];
        std::snprintf(shape, sizeof shape, "kv %lld,%lld,%lld,%lld,%lld", (long long)c.b,
                      (long long)c.nq, (long long)c.len, (long long)c.hq, (long long)c.hk);
        CheckResult r;
        try {
          DecodeWorkload w(p, spec);
          w.step();
          w.step();
          r = w.check(0);
        } catch (const LibraryError& e) {
          if (e.status != FA_ERROR_UNSUPPORTED) throw;
          ++skipped;
          if (!quiet)
            std::printf("%-5s %-22s %4lld %-13s SKIP (%s)\n", dts.c_str(), shape, (long long)d,
                        c.name, e.what());
          continue;
        }
        const bool ok = r.passed();
        ok ? ++passed : ++failed;
        if (quiet && ok) continue;
        const double worst = std::max(r.o.max_err / r.o.tolerance(), r.lse.max_err / r.lse.tolerance());
        std::printf("%-5s %-22s %4lld %-13s %9s %9s %9s %9s %9s %9.3f  %s%s\n", dts.c_str(), shape,
                    (long long)d, c.name, sci(r.o.max_err).c_str(), sci(r.lse.max_err).c_str(), "-",
                    "-", "-", worst, ok ? "PASS" : "FAIL",
                    r.cache_ok ? "" : " (appended cache rows wrong)");
        std::fflush(stdout);
      }
    if (!fp8 || dt == FA_DTYPE_FLOAT32) continue;  // the fp8 forward quantises 16-bit inputs
    for (int64_t d : head_dims) {
      if (d != 64 && d != 128 && d != 256) continue;
      for (const CheckShape& sh : shapes) {
        if (sh.nk == 0) continue;  // keyless batches: not in the fp8 kernel's GPU test grid either
        for (const Fp8Case& c : fp8_cases) {
          Problem p = base;
          p.dtype = dt;
          p.batch = sh.b, p.seqlen_q = sh.nq, p.seqlen_k = sh.nk, p.heads_q = sh.hq, p.heads_kv = sh.hk;
          p.head_dim = d;
          p.causal = c.causal, p.window_left = c.left, p.window_right = c.right, p.softcap = 0;
          Fp8Spec spec;
          spec.scaling = c.scaling;
          spec.incoherent = c.incoherent;
          char shape[64];
          std::snprintf(shape, sizeof shape, "%lld,%lld,%lld,%lld,%lld", (long long)sh.b, (long long)sh.nq,
                        (long long)sh.nk, (long long)sh.hq, (long long)sh.hk);
          Fp8Check r;
          try {
            Fp8Workload w(p, spec);
            r = w.check(0, 0);
          } catch (const LibraryError& e) {
            if (e.status != FA_ERROR_UNSUPPORTED) throw;
            ++skipped;
            if (!quiet)
              std::printf("%-5s %-22s %4lld %-13s SKIP (%s)\n", dts.c_str(), shape, (long long)d, c.name, e.what());
            continue;
          }
          const bool ok = r.passed();
          ok ? ++passed : ++failed;
          if (quiet && ok) continue;
          std::printf("%-5s %-22s %4lld %-13s %9s %9s %9s %9s %9s %9.3f  %s\n", dts.c_str(), shape, (long long)d,
                      c.name, sci(r.o.max_err).c_str(), sci(r.lse.max_err).c_str(), "-", "-", "-", r.worst(),
                      ok ? "PASS" : "FAIL");
          std::fflush(stdout);
        }
      }
    }
  }
  std::printf("fa check: %d passed, %d failed, %d skipped (unsupported here)\n", passed, failed, skipped);
  if (failed > 0) return 1;
  if (passed == 0) {
    std::printf("fa check: nothing was checked\n");
    return 1;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// fa info
// ---------------------------------------------------------------------------------------------
int cmd_info(int argc, char** argv) {
  Args a("info", "Prints the version, build flags, compiled GPU archs, devices found and kernels.");
  if (!a.parse(argc, argv, 2)) return 0;
  std::printf("%s", fa_build_info());
  std::printf("fa tool: built %s CUDA; GPU backend %s\n",
#ifdef FA_WITH_CUDA
              "with",
#else
              "without",
#endif
              gpu_available() ? ("available: " + gpu_name()).c_str() : "not available");
  std::printf("cpu: %u hardware threads\n", std::max(1u, std::thread::hardware_concurrency()));
  return 0;
}

void usage(FILE* f) {
  std::fprintf(f,
               "usage: fa <command> [options]\n\n"
               "commands:\n"
               "  run     run one workload (GPU if present, else CPU), time it, spot-check it;\n"
               "          run --decode: token-by-token decoding over a (paged) KV cache;\n"
               "          run --fp8: the FP8 (e4m3) forward\n"
               "  bench   sweep sequence lengths and head dims; --json, --plot;\n"
               "          bench --decode: sweep cache lengths and batch sizes; bench --fp8\n"
               "  check   correctness sweep against the float64 reference\n"
               "  info    version, build flags, archs, devices, kernels\n\n"
               "fa <command> --help shows the command's options.\n");
}

}  // namespace
}  // namespace fa::cli

int main(int argc, char** argv) {
  using namespace fa::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "run") return cmd_run(argc, argv);
    if (cmd == "bench") return cmd_bench(argc, argv);
    if (cmd == "check") return cmd_check(argc, argv);
    if (cmd == "info") return cmd_info(argc, argv);
    if (cmd == "--version" || cmd == "version") {
      std::printf("flashattn %s\n", fa_version());
      return 0;
    }
    std::fprintf(stderr, "fa: error: unknown command '%s' (commands: run, bench, check, info)\n", cmd.c_str());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "fa %s: error: %s\n", cmd.c_str(), e.what());
    return 2;
  } catch (const LibraryError& e) {
    // A request the library rejects is a usage error; a failure while running is not.
    std::fprintf(stderr, "fa %s: error: %s: %s\n", cmd.c_str(), fa_status_string(e.status), e.what());
    return e.status == FA_ERROR_INVALID_ARGUMENT || e.status == FA_ERROR_UNSUPPORTED ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fa %s: error: out of host memory for this shape\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fa %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
