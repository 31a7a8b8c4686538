// fa_bench_cpu: throughput of the CPU FlashAttention backend (forward and backward, fp32) at
// N in {1k, 4k, 8k}, d in {64, 128}, causal or not, against OpenBLAS sgemm (a large square
// product at the same thread count) measured in the same run, so the ratio is meaningful on any
// machine. FLOPs: forward 4 B H Nq Nk d (halved for causal), backward 2.5x forward. Each number
// is the median of --reps runs after one warm-up run.
//
//   fa_bench_cpu [--threads T] [--reps R] [--n 1024,4096] [--d 64,128] [--causal 0,1]
//                [--target-gflop G] [--no-backward] [--json FILE] [--tile] [--cpu-time]
//                [--dtype f32|f16|bf16]
// --dtype runs the same shapes with fp16/bf16 tensors (converted from the same fp32 data), which
// takes the backend's converting loaders instead of fp32's in-place reads.
// --tile instead compares the attention tile products (64 x 64 x d and 64 x d x 64) done by the
// micro-kernel against single-threaded cblas_sgemm on the same shapes (the BLAS-or-own decision).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "cpu/convert.hpp"
#include "cpu/kernels.hpp"
#include "cpu/parallel.hpp"

#ifdef FA_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// --cpu-time: time by the process's CPU seconds divided by the thread count instead of the wall
// clock. On a machine shared with other jobs this measures our code rather than the contention
// (it assumes the threads are busy throughout, which holds for these runs).
bool g_cpu_time = false;
int g_threads = 1;

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <class Fn>
double median_seconds(int reps, Fn&& fn) {
  fn();  // warm-up: page faults, thread start, caches
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    fn();
    t.push_back(g_cpu_time ? (cpu_seconds() - c0) / g_threads : seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

void fill(std::vector<float>& x, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  for (float& v : x) v = n(g);
}

#ifdef FA_HAVE_OPENBLAS
double sgemm_gflops(int threads, int reps) {
  openblas_set_num_threads(threads);
  const int n = 2048;  // large enough to reach the ceiling, small enough for seconds
  std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
  fill(a, 1);
  fill(b, 2);
  const double s = median_seconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                0.f, c.data(), n);
  });
  return 2.0 * n * n * double(n) / s * 1e-9;
}
#endif

// The two tile products of the forward at d: S = Q K^T (64 x 64 x d against a transposed K tile)
// and O += P V (64 x d x 64), each repeated enough to time, micro-kernel vs cblas_sgemm.
void tile_comparison(int reps) {
  std::printf("tile products, one thread (micro-kernel isa: %s)\n", fa::cpu::gemm_tile_isa());
  std::printf("%-18s %12s %12s\n", "shape MxNxK", "own GF/s", "sgemm GF/s");
  for (int d : {64, 128, 256}) {
    for (auto [M, N, K] : {std::make_tuple(64, 64, d), std::make_tuple(64, d, 64)}) {
      std::vector<float> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
      fill(a, 3);
      fill(b, 4);
      const int iters = int(2e8 / (2.0 * M * N * K)) + 1;  // ~0.2 GFLOP per timing
      const double flops = 2.0 * M * N * K * iters;
      const double own = median_seconds(reps, [&] {
        for (int i = 0; i < iters; ++i) fa::cpu::gemm_tile(M, N, K, a.data(), K, b.data(), N, c.data(), N, true);
      });
      double blas = NAN;
#ifdef FA_HAVE_OPENBLAS
      openblas_set_num_threads(1);
      blas = median_seconds(reps, [&] {
        for (int i = 0; i < iters; ++i)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, a.data(), K, b.data(), N,
                      1.f, c.data(), N);
      });
#endif
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
      std::printf("%-18s %12.1f %12.1f\n", shape, flops / own * 1e-9, flops / blas * 1e-9);
    }
  }
}

struct Result {
  int n, d, bh;
  bool causal;
  double fwd_s, bwd_s, fwd_gflops, bwd_gflops;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, reps = 3;
  double target_gflop = 20;  // forward work per timed run: seconds on a few cores
  std::vector<int> ns = {1024, 4096, 8192}, ds = {64, 128}, causals = {0, 1};
  bool backward = true, tile = false;
  const char* json = nullptr;
  fa::core::DType dtype = fa::core::DType::F32;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") threads = std::atoi(next());
    else if (a == "--reps") reps = std::max(1, std::atoi(next()));
    else if (a == "--n") ns = parse_list(next());
    else if (a == "--d") ds = parse_list(next());
    else if (a == "--causal") causals = parse_list(next());
    else if (a == "--target-gflop") target_gflop = std::atof(next());
    else if (a == "--no-backward") backward = false;
    else if (a == "--json") json = next();
    else if (a == "--tile") tile = true;
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--dtype") {
      const std::string t = next();
      if (t == "f16")
        dtype = fa::core::DType::F16;
      else if (t == "bf16")
        dtype = fa::core::DType::BF16;
      else if (t != "f32") {
        std::fprintf(stderr, "--dtype takes f32, f16 or bf16\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of bench_cpu.cpp)\n", a.c_str());
      return 2;
    }
  }
  if (tile) {
    tile_comparison(reps);
    return 0;
  }
  threads = fa::cpu::resolve_threads(threads);
  g_threads = threads;

  double sgemm = NAN;
#ifdef FA_HAVE_OPENBLAS
  sgemm = sgemm_gflops(threads, reps);
#endif
  const char* blas_core = "none";
#ifdef FA_HAVE_OPENBLAS
  // OpenBLAS picks its kernels from CPUID; in VMs it can fall back to an old core (Prescott) and
  // understate the ceiling: then set OPENBLAS_CORETYPE (e.g. SkylakeX) and re-run.
  blas_core = openblas_get_corename();
#endif
  std::printf("threads %d, micro-kernel %s, OpenBLAS (%s) sgemm 2048^3: %.1f GFLOP/s%s, dtype %s\n",
              threads, fa::cpu::gemm_tile_isa(), blas_core, sgemm,
              g_cpu_time ? " (CPU-time based)" : "", fa::core::dtype_name(dtype));
  std::printf("%6s %4s %6s %4s %10s %10s %8s %10s %10s\n", "N", "d", "causal", "B*H", "fwd ms",
              "fwd GF/s", "x sgemm", "bwd ms", "bwd GF/s");

  std::vector<Result> results;
  for (int n : ns)
    for (int d : ds)
      for (int causal : causals) {
        const double fwd_flop_head = 4.0 * n * double(n) * d * (causal ? 0.5 : 1.0);
        // Enough heads for ~target_gflop and at least one task per thread along heads x blocks.
        const int bh = std::max(1, int(std::lround(target_gflop * 1e9 / fwd_flop_head)));
        const size_t elems = size_t(bh) * size_t(n) * size_t(d);
        std::vector<float> q(elems), k(elems), v(elems), o(elems), dout(elems), dq(elems), dk(elems), dv(elems);
        std::vector<float> lse(size_t(bh) * n);
        fill(q, 10);
        fill(k, 11);
        fill(v, 12);
        fill(dout, 13);

        // fp16/bf16 copies of the tensors when --dtype asks (outputs: buffers of the same size).
        std::vector<uint16_t> half[8];
        auto data = [&](int i, std::vector<float>& x) -> void* {
          if (dtype == fa::core::DType::F32) return x.data();
          half[i].resize(x.size());
          for (size_t e = 0; e < x.size(); ++e)
            half[i][e] = dtype == fa::core::DType::F16 ? fa::cpu::f32_to_f16(x[e])
                                                       : fa::cpu::f32_to_bf16(x[e]);
          return half[i].data();
        };

        fa::core::AttnParams p;
        p.dtype = dtype;
        p.batch = 1;
        p.heads_q = p.heads_kv = bh;
        p.head_dim = d;
        p.seqlen_q = p.seqlen_k = n;
        p.total_q = p.total_k = n;
        fa::core::Strides st;  // [1, N, H, D] dense, like flash_attn
        st.head = d;
        st.row = int64_t(bh) * d;
        st.batch = int64_t(n) * st.row;
        p.q_str = p.k_str = p.v_str = p.o_str = p.do_str = p.dq_str = p.dk_str = p.dv_str = st;
        p.q = data(0, q);
        p.k = data(1, k);
        p.v = data(2, v);
        p.o = data(3, o);
        p.lse = lse.data();
        p.lse_batch_stride = int64_t(bh) * n;
        p.lse_head_stride = n;
        p.dout = data(4, dout);
        p.dq = data(5, dq);
        p.dk = data(6, dk);
        p.dv = data(7, dv);
        p.scale = float(1.0 / std::sqrt(double(d)));
        p.causal = causal != 0;
        p.window_right = causal ? 0 : -1;
        p.num_threads = threads;

        Result r{n, d, bh, causal != 0, 0, 0, 0, 0};
        r.fwd_s = median_seconds(reps, [&] { (void)fa::cpu::forward(p); });
        r.fwd_gflops = fwd_flop_head * bh / r.fwd_s * 1e-9;
        if (backward) {
          r.bwd_s = median_seconds(reps, [&] { (void)fa::cpu::backward(p); });
          r.bwd_gflops = 2.5 * fwd_flop_head * bh / r.bwd_s * 1e-9;
        }
        std::printf("%6d %4d %6d %4d %10.1f %10.1f %8.2f %10.1f %10.1f\n", n, d, causal, bh,
                    r.fwd_s * 1e3, r.fwd_gflops, r.fwd_gflops / sgemm, r.bwd_s * 1e3, r.bwd_gflops);
        std::fflush(stdout);
        results.push_back(r);
      }

  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f) {
      std::perror(json);
      return 1;
    }
    std::fprintf(f,
                 "{\"threads\": %d, \"isa\": \"%s\", \"blas_core\": \"%s\", \"cpu_time\": %s, "
                 "\"dtype\": \"%s\", \"sgemm_gflops\": %.3f, \"results\": [\n",
                 threads, fa::cpu::gemm_tile_isa(), blas_core, g_cpu_time ? "true" : "false",
                 fa::core::dtype_name(dtype), std::isnan(sgemm) ? -1.0 : sgemm);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      std::fprintf(f,
                   "  {\"n\": %d, \"d\": %d, \"causal\": %s, \"bh\": %d, \"fwd_ms\": %.3f, "
                   "\"fwd_gflops\": %.3f, \"bwd_ms\": %.3f, \"bwd_gflops\": %.3f}%s\n",
                   r.n, r.d, r.causal ? "true" : "false", r.bh, r.fwd_s * 1e3, r.fwd_gflops,
                   r.bwd_s * 1e3, r.bwd_gflops, i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
