// KV-cache decode attention, sm80 class (mma.sync m16n8k16, cp.async, ldmatrix; built for every
// sm80-family arch, so the H200 runs it as its decode path). Flash-Decoding: split-KV plus a
// log-sum-exp combine.
//
// One CTA per (packed-row block, split, KV head, batch). The tile's rows are (query position i,
// query head of the KV head's group) pairs, row g = i * group + head_in_group, so a CTA serves the
// whole GQA group and K/V are read once per KV head: decode is bound by the bytes of K/V.
// Each split covers a contiguous range of key blocks of its sequence.
//
// Data flow per CTA:
//   Q rows (per-row addresses: query position, head) --cp.async--> smem, once
//   K, V blocks of kBlockN keys --cp.async, one address per key row (core::cache_offset's
//     arithmetic: block table for a paged cache, any page size)--> kStages smem stages; rows past the
//     sequence's length L_b are zero-filled
//   S = Q·K^T (ldmatrix + mma), softcap, mask (only on blocks that need it: the sequence end,
//   causal/window edges), online softmax on the fragments (FragmentSoftmax, deferred
//   normalisation), O += P·V with P in registers.
//   num_splits == 1: O (normalised) and LSE straight to out/lse.
//   num_splits > 1:  fp32 O normalised by the split's own sum, and the split's LSE, to the
//     workspace; decode_combine_kernel merges them per (b, h, i).
// Warps whose 16 packed rows are all padding (M = Nq * group < 64: decode with small groups)
// skip the MMAs and softmax but still issue their share of the loads.
//
// The key-split tile for M = Nq * group <= 16 (decode_fwd_ks.cuh) shares this file's loads, masks
// and stages; run_sm80_decode chooses between the two (decode::Plan::key_split).
//
// Synchronisation (kStages stages of K+V, FA_DECODE_STAGES): iteration t issues block
// t+kStages-1's loads into the stage block t-1 used, commits a group (empty past the range, so
// the group count per iteration is uniform), waits until block t's group has landed
// (cp.async.wait_group kStages-1), barrier, computes on block t's stage, barrier (every warp is
// done reading that stage before iteration t+1 refills it).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/decode/decode_plan.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm80/fwd_softmax.cuh"
#include "cuda/sm80/fwd_traits.cuh"

namespace fa::cuda {

namespace decode {

using namespace cute;

// K+V pipeline depth. 2: one block in flight while one is computed (d128: 16 KB Q + 2 x 32 KB);
// 3: two in flight (d128: 112 KB, still two CTAs per SM; d256: 128 KB, one). Decode is bound by
// the bytes in flight per SM, so this is the first knob to measure.
#ifndef FA_DECODE_STAGES
#define FA_DECODE_STAGES 2
#endif
constexpr int kStages = FA_DECODE_STAGES;
static_assert(kStages >= 2 && kStages <= 4, "FA_DECODE_STAGES: 2..4");

// What the launcher resolved beyond AttnParams.
struct DecodeArgs {
  int num_splits;
  int m_rows;          // packed rows per (batch, KV head)
  int64_t rows_total;  // B * Hq * Nq
  float* ws_o;         // [S, rows_total, D] (num_splits > 1)
  float* ws_lse;       // [S, rows_total]
};

// Row of the partial buffers for query row i of head h in batch b.
CUTE_HOST_DEVICE int64_t partial_row(const core::AttnParams& p, int b, int h, int64_t i) {
  return (int64_t(b) * p.heads_q + h) * p.seqlen_q + i;
}

template <typename Element, int kHeadDim>
using DecodeTraits = sm80::FwdTraits<Element, kHeadDim, kBlockM, block_n(kHeadDim), kNWarps>;

// Sets to -inf the scores of keys a packed row may not see. Row g of the tile (g = row0 + tile
// row) is query position g / group; its visible keys are one interval (core::Mask), clamped to
// the block so the per-element test is two int compares.
template <int kBlockN, class S, class Coord>
CUTE_DEVICE void mask_packed(S& s, Coord const& coord, const core::Mask& mask, int row0, int group,
                             int64_t col0) {
  CUTE_UNROLL
  for (int r = 0; r < size<0>(s); ++r) {
    const int64_t i = (row0 + get<0>(coord(r, 0))) / group;
    int64_t lo = 0, hi = mask.k_len;
    if (mask.right >= 0) hi = cute::min(hi, mask.diag(i) + mask.right + 1);
    if (mask.left >= 0) lo = cute::max(lo, mask.diag(i) - mask.left);
    const int lo_local = int(cute::max(int64_t(0), cute::min(int64_t(kBlockN), lo - col0)));
    const int hi_local = int(cute::max(int64_t(0), cute::min(int64_t(kBlockN), hi - col0)));
    CUTE_UNROLL
    for (int c = 0; c < size<1>(s); ++c) {
      const int j = get<1>(coord(0, c));
      if (j < lo_local || j >= hi_local) s(r, c) = -INFINITY;
    }
  }
}

// What one CTA of either decode tile works on, from its block index: blockIdx.x is (split, KV
// head, batch), blockIdx.y the block of kBlockM packed rows. Its key blocks are those of its split
// within the blocks some row of the tile may see (FA2's causal/local block skipping), and its
// sequence's K/V rows are found through k_head / v_head (the cache's KV-head base), entry (the
// contiguous cache's entry, cache_batch_idx) or table (the sequence's block-table row, or null).
template <typename Element>
struct DecodeCta {
  int split, kv_head, batch;
  int row0, rows_here, group;  // the tile's first packed row, its rows that exist, the GQA group
  int64_t k_len;               // the sequence's keys
  core::Mask mask;
  int64_t i_first, i_last;  // query positions of the tile's first and last rows
  int n_begin, n_end;       // the split's key blocks
  const Element* k_head;
  const Element* v_head;
  int64_t entry;
  const int32_t* table;
};

template <typename Element, int kBlockM, int kBlockN>
CUTE_DEVICE DecodeCta<Element> locate_cta(const core::AttnParams& p, const DecodeArgs& a) {
  const int split = int(blockIdx.x % unsigned(a.num_splits));
  const int rest = int(blockIdx.x / unsigned(a.num_splits));
  const int kv_head = rest % p.heads_kv;
  const int batch = rest / p.heads_kv;
  const int row0 = int(blockIdx.y) * kBlockM;
  const int group = p.group_size();
  const int rows_here = cute::min(kBlockM, a.m_rows - row0);

  int64_t k_len = core::kv_len(p, batch);
  if (k_len < 0) k_len = 0;  // a negative device-side cache_seqlens: an empty sequence
  const core::Mask mask(p.seqlen_q, k_len, p.window_left, p.window_right);
  const int64_t i_first = row0 / group, i_last = (row0 + rows_here - 1) / group;
  int64_t key_first = 0, key_last = 0;
  mask.key_range(i_first, i_last + 1, &key_first, &key_last);
  const int n_min = int(key_first / kBlockN);
  const int n_max = key_last > key_first ? int((key_last + kBlockN - 1) / kBlockN) : n_min;
  const int per_split = (n_max - n_min + a.num_splits - 1) / a.num_splits;
  const int n_begin = cute::min(n_max, n_min + split * per_split);
  const int n_end = cute::min(n_max, n_begin + per_split);

  const Element* k_head = static_cast<const Element*>(p.k) + int64_t(kv_head) * p.k_str.head;
  const Element* v_head = static_cast<const Element*>(p.v) + int64_t(kv_head) * p.v_str.head;
  const int64_t entry = p.cache_batch_idx ? int64_t(p.cache_batch_idx[batch]) : int64_t(batch);
  const int32_t* table = p.block_table ? p.block_table + int64_t(batch) * p.block_table_stride : nullptr;
  return {split,  kv_head, batch,   row0,  rows_here, group,  k_len, mask,
          i_first, i_last, n_begin, n_end, k_head,    v_head, entry, table};
}

// The K/V stages in shared memory after Q: K0 V0 K1 V1 ...
template <typename Traits>
struct KvStages {
  using Element = typename Traits::Element;
  static constexpr int kElems = Traits::kSmemKVBytes / int(sizeof(Element));
  Element* base;
  CUTE_DEVICE auto k(int stage) const {
    return make_tensor(make_smem_ptr(base + (2 * stage) * kElems), typename Traits::SmemLayoutKV{});
  }
  CUTE_DEVICE auto v(int stage) const {
    return make_tensor(make_smem_ptr(base + (2 * stage + 1) * kElems), typename Traits::SmemLayoutKV{});
  }
};

// K and V of key block n of the CTA's (sequence, KV head) into the thread's partitions dk / dv of
// a stage, for both decode tiles: one address per key row, through the block table when the cache
// is paged (any page size, so pages are resolved per row, not per block); rows at or past k_len
// are zero-filled.
template <int kBlockN, class Element, class DK, class DV, class Coord>
CUTE_DEVICE void load_kv_rows(const core::AttnParams& p, const DecodeCta<Element>& cta, int n, DK&& dk,
                              DV&& dv, Coord const& coord) {
  CUTE_UNROLL
  for (int m = 0; m < size<1>(dk); ++m) {
    const int64_t j = int64_t(n) * kBlockN + get<0>(coord(0, m, 0));
    if (j < cta.k_len) {
      int64_t slot, pos;  // cache entry (or page) and row within it
      if (cta.table) {
        // 32-bit division (a 64-bit one is a ~70-instruction call): the capacity and the page
        // size are below 2^31 (validation).
        const uint32_t ps = uint32_t(p.page_size), page = uint32_t(j) / ps;
        slot = cta.table[page];
        pos = int64_t(uint32_t(j) - page * ps);
      } else {
        slot = cta.entry;
        pos = j;
      }
      const Element* ksrc = cta.k_head + slot * p.k_str.batch + pos * p.k_str.row;
      const Element* vsrc = cta.v_head + slot * p.v_str.batch + pos * p.v_str.row;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(dk); ++k) {
        const int col = get<1>(coord(0, m, k));
        SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(
            *reinterpret_cast<const cute::uint128_t*>(ksrc + col),
            *reinterpret_cast<cute::uint128_t*>(raw_pointer_cast(&dk(0, m, k))));
        SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(
            *reinterpret_cast<const cute::uint128_t*>(vsrc + col),
            *reinterpret_cast<cute::uint128_t*>(raw_pointer_cast(&dv(0, m, k))));
      }
    } else {
      // Zeros, not stale data: masked keys must hold finite scores, and P = 0 times a V row
      // must be 0, not NaN.
      CUTE_UNROLL
      for (int k = 0; k < size<2>(dk); ++k) {
        *reinterpret_cast<uint4*>(raw_pointer_cast(&dk(0, m, k))) = make_uint4(0u, 0u, 0u, 0u);
        *reinterpret_cast<uint4*>(raw_pointer_cast(&dv(0, m, k))) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
  }
}

template <typename Traits>
__global__ void __launch_bounds__(Traits::kNThreads, 2)
    decode_fwd_kernel(const core::AttnParams p, const DecodeArgs a) {
  using Element = typename Traits::Element;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kHeadDim = Traits::kHeadDim;
  // A local copy: cute::min takes references, and a namespace-scope constexpr has no device
  // address.
  constexpr int kBlockM = Traits::kBlockM;

  const DecodeCta<Element> cta = locate_cta<Element, kBlockM, kBlockN>(p, a);
  const int tid = threadIdx.x;

  extern __shared__ __align__(128) char smem_raw[];
  Tensor sQ = make_tensor(make_smem_ptr(reinterpret_cast<Element*>(smem_raw)), typename Traits::SmemLayoutQ{});
  const KvStages<Traits> kv{reinterpret_cast<Element*>(smem_raw + Traits::kSmemQBytes)};

  typename Traits::GmemCopyQKV gmem_copy;
  auto gmem_thr = gmem_copy.get_thread_slice(tid);

  // Q: packed row g -> (query position g / group, head kv_head * group + g % group). Padding
  // rows (g >= M) are zero-filled: their scores are 0, finite, and never stored.
  {
    Tensor dst = gmem_thr.partition_D(sQ);
    Tensor coord = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
    CUTE_UNROLL
    for (int m = 0; m < size<1>(dst); ++m) {
      const int row = get<0>(coord(0, m, 0));
      const bool exists = row < cta.rows_here;
      const int g = cta.row0 + row;
      const Element* src = static_cast<const Element*>(p.q) +
                           p.q_str.offset(cta.batch, g / cta.group, cta.kv_head * cta.group + g % cta.group);
      CUTE_UNROLL
      for (int k = 0; k < size<2>(dst); ++k) {
        auto* s = reinterpret_cast<cute::uint128_t*>(raw_pointer_cast(&dst(0, m, k)));
        if (exists) {
          SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(
              *reinterpret_cast<const cute::uint128_t*>(src + get<1>(coord(0, m, k))), *s);
        } else {
          *reinterpret_cast<uint4*>(s) = make_uint4(0u, 0u, 0u, 0u);
        }
      }
    }
  }

  // K and V of key block n into a stage (load_kv_rows).
  auto load_kv = [&](int stage, int n) {
    Tensor coord = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
    load_kv_rows<kBlockN>(p, cta, n, gmem_thr.partition_D(kv.k(stage)), gmem_thr.partition_D(kv.v(stage)),
                          coord);
  };

  // ---- MMA partitions ------------------------------------------------------------------------
  typename Traits::TiledMma tiled_mma;
  auto thr_mma = tiled_mma.get_thread_slice(tid);
  Tensor tSrQ = sm80::make_fragment_a<Element>(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  Tensor tSrK = sm80::make_fragment_b<Element>(tiled_mma, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor acc_o = sm80::make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  clear(acc_o);
  auto smem_copy_q = sm80::tiled_copy_a(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_k = sm80::tiled_copy_b(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_v = sm80::tiled_copy_b(typename Traits::SmemCopyAtomTransposed{}, tiled_mma);
  auto smem_thr_q = smem_copy_q.get_thread_slice(tid);
  auto smem_thr_k = smem_copy_k.get_thread_slice(tid);
  auto smem_thr_v = smem_copy_v.get_thread_slice(tid);
  Tensor tSsQ = smem_thr_q.partition_S(sQ);
  // P·V in head-dim chunks of up to 64 columns: a k16 slice of V^T across d256 would be 64
  // registers (flash_fwd.cuh does the same).
  constexpr int kPvChunk = kHeadDim % 64 == 0 ? 64 : kHeadDim;
  constexpr int kPvChunks = kHeadDim / kPvChunk;
  Tensor tOrVt_chunk = sm80::make_fragment_b<Element>(tiled_mma, Shape<Int<kPvChunk>, Int<kBlockN>>{});
  Tensor acc_o_by_chunk = logical_divide(acc_o, Shape<Underscore, Underscore, Int<kPvChunk / 8>>{});

  Tensor cS = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor cS_rc = make_tensor(cS.data(), sm80::acc_rowcol(cS.layout()));
  Tensor acc_o_rc = make_tensor(acc_o.data(), sm80::acc_rowcol(acc_o.layout()));
  constexpr int kRows = decltype(size<0>(acc_o_rc))::value;
  sm80::FragmentSoftmax<kRows> softmax;
  const sm80::ScoreScale score_scale = sm80::make_score_scale<true>(p.scale, p.softcap);
  const bool warp_has_rows = (tid / 32) * 16 < cta.rows_here;  // warp w owns tile rows 16w..16w+15

  // ---- main loop -----------------------------------------------------------------------------
  // Prologue: Q and block n_begin in group 0, blocks n_begin+1 .. n_begin+kStages-2 one group each.
  CUTE_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (cta.n_begin + s < cta.n_end) load_kv(s, cta.n_begin + s);
    cp_async_fence();
  }
  int stage = 0;                   // block n's stage
  int refill = kStages - 1;        // the stage block n + kStages - 1 goes to
  for (int n = cta.n_begin; n < cta.n_end; ++n) {
    if (n + kStages - 1 < cta.n_end) load_kv(refill, n + kStages - 1);
    cp_async_fence();
    cp_async_wait<kStages - 1>();
    __syncthreads();
    if (warp_has_rows) {
      Tensor acc_s = sm80::make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kBlockN>>{});
      clear(acc_s);
      sm80::gemm_ss(acc_s, tSrQ, tSrK, tSsQ, smem_thr_k.partition_S(kv.k(stage)), tiled_mma, smem_copy_q,
                    smem_copy_k, smem_thr_q, smem_thr_k);
      Tensor s_rc = make_tensor(acc_s.data(), sm80::acc_rowcol(acc_s.layout()));
      // Capped before masking: masked keys must be -inf, not softcap·tanh(-inf).
      if (score_scale.capped) sm80::apply_softcap(acc_s, score_scale.tanh_arg);
      const int64_t col0 = int64_t(n) * kBlockN;
      const bool needs_mask =
          col0 + kBlockN > cta.k_len ||
          !cta.mask.block_unmasked(cta.i_first, cta.i_last + 1, col0, col0 + kBlockN);
      if (needs_mask) mask_packed<kBlockN>(s_rc, cS_rc, cta.mask, cta.row0, cta.group, col0);
      softmax.template update<false>(s_rc, acc_o_rc, score_scale.log2);

      Tensor p_frag = sm80::convert_fragment<Element>(acc_s);
      Tensor tOrP = make_tensor(p_frag.data(), sm80::acc_as_operand_a(p_frag.layout()));
      Tensor sVt = make_tensor(kv.v(stage).data(), typename Traits::SmemLayoutVt{});
      CUTE_UNROLL
      for (int c = 0; c < kPvChunks; ++c) {
        Tensor acc_o_chunk = acc_o_by_chunk(_, _, make_coord(_, c));
        Tensor tOsVt_chunk =
            smem_thr_v.partition_S(local_tile(sVt, Shape<Int<kPvChunk>, Int<kBlockN>>{}, make_coord(c, 0)));
        sm80::gemm_rs(acc_o_chunk, tOrP, tOrVt_chunk, tOsVt_chunk, tiled_mma, smem_copy_v, smem_thr_v);
      }
    }
    __syncthreads();
    refill = stage;
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();  // an empty range still committed Q's group

  // ---- epilogue: straight from the fragments (O is a few KB per CTA; no smem staging) --------
  float lse[kRows];
  softmax.finalize(acc_o_rc, score_scale.natural, lse);
  Tensor cO = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor cO_rc = make_tensor(cO.data(), sm80::acc_rowcol(cO.layout()));
  const bool direct = a.num_splits == 1;
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = get<0>(cO_rc(r, 0));
    if (row >= cta.rows_here) continue;
    const int g = cta.row0 + row;
    const int64_t i = g / cta.group;
    const int h = cta.kv_head * cta.group + g % cta.group;
    const bool lse_owner = get<1>(cO_rc(0, 0)) == 0;  // lane 0 of the row's quad
    if (direct) {
      Element* o_row = static_cast<Element*>(p.o) + p.o_str.offset(cta.batch, i, h);
      CUTE_UNROLL
      for (int c = 0; c < size<1>(acc_o_rc); c += 2) {  // columns c, c+1 are adjacent
        const int col = get<1>(cO_rc(r, c));
        cutlass::Array<Element, 2> pair;
        pair[0] = Element(acc_o_rc(r, c));
        pair[1] = Element(acc_o_rc(r, c + 1));
        *reinterpret_cast<cutlass::Array<Element, 2>*>(o_row + col) = pair;
      }
      if (p.lse != nullptr && lse_owner) p.lse[p.lse_offset(cta.batch, h, i)] = lse[r];
    } else {
      const int64_t prow = int64_t(cta.split) * a.rows_total + partial_row(p, cta.batch, h, i);
      float* o_row = a.ws_o + prow * kHeadDim;
      CUTE_UNROLL
      for (int c = 0; c < size<1>(acc_o_rc); c += 2) {
        const int col = get<1>(cO_rc(r, c));
        *reinterpret_cast<float2*>(o_row + col) = make_float2(acc_o_rc(r, c), acc_o_rc(r, c + 1));
      }
      if (lse_owner) a.ws_lse[prow] = lse[r];
    }
  }
}

// Merges the splits' partial results of each output row: w_s = exp(lse_s - max), out = sum w_s
// O_s / sum w_s, lse = max + log(sum w_s). Splits with lse = -inf (no visible key) weigh 0 and their
// partial O is never added; a row with no split holding a key gets out = 0, lse = -inf.
// Layout: kCombineRows rows per CTA, one thread per 4 head-dim columns of a row. Why: the split
// partials are a few hundred KB read once, so the kernel is one or two DRAM/L2 round trips if every
// thread has many independent loads in flight; a warp walking a row's columns and splits one load at
// a time (the round-1 kernel) was latency-bound (59.8 us at 32 rows x 32 splits x d128 on the H200).
// Each thread issues kCombineChunk independent float4 loads (one per split) before it uses any, and
// derives the weights itself from the row's LSEs in shared memory, all threads of a row in the same
// split order: the sums are deterministic and no second barrier is needed.
template <int kHeadDim>
struct CombineShape {
  static constexpr int kThreadsPerRow = kHeadDim / 4;
  static constexpr int kRows = kHeadDim >= 256 ? 1 : 256 / kHeadDim;  // 48-64 threads per CTA
  static constexpr int kThreads = kRows * kThreadsPerRow;
  static_assert(kHeadDim % 4 == 0 && kThreads <= 128);
};
constexpr int kCombineChunk = 16;  // independent float4 loads in flight per thread

template <typename Element, int kHeadDim>
__global__ void __launch_bounds__(CombineShape<kHeadDim>::kThreads)
    decode_combine_kernel(const core::AttnParams p, const DecodeArgs a) {
  using Shape_ = CombineShape<kHeadDim>;
  __shared__ float s_lse[Shape_::kRows][kMaxSplits];
  const int r = int(threadIdx.x) / Shape_::kThreadsPerRow;
  const int t = int(threadIdx.x) % Shape_::kThreadsPerRow;
  const int64_t prow = int64_t(blockIdx.x) * Shape_::kRows + r;
  const bool live = prow < a.rows_total;  // no early return: every thread reaches the barrier
  const int S = a.num_splits;
  for (int s = t; s < S; s += Shape_::kThreadsPerRow)
    s_lse[r][s] = live ? a.ws_lse[int64_t(s) * a.rows_total + prow] : -INFINITY;
  __syncthreads();
  if (!live) return;
  float mx = -INFINITY;
  for (int s = 0; s < S; ++s) mx = fmaxf(mx, s_lse[r][s]);
  const bool empty = mx == -INFINITY;

  const int64_t split_stride = a.rows_total * kHeadDim;
  const float* src = a.ws_o + prow * kHeadDim + 4 * t;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float sum = 0.f;
  for (int s0 = 0; s0 < S; s0 += kCombineChunk) {
    float4 v[kCombineChunk];
    CUTE_UNROLL
    for (int k = 0; k < kCombineChunk; ++k)
      if (s0 + k < S) v[k] = __ldg(reinterpret_cast<const float4*>(src + (s0 + k) * split_stride));
    CUTE_UNROLL
    for (int k = 0; k < kCombineChunk; ++k) {
      if (s0 + k < S) {
        const float w = empty ? 0.f : expf(s_lse[r][s0 + k] - mx);  // exp(-inf) = 0: empty split
        sum += w;
        if (w != 0.f) {
          acc.x += w * v[k].x;
          acc.y += w * v[k].y;
          acc.z += w * v[k].z;
          acc.w += w * v[k].w;
        }
      }
    }
  }
  const float inv = empty ? 0.f : 1.f / sum;
  const int64_t i = prow % p.seqlen_q;
  const int h = int((prow / p.seqlen_q) % p.heads_q);
  const int b = int(prow / (int64_t(p.seqlen_q) * p.heads_q));
  Element* o = static_cast<Element*>(p.o) + p.o_str.offset(b, i, h) + 4 * t;
  // Pairs (4-byte stores): check_decode_alignment guarantees only even output strides.
  cutlass::Array<Element, 2> lo, hi;
  lo[0] = Element(acc.x * inv);
  lo[1] = Element(acc.y * inv);
  hi[0] = Element(acc.z * inv);
  hi[1] = Element(acc.w * inv);
  *reinterpret_cast<cutlass::Array<Element, 2>*>(o) = lo;
  *reinterpret_cast<cutlass::Array<Element, 2>*>(o + 2) = hi;
  if (p.lse != nullptr && t == 0) p.lse[p.lse_offset(b, h, i)] = empty ? -INFINITY : mx + logf(sum);
}

// The key-split tile's launch (decode_fwd_ks.cuh), defined only in the generated units
// sm80_decode_<dtype>_hd<d>_mask_softcap_ks.cu (explicit instantiations): each unit compiles one
// attention kernel. Only declared here, so run_sm80_decode's unit does not compile that kernel; a
// build whose FA_INSTANCE_FILTER keeps a decode instance but not its _ks unit fails to link.
template <typename Element, int kHeadDim>
core::Status launch_decode_ks(const core::AttnParams& p, const DecodeArgs& a, dim3 grid, cudaStream_t stream);

inline core::Status check_decode_alignment(const core::AttnParams& p) {
  auto aligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; };
  auto strided = [](const core::Strides& s) { return s.batch % 8 == 0 && s.row % 8 == 0 && s.head % 8 == 0; };
  bool ok = aligned(p.q) && aligned(p.k) && aligned(p.v) && aligned(p.o) && strided(p.q_str) &&
            strided(p.k_str) && strided(p.v_str);
  // The epilogue writes O in pairs (4-byte stores): row and head strides must keep pairs aligned.
  ok = ok && p.o_str.batch % 2 == 0 && p.o_str.row % 2 == 0 && p.o_str.head % 2 == 0;
  if (p.k_new)
    ok = ok && aligned(p.k_new) && aligned(p.v_new) && strided(p.knew_str) && strided(p.vnew_str);
  if (!ok)
    return core::unsupported(
        "CUDA KV-cache decode: q, the caches and k_new/v_new need 16-byte aligned data and "
        "batch/row/head strides that are multiples of 8 elements (out: of 2)");
  return core::Status::success();
}

}  // namespace decode

// The decode family's launcher (scripts/instances/decode.py): append, attention, combine, all on
// p's stream. ws: at least make_plan(p).ws_bytes (the dispatcher allocates it when the caller
// gave none). kMasked/kSoftcap are the registry's key; masks and softcap are run-time here.
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm80_decode(const core::AttnParams& p, cudaStream_t stream, void* ws) {
  static_assert(kMasked && kSoftcap, "one decode instance per (dtype, head dim) serves every call");
  using Traits = decode::DecodeTraits<Element, kHeadDim>;
  FA_RETURN_IF_ERROR(decode::check_decode_alignment(p));
  const decode::Plan plan = decode::make_plan(p);
  if (plan.m_blocks > 65535)
    return core::unsupported("CUDA KV-cache decode: Nq * (heads_q / heads_kv) must be <= " +
                             std::to_string(65535 * decode::kBlockM));
  if (int64_t(p.batch) * p.heads_kv * plan.num_splits > 0x7fffffff)
    return core::unsupported("CUDA KV-cache decode: batch * heads_kv * num_splits must be < 2^31");
  if (plan.num_splits > 1 && !ws) return core::invalid("CUDA KV-cache decode: split-KV needs a workspace");
  // The append first: stream order makes the new rows visible to the attention kernel.
  FA_RETURN_IF_ERROR(decode::launch_append(p, stream));
  if (p.batch == 0 || plan.m_blocks == 0) return core::Status::success();

  decode::DecodeArgs a;
  a.num_splits = plan.num_splits;
  a.m_rows = int(plan.m_rows);
  a.rows_total = plan.rows_total;
  a.ws_o = static_cast<float*>(ws);
  a.ws_lse = plan.num_splits > 1 ? a.ws_o + size_t(plan.num_splits) * plan.rows_total * kHeadDim : nullptr;

  dim3 grid(unsigned(int64_t(p.batch) * p.heads_kv * plan.num_splits), unsigned(plan.m_blocks));
  bool launched = false;
  if constexpr (decode::has_key_split_tile(kHeadDim)) {
    if (plan.key_split) {
      FA_RETURN_IF_ERROR((decode::launch_decode_ks<Element, kHeadDim>(p, a, grid, stream)));
      launched = true;
    }
  }
  if (!launched) {
    auto kernel = &decode::decode_fwd_kernel<Traits>;
    constexpr int kSmem = Traits::kSmemQBytes + 2 * decode::kStages * Traits::kSmemKVBytes;  // Q + stages of K, V
    if (kSmem > 48 * 1024) {
      cudaError_t e = set_max_dynamic_smem(kernel, kSmem, p.device_id);
      if (e != cudaSuccess) return cuda_call_failed(e, "kvcache decode: cudaFuncSetAttribute(max dynamic shared memory)");
    }
    kernel<<<grid, Traits::kNThreads, kSmem, stream>>>(p, a);
  }
  FA_RETURN_IF_ERROR(check_launch("kvcache decode"));
  if (plan.num_splits > 1) {
    using Combine = decode::CombineShape<kHeadDim>;
    const int64_t blocks = (plan.rows_total + Combine::kRows - 1) / Combine::kRows;
    if (blocks > 0x7fffffff) return core::unsupported("CUDA KV-cache decode: too many rows to combine");
    decode::decode_combine_kernel<Element, kHeadDim><<<unsigned(blocks), Combine::kThreads, 0, stream>>>(p, a);
    FA_RETURN_IF_ERROR(check_launch("kvcache split-KV combine"));
  }
  return core::Status::success();
}

}  // namespace fa::cuda
