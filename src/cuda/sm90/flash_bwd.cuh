// Host launcher of the sm90a FlashAttention-3 backward (family "bwd", arch sm90, algo FA3):
//   1. bwd_preprocess   D = rowsum(dO * O), LSE*log2e, dQ accumulator and turn counters zeroed
//                       (not the accumulator where the first adder stores, FA_SM90_BWD_DQ_STORE:
//                       d <= 128, dq_store_first_enabled; see bwd_workspace.hpp)
//   2. bwd_main         dK, dV (written directly) and dQ (fp32, into the workspace); see
//                       flash_bwd_kernel.cuh
//   3. bwd_convert_dq   dQ = scale * dq_acc in the output dtype (not launched when the main
//                       kernel converts each block itself: FA_SM90_BWD_FUSED_CONVERT=1, d <= 128,
//                       short N; see bwd_workspace.hpp). d <= 128 with PDL: bwd_convert_dq_follow
//                       instead, which converts a (sequence, KV head) as soon as its key blocks
//                       are done, during the main kernel's last wave (FA_SM90_BWD_CONVERT_FOLLOW)
// FA_SM90_BWD_PDL (build macro or environment; default 1, 0 = plain launches) launches 2 and 3 as
// programmatic dependents of the kernel before them (launch_ex with PDL), so each one's launch and
// prologue overlap that kernel's tail.
// run_sm90_bwd picks the configuration (an ablation variant when FA_SM90_BWD_ABLATE is set; with
// FA_SM90_BWD_D128_NC_BLOCK_M=80, the 80-query tile for d128 calls without mask or softcap).
// The TMA descriptors for Q, dO, K, V are built here (make_tma_copy, through the per-thread memo
// of common/tma_memo.hpp) and passed to the kernel as __grid_constant__ parameters.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/common/env.hpp"
#include "cuda/common/launch_ex.hpp"
#include "cuda/common/tma_memo.hpp"
#include "cuda/common/timeline_dump.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm90/bwd_prepost.cuh"
#include "cuda/sm90/bwd_workspace.hpp"
#include "cuda/sm90/flash_bwd_kernel.cuh"
#include "cuda/scheduler/tile_scheduler.hpp"

namespace fa::cuda {

namespace sm90_bwd {

// TMA needs 16-byte aligned base addresses and strides; the epilogue's paired stores need 4-byte
// alignment. A size-1 dimension's stride is never used, so it is replaced by a harmless one.
inline bool tma_compatible(const void* ptr, const core::Strides& s) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && s.row % 8 == 0 && s.head % 8 == 0 &&
         s.batch % 8 == 0;
}

inline core::Strides sanitized(core::Strides s, int64_t rows, int heads, int batch, bool varlen) {
  if (heads == 1) s.head = s.row * rows;
  if (batch == 1 || varlen) s.batch = s.head * heads;
  if (rows == 1) s.row = 8;
  return s;
}

template <class Cfg>
auto make_tma(const void* ptr, const core::Strides& s, int rows, int heads, int batch) {
  using T = typename Cfg::T;
  auto g = make_tensor(make_gmem_ptr(static_cast<T const*>(ptr)),
                       make_shape(int32_t(rows), int32_t(Cfg::kHeadDim), int32_t(heads), int32_t(batch)),
                       make_stride(int64_t(s.row), _1{}, int64_t(s.head), int64_t(s.batch)));
  return g;
}

// Run-time knobs of the grouped CTA order (BwdConfig::kGroupedOrder), read once per process:
//   FA_SM90_BWD_CTA_MIN_NBLOCKS  group only with at least this many key blocks (default: the
//                                build's FA_SM90_BWD_CTA_ORDER_MIN_NBLOCKS; 0 = always)
//   FA_SM90_BWD_CTA_WAVES        a group's target size in waves of CTAs (default: cta_waves)
// Unset, malformed or negative values keep the default. They only choose among orders the
// kernel supports (cta_coord); the set of CTAs and each CTA's work are the same in all of them.
struct CtaOrderKnobs {
  int min_nblocks;
  int waves;  // FA_SM90_BWD_CTA_WAVES, or -1 (unset): cta_waves decides per call
};


// Default group size in waves: 1 up to 32 key blocks per sequence, 2 above. Why: the group is
// rounded up to a divisor of the pair count, which at few key blocks can double it (d256 causal
// N1k, 128 pairs x 16 blocks: 2 waves ask for G >= 17 and get 32, ~3.9 waves of CTAs; 1 wave
// gets 16). H200 session 7 round 2, d256 causal ÷ cuDNN at N 512/1k/2k (bf16): waves 2 1.01 /
// 0.94 / 1.01, waves 1 1.01 / 1.00 / 1.02, waves 4 1.00 / 0.74 / 0.94. Above 32 blocks (N >= 4k
// at d192/d256) the session-4 value 2 stays: waves 1 was not timed there.
inline int cta_waves(int n_blocks, int env_waves) {
  if (env_waves >= 0) return std::max(1, env_waves);
  return n_blocks <= 32 ? 1 : 2;
}

inline CtaOrderKnobs cta_order_knobs(int default_min_nblocks) {
  static const int min_nblocks = env_int("FA_SM90_BWD_CTA_MIN_NBLOCKS", -1);
  static const int waves = env_int("FA_SM90_BWD_CTA_WAVES", -1);
  return {min_nblocks >= 0 ? min_nblocks : default_min_nblocks, waves};
}

// Largest per-CTA step count (query heads of the group x query blocks) that takes the fused dQ
// conversion: kFuseMaxSteps (the smem bit mask's size), or FA_SM90_BWD_FUSE=N (0: never) below it.
inline int fuse_max_steps() {
  static const int n = std::min(env_int("FA_SM90_BWD_FUSE", kFuseMaxSteps), kFuseMaxSteps);
  return n;
}

// Whether the first adder stores each dQ block (FA_SM90_BWD_DQ_STORE, bwd_workspace.hpp) in a
// call with n_blocks key blocks per sequence: on, and n_blocks <= FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS
// (why a limit: bwd_workspace.hpp), lifted with the rotated query order (rotated): every call
// (measured: bwd_workspace.hpp). The build's defaults, or the environment
// variables of those names (DQ_STORE 0 / 1; MAX_NBLOCKS, which then holds for every call: 1048576
// = always). The deterministic mode takes it at every length: its turns already make each adder
// wait for the one before, and turn 0 is the store, so there is no extra wait to limit
// (session 16: the 32 us zeroing pass was 1.2% of a deterministic d128 N4k call).
inline bool dq_store_first_enabled(int n_blocks, bool rotated, bool deterministic) {
  static const bool on = env_int("FA_SM90_BWD_DQ_STORE", FA_SM90_BWD_DQ_STORE) != 0;
  static const int env_max = env_int("FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS", -1);
  if (!on) return false;
  if (env_max >= 0) return n_blocks <= env_max;
  if (deterministic || rotated) return true;
  return n_blocks <= FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS;
}

// Rotated query-block order per key block (BwdParams::rotate_m): FA_SM90_BWD_ROTATE_M, the
// build's default (flash_bwd_kernel.cuh) or the environment variable of that name (0 / 1).
inline bool rotate_m_enabled() {
  static const bool on = env_int("FA_SM90_BWD_ROTATE_M", FA_SM90_BWD_ROTATE_M) != 0;
  return on;
}

// Programmatic dependent launch of the main kernel after bwd_preprocess and of bwd_convert_dq after
// the main kernel (pdl_trigger / pdl_wait, flash_bwd_kernel.cuh). FA_SM90_BWD_PDL (build macro, or
// the environment variable of that name, read once) 0 = plain launches, the previous behaviour.
// Default 1: on the H200 (session 5, round 3) it gained 0.3-1.7% on all 12 short-N shapes timed
// (d64/d128/d256, N 512/1k, causal and not) and was within the spread at N 2k-16k.
#ifndef FA_SM90_BWD_PDL
#define FA_SM90_BWD_PDL 1
#endif
inline bool pdl_enabled() {
  static const bool on = env_int("FA_SM90_BWD_PDL", FA_SM90_BWD_PDL) != 0;
  return on;
}

// The dQ conversion overlapped with the main kernel's last wave (bwd_convert_dq_follow,
// bwd_prepost.cuh; kDqTma configurations, with PDL): FA_SM90_BWD_CONVERT_FOLLOW (build macro, or
// the environment variable of that name, read once) 1 = on, 0 = bwd_convert_dq after the whole
// main grid. Why: the main grid is ~15.5 waves of equal CTAs at every N of the d128 grid (2048
// CTAs on 132 SMs), so in its last wave about half the SMs idle while the conversion (134 MB read,
// 67 MB written at 16k tokens x 2048) waits for the last CTA; most (sequence, KV head) pairs are
// long finished by then. H200, session 12, bf16, on vs off alternated in one build: geomean +0.4%
// (24 shapes, d64/d128) and +0.7% (16 shapes); d128 causal N1k-2k +1..3% in both calls; every
// other shape within the process-to-process spread (d128 non-causal N2k: 513 and 542 TFLOP/s in
// two "off" runs). Cache-streaming hints on its loads and stores measured no better (dropped).
#ifndef FA_SM90_BWD_CONVERT_FOLLOW
#define FA_SM90_BWD_CONVERT_FOLLOW 1
#endif
inline bool convert_follow_enabled() {
  static const bool on = env_int("FA_SM90_BWD_CONVERT_FOLLOW", FA_SM90_BWD_CONVERT_FOLLOW) != 0;
  return on;
}
// CTAs per SM of bwd_convert_dq_follow's grid. FA_SM90_BWD_CONVERT_CTAS_PER_SM (read once) is a
// test hook: 1 gives each CTA many query blocks.
inline int convert_ctas_per_sm() {
  static const int n = std::max(1, env_int("FA_SM90_BWD_CONVERT_CTAS_PER_SM", 4));
  return n;
}

// FA_SM90_BWD_CLUSTER=0 in the environment (read once per process): no clusters at run time.
inline bool bwd_cluster_env() {
  static const bool on = env_int("FA_SM90_BWD_CLUSTER", 1) != 0;
  return on;
}


// The three kernels of one configuration (Cfg: tile, ring depth, dQ accumulation), launched.
template <class Cfg, bool kMasked, bool kSoftcap>
core::Status launch_bwd(const core::AttnParams& p, cudaStream_t stream, void* ws_ptr) {
  using Element = typename Cfg::T;
  constexpr int kHeadDim = Cfg::kHeadDim;

  const bool varlen = p.varlen;
  const int rows_q = int(varlen ? p.total_q : p.seqlen_q);
  const int rows_k = int(varlen ? p.total_k : p.seqlen_k);
  const int batch_g = varlen ? 1 : p.batch;
  const core::Strides q_str = sanitized(p.q_str, rows_q, p.heads_q, batch_g, varlen);
  const core::Strides do_str = sanitized(p.do_str, rows_q, p.heads_q, batch_g, varlen);
  const core::Strides k_str = sanitized(p.k_str, rows_k, p.heads_kv, batch_g, varlen);
  const core::Strides v_str = sanitized(p.v_str, rows_k, p.heads_kv, batch_g, varlen);
  if (!tma_compatible(p.q, q_str) || !tma_compatible(p.dout, do_str) ||
      !tma_compatible(p.k, k_str) || !tma_compatible(p.v, v_str))
    return core::unsupported(
        "the sm90 backward needs 16-byte aligned q/k/v/dout with strides that are multiples of 8 "
        "elements (TMA); use algo=fa2 for this layout");
  auto aligned4 = [](const void* ptr, const core::Strides& s) {
    return reinterpret_cast<uintptr_t>(ptr) % 4 == 0 && s.row % 2 == 0 && s.head % 2 == 0 &&
           s.batch % 2 == 0;
  };
  if (!aligned4(p.dk, p.dk_str) || !aligned4(p.dv, p.dv_str))
    return core::unsupported("the sm90 backward needs 4-byte aligned dk/dv rows; use algo=fa2");

  // The row padding of this tile (Cfg::kSeqRowPad: kRowPad, or kNc80RowPad for 80-row blocks).
  constexpr int kPad = Cfg::kSeqRowPad;
  BwdWorkspace ws = carve_workspace<kPad>(p, ws_ptr);
  // preprocess: kTurnRows rows per CTA over the whole padded row space; convert: one query block.
  const int m_blocks = int((p.seqlen_q + kPad - 1) / kPad);
  const dim3 grid_pre(m_blocks * (kPad / kTurnRows), p.heads_q, p.batch);
  const dim3 grid_rows(int((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM), p.heads_q, p.batch);
  const bool prepost_vec = prepost_vectorized();  // FA_SM90_BWD_PREPOST=scalar: the ablation
  // Fused dQ conversion (kFusedConvert, bwd_workspace.hpp): dQ through the TMA staging buffer
  // and at most kFuseMaxSteps steps per CTA (its per-step bits in smem).
  // FA_SM90_BWD_FUSE (run time, fused builds only): 0 = off (bwd_convert_dq runs), N = only calls
  // of at most N steps per CTA, so one build can A/B it and run the tests both ways.
  // Not with the 80-row tile (its blocks are not at multiples of 64 rows, which the preprocess's
  // arrival counts assume).
  FuseInfo fuse;
  if constexpr (kFusedConvert && Cfg::kDqTma && !Cfg::kDqSwapAB) {
    const int64_t steps = int64_t(p.group_size()) * ((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
    const int max_steps = fuse_max_steps();
    if (max_steps > 0 && steps <= max_steps) fuse = FuseInfo{Cfg::kBlockM, Cfg::kBlockN, kMasked};
  }
  // Only where dQ is added by the dQ warp's bulk copies (the RED paths need a zeroed accumulator).
  const int n_blocks = int((p.seqlen_k + Cfg::kBlockN - 1) / Cfg::kBlockN);
  // Rotated query-block order (rotation_start): only where every key block starts at the same
  // query block (no right bound: non-causal, or a left-only window; a right bound staggers the
  // key blocks' ranges already), never in the deterministic mode.
  const bool rotated = rotate_m_enabled() && !p.deterministic && (!kMasked || p.window_right < 0);
  const bool store_first = Cfg::kDqTma && dq_store_first_enabled(n_blocks, rotated, p.deterministic);
  // Tail split (bwd_workspace.hpp): pieces for the key blocks of the grid's partial last wave.
  // Not with clusters (pairs walk the same query blocks) nor the fused conversion (per-step bits).
  // The slots are zeroed before the preprocess, which the main kernel follows (PDL).
  int64_t split_tiles = 0;
  if constexpr (Cfg::kBlockN == kTailBlockN && Cfg::kDqTma) {
    // tail_split_reserved: eligibility and the partial wave of this grid (its tiles are ours).
    const int64_t tail = tail_split_reserved(p);
    const bool cluster_possible = Cfg::kClusterable && bwd_cluster_env() && n_blocks % 2 == 0;
    const int64_t tiles = int64_t(n_blocks) * p.heads_kv * p.batch;
    if (tail > 0 && !cluster_possible && fuse.block_m == 0 && m_blocks > 0 && tiles <= INT32_MAX / 8) {
      // Pieces split a tile's query blocks (in every query head of the group): at most one each.
      const int q_blocks = int((p.seqlen_q + Cfg::kBlockM - 1) / Cfg::kBlockM);
      const int sms = sched::sm_count(p.device_id);
      const int ways = std::min(tail_split_ways(tiles, sms, q_blocks * p.group_size()), q_blocks);
      if (ways > 1) {
        ws.split_first = int(tiles - tail);
        ws.split_ways = ways;
        split_tiles = tail;
        const cudaError_t e = cudaMemsetAsync(ws.dkv_part, 0, size_t(tail_split_bytes(p)), stream);
        if (e != cudaSuccess) return cuda_call_failed(e, "sm90 backward: zeroing the tail split's slots");
      }
    }
  }
  if (m_blocks > 0) {
    if (prepost_vec)
      bwd_preprocess<Element, kHeadDim, true, kPad><<<grid_pre, kPrepostThreads, 0, stream>>>(p, ws, fuse, !store_first);
    else
      bwd_preprocess<Element, kHeadDim, false, kPad><<<grid_pre, kPrepostThreads, 0, stream>>>(p, ws, fuse, !store_first);
  }
  FA_RETURN_IF_ERROR(check_launch("sm90 backward preprocess"));

  const bool pdl = pdl_enabled();
  bool main_launched = false;
  bool convert_follows = false;  // BwdParams::convert_follows of the launched main kernel
  if (n_blocks > 0 && m_blocks > 0) {
    BwdParams<Cfg> prm;
    prm.p = p;
    prm.ws = ws;
    // Q and dO share one call site (same box and layout), as do the multicast pair below.
    auto load_q = [](const auto& g) {
      return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Cfg::SmemLayoutQ{}),
                           Shape<Int<Cfg::kBlockM>, Int<kHeadDim>>{}, _1{});
    };
    prm.tma_q = memo_tma(make_tma<Cfg>(p.q, q_str, rows_q, p.heads_q, batch_g), load_q);
    prm.tma_do = memo_tma(make_tma<Cfg>(p.dout, do_str, rows_q, p.heads_q, batch_g), load_q);
    prm.tma_k = memo_tma(make_tma<Cfg>(p.k, k_str, rows_k, p.heads_kv, batch_g), [](const auto& g) {
      return make_tma_copy(SM90_TMA_LOAD{}, g, typename Cfg::SmemLayoutK{}, Shape<Int<Cfg::kBlockN>, Int<kHeadDim>>{},
                           _1{});
    });
    prm.tma_v = memo_tma(make_tma<Cfg>(p.v, v_str, rows_k, p.heads_kv, batch_g), [](const auto& g) {
      return make_tma_copy(SM90_TMA_LOAD{}, g, typename Cfg::SmemLayoutV{}, Shape<Int<Cfg::kBlockN>, Int<kHeadDim>>{},
                           _1{});
    });
    prm.scale_log2 = p.scale * core::kLog2e;
    prm.cap_inv = p.softcap > 0.f ? p.scale / p.softcap : 0.f;
    prm.cap_log2 = p.softcap * core::kLog2e;
    prm.fused_convert = fuse.block_m > 0 ? 1 : 0;
    prm.convert_follows = Cfg::kDqTma && pdl && prepost_vec && fuse.block_m == 0 && convert_follow_enabled() ? 1 : 0;
    prm.dq_store_first = store_first ? 1 : 0;
    // Quad-transposed dK/dV stores (Cfg::kEpiStoreRounds): every row start aligned to the store.
    if constexpr (Cfg::kEpiStoreRounds > 0) {
      constexpr int kBytes = 4 << Cfg::kEpiStoreRounds;
      prm.dkv_store_wide = wide_store_ok(p.dk, p.dk_str, sizeof(Element), kBytes) &&
                                   wide_store_ok(p.dv, p.dv_str, sizeof(Element), kBytes)
                               ? 1
                               : 0;
    }
    prm.rotate_m = rotated ? 1 : 0;
    // Grouped CTA order (cta_coord): causal / right-bounded masks give the key blocks unequal
    // work, so G pairs' blocks are interleaved longest first, a group being >= ~1-2 waves of CTAs.
    // G divides the pair count: a smaller last group would start its longest CTAs late again
    // (a list-scheduling model of the grid: 0.93-0.95 -> 0.99 busy at causal N <= 4096, d256).
    // No divisor close to the target: the plain order. Fewer pairs than the target: one group.
    // Only with >= min_nblocks key blocks (BwdConfig::kGroupedMinNBlocks: why); a group's target
    // size is cta_waves waves of CTAs.
    if constexpr (Cfg::kGroupedOrder) {
      const int64_t pairs = int64_t(p.heads_kv) * p.batch;  // (KV head, sequence): gridDim.y * z
      const CtaOrderKnobs knobs = cta_order_knobs(Cfg::kGroupedMinNBlocks);
      if (kMasked && p.window_right >= 0 && !p.deterministic && int64_t(n_blocks) * pairs <= INT32_MAX &&
          n_blocks >= knobs.min_nblocks) {
        const int sms = sched::sm_count(p.device_id);
        const int64_t waves = cta_waves(n_blocks, knobs.waves);
        const int64_t target = std::max<int64_t>(1, (waves * sms + n_blocks - 1) / n_blocks);
        if (sms > 0 && target >= pairs && pairs > 1) {
          prm.cta_group = int(pairs);  // one group: the whole grid longest first
        } else if (sms > 0 && target > 1) {
          for (int64_t g = target; g <= std::min(pairs, 4 * target); ++g)
            if (pairs % g == 0) {
              prm.cta_group = int(g);
              break;
            }
        }
      }
    }

    // Clusters of two key blocks (Cfg::kClusterable): both walk the same query blocks, i.e. no
    // mask, and in the same order (not deterministic, whose turns order the key blocks); the
    // grid's key blocks pair up (an even count), and the batch form (varlen grids have CTAs
    // without work, which would leave a peer waiting).
    if constexpr (Cfg::kClusterable) {
      if (bwd_cluster_env() && !p.varlen && !p.deterministic && p.window_left < 0 && p.window_right < 0 &&
          n_blocks % 2 == 0 && prm.cta_group == 0 && split_tiles == 0) {
        prm.cluster = 1;
        auto load_q_mc = [](const auto& g) {
          return make_tma_copy(SM90_TMA_LOAD_MULTICAST{}, g, take<0, 2>(typename Cfg::SmemLayoutQ{}),
                               Shape<Int<Cfg::kBlockM>, Int<kHeadDim>>{}, _2{});
        };
        prm.tma_q_mc = memo_tma(make_tma<Cfg>(p.q, q_str, rows_q, p.heads_q, batch_g), load_q_mc);
        prm.tma_do_mc = memo_tma(make_tma<Cfg>(p.dout, do_str, rows_q, p.heads_q, batch_g), load_q_mc);
      }
    }
#if FA_SM90_BWD_TIMELINE
    // Diagnostic builds (flash_bwd_kernel.cuh, bwd_stamp): with FA_SM90_BWD_TIMELINE_OUT set, the
    // main launch's per-CTA stamps go to that file after it has run: int64 CTA count, then
    // Stamp::kCount uint64 per CTA.
    const int64_t tl_ctas = split_tiles > 0 ? ws.split_first + split_tiles * ws.split_ways
                                            : int64_t(n_blocks) * p.heads_kv * p.batch;
    TimelineDump timeline("FA_SM90_BWD_TIMELINE_OUT", {tl_ctas}, tl_ctas * int64_t(Stamp::kCount), stream);
    prm.timeline = timeline.buf;
#endif
    auto kernel = bwd_main<Cfg, kMasked, kSoftcap>;
    const int smem = int(sizeof(typename Cfg::SharedStorage));
    cudaError_t e = set_max_dynamic_smem(kernel, smem, p.device_id);
    if (e != cudaSuccess)
      return cuda_call_failed(e, "sm90 backward: cudaFuncSetAttribute(max dynamic shared memory)");
    // Split: a 1-D grid, the whole tiles in the 3-D grid's order, then split_ways pieces per tail tile.
    const dim3 grid = split_tiles > 0 ? dim3(unsigned(ws.split_first + split_tiles * ws.split_ways))
                                      : dim3(n_blocks, p.heads_kv, p.batch);
    e = launch_ex(LaunchConfig(grid, dim3(Cfg::kThreads), size_t(smem), stream, pdl, prm.cluster ? 2 : 1),
                  kernel, prm);
    if (e != cudaSuccess) return cuda_call_failed(e, "sm90 backward main (launch)");
    FA_RETURN_IF_ERROR(check_launch("sm90 backward main"));
    main_launched = true;
    convert_follows = prm.convert_follows != 0;
  }

  if (m_blocks > 0 && fuse.block_m == 0) {
    // A programmatic dependent only of a main kernel launched just before it (without one, the
    // previous kernel is the preprocess: pdl_wait would order that too, but nothing overlaps).
    const bool pdl_cvt = pdl && main_launched;
    auto launch_convert = [&]() -> cudaError_t {
      if constexpr (Cfg::kDqTma) {  // the follow kernel exists only where dQ goes through the dQ warp
        if (convert_follows) {
          const int64_t tiles = int64_t(grid_rows.x) * grid_rows.y * grid_rows.z;
          const int64_t ctas =
              std::min<int64_t>(tiles, int64_t(sched::sm_count(p.device_id)) * convert_ctas_per_sm());
          return launch_ex(LaunchConfig(dim3(unsigned(std::max<int64_t>(ctas, 1))), dim3(Cfg::kConsumerThreads),
                                        0, stream, true),
                           bwd_convert_dq_follow<Cfg>, p, ws, store_first, int(grid_rows.x));
        }
      }
      auto cvt = prepost_vec ? bwd_convert_dq<Cfg, true> : bwd_convert_dq<Cfg, false>;
      return launch_ex(LaunchConfig(grid_rows, dim3(Cfg::kConsumerThreads), 0, stream, pdl_cvt), cvt, p, ws,
                       store_first);
    };
    const cudaError_t e = launch_convert();
    if (e != cudaSuccess) return cuda_call_failed(e, "sm90 backward dq convert (launch)");
  }
  return check_launch("sm90 backward dq convert");
}

// Ablation variants (bf16 d128, masked, no softcap), each explicitly instantiated in its own
// src/cuda/sm90/bwd_ablation_*.cu so the instance files stay one kernel each. Selected per call
// by FA_SM90_BWD_ABLATE:
//   dq_atomic  dQ added with red.global.add.v4 by the consumers instead of the TMA bulk reduce
//   stages2    Q/dO ring of 2 stages instead of 3      stages1  no prefetch at all
//   split_d    the 64-key split-D tile (both WGs share 64 keys, dK/dV/dQ split by head dim)
// and, at bf16 d64 and d128 (masked, no softcap), the element-wise phase as it was before:
//   mask_inline  one P^T loop with the per-element mask test predicated in every tile
//   ds_copy      dS^T stored by the CuTe fragment copy (generic stores) instead of stmatrix
//   prefetch_s   (opt-in, d64) the next step's S^T queued behind this step's dQ product
template <typename E>
using BwdAblDqAtomic = BwdConfig<E, 128, 0, false, false>;
template <typename E>
using BwdAblStages2 = BwdConfig<E, 128, 2, true, false>;
template <typename E>
using BwdAblStages1 = BwdConfig<E, 128, 1, true, false>;
template <typename E>
using BwdAblSplitD = BwdConfig<E, 128, 0, true, true>;
template <typename E, int D>
using BwdAblMaskInline = BwdConfig<E, D, 0, true, false, /*kMaskSplitReq=*/false, true>;
template <typename E, int D>
using BwdAblDsCopy = BwdConfig<E, D, 0, true, false, true, /*kDsStsmReq=*/false>;
template <typename E, int D>
using BwdAblPrefetchS = BwdConfig<E, D, 0, true, false, true, true, /*kPrefetchSReq=*/true>;
#if !defined(FA_NO_ABLATIONS)  // -DFA_BUILD_ABLATIONS=OFF: no variants, FA_SM90_BWD_ABLATE ignored
#define FA_SM90_BWD_ABLATION_EXTERN_D(CFG, D)                                                       \
  extern template core::Status launch_bwd<CFG<cutlass::bfloat16_t, D>, true, false>(const core::AttnParams&, \
                                                                                    cudaStream_t, void*);
FA_SM90_BWD_ABLATION_EXTERN_D(BwdAblMaskInline, 64)
FA_SM90_BWD_ABLATION_EXTERN_D(BwdAblMaskInline, 128)
FA_SM90_BWD_ABLATION_EXTERN_D(BwdAblDsCopy, 64)
FA_SM90_BWD_ABLATION_EXTERN_D(BwdAblDsCopy, 128)
FA_SM90_BWD_ABLATION_EXTERN_D(BwdAblPrefetchS, 64)
#undef FA_SM90_BWD_ABLATION_EXTERN_D
#define FA_SM90_BWD_ABLATION_EXTERN(CFG)                                                         \
  extern template core::Status launch_bwd<CFG<cutlass::bfloat16_t>, true, false>(const core::AttnParams&, \
                                                                                 cudaStream_t, void*);
FA_SM90_BWD_ABLATION_EXTERN(BwdAblDqAtomic)
FA_SM90_BWD_ABLATION_EXTERN(BwdAblStages2)
FA_SM90_BWD_ABLATION_EXTERN(BwdAblStages1)
FA_SM90_BWD_ABLATION_EXTERN(BwdAblSplitD)
#undef FA_SM90_BWD_ABLATION_EXTERN
#endif

// The 80-query d128 tile (FA_SM90_BWD_D128_NC_BLOCK_M=80, bwd_workspace.hpp; BwdConfig, kDqSwapAB),
// instantiated without a mask (kMasked = false: the mask code folds away; key blocks past k_len
// are still masked) and without softcap, in its own units sm90_bwd_<dtype>_hd128_mask_nc80.cu.
template <typename E>
using BwdNc80 = BwdConfig<E, 128, 0, true, false, true, true, false, /*kBlockMReq=*/80>;
#if FA_SM90_BWD_D128_NC_BLOCK_M == 80
extern template core::Status launch_bwd<BwdNc80<cutlass::bfloat16_t>, false, false>(const core::AttnParams&,
                                                                                   cudaStream_t, void*);
extern template core::Status launch_bwd<BwdNc80<cutlass::half_t>, false, false>(const core::AttnParams&,
                                                                              cudaStream_t, void*);
// Whether a d128 call without softcap takes the 80-row tile: no window (causal is a window) and
// not turned off at run time by FA_SM90_BWD_D128_NC_BLOCK_M=64 in the environment (read once;
// one build A/Bs it). Varlen and the deterministic mode are served (the row padding and the
// turn counters are per tile: bwd_workspace.hpp).
inline bool nc80_enabled(const core::AttnParams& p) {
  static const bool on = env_int("FA_SM90_BWD_D128_NC_BLOCK_M", 80) == 80;
  return on && p.window_left < 0 && p.window_right < 0 && !(p.softcap > 0.f);
}
#endif

// FA_SM90_BWD_ABLATE, read once per process (each ablation runs in its own process).
inline int bwd_ablation() {
  static const int variant = [] {
    const char* v = std::getenv("FA_SM90_BWD_ABLATE");
    if (!v || !*v) return 0;
    const std::string s(v);
    if (s == "dq_atomic") return 1;
    if (s == "stages2") return 2;
    if (s == "stages1") return 3;
    if (s == "split_d") return 4;
    if (s == "mask_inline") return 5;
    if (s == "ds_copy") return 6;
    if (s == "prefetch_s") return 7;
    return 0;
  }();
  return variant;
}

}  // namespace sm90_bwd

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_bwd(const core::AttnParams& p, cudaStream_t stream, void* ws_ptr) {
  using namespace sm90_bwd;
#if !defined(FA_NO_ABLATIONS)
  if constexpr (std::is_same_v<Element, cutlass::bfloat16_t> && kHeadDim == 128 && kMasked && !kSoftcap) {
    switch (bwd_ablation()) {
      case 1: return launch_bwd<BwdAblDqAtomic<Element>, kMasked, kSoftcap>(p, stream, ws_ptr);
      case 2: return launch_bwd<BwdAblStages2<Element>, kMasked, kSoftcap>(p, stream, ws_ptr);
      case 3: return launch_bwd<BwdAblStages1<Element>, kMasked, kSoftcap>(p, stream, ws_ptr);
      case 4: return launch_bwd<BwdAblSplitD<Element>, kMasked, kSoftcap>(p, stream, ws_ptr);
      default: break;
    }
  }
  if constexpr (std::is_same_v<Element, cutlass::bfloat16_t> && (kHeadDim == 64 || kHeadDim == 128) && kMasked &&
                !kSoftcap) {
    switch (bwd_ablation()) {
      case 5: return launch_bwd<BwdAblMaskInline<Element, kHeadDim>, kMasked, kSoftcap>(p, stream, ws_ptr);
      case 6: return launch_bwd<BwdAblDsCopy<Element, kHeadDim>, kMasked, kSoftcap>(p, stream, ws_ptr);
      case 7:
        if constexpr (kHeadDim == 64)
          return launch_bwd<BwdAblPrefetchS<Element, kHeadDim>, kMasked, kSoftcap>(p, stream, ws_ptr);
        break;
      default: break;
    }
  }
#endif
#if FA_SM90_BWD_D128_NC_BLOCK_M == 80
  if constexpr (kHeadDim == 128 && kMasked && !kSoftcap) {
    if (nc80_enabled(p)) return launch_bwd<BwdNc80<Element>, false, false>(p, stream, ws_ptr);
  }
#endif
  // Softcap keeps tanh's derivative per score next to S^T and dP^T: with 128-query steps
  // (FA_SM90_BWD_D64_BLOCK_M=128) ptxas spilled 112 bytes, so softcap stays at 64 queries (the
  // workspace's 128-row padding is a multiple of that).
  if constexpr (kSoftcap && BwdConfig<Element, kHeadDim>::kBlockM == 128)
    return launch_bwd<BwdConfig<Element, kHeadDim, 0, true, false, true, true, false, 64>, kMasked, kSoftcap>(
        p, stream, ws_ptr);
  else
    return launch_bwd<BwdConfig<Element, kHeadDim>, kMasked, kSoftcap>(p, stream, ws_ptr);
}

}  // namespace fa::cuda
