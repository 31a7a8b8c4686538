// FlashAttention-2 forward, sm80 class (mma.sync m16n8k16, cp.async, ldmatrix); runs on sm80-sm90.
//
// One CTA per (query block, query head, batch); the K/V loop runs inside the CTA. Grid x walks the
// query blocks of one head (all of them read the same K/V, which stays in L2), y the query heads
// (GQA groups h = kv_head·group + g are adjacent), z the batch.
//
// Data flow per CTA:
//   Q tile  --cp.async--> smem (once) --ldmatrix--> registers (per k-slice of Q·K^T)
//   K, V    --cp.async--> smem, one buffer each      --ldmatrix(.trans for V)--> registers
//   S = Q·K^T in fp32 registers; online softmax on the fragments (quad shuffles for row max),
//   O rescaled only in warps where some row max grew (warp vote, FragmentSoftmax::update_lazy<0>;
//   exact: the skipped factors are all 1);
//   P converted to fp16/bf16 in registers is the A operand of O += P·V (no smem round trip);
//   O divided by the row sum once at the end, staged through smem (Q's tile) for 16-byte stores.
// Key blocks run from the last to the first, so the partially masked blocks (sequence end, causal
// diagonal) are the first ones. Those take a "boundary" step (predicated K/V row loads,
// per-element mask); every full, fully visible block takes a "lean" step compiled without either.
// Causal calls use an instance without softcap (scripts/instances/sm80_fwd.py), so a causal lean
// step is the same code as a non-causal one.
//
// Synchronisation (a 2-stage interleave of the single K and V buffers):
//   top of step n:  wait(all cp.async); __syncthreads  -> K[n] landed, every warp is done with V[n+1]
//                   issue V[n];        S = Q·K[n]       (V[n] flies during Q·K^T)
//   middle:         wait(all cp.async); __syncthreads  -> V[n] landed, every warp is done with K[n]
//                   issue K[n-1];      softmax, O += P·V[n]  (K[n-1] flies during softmax and P·V)
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <type_traits>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/common/head_dim_mask.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm80/fwd_softmax.cuh"
#include "cuda/sm80/fwd_traits.cuh"

namespace fa::cuda {

namespace sm80 {

#ifndef FA_SM80_FWD_S_PREFETCH
#define FA_SM80_FWD_S_PREFETCH 1  // 0: leave the k-slice load order of Q·K^T to ptxas
#endif
// 1: two loop bodies, a boundary step (predicated K/V loads, per-element mask) and a lean step for
// full, fully visible blocks; 0: one body with a run-time mask branch and predicated loads on every
// block (the register allocator then keeps the row predicates' state live through the whole loop).
#ifndef FA_SM80_FWD_SPLIT_STEPS
#define FA_SM80_FWD_SPLIT_STEPS 1
#endif
// 1: O is rescaled only when a row max grew by more than 2^8 (FragmentSoftmax::update_lazy);
// 0: on every key block (update). Off by default: on the H200 (2026-11-30, 15 repeats of the fa2
// forward suite) the lazy form failed the 2x error rule on O in ~1% of cases (errors 2.3-3x the
// naive baseline's, fp16 and bf16, d32-d256); with 0 none of 10 repeats failed on O.
#ifndef FA_SM80_FWD_LAZY_RESCALE
#define FA_SM80_FWD_LAZY_RESCALE 0
#endif
// 1: lean steps address K/V from one per-thread pointer plus warp-uniform row offsets
// (load_full_block); 0: CuTe's partition of each block (per-row 64-bit offsets held in registers).
// On (with LAZY_RESCALE=0): the exact form of the conditional rescale (update_lazy<0>): O is
// multiplied only in warps where some row's max grew, every row then by its true factor, so P and O
// are those of update() (a skipped block is one whose factors are all exactly 1). Off: update(), the
// rescale inline. The branch matters more for registers than for the FMULs it skips: with the
// rescale inline ptxas interleaves the O FMULs with the P·V MMAs and spills (sm_90a bf16, with
// PIN_ROW_SUM and OPAQUE_ADDR on: d128 84 B off, 16 B on).
// SKIP_UNCHANGED_RESCALE, PIN_ROW_SUM and OPAQUE_ADDR are masks of the head dims they apply to
// (head_dim_bit: d32 1, d64 2, d96 4, d128 8, d192 16, d256 32; 0 = none, 63 = all), because what
// they buy differs by head dim. H200, session 4 (LOG.md), against PyTorch's FA2 in the same run:
// d128 0.99-1.06x with them (0.90-1.02 without: the spills); d64 0.86-0.99 with, 0.99-1.12 without
// (d64 did not spill). d256 with 64-row tiles was measured with them only. Default: d96-d256.
#ifndef FA_SM80_FWD_SKIP_UNCHANGED_RESCALE
#define FA_SM80_FWD_SKIP_UNCHANGED_RESCALE 60
#endif
// On: the row sums of P are complete before P·V starts (FragmentSoftmax pin_sum): otherwise ptxas
// sinks them past P·V and the block's fp32 P stays live beside acc_o (d128: 64 registers).
#ifndef FA_SM80_FWD_PIN_ROW_SUM
#define FA_SM80_FWD_PIN_ROW_SUM 60
#endif
// On: each step rebuilds its per-thread smem/gmem addresses from an opaque copy of tid, so the
// compiler cannot hoist them (one register per swizzled k-slice and per K/V row) out of the loop.
// Costs a few integer instructions per key block. sm_90a bf16 with SKIP_UNCHANGED_RESCALE and
// PIN_ROW_SUM: d128 spills 68 B -> 16 B.
#ifndef FA_SM80_FWD_OPAQUE_ADDR
#define FA_SM80_FWD_OPAQUE_ADDR 60
#endif
#ifndef FA_SM80_FWD_THREAD_BASE_LOADS
#define FA_SM80_FWD_THREAD_BASE_LOADS 1
#endif
// Head-dim mask (as above). On: boundary steps mask with 32-bit block-local bounds (BlockWindow,
// two per-CTA scalars) after the step's second barrier, and the thread's score coordinates (mask,
// LSE rows) are rebuilt where used from an opaque tid; off: mask_scores with the 64-bit diag(i) of
// each of the thread's rows, which the compiler hoists out of the key loop (d128 masked: those were
// the spilled registers), before the barrier. Default d128 only (with BOUNDARY_THREAD_LOADS): the
// head dim that spilled; H200 session 5 round 1, d128 ÷ SDPA-flash causal 1.01-1.09 with both vs
// 0.94-1.02 without (non-causal unchanged, 1.01-1.06).
#ifndef FA_SM80_FWD_MASK_BOUNDS32
#define FA_SM80_FWD_MASK_BOUNDS32 8
#endif
// Head-dim mask. On: boundary steps load K/V like lean steps (load_full_block from the thread's
// first vector, rows past the sequence end zero-filled) instead of load_rows over CuTe's partition,
// and both add the thread's column offset as an unsigned 32-bit value.
#ifndef FA_SM80_FWD_BOUNDARY_THREAD_LOADS
#define FA_SM80_FWD_BOUNDARY_THREAD_LOADS 8
#endif

// Runtime switches for ablations (environment, read once per process):
//   FA_FWD_REVERSE_M=0        launch query blocks in order instead of last-first (causal load balance)
//   FA_FWD_MASK_EVERY_BLOCK=1 apply per-element masking on every key block, not only boundary ones
struct FwdSwitches {
  bool reverse_m = true;
  bool mask_every_block = false;
};

inline FwdSwitches fwd_switches() {
  static const FwdSwitches s = [] {
    FwdSwitches r;
    if (const char* e = std::getenv("FA_FWD_REVERSE_M")) r.reverse_m = std::atoi(e) != 0;
    if (const char* e = std::getenv("FA_FWD_MASK_EVERY_BLOCK")) r.mask_every_block = std::atoi(e) != 0;
    return r;
  }();
  return s;
}


// cp.async of one K or V block whose first row is block_row0. thr_src points at this thread's
// first vector (its row and column offsets already applied); the other vectors of the thread sit a
// compile-time number of rows and columns further (the gmem copy's thread layout), so each address
// is thr_src plus a warp-uniform row offset times the row stride. CuTe's partition of a fresh block
// tensor instead keeps per-thread 64-bit offsets of every row live across the loop, registers the
// d128 step does not have (they were spilled). kRowLimit: only tile rows below row_limit exist (the
// sequence's last block); the others are zero-filled, as load_rows does, so that masked keys hold
// finite scores and P·V multiplies their P = 0 by 0, not by stale data.
template <bool kRowLimit = false, class Dst, class Coord, typename Element>
CUTE_DEVICE void load_full_block(const Element* thr_src, int64_t row_stride, int block_row0, Dst&& dst,
                                 Coord const& coord, int row_limit = 0) {
  const int row_t = get<0>(coord(0, 0, 0)), col_t = get<1>(coord(0, 0, 0));
  CUTE_UNROLL
  for (int m = 0; m < size<1>(dst); ++m) {
    CUTE_UNROLL
    for (int k = 0; k < size<2>(dst); ++k) {
      // Compile-time offsets from the thread's first vector (the identity layout is static).
      const int dr = get<0>(coord(0, m, k)) - row_t, dc = get<1>(coord(0, m, k)) - col_t;
      const bool row_exists = !kRowLimit || get<0>(coord(0, m, k)) < row_limit;
      auto* smem = reinterpret_cast<cute::uint128_t*>(raw_pointer_cast(&dst(0, m, k)));
      if (row_exists) {
        const Element* src = thr_src + int64_t(block_row0 + dr) * row_stride + dc;
        SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(*reinterpret_cast<const cute::uint128_t*>(src), *smem);
      } else {
        *reinterpret_cast<uint4*>(smem) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
  }
}

template <typename Traits, bool kMasked, bool kSoftcap>
__global__ void __launch_bounds__(Traits::kNThreads, 1)
    flash_fwd_kernel(const core::AttnParams p, const FwdSwitches sw) {
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kHeadDim = Traits::kHeadDim;
  constexpr bool kSPrefetch = FA_SM80_FWD_S_PREFETCH != 0;
  constexpr bool kSplitSteps = FA_SM80_FWD_SPLIT_STEPS != 0;
  constexpr bool kLazyRescale = FA_SM80_FWD_LAZY_RESCALE != 0;
  constexpr bool kSkipUnchangedRescale = (FA_SM80_FWD_SKIP_UNCHANGED_RESCALE & head_dim_bit(kHeadDim)) != 0;
  constexpr bool kOpaqueAddr = (FA_SM80_FWD_OPAQUE_ADDR & head_dim_bit(kHeadDim)) != 0;
  constexpr bool kPinSum = (FA_SM80_FWD_PIN_ROW_SUM & head_dim_bit(kHeadDim)) != 0;
  constexpr bool kThreadBaseLoads = FA_SM80_FWD_THREAD_BASE_LOADS != 0;
  constexpr bool kMaskBounds32 = (FA_SM80_FWD_MASK_BOUNDS32 & head_dim_bit(kHeadDim)) != 0;
  constexpr bool kBoundaryThreadLoads = (FA_SM80_FWD_BOUNDARY_THREAD_LOADS & head_dim_bit(kHeadDim)) != 0;

  const int m_block = sw.reverse_m ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int head = blockIdx.y;
  const int batch = blockIdx.z;
  const int tid = threadIdx.x;

  const core::SeqInfo seq = core::seq_info(p, batch);
  const int64_t row0 = int64_t(m_block) * kBlockM;
  if (row0 >= seq.q_len) return;  // varlen: this sequence is shorter than max_seqlen_q
  const int64_t rows_here = cute::min(int64_t(kBlockM), seq.q_len - row0);

  const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1,
                        kMasked ? p.window_right : -1);
  int64_t key_first = 0, key_last = seq.k_len;
  if constexpr (kMasked) mask.key_range(row0, row0 + rows_here, &key_first, &key_last);
  const int n_block_min = int(key_first / kBlockN);
  const int n_block_max = key_last > key_first ? int((key_last + kBlockN - 1) / kBlockN) : n_block_min;

  // ---- global and shared tensors -------------------------------------------------------------
  const int kv_head = head / p.group_size();
  const Element* q_ptr = static_cast<const Element*>(p.q) + p.q_str.offset(batch, seq.q_start + row0, head);
  const Element* k_base = static_cast<const Element*>(p.k) + p.k_str.offset(batch, seq.k_start, kv_head);
  const Element* v_base = static_cast<const Element*>(p.v) + p.v_str.offset(batch, seq.k_start, kv_head);
  Element* o_ptr = static_cast<Element*>(p.o) + p.o_str.offset(batch, seq.q_start + row0, head);
  const int64_t k_row_stride = p.k_str.row, v_row_stride = p.v_str.row;
  const int k_len = int(seq.k_len);  // per-sequence lengths fit int32 (cu_seqlens are int32)

  Tensor gQ = make_tensor(make_gmem_ptr(q_ptr), Shape<Int<kBlockM>, Int<kHeadDim>>{},
                          make_stride(p.q_str.row, _1{}));
  // Key block n of K or V (base, row stride) in global memory.
  auto kv_block = [&](const Element* base, int64_t row_stride, int n) {
    return make_tensor(make_gmem_ptr(base + int64_t(n) * kBlockN * row_stride),
                       Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_stride(row_stride, _1{}));
  };

  extern __shared__ __align__(128) char smem_raw[];
  Tensor sQ = make_tensor(make_smem_ptr(reinterpret_cast<Element*>(smem_raw)), typename Traits::SmemLayoutQ{});
  Tensor sK = make_tensor(sQ.data() + Traits::kSmemQBytes / int(sizeof(Element)), typename Traits::SmemLayoutKV{});
  Tensor sV = make_tensor(sK.data() + Traits::kSmemKVBytes / int(sizeof(Element)), typename Traits::SmemLayoutKV{});
  Tensor sVt = make_tensor(sV.data(), typename Traits::SmemLayoutVt{});

  typename Traits::GmemCopyQKV gmem_copy;
  auto gmem_thr = gmem_copy.get_thread_slice(tid);
  Tensor tQsQ = gmem_thr.partition_D(sQ);
  Tensor tKsK = gmem_thr.partition_D(sK);
  // Tile coordinates of each element a thread copies, for the row predicates.
  Tensor tQcQ = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor tKVcKV = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  // This thread's first K/V vector within a block (lean steps' loads, load_full_block).
  const Element* k_thr = k_base + get<0>(tKVcKV(0, 0, 0)) * k_row_stride + get<1>(tKVcKV(0, 0, 0));
  const Element* v_thr = v_base + get<0>(tKVcKV(0, 0, 0)) * v_row_stride + get<1>(tKVcKV(0, 0, 0));

  typename Traits::TiledMma tiled_mma;
  auto thr_mma = tiled_mma.get_thread_slice(tid);
  Tensor tSrQ = make_fragment_a<Element>(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  Tensor tSrK = make_fragment_b<Element>(tiled_mma, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor acc_o = make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  clear(acc_o);

  // Their per-thread slices are taken in each step (see thread_id there).
  auto smem_copy_q = tiled_copy_a(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_k = tiled_copy_b(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_v = tiled_copy_b(typename Traits::SmemCopyAtomTransposed{}, tiled_mma);
  // P·V runs in head-dim chunks of kPvChunk columns (see the main loop).
  constexpr int kPvChunk = kHeadDim % 64 == 0 ? 64 : kHeadDim;
  constexpr int kPvChunks = kHeadDim / kPvChunk;
  Tensor tOrVt_chunk = make_fragment_b<Element>(tiled_mma, Shape<Int<kPvChunk>, Int<kBlockN>>{});
  // acc_o's n8 tiles grouped per chunk: (frag, MMA_M, (tiles per chunk, chunk)).
  Tensor acc_o_by_chunk = logical_divide(acc_o, Shape<Underscore, Underscore, Int<kPvChunk / 8>>{});

  // (row, col) coordinates of this thread's score elements within the tile.
  Tensor tScS = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor tScS_rc = make_tensor(tScS.data(), acc_rowcol(tScS.layout()));
  Tensor acc_o_rc = make_tensor(acc_o.data(), acc_rowcol(acc_o.layout()));

  constexpr int kRows = decltype(size<0>(acc_o_rc))::value;
  FragmentSoftmax<kRows> softmax;
  const BlockWindow block_window = make_block_window<kBlockM, kBlockN>(mask, row0);
  const ScoreScale score_scale = make_score_scale<kSoftcap>(p.scale, p.softcap);

  // ---- main loop over key blocks, last to first ------------------------------------------------
  // One step = one key block n. kBoundary steps serve the blocks that need per-element masks (the
  // sequence end, the causal diagonal, a window's edges): their K/V row loads are predicated and
  // their scores masked. Every other block is full (all kBlockN keys exist) and fully visible to
  // every row of the tile, so its step has neither predicates nor mask code.
  auto step = [&](int n, auto boundary_tag, bool apply_mask) {
    constexpr bool kBoundary = decltype(boundary_tag)::value;
    // Per-thread addressing, rebuilt where it is used from an opaque copy of tid
    // (FA_SM80_FWD_OPAQUE_ADDR): otherwise the compiler hoists every per-thread address (one per
    // k-slice for the swizzled ldmatrix reads, one per row for the K/V loads) out of the loop and
    // keeps it live across all of it.
    auto thread_id = [&] {
      int t = tid;
      if constexpr (kOpaqueAddr) asm volatile("" : "+r"(t));
      return t;
    };
    // cp.async of block `blk` of K or V (base, row stride) into `dst_tile`.
    auto load_kv = [&](const Element* base, const Element* thr_base, int64_t row_stride, auto& dst_tile,
                       int blk, auto boundary) {
      auto gthr = gmem_copy.get_thread_slice(thread_id());
      Tensor dst = gthr.partition_D(dst_tile);
      Tensor coord = gthr.partition_S(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
      if constexpr (decltype(boundary)::value && kBoundaryThreadLoads) {
        // The column offset is added as an unsigned 32-bit value: as a signed int ptxas widens it
        // once to a 64-bit pair, keeps that pair live across the loop and spills it (d128).
        const Element* thr = base + int64_t(get<0>(coord(0, 0, 0))) * row_stride + uint32_t(get<1>(coord(0, 0, 0)));
        load_full_block<true>(thr, row_stride, blk * kBlockN, dst, coord, k_len - blk * kBlockN);
      } else if constexpr (decltype(boundary)::value) {
        load_rows(gmem_copy, gthr.partition_S(kv_block(base, row_stride, blk)), dst, coord, k_len - blk * kBlockN);
      } else if constexpr (kThreadBaseLoads && kBoundaryThreadLoads) {
        const Element* thr = base + int64_t(get<0>(coord(0, 0, 0))) * row_stride + uint32_t(get<1>(coord(0, 0, 0)));
        load_full_block(thr, row_stride, blk * kBlockN, dst, coord);
      } else if constexpr (kThreadBaseLoads) {
        const Element* thr =
            kOpaqueAddr ? base + get<0>(coord(0, 0, 0)) * row_stride + get<1>(coord(0, 0, 0)) : thr_base;
        load_full_block(thr, row_stride, blk * kBlockN, dst, coord);
      } else {
        copy(gmem_copy, gthr.partition_S(kv_block(base, row_stride, blk)), dst);
      }
    };
    Tensor acc_s = make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kBlockN>>{});
    clear(acc_s);
    cp_async_wait<0>();
    __syncthreads();
    const int col0 = n * kBlockN;
    load_kv(v_base, v_thr, v_row_stride, sV, n, boundary_tag);
    cp_async_fence();

    // FA_SM80_FWD_S_PREFETCH=0 drops the explicit one-slice-ahead ldmatrix of Q·K^T (ptxas
    // hoists loads itself); measured on sm_90a d128: the same spills either way (168 B with the
    // old single loop body, 36 B now), so it stays on.
    {
      auto smem_thr_q_s = smem_copy_q.get_thread_slice(thread_id());
      auto smem_thr_k_s = smem_copy_k.get_thread_slice(thread_id());
      gemm_ss<kSPrefetch>(acc_s, tSrQ, tSrK, smem_thr_q_s.partition_S(sQ), smem_thr_k_s.partition_S(sK),
                          tiled_mma, smem_copy_q, smem_copy_k, smem_thr_q_s, smem_thr_k_s);
    }

    Tensor s_rc = make_tensor(acc_s.data(), acc_rowcol(acc_s.layout()));
    if constexpr (kSoftcap && !kMaskBounds32) {
      if (score_scale.capped) apply_softcap(acc_s, score_scale.tanh_arg);
    }
    // Boundary masking. kMaskBounds32: after the barrier below. Before it, ptxas interleaves the
    // mask's selects with the last Q·K^T MMAs, whose K/Q fragments are still live, and at d128 that
    // peak spilled 4-12 B of scores; after it those fragments are dead (the ALU work no longer
    // overlaps the wait for V, a few dozen instructions on boundary steps only).
    auto apply_boundary_mask = [&] {
      if constexpr (kBoundary) {
        if (apply_mask) {
          if constexpr (kMaskBounds32) {
            auto thr_mma_s = tiled_mma.get_thread_slice(thread_id());
            Tensor cS = thr_mma_s.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
            mask_scores_local<kMasked>(s_rc, make_tensor(cS.data(), acc_rowcol(cS.layout())), block_window,
                                       col0);
          } else {
            mask_scores<kMasked, kBlockN>(s_rc, tScS_rc, mask, row0, col0);
          }
        }
      }
    };
    if constexpr (!kMaskBounds32) apply_boundary_mask();

    cp_async_wait<0>();
    __syncthreads();
    if (n > n_block_min) {
      // Block n-1 is below a full block, so it is full too: only a boundary step predicates.
      load_kv(k_base, k_thr, k_row_stride, sK, n - 1, boundary_tag);
      cp_async_fence();
    }

    if constexpr (kMaskBounds32) {
      // Softcap first: scores are capped before they are masked and compete for the max.
      if constexpr (kSoftcap) {
        if (score_scale.capped) apply_softcap(acc_s, score_scale.tanh_arg);
      }
      apply_boundary_mask();
    }

    if constexpr (kLazyRescale) {
      softmax.template update_lazy<8, kPinSum>(s_rc, acc_o_rc, score_scale.log2);
    } else if constexpr (kSkipUnchangedRescale) {
      softmax.template update_lazy<0, kPinSum>(s_rc, acc_o_rc, score_scale.log2);
    } else {
      softmax.template update<false, kPinSum>(s_rc, acc_o_rc, score_scale.log2);
    }

    Tensor p_frag = convert_fragment<Element>(acc_s);
    Tensor tOrP = make_tensor(p_frag.data(), acc_as_operand_a(p_frag.layout()));
    // O += P·V one head-dim chunk at a time: a k16 slice of V^T across all of d256 is 64
    // registers, per 64-column chunk 16 (d256 spills went from 64 B to 4 B).
    CUTE_UNROLL
    for (int c = 0; c < kPvChunks; ++c) {
      Tensor acc_o_chunk = acc_o_by_chunk(_, _, make_coord(_, c));
      auto smem_thr_v_s = smem_copy_v.get_thread_slice(thread_id());
      if constexpr (kPvChunks == 1) {
        // One chunk is the whole V^T tile: local_tile's algebra would only rebuild sVt (~40 MB of
        // compiler memory at d96, the largest unit; same SASS).
        gemm_rs<false>(acc_o_chunk, tOrP, tOrVt_chunk, smem_thr_v_s.partition_S(sVt), tiled_mma, smem_copy_v,
                       smem_thr_v_s);
      } else {
        Tensor tOsVt_chunk = smem_thr_v_s.partition_S(
            local_tile(sVt, Shape<Int<kPvChunk>, Int<kBlockN>>{}, make_coord(c, 0)));
        gemm_rs<false>(acc_o_chunk, tOrP, tOrVt_chunk, tOsVt_chunk, tiled_mma, smem_copy_v, smem_thr_v_s);
      }
    }
  };

  if (n_block_min < n_block_max) {
    load_rows(gmem_copy, gmem_thr.partition_S(gQ), tQsQ, tQcQ, rows_here);
    load_rows(gmem_copy, gmem_thr.partition_S(kv_block(k_base, k_row_stride, n_block_max - 1)), tKsK, tKVcKV,
              k_len - (n_block_max - 1) * kBlockN);
    cp_async_fence();

    // One loop for every block (the first block's rescale multiplies by exp2(-inf) = 0): peeling
    // it would add a third copy of the step for a saving of one O rescale.
    for (int n = n_block_max - 1; n >= n_block_min; --n) {
      const int col0 = n * kBlockN;
      const bool needs_mask =
          sw.mask_every_block || col0 + kBlockN > k_len ||
          (kMasked && !mask.block_unmasked(row0, row0 + rows_here, col0, col0 + kBlockN));
      if constexpr (kSplitSteps) {
        // Causal with Nq == Nk at 128 x 64 tiles: 2 boundary blocks per query block, the rest
        // (up to 254 at N 16k) take the lean step.
        if (needs_mask) {
          step(n, std::true_type{}, true);
        } else {
          step(n, std::false_type{}, false);
        }
      } else {
        step(n, std::true_type{}, needs_mask);
      }
    }
  }

  // ---- epilogue: normalise, LSE, O via smem ------------------------------------------------------
  float lse[kRows];
  softmax.finalize(acc_o_rc, score_scale.natural, lse);

  // kMaskBounds32: the LSE rows come from a fresh (opaque) tid too; otherwise a lane value derived
  // from the prologue's tid stays live across the key loop (d128 softcap: spilled, 4 B).
  int tid_lse = tid;
  if constexpr (kMaskBounds32) asm volatile("" : "+r"(tid_lse));
  auto thr_mma_lse = tiled_mma.get_thread_slice(tid_lse);
  Tensor cS_lse = thr_mma_lse.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor cS_lse_rc = make_tensor(cS_lse.data(), acc_rowcol(cS_lse.layout()));
  if (p.lse != nullptr && get<1>(cS_lse_rc(0, 0)) == 0) {  // lane 0 of each quad owns its rows' LSE
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) {
      const int64_t i = row0 + get<0>(cS_lse_rc(r, 0));
      if (i < seq.q_len) p.lse[p.lse_offset(batch, head, seq.q_start + i)] = lse[r];
    }
  }

  Tensor o_frag = convert_fragment<Element>(acc_o);
  Tensor sO = make_tensor(sQ.data(), typename Traits::SmemLayoutO{});
  // Every warp must be done reading Q (and no cp.async may still target smem) before O lands there.
  cp_async_wait<0>();
  __syncthreads();
  auto smem_copy_o = tiled_copy_c(typename Traits::SmemCopyAtomO{}, tiled_mma);
  auto smem_thr_o = smem_copy_o.get_thread_slice(tid);
  // 32-bit stores, as cute::copy's auto-vectorising path picks them (a thread's column pair is
  // contiguous under the swizzle).
  copy_as<uint32_t>(retile_c_store(tiled_mma, smem_copy_o, smem_thr_o, o_frag), smem_thr_o.partition_D(sO));
  __syncthreads();

  typename Traits::GmemCopyO gmem_copy_o;
  auto gmem_thr_o = gmem_copy_o.get_thread_slice(tid);
  Tensor gO = make_tensor(make_gmem_ptr(o_ptr), Shape<Int<kBlockM>, Int<kHeadDim>>{},
                          make_stride(p.o_str.row, _1{}));
  store_rows(gmem_copy_o, gmem_thr_o.partition_S(sO), gmem_thr_o.partition_D(gO),
             gmem_thr_o.partition_D(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{})),
             rows_here);
}

}  // namespace sm80

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm80_fwd(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  using Tile = sm80::FwdTileSize<kHeadDim, kMasked>;
  using Traits = sm80::FwdTraits<Element, kHeadDim, Tile::kBlockM, Tile::kBlockN, Tile::kNWarps>;
  const int64_t num_m_blocks = (p.seqlen_q + Traits::kBlockM - 1) / Traits::kBlockM;
  if (num_m_blocks == 0 || p.heads_q == 0 || p.batch == 0) return core::Status::success();
  FA_RETURN_IF_ERROR(sm80::check_vector_alignment(p, "sm80 forward"));
  if (p.heads_q > 65535 || p.batch > 65535 || num_m_blocks > 0x7fffffff)
    return core::unsupported("sm80 forward grid: heads_q and batch must be <= 65535");
  auto kernel = &sm80::flash_fwd_kernel<Traits, kMasked, kSoftcap>;
  constexpr int kSmem = Traits::kSmemBytes;
  if (kSmem > 48 * 1024) {
    cudaError_t e = set_max_dynamic_smem(kernel, kSmem, p.device_id);
    if (e != cudaSuccess) return cuda_call_failed(e, "sm80 forward: cudaFuncSetAttribute(max dynamic shared memory)");
  }
  dim3 grid(unsigned(num_m_blocks), unsigned(p.heads_q), unsigned(p.batch));
  kernel<<<grid, Traits::kNThreads, kSmem, stream>>>(p, sm80::fwd_switches());
  return check_launch("sm80 forward");
}

}  // namespace fa::cuda
