// FlashAttention-3 forward for Hopper (sm90a), host side: what an instance file calls
// (run_sm90_fwd, run_sm90_fwd_fp8) and what it needs to launch flash_fwd_kernel.cuh's FwdKernel: the
// TMA tensor maps (memoised per tensor), the persistent grid and its tile walk (L2 sections,
// clusters, the causal section cap), GQA packing, the ablation variants (FA_SM90_FWD_ABLATE) and the
// run-time switches read from the environment once per process.
#pragma once

// First: it decides whether CuTe gets the extended wgmma shapes before anything includes CuTe
// (tma_memo.hpp below does).
#include "cuda/sm90/flash_fwd_kernel.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/common/env.hpp"
#include "cuda/common/launch_ex.hpp"
#include "cuda/common/timeline_dump.hpp"
#include "cuda/common/tma_memo.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/scheduler/tile_scheduler.hpp"
#include "cuda/sm90/fwd_pack_gqa.hpp"
#include "cuda/sm90/fwd_route.hpp"

namespace fa::cuda::sm90 {

// TMA needs 16-byte aligned base addresses and 16-byte multiple strides.
inline bool tma_ok(const void* ptr, const core::Strides& s, size_t elem) {
  auto a16 = [](int64_t bytes) { return bytes % 16 == 0; };
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && a16(s.row * int64_t(elem)) &&
         a16(s.head * int64_t(elem)) && a16(s.batch * int64_t(elem));
}
// The epilogue stores O as 32-bit column pairs.
inline bool pair_store_ok(const void* ptr, const core::Strides& s) {
  return reinterpret_cast<uintptr_t>(ptr) % 4 == 0 && s.row % 2 == 0 && s.head % 2 == 0 &&
         s.batch % 2 == 0;
}

// The packed-GQA Q map: Q seen as (d, G, rows, KV head, batch), so one box of
// (box_cols, G, block_m / G, 1, 1) holds block_m rows (query position, head in group) of one KV
// head. Same swizzle and zero fill as cute's maps. False when the driver rejects it.
template <class Element>
bool make_packed_q_map(const core::AttnParams& p, int group, int64_t rows, int batches,
                       int64_t batch_stride, int box_cols, int block_m, int swizzle_bytes,
                       cute::TmaDescriptor* map) {
  const uint64_t e = sizeof(Element);
  const cuuint64_t dims[5] = {cuuint64_t(p.head_dim), cuuint64_t(group), cuuint64_t(rows),
                              cuuint64_t(p.heads_kv), cuuint64_t(batches)};
  const cuuint64_t strides[4] = {cuuint64_t(p.q_str.head) * e, cuuint64_t(p.q_str.row) * e,
                                 cuuint64_t(p.q_str.head) * e * cuuint64_t(group),
                                 cuuint64_t(batch_stride) * e};
  const cuuint32_t box[5] = {cuuint32_t(box_cols), cuuint32_t(group), cuuint32_t(block_m / group), 1, 1};
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  const CUtensorMapSwizzle swizzle = swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                           : CU_TENSOR_MAP_SWIZZLE_32B;
  const CUtensorMapDataType type = std::is_same_v<Element, cutlass::bfloat16_t>
                                       ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      map, type, 5, const_cast<void*>(p.q), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// K/V bytes per L2 section of the persistent tile walk (sched::StaticLptScheduler) for equal-weight
// tiles (non-causal). Smaller sections put fewer (batch, head) pairs in one round, so more of a
// head's query blocks run at the same moment and read its K/V from L2 while it is there (N 512,
// d128, 32 MB: a round of 132 tiles holds query block 0 of 128 heads, each K/V read from DRAM by
// one CTA and kept in L2 for the next three rounds; 4 MB: 16 heads × 4 query blocks per section).
// Causal walks keep 32 MB (sm90_fwd_causal_l2_budget_bytes), capped at two rounds of tiles per
// section (FA_SM90_FWD_CAUSAL_SECTION_ROUNDS): their sections restart the snake, and a section of
// fewer tiles than CTAs would leave CTAs idle for a round.
// FA_SM90_FWD_L2_BUDGET_MB: 0 (default) = the rule below; 1..4096 = that budget for every shape
// (32 = the scheduler's own constant, the behaviour before the rule). The environment variable of
// the same name (1..4096, read once per process) overrides both, so one build compares budgets.
// The rule, from H200 session 5 round 1 (non-causal N 512..8k, 4 MB against 32 MB): 4 MB won at
// every d64 and d128 shape (d128 +2..+7%, d64 -1..+2%) and at d256 N <= 2k (+1..+4%), and lost at
// d256 N 4k / 8k (-2%, 4 / 8 MB of K/V per head): 32 MB where the head dim is above 128 and one
// head's K/V is over 2 MB, 4 MB elsewhere (d192, not measured, follows d256).
#ifndef FA_SM90_FWD_L2_BUDGET_MB
#define FA_SM90_FWD_L2_BUDGET_MB 0
#endif
inline int64_t sm90_fwd_l2_budget_bytes(int head_dim, int64_t kv_bytes_per_head) {
  static const int64_t fixed_mb = [] {
    int64_t mb = FA_SM90_FWD_L2_BUDGET_MB;
    if (const char* v = std::getenv("FA_SM90_FWD_L2_BUDGET_MB"); v && *v) {
      const long x = std::strtol(v, nullptr, 10);
      if (x >= 1 && x <= 4096) mb = x;
    }
    return mb;
  }();
  if (fixed_mb > 0) return fixed_mb << 20;
  return int64_t(head_dim > 128 && kv_bytes_per_head > (int64_t(2) << 20) ? 32 : 4) << 20;
}

// Causal walks' L2 section budget, a run-time experiment (FA_SM90_FWD_CAUSAL_L2_BUDGET_MB,
// 1..4096, read once per process; unset = sched::StaticLptScheduler::kL2BudgetBytes, 32 MB). A
// causal section's first round runs its heaviest query block of every head in the section, and so
// reads the whole section's K/V from DRAM in one round: at d128 N512 (256 KB of K/V per head) that
// is 32 MB in ~9 us of 4-block tiles, above the H100's ~3 TB/s, while its three later rounds read
// only Q and write O. Smaller sections spread those first reads over the rounds, at the price of
// fewer tiles per section to balance (a section of fewer tiles than CTAs leaves CTAs idle).
inline int64_t sm90_fwd_causal_l2_budget_bytes() {
  static const int64_t bytes = [] {
    const int mb = env_int("FA_SM90_FWD_CAUSAL_L2_BUDGET_MB", 0);
    return mb >= 1 && mb <= 4096 ? int64_t(mb) << 20 : sched::StaticLptScheduler::kL2BudgetBytes;
  }();
  return bytes;
}

// Causal walks: at most this many rounds of tiles per L2 section (StaticLptScheduler::set_grid's
// max_section_rounds; 0 = the K/V budget alone, the walk before session 36). The environment
// variable of the same name (0..64, read once per process) overrides it. H100, session 36
// (docs/perf/ab_session36.md), causal, against the budget alone (3.9 rounds at d128 N512), mean
// of three alternations, N 512 / 1k / 2k / 4k / 8k: d128 +12 / +3 / +0.5 / +3 / +1%, d64 +6 /
// +3.5 / +1 / +4 / +1%; N16k within the noise; d256 already had <= 2 rounds. An odd cap is worse
// (3, each section restarting the snake: its last round runs the first round's way, d128 N8k
// -9%; odd caps now alternate the snake across sections instead). 1 (an experiment, not
// measured yet): sections of one round with the snake alternating across sections
// (StaticLptScheduler::Params::section_alternate), which halves the K/V a round first touches
// again (d256 causal N512: 16.5 MB instead of 32; scripts/gpu/causal_one_round.sh).
#ifndef FA_SM90_FWD_CAUSAL_SECTION_ROUNDS
#define FA_SM90_FWD_CAUSAL_SECTION_ROUNDS 2
#endif
inline int sm90_fwd_causal_section_rounds() {
  static const int r = [] {
    const int v = env_int("FA_SM90_FWD_CAUSAL_SECTION_ROUNDS", FA_SM90_FWD_CAUSAL_SECTION_ROUNDS);
    return v <= 64 ? v : FA_SM90_FWD_CAUSAL_SECTION_ROUNDS;
  }();
  return r;
}

// FA_SM90_FWD_EARLY_RESCALE == 2: the environment variable of that name, 1 = early (read once).
inline bool sm90_fwd_early_rescale_env() {
  static const bool on = [] {
    const char* v = std::getenv("FA_SM90_FWD_EARLY_RESCALE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// FA_SM90_FWD_SECTION_ROTATE=1 in the environment (read once per process): the causal tile walk
// rotates each L2 section's snake (StaticLptScheduler::Params::section_rotate), so the CTAs that
// one section's partial last round leaves idle differ from section to section. By key-block counts
// (scripts/sched_balance.py --rotate) the busiest CTA drops from 1.031x to 1.003x the mean at
// causal N1k and to 1.001x at N2k (d64-d256, 132 CTAs), and stays at 1.031x at N512. Off by
// default until measured on the GPU.
inline bool sm90_fwd_section_rotate_env() {
  static const bool on = env_int("FA_SM90_FWD_SECTION_ROTATE", 0) == 1;
  return on;
}

// FA_SM90_FWD_MAX_CTAS=n (testing; read once per process): at most n persistent CTAs. A case small
// enough for compute-sanitizer's racecheck then still gives each CTA several tiles (the Q-slot
// ring wraps, the d64 round robin turns, causal tiles come longest first), which on the H200's 132
// SMs takes ~400 tiles per case, too many for racecheck (session 8: one such case did not finish
// in 170 s). scripts/gpu/check.sh runs the RingSmall suite that way.
inline int sm90_fwd_max_ctas() {
  static const int n = [] {
    const char* v = std::getenv("FA_SM90_FWD_MAX_CTAS");
    const long x = v && *v ? std::strtol(v, nullptr, 10) : 0;
    return x >= 1 && x <= 1 << 20 ? int(x) : 0;
  }();
  return n;
}

// FA_SM90_FWD_CLUSTER=0 in the environment (read once per process): no clusters at run time.
// FA_SM90_FWD_TMA_STORE=0 in the environment (read once per process): O by the direct stores
// from registers (the path varlen and TMA-unaligned O take) instead of the TMA-store epilogue,
// in every instance, so one build A/Bs the two epilogues at every head dim. Default 1.
inline bool sm90_fwd_tma_store_env() {
  static const bool on = env_int("FA_SM90_FWD_TMA_STORE", 1) != 0;
  return on;
}

// FA_SM90_FWD_PINGPONG=0 in the environment (read once per process): in a build with
// FA_SM90_FWD_PINGPONG_RUNTIME=1, the consumer warpgroups of a ping-pong instance issue their
// GEMMs without taking turns (Params::pingpong). Ignored by default builds. Default 1.
inline bool sm90_fwd_pingpong_env() {
  static const bool on = env_int("FA_SM90_FWD_PINGPONG", 1) != 0;
  return on;
}

inline bool sm90_fwd_cluster_env() {
  static const bool on = [] {
    const char* v = std::getenv("FA_SM90_FWD_CLUSTER");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// Clusters of two that can be resident at once with this kernel's shared memory (the persistent
// grid of a clustered launch; SMs pair up only within a GPC). Queried once per device; 0 when the
// query fails (the launcher then runs without clusters).
template <class Kernel>
int sm90_fwd_max_clusters(int device) {
  static std::atomic<int> cache[64] = {};
  if (device < 0 || device >= 64) return 0;
  int n = cache[device].load(std::memory_order_relaxed);
  if (n != 0) return n < 0 ? 0 : n;
  const LaunchConfig lc(dim3(2), dim3(Kernel::kThreads), Kernel::kSmemBytes, nullptr, false, 2);
  if (cudaOccupancyMaxActiveClusters(&n, sm90_fwd_kernel<Kernel>, lc.get()) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    n = -1;
  }
  cache[device].store(n, std::memory_order_relaxed);
  return n < 0 ? 0 : n;
}


template <class Kernel, class Element>
core::Status launch_fwd(const core::AttnParams& p, cudaStream_t stream) {
  using namespace cute;
  using Params = typename Kernel::Params;
  if (!tma_ok(p.q, p.q_str, sizeof(Element)) || !tma_ok(p.k, p.k_str, sizeof(Element)) ||
      !tma_ok(p.v, p.v_str, sizeof(Element)) || !pair_store_ok(p.o, p.o_str))
    return core::unsupported(
        "the sm90 forward (TMA) needs 16-byte aligned q/k/v and row/head/batch strides that are "
        "multiples of 8 elements (and even O strides); use algo FA2 for this layout");

  const int batches = p.varlen ? 1 : p.batch;
  const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;
  const int64_t rows_k = p.varlen ? p.total_k : p.seqlen_k;
  // Size-1 batch mode (varlen): its stride is never used; give TMA a harmless valid value.
  auto batch_stride = [&](const core::Strides& s, int64_t rows) {
    return p.varlen ? s.row * (rows > 0 ? rows : 1) : s.batch;
  };
  auto shape_q = make_shape(int32_t(rows_q), int32_t(p.head_dim), int32_t(p.heads_q), int32_t(batches));
  Tensor mQ = make_tensor(make_gmem_ptr(static_cast<Element const*>(p.q)),
                          make_layout(shape_q, make_stride(p.q_str.row, _1{}, p.q_str.head,
                                                           batch_stride(p.q_str, rows_q))));
  // No keys anywhere (every tile is empty and never loads K/V): point the K/V maps at one valid
  // row of Q so the descriptors can still be built.
  const bool no_keys = rows_k == 0;
  auto shape_k = make_shape(int32_t(no_keys ? 1 : rows_k), int32_t(p.head_dim), int32_t(p.heads_kv),
                            int32_t(batches));
  auto kv_tensor = [&](const void* ptr, const core::Strides& s) {
    const core::Strides& st = no_keys ? p.q_str : s;
    return make_tensor(make_gmem_ptr(static_cast<Element const*>(no_keys ? p.q : ptr)),
                       make_layout(shape_k, make_stride(st.row, _1{}, st.head,
                                                        batch_stride(st, no_keys ? 1 : rows_k))));
  };
  // GQA packing (fwd_pack_gqa.hpp): kernels with the TMA producer warpgroup only (the cp.async
  // and non-specialised ablations keep one head per tile). A map the driver refuses leaves the
  // call unpacked, except when packing is forced (FA_SM90_PACK_GQA=1): then it is an error, so a
  // test or benchmark of the packed path cannot silently measure the unpacked one.
  const int group = p.group_size();
  int pack_shift = 0;
  cute::TmaDescriptor q_packed{};
  if constexpr (Kernel::kCanPack) {
    pack_shift = pack_gqa_shift(pack_gqa_mode(), group, p.seqlen_q, Kernel::kBlockM);
    if (pack_shift > 0 &&
        !make_packed_q_map<Element>(p, group, rows_q, batches, batch_stride(p.q_str, rows_q),
                                    Kernel::kSwizzleCols, Kernel::kBlockM, Kernel::kSwizzleBytes,
                                    &q_packed)) {
      if (pack_gqa_mode() == PackGqaMode::Always)
        return core::internal("sm90 forward: the driver refused the packed-GQA Q tensor map "
                              "(FA_SM90_PACK_GQA=1)");
      pack_shift = 0;
    }
  }
  const int tile_heads = pack_shift > 0 ? p.heads_kv : p.heads_q;
  // O through TMA: the batch form only (a varlen box could cover the next sequence's rows), only
  // where O is TMA-aligned, and unpacked (packed rows are not one head's contiguous block).
  // Otherwise the map is built over Q (valid, never used).
  using Out = typename Kernel::OutElementC;
  const bool tma_store_o = Kernel::kTmaStoreO && !p.varlen && pack_shift == 0 &&
                           tma_ok(p.o, p.o_str, sizeof(Out)) && sm90_fwd_tma_store_env();
  auto make_tma_o = [&]() -> typename Kernel::TmaO {
    if constexpr (Kernel::kTmaStoreO) {
      const core::Strides& st = tma_store_o ? p.o_str : p.q_str;
      Tensor mO = make_tensor(
          make_gmem_ptr(static_cast<Out*>(tma_store_o ? p.o : const_cast<void*>(p.q))),
          make_layout(shape_q, make_stride(st.row, _1{}, st.head, batch_stride(st, rows_q))));
      return memo_tma(mO, [](const auto& g) {
        return make_tma_copy(SM90_TMA_STORE{}, g, typename Kernel::SmemLayoutOHalf{},
                             Shape<Int<Kernel::kWgRows>, Int<Kernel::kHeadDimC>>{}, _1{});
      });
    } else {
      return {};
    }
  };

  // V's map. fp8: Vᵀ (d, vt_keys, Hk, B), v_str.row the stride between head-dim rows
  // (core/params.hpp); without keys, a one-block stand-in over Q (never loaded).
  auto make_tma_v = [&]() -> typename Kernel::TmaV {
    if constexpr (Kernel::kFp8) {
      constexpr int kN = Kernel::kBlockN;
      Tensor mVt = no_keys
          ? make_tensor(make_gmem_ptr(static_cast<Element const*>(p.q)),
                        make_layout(make_shape(int32_t(p.head_dim), int32_t(kN), 1, 1),
                                    make_stride(int64_t(kN), _1{}, int64_t(p.head_dim) * kN,
                                                int64_t(p.head_dim) * kN)))
          : make_tensor(make_gmem_ptr(static_cast<Element const*>(p.v)),
                        make_layout(Kernel::vt_shape(p),
                                    make_stride(p.v_str.row, _1{}, p.v_str.head, p.v_str.batch)));
      return memo_tma(mVt, [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutVtFp8{}),
                             Shape<Int<Kernel::kHeadDimC>, Int<Kernel::kBlockN>>{}, _1{});
      });
    } else {
      return memo_tma(kv_tensor(p.v, p.v_str), [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                             Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{});
      });
    }
  };

  // Persistent grid (Kernel::kCtasPerSm CTAs per SM, Kernel::Scheduler walks the tiles) for the
  // batch form; varlen keeps one CTA per (query block, head, sequence) with the longest
  // sequence's blocks.
  const int64_t rows_per_tile = Kernel::kBlockM >> pack_shift;  // query positions per tile
  const int64_t m_blocks = (p.seqlen_q + rows_per_tile - 1) / rows_per_tile;
  const int64_t tiles = m_blocks * tile_heads * p.batch;
  int sms = Kernel::kPersistent && !p.varlen && tiles <= INT32_MAX - 4096
                ? Kernel::kCtasPerSm * sched::sm_count(p.device_id)
                : 0;
  if (sms > 0 && sm90_fwd_max_ctas() > 0) sms = std::min(sms, sm90_fwd_max_ctas());
  const bool persistent = sms > 0;
  // Causal / right-bounded windows: the last query blocks see the most keys (bottom-right
  // alignment), so they are scheduled first. A left-only window is heaviest at the top: keep order.
  const bool reverse_m = Kernel::kMaskedC && p.window_right >= 0;
  const int64_t kv_bytes = 2 * p.seqlen_k * p.head_dim * int64_t(sizeof(Element));
  auto kernel = sm90_fwd_kernel<Kernel>;
  cudaError_t e = set_max_dynamic_smem(kernel, int(Kernel::kSmemBytes), p.device_id);
  if (e != cudaSuccess) return cuda_call_failed(e, "sm90 forward: cudaFuncSetAttribute(max dynamic shared memory)");
  // Clusters of two (Kernel::kCluster): pairs of query blocks of one (batch, head), so an even
  // number of them; the walk is then over pairs and clusters.
  int clusters = 0;
  if constexpr (Kernel::kCluster) {
    if (persistent && pack_shift == 0 && m_blocks % 2 == 0 && sms >= 2 && sm90_fwd_cluster_env()) {
      clusters = int(std::min<int64_t>({sm90_fwd_max_clusters<Kernel>(p.device_id), sms / 2, tiles / 2}));
    }
  }

  Params params{
      memo_tma(mQ, [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, typename Kernel::SmemLayoutQ{},
                             Shape<Int<Kernel::kBlockM>, Int<Kernel::kHeadDimC>>{}, _1{});
      }),
      memo_tma(kv_tensor(p.k, p.k_str), [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                             Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{});
      }),
      make_tma_v(),
      make_tma_o(),
      shape_q,
      shape_k,
      p,
      (p.softcap > 0.f ? p.softcap : p.scale) * core::kLog2e,
      p.softcap > 0.f ? p.scale / p.softcap : 0.f,
      Kernel::Scheduler::make_params(int(clusters > 0 ? m_blocks / 2 : m_blocks), tile_heads, p.batch,
                                     pack_shift > 0 ? 1 : group,
                                     kv_bytes, reverse_m, persistent,
                                     reverse_m ? sm90_fwd_causal_l2_budget_bytes()
                                               : sm90_fwd_l2_budget_bytes(p.head_dim, kv_bytes)),
      tma_store_o,
      pack_shift,
      q_packed,
      FA_SM90_FWD_EARLY_RESCALE == 2 && sm90_fwd_early_rescale_env(),
      Kernel::kOStoreRounds > 0 &&
          wide_store_ok(p.o, p.o_str, sizeof(Out), 4 << Kernel::kOStoreRounds),
      {},
      {},
  };
  if constexpr (Kernel::kCluster) {
    if (clusters > 0) {
      auto make_mc = [&](const void* ptr, const core::Strides& s) {
        return memo_tma(kv_tensor(ptr, s), [](const auto& g) {
          return make_tma_copy(SM90_TMA_LOAD_MULTICAST{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                               Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _2{});
        });
      };
      params.tma_k_mc = make_mc(p.k, p.k_str);
      params.tma_v_mc = make_mc(p.v, p.v_str);
    }
  }

  if (!persistent && p.batch > 65535)
    return core::unsupported("the sm90 forward supports at most 65535 sequences");
  // Clusters: the walk is over clusters (set_grid's unit), two CTAs each.
  const dim3 grid = clusters > 0  ? dim3(unsigned(2 * clusters))
                    : persistent ? dim3(unsigned(std::min<int64_t>(tiles, sms)))
                                 : dim3(unsigned(m_blocks), unsigned(tile_heads), unsigned(p.batch));
  Kernel::Scheduler::set_grid(params.sched, clusters > 0 ? clusters : int(grid.x),
                              sm90_fwd_section_rotate_env(), sm90_fwd_causal_section_rounds());
  params.sched.cluster_shift = clusters > 0 ? 1 : 0;
  params.pingpong = sm90_fwd_pingpong_env();
#if FA_SM90_FWD_TIMELINE
  // With FA_SM90_FWD_TIMELINE_OUT set, a persistent launch's stamps go to that file after it has
  // run: int64 CTAs, rounds, warpgroups, stamps, then the stamps (CTA-major).
  const int64_t tl_ctas = persistent ? int64_t(grid.x) : 0;
  TimelineDump timeline("FA_SM90_FWD_TIMELINE_OUT",
                        {tl_ctas, params.sched.rounds, Kernel::kConsumerWGs, int64_t(FwdStamp::kCount)},
                        tl_ctas * params.sched.rounds * Kernel::kConsumerWGs * int64_t(FwdStamp::kCount), stream);
  params.timeline = timeline.buf;
#endif
  e = launch_ex(LaunchConfig(grid, dim3(Kernel::kThreads), Kernel::kSmemBytes, stream, false, clusters > 0 ? 2 : 1),
                kernel, params);
  if (e != cudaSuccess) return cuda_call_failed(e, "sm90 forward kernel launch");
  return check_launch("sm90 forward kernel launch");
}

// One kernel variant, launched. The default instances (src/cuda/instances/sm90_fwd_*.cu) use every
// feature; the ablation variants are explicitly instantiated for bf16 d128 only, in
// src/cuda/sm90/fwd_ablation_*.cu, so the instance files stay at one kernel each (compile budget).
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap, unsigned kFeatures>
core::Status launch_fwd_variant(const core::AttnParams& p, cudaStream_t stream) {
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap, kFeatures>, Element>(p, stream);
}
// (name for FA_SM90_FWD_ABLATE, features). Each runs as bf16 d128, unmasked and masked+softcap.
// A build with -DFA_BUILD_ABLATIONS=OFF (FA_NO_ABLATIONS) has none: the switch is then ignored.
#if defined(FA_NO_ABLATIONS)
#define FA_SM90_FWD_ABLATIONS(X)
#else
#define FA_SM90_FWD_ABLATIONS(X)                                                           \
  X(no_pingpong, fwd_feature::kAll & ~fwd_feature::kPingPong)                              \
  X(no_overlap, fwd_feature::kAll & ~fwd_feature::kIntraWgOverlap)                         \
  X(plain, fwd_feature::kAll & ~(fwd_feature::kPingPong | fwd_feature::kIntraWgOverlap))   \
  X(no_persistent, fwd_feature::kAll & ~fwd_feature::kPersistent)                          \
  X(no_tma_store, fwd_feature::kAll & ~fwd_feature::kTmaStore)                             \
  X(no_tma_load, fwd_feature::kAll & ~fwd_feature::kTmaLoad)                               \
  X(no_ws, fwd_feature::kAll & ~fwd_feature::kWarpSpecialised)
#endif
#define FA_SM90_FWD_EXTERN(NAME, F)                                                                   \
  extern template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, false, false, (F)>(      \
      const core::AttnParams&, cudaStream_t);                                                         \
  extern template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, true, true, (F)>(        \
      const core::AttnParams&, cudaStream_t);
FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_EXTERN)
#undef FA_SM90_FWD_EXTERN

// Ablations: FA_SM90_FWD_ABLATE = one of the names above (read once per process, as each ablation
// runs in its own; honoured for bf16 d128, other instances ignore it). Returns the feature set,
// or kAll when unset / unknown.
inline unsigned sm90_fwd_ablation() {
  static const unsigned features = [] {
    const char* v = std::getenv("FA_SM90_FWD_ABLATE");
    if (!v || !*v) return unsigned(fwd_feature::kAll);
#define FA_SM90_FWD_MATCH(NAME, F) \
  if (std::strcmp(v, #NAME) == 0) return unsigned(F);
    FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_MATCH)
#undef FA_SM90_FWD_MATCH
    return unsigned(fwd_feature::kAll);
  }();
  return features;
}

// The short-range tiles (FwdTile<hd, masked, true>, fwd_tile_config.hpp): the masked wide-key
// tiles of d192 and d256 (128 keys × 1 stage without the intra-warpgroup overlap) and the unmasked
// short-range tiles (d256: 128 × 1 without the overlap or 64 × 2 with it,
// FA_SM90_FWD_D256_SHORT_BLOCK_N; d192: 128 × 1, the overlap by FA_SM90_FWD_D192_SHORT_OVERLAP),
// each compiled in its companion units sm90_fwd_<dtype>_hd<hd>_mask_softcap_wide.cu /
// _hd<hd>_short.cu (fwd_short_tiles.cuh; one kernel per unit). Declared for every pair: a
// declaration that no call names (a tile built with 0) costs nothing.
template <int kHeadDim, bool kMasked>
constexpr unsigned kShortTileFeatures =
    (FA_SM90_FWD_SHORT_TILE_OVERLAP(kHeadDim, kMasked) ? fwd_feature::kAll
                                                       : fwd_feature::kAll & ~fwd_feature::kIntraWgOverlap) |
    fwd_feature::kWideKeys;
#define FA_SM90_FWD_SHORT_TILE_EXTERN(E, HD, M)                                                   \
  extern template core::Status launch_fwd_variant<E, HD, M, M, kShortTileFeatures<HD, M>>(        \
      const core::AttnParams&, cudaStream_t);
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::bfloat16_t, 192, false)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::half_t, 192, false)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::bfloat16_t, 192, true)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::half_t, 192, true)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::bfloat16_t, 256, false)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::half_t, 256, false)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::bfloat16_t, 256, true)
FA_SM90_FWD_SHORT_TILE_EXTERN(cutlass::half_t, 256, true)
#undef FA_SM90_FWD_SHORT_TILE_EXTERN

// Whether a call takes (hd, masked)'s short-range tile: the rule of fwd_route.hpp with its max_n
// from the environment (read once; 0 = never, so one build measures both tiles):
//   FA_SM90_FWD_D256_WIDE_MAX_N  (masked d256, default 2048: the session-39 crossover)
//   FA_SM90_FWD_D256_SHORT_MAX_N (unmasked d256, default 512: session 42)
//   FA_SM90_FWD_D192_WIDE_MAX_N  (masked d192, default 512: session 43)
//   FA_SM90_FWD_D192_SHORT_MAX_N (unmasked d192 where FA_SM90_FWD_D192_SHORT=1 builds it, default 1024)
template <int kHeadDim, bool kMasked>
inline bool short_tile_call(const core::AttnParams& p) {
  static_assert(kHeadDim == 192 || kHeadDim == 256, "head dims with short-range tiles");
  static const int64_t max_n =
      kHeadDim == 256 ? (kMasked ? env_int("FA_SM90_FWD_D256_WIDE_MAX_N", 2048)
                                 : env_int("FA_SM90_FWD_D256_SHORT_MAX_N", 512))
                      : (kMasked ? env_int("FA_SM90_FWD_D192_WIDE_MAX_N", 512)
                                 : env_int("FA_SM90_FWD_D192_SHORT_MAX_N", 1024));
  return takes_short_tile(p, FwdTile<kHeadDim, kMasked, true>::kBlockM, max_n);
}

}  // namespace fa::cuda::sm90

namespace fa::cuda {

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_fwd(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  using namespace sm90;
  if (p.seqlen_q == 0) return core::Status::success();
  if constexpr (kHeadDim == 128 && std::is_same_v<Element, cutlass::bfloat16_t> && kMasked == kSoftcap) {
    const unsigned features = sm90_fwd_ablation();
#define FA_SM90_FWD_CASE(NAME, F) \
  if (features == (F)) return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, (F)>(p, stream);
    FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_CASE)
#undef FA_SM90_FWD_CASE
  }
  // The short-range tiles are the companions of the two instance variants, (masked, softcap) =
  // (false, false) and (true, true) (scripts/gen_instances.py FULL).
  if constexpr ((kHeadDim == 192 || kHeadDim == 256) && kMasked == kSoftcap &&
                FA_SM90_FWD_SHORT_TILE_BUILT(kHeadDim, kMasked)) {
    if (short_tile_call<kHeadDim, kMasked>(p))
      return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, kShortTileFeatures<kHeadDim, kMasked>>(p, stream);
  }
  // FA_SM90_FWD_D256_OVERLAP=0 / FA_SM90_FWD_D256_MASKED_OVERLAP=0 (fwd_tile_config.hpp): the
  // d256 instance without the intra-warpgroup overlap, whose S_{j+1} beside P_j does not fit
  // 128-key blocks' registers.
  constexpr bool kD256Overlap = kMasked ? FA_SM90_FWD_D256_MASKED_OVERLAP : FA_SM90_FWD_D256_OVERLAP;
  constexpr unsigned kFeatures = kHeadDim == 256 && !kD256Overlap
                                     ? fwd_feature::kAll & ~fwd_feature::kIntraWgOverlap
                                     : fwd_feature::kAll;
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap, kFeatures>, Element>(p, stream);
}

// The FP8 forward (fa::cuda::fp8_attention): p is the kernel's view of the quantised tensors
// (core/params.hpp, "p8"); OutElement is O's type. The registry's fp8 family instantiates this
// with kSoftcap = false (scripts/instances/sm90_fwd_fp8.py).
template <typename OutElement, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_fwd_fp8(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  static_assert(!kSoftcap, "the fp8 forward has no softcap");
  using namespace sm90;
  if (p.seqlen_q == 0) return core::Status::success();
  using E4M3 = cutlass::float_e4m3_t;
  return launch_fwd<FwdKernel<E4M3, kHeadDim, kMasked, false, fwd_feature::kAll, OutElement>, E4M3>(p, stream);
}

}  // namespace fa::cuda
