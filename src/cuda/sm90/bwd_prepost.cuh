// FA3 backward, the two memory-bound passes around the main kernel (flash_bwd_kernel.cuh).
//
// bwd_preprocess: one CTA per (kTurnRows = 64 rows of the padded space, query head, sequence). Computes
//   D = rowsum(dO * O) in fp32, copies LSE as LSE*log2(e) (a row with LSE = -inf, i.e. no visible
//   key, becomes +inf so the main kernel's exp2(s - lse) gives P = 0 instead of NaN), zeroes the
//   fp32 dQ accumulator rows (not with zero_acc = false: the first-adder store) and the block's
//   turn counter (deterministic turns, the first-adder CAS). Padding rows of the block get D = 0,
//   LSE = +inf.
// bwd_convert_dq: dQ = dq_acc * softmax_scale in the output dtype, written with dQ's strides.
//   dq_acc holds each query block in the main kernel's fragment order (not row-major).
//   bwd_convert_dq_follow does the same per block, during the main kernel's last wave (d <= 128).
//   The preprocess also zeroes its per-(sequence, KV head) completion counters.
//
// Both passes only move bytes (at 16k tokens x 16 heads x d128: 134 MB of O + dO read, 134 MB of
// accumulator zeroed, 134 MB read back and 67 MB of dQ written), so what matters is how many
// memory instructions and L2 sectors that takes. kVec (the default) uses 16-byte accesses
// throughout:
//   preprocess: a group of G lanes reads one row of O and dO, 8 elements per 16-byte load, all of
//     a thread's loads issued before any arithmetic; the row sum is finished with G-lane shuffles.
//     The accumulator is zeroed with 16-byte stores (it is contiguous per query block whatever
//     the fragment order inside it).
//   convert: the accumulator is read with 16-byte loads in fragment order (as before), each value
//     is scaled, converted and put at its (row, column) in a row-major smem tile, and the tile is
//     written out row by row with 16-byte stores. The fragment order spreads 8 consecutive columns
//     of a row over the 4 lanes of a quad (2 each), so no thread holds a 16-byte run of dQ
//     itself; the smem round trip is what makes whole-sector stores possible.
//   A block whose O/dO (preprocess) or dQ (convert) rows are not 16-byte aligned takes scalar
//   accesses inside the same kernel (uniform per CTA), so arbitrary strides keep working.
// kVec = false is the previous scalar form (2-byte loads by one warp per row, 4-byte zeroing,
// 2-byte dQ stores straight from the fragment order), kept as the ablation baseline:
// FA_SM90_BWD_PREPOST=scalar selects it at run time.
// The numbers: dQ is bit-identical in both forms (same fp32 value, same conversion); D differs
// only in the fp32 summation order of the row sum.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/params.hpp"
#include "core/softmax.hpp"
#include "cuda/sm90/bwd_workspace.hpp"
#include "cuda/sm90/flash_bwd_kernel.cuh"  // BwdConfig: the dQ fragment order

namespace fa::cuda::sm90_bwd {

constexpr int kPrepostThreads = 256;

// Run-time switch of the ablation: FA_SM90_BWD_PREPOST=scalar selects the scalar passes. Read once
// per process (bench/compare.py runs each ablation in its own process): not a per-call cost.
inline bool prepost_vectorized() {
  static const bool vectorized = [] {
    const char* v = std::getenv("FA_SM90_BWD_PREPOST");
    return !(v && std::strcmp(v, "scalar") == 0);
  }();
  return vectorized;
}

// Lanes per row in the vectorised preprocess: the largest power of two <= 32 dividing the row's
// 16-byte chunk count (d64: 8, d96: 4, d128: 16, d192: 8, d256: 32), so a group's loads cover
// G * 16 contiguous bytes (>= 64: whole 32-byte sectors) and the reduction is G-lane shuffles.
template <int kChunks>
constexpr int prepost_group() {
  return kChunks % 32 == 0 ? 32 : kChunks % 16 == 0 ? 16 : kChunks % 8 == 0 ? 8 : 4;
}

// The fused dQ conversion's part (kFusedConvert), for the query block (of the main kernel's
// fuse.block_m rows) that contains this CTA's rows: its arrival counter gets the number of key
// blocks whose CTA visits it, counted with the main kernel's own query_block_range so both sides
// agree; a block no key block visits (no visible key, e.g. a sequence without keys) is never
// converted by the main kernel, so its dQ rows are written as 0 here.
struct FuseInfo {
  int block_m = 0;  // 0: off (bwd_convert_dq runs)
  int block_n = 0;
  bool masked = false;  // the main kernel's kMasked: the window applies
};

// kPad: the main kernel's row padding (BwdConfig::kSeqRowPad: kRowPad, or 320 for the 80-row d128
// tile, whose fused conversion is off, so fuse stays empty there).
template <typename Element, int kHeadDim, bool kVec = true, int kPad = kRowPad>
__global__ void __launch_bounds__(kPrepostThreads)
bwd_preprocess(const core::AttnParams p, const BwdWorkspace ws, const FuseInfo fuse = FuseInfo{},
               const bool zero_acc = true) {
  pdl_trigger();  // FA_SM90_BWD_PDL: the main kernel's prologue may start (it waits for our writes)
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const core::SeqInfo seq = core::seq_info(p, b);
  const int64_t row0 = int64_t(m_block) * kTurnRows;
  // The (sequence, KV head)'s count of finished key blocks (bwd_convert_dq_follow), before the
  // varlen return: block 0 of a group's first query head exists for every sequence.
  if (m_block == 0 && threadIdx.x == 0 && h % p.group_size() == 0)
    ws.kv_done[int64_t(b) * p.heads_kv + h / p.group_size()] = 0;
  if (row0 >= round_up(seq.q_len, kPad)) return;  // varlen: shorter than the grid's max
  const int64_t prow0 = int64_t(h) * ws.rows_pad + padded_row_start<kPad>(p, b, seq.q_start) + row0;
  const int tid = threadIdx.x;
  const Element* o_base = static_cast<const Element*>(p.o);
  const Element* do_base = static_cast<const Element*>(p.dout);
  const int64_t rows_left = seq.q_len - row0;  // > 0 unless the whole block is padding

  // LSE*log2e of the block's rows (one thread per row: 256 coalesced bytes).
  if (tid < kTurnRows) {
    float lse_log2 = INFINITY;
    if (tid < rows_left) {
      const float lse = p.lse[p.lse_offset(b, h, seq.q_start + row0 + tid)];
      lse_log2 = lse == -INFINITY ? INFINITY : lse * core::kLog2e;
    }
    ws.lse_log2[prow0 + tid] = lse_log2;
  }

  bool vec = false;
  if constexpr (kVec) {
    const int64_t r0 = seq.q_start + row0;
    vec = rows_aligned16(o_base + p.o_str.offset(b, r0, h), p.o_str.row) &&
          rows_aligned16(do_base + p.do_str.offset(b, r0, h), p.do_str.row);
  }
  if constexpr (kVec) {
    if (vec) {
      constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
      constexpr int G = prepost_group<kChunks>();
      constexpr int kCpl = kChunks / G;                    // chunks per lane per row
      constexpr int kRowsPerPass = kPrepostThreads / G;
      constexpr int kPasses = kTurnRows / kRowsPerPass;      // = G / 4
      static_assert(kChunks % G == 0 && kTurnRows % kRowsPerPass == 0, "preprocess row split");
      const int g = tid % G, rr = tid / G;
      uint4 ro[kPasses][kCpl], rd[kPasses][kCpl];
      // All loads first (up to 2 x 8 x 16 bytes in flight per thread at d256), then the sums.
#pragma unroll
      for (int ps = 0; ps < kPasses; ++ps) {
        const int r = ps * kRowsPerPass + rr;
        const bool valid = r < rows_left;
        const int64_t i = seq.q_start + row0 + r;
        const Element* o = o_base + p.o_str.offset(b, i, h) + g * 8;
        const Element* dout = do_base + p.do_str.offset(b, i, h) + g * 8;
#pragma unroll
        for (int j = 0; j < kCpl; ++j) {
          ro[ps][j] = valid ? *reinterpret_cast<const uint4*>(o + j * G * 8) : make_uint4(0, 0, 0, 0);
          rd[ps][j] = valid ? *reinterpret_cast<const uint4*>(dout + j * G * 8) : make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int ps = 0; ps < kPasses; ++ps) {
        float dot = 0.f;
#pragma unroll
        for (int j = 0; j < kCpl; ++j) {
          Element eo[8], ed[8];
          static_assert(sizeof(eo) == sizeof(uint4));
          memcpy(eo, &ro[ps][j], sizeof(eo));
          memcpy(ed, &rd[ps][j], sizeof(ed));
#pragma unroll
          for (int k = 0; k < 8; ++k) dot += float(eo[k]) * float(ed[k]);
        }
#pragma unroll
        for (int off = G / 2; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if (g == 0) ws.dpsum[prow0 + ps * kRowsPerPass + rr] = dot;  // 0 for padding rows
      }
    }
  }
  if (!vec) {
    // Scalar form: one warp per row, lanes strided over the head dim.
    const int warp = tid / 32, lane = tid % 32;
    for (int r = warp; r < kTurnRows; r += kPrepostThreads / 32) {
      const int64_t i = row0 + r;
      float dot = 0.f;
      if (i < seq.q_len) {
        const Element* o = o_base + p.o_str.offset(b, seq.q_start + i, h);
        const Element* dout = do_base + p.do_str.offset(b, seq.q_start + i, h);
        for (int c = lane; c < kHeadDim; c += 32) dot += float(o[c]) * float(dout[c]);
      }
#pragma unroll
      for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, off);
      if (lane == 0) ws.dpsum[prow0 + r] = dot;
    }
  }

  // The block's accumulator: kTurnRows * kHeadDim contiguous floats (fragment order inside does not
  // matter for zeroing), 256-byte aligned (workspace base, prow0 a multiple of 64). Not with
  // zero_acc = false (BwdParams::dq_store_first: the main kernel's first adder of each block
  // stores, and bwd_convert_dq writes 0 for a block nobody visited): half of this pass's bytes.
  float* acc = ws.dq_acc + prow0 * kHeadDim;
  if (zero_acc) {
    if constexpr (kVec) {
      constexpr int kVecs = kTurnRows * kHeadDim / 4;
      static_assert(kVecs % kPrepostThreads == 0);
#pragma unroll
      for (int k = 0; k < kVecs / kPrepostThreads; ++k)
        reinterpret_cast<float4*>(acc)[k * kPrepostThreads + tid] = make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      // The previous form: one warp per row, 4-byte stores.
      for (int r = tid / 32; r < kTurnRows; r += kPrepostThreads / 32)
        for (int c = tid % 32; c < kHeadDim; c += 32) acc[r * kHeadDim + c] = 0.f;
    }
  }
  if (tid == 0) ws.dq_turn[prow0 / kTurnRows] = 0;

  if constexpr (kFusedConvert) {
   if (fuse.block_m > 0) {
    const int m = int(row0 / fuse.block_m);
    const core::Mask mask(seq.q_len, seq.k_len, fuse.masked ? p.window_left : -1,
                          fuse.masked ? p.window_right : -1);
    const int64_t n_blocks = (seq.k_len + fuse.block_n - 1) / fuse.block_n;
    int mine = 0;
    for (int64_t n = tid; n < n_blocks; n += kPrepostThreads) {
      int first = 0, last = 0;
      const int64_t n0 = n * fuse.block_n;
      query_block_range(mask, n0, min(n0 + fuse.block_n, seq.k_len), fuse.block_m, &first, &last);
      mine += m >= first && m < last;
    }
    __shared__ int visits;
    if (tid == 0) visits = 0;
    __syncthreads();
    if (mine) atomicAdd(&visits, mine);
    __syncthreads();
    const int count = visits;
    // The counter sits at the block's first kTurnRows rows (as the turn counter does).
    if (tid == 0 && row0 % fuse.block_m == 0) ws.dq_arrive[prow0 / kTurnRows] = count;
    if (count == 0) {
      Element* dq = static_cast<Element*>(p.dq);
      for (int idx = tid; idx < kTurnRows * kHeadDim; idx += kPrepostThreads) {
        const int r = idx / kHeadDim, c = idx % kHeadDim;
        if (r < rows_left) dq[p.dq_str.offset(b, seq.q_start + row0 + r, h) + c] = Element(0.f);
      }
    }
   }
  }
}

// One query block of dQ, one thread per consumer thread of the main kernel: it reads that
// thread's dQ values of the block (fragment order, Cfg::dq_frag_offset; float4 loads, coalesced
// across threads) and finds their (row, column) through the same MMA partition the main kernel
// used. visited = false: the block is written as 0 without reading the accumulator. sdq: the
// kVec form's padded row-major tile (dq_tile_ld); a caller that reuses it syncs first.
template <class Cfg, bool kVec>
__device__ __forceinline__ void convert_block(const core::AttnParams& p, const BwdWorkspace& ws, int b, int h,
                                              int m_block, const core::SeqInfo& seq, bool visited, uint16_t* sdq) {
  using Element = typename Cfg::T;
  constexpr int kHeadDim = Cfg::kHeadDim;
  constexpr int kThreads = Cfg::kConsumerThreads;
  const int64_t row0 = int64_t(m_block) * Cfg::kBlockM;
  const int64_t prow0 =
      int64_t(h) * ws.rows_pad + padded_row_start<Cfg::kSeqRowPad>(p, b, seq.q_start) + row0;
  const int tid = threadIdx.x;
  typename Cfg::MmadQ mma_dq;
  Tensor cdQ = mma_dq.get_thread_slice(tid).partition_C(make_identity_tensor(typename Cfg::DqShape{}));
  static_assert(decltype(size(cdQ))::value == Cfg::kDqFragValues);
  static_assert(Cfg::kSeqRowPad % Cfg::kBlockM == 0, "a query block stays inside its sequence's padded rows");
  const float* acc = ws.dq_acc + prow0 * kHeadDim + Cfg::dq_frag_offset(tid, 0);
  Element* dq = static_cast<Element*>(p.dq);
  const int rows_left = int(min(seq.q_len - row0, int64_t(Cfg::kBlockM)));
  const float4 zero4 = make_float4(0.f, 0.f, 0.f, 0.f);

  if constexpr (!kVec) {
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kDqFragValues; i += 4) {
      const float4 v = visited ? *reinterpret_cast<const float4*>(acc + i * 128) : zero4;
      const float e[4] = {v.x, v.y, v.z, v.w};
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) {
        const int r = Cfg::dq_row(cdQ(i + k)), c = Cfg::dq_col(cdQ(i + k));
        if (r < rows_left) dq[p.dq_str.offset(b, seq.q_start + row0 + r, h) + c] = Element(e[k] * p.scale);
      }
    }
  } else {
    static_assert(sizeof(Element) == 2);
    float4 v[Cfg::kDqFragValues / 4];
    CUTE_UNROLL
    for (int i = 0; i < Cfg::kDqFragValues; i += 4)
      v[i / 4] = visited ? *reinterpret_cast<const float4*>(acc + i * 128) : zero4;
    dq_fragment_to_tile<Cfg>(v, cdQ, p.scale, sdq);
    __syncthreads();
    dq_tile_to_rows<Cfg, kThreads>(sdq, p, b, seq.q_start + row0, h, rows_left, tid);
  }
}

// Whether block prow0's accumulator holds adds. check_visited (BwdParams::dq_store_first): it was
// not zeroed, so a block no key block added to (its turn counter still 0: no visible key) reads
// as 0. The block's counter sits at its first kTurnRows rows (as in the main kernel).
template <class Cfg>
__device__ __forceinline__ bool block_visited(const core::AttnParams& p, const BwdWorkspace& ws, int b, int h,
                                              int m_block, const core::SeqInfo& seq, bool check_visited) {
  if (!check_visited) return true;
  const int64_t prow0 =
      int64_t(h) * ws.rows_pad + padded_row_start<Cfg::kSeqRowPad>(p, b, seq.q_start) + int64_t(m_block) * Cfg::kBlockM;
  return ws.dq_turn[prow0 / kTurnRows] != 0;
}

// One CTA per query block, after the main kernel (pdl_wait: its whole grid).
template <class Cfg, bool kVec = true>
__global__ void __launch_bounds__(Cfg::kConsumerThreads)
bwd_convert_dq(const core::AttnParams p, const BwdWorkspace ws, const bool check_visited = false) {
  pdl_wait();  // FA_SM90_BWD_PDL: launched during the main kernel's tail; the accumulator is its output
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const core::SeqInfo seq = core::seq_info(p, b);
  if (int64_t(m_block) * Cfg::kBlockM >= seq.q_len) return;
  // The padded row-major tile (dq_tile_ld): 33 KB at d256.
  __shared__ alignas(16) uint16_t sdq[kVec ? Cfg::kBlockM * dq_tile_ld<Cfg::kHeadDim>() : 8];
  const bool visited = block_visited<Cfg>(p, ws, b, h, m_block, seq, check_visited);
  convert_block<Cfg, kVec>(p, ws, b, h, m_block, seq, visited, sdq);
}

// The conversion overlapped with the main kernel's last wave (BwdParams::convert_follows; kDqTma
// configurations, where one warp per main CTA issues all of its dQ adds). Launched as the main
// kernel's programmatic dependent, it is scheduled once every main CTA has started, i.e. on the
// SMs the last wave leaves idle (never on one a main CTA still needs). Its few CTAs walk the query
// blocks in the main grid's order (sequence, KV head, query head of the group, query block) and
// convert a block as soon as every key block of its (sequence, KV head) has reported its adds
// complete (kv_done: the main kernel's dQ warp, after its last bulk add's wait_group, proxy fence
// and release), instead of all of them waiting for the main grid's last CTA. A sequence without
// keys has no key block to wait for and no add: dQ = 0 there. pdl_wait at the end: the grid still
// completes after the main kernel, so stream order holds for whatever runs next.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kConsumerThreads)
bwd_convert_dq_follow(const core::AttnParams p, const BwdWorkspace ws, const bool check_visited, const int m_blocks) {
  __shared__ alignas(16) uint16_t sdq[Cfg::kBlockM * dq_tile_ld<Cfg::kHeadDim>()];
  const int64_t tiles = int64_t(m_blocks) * p.heads_q * p.batch;
  const int group = p.group_size();
  // The main grid's key blocks per sequence: ceil(seqlen_k / kBlockN) (varlen: of the
  // max_seqlen_k the caller passed). A sequence longer than that is cut there, and its
  // conversion must not wait for key blocks that were never launched.
  const int64_t grid_n = (p.seqlen_k + Cfg::kBlockN - 1) / Cfg::kBlockN;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int m_block = int(t % m_blocks);
    const int64_t bh = t / m_blocks;
    const int h = int(bh % p.heads_q), b = int(bh / p.heads_q);
    const core::SeqInfo seq = core::seq_info(p, b);
    if (int64_t(m_block) * Cfg::kBlockM >= seq.q_len) continue;  // uniform: varlen, past the sequence
    // The key blocks of this sequence that do work (n0 < k_len), uniform over the CTA.
    // Tail split (non-varlen, so every key block does work): each piece reports on its own.
    const int expected =
        ws.split_ways > 0
            ? int(tail_pair_ctas((int64_t(b) * p.heads_kv + h / group) * grid_n, grid_n, ws.split_first, ws.split_ways))
            : int(min((seq.k_len + Cfg::kBlockN - 1) / Cfg::kBlockN, grid_n));
    if (threadIdx.x == 0 && expected > 0) {
      const int* done = ws.kv_done + int64_t(b) * p.heads_kv + h / group;
      // Backing off to 4 us between polls: every waiting CTA polls the same word, whose L2
      // slice also serves the main kernel's traffic.
      unsigned sleep = 128;
      while (load_acquire(done) < expected) {
        __nanosleep(sleep);
        sleep = min(2 * sleep, 4096u);
      }
    }
    __syncthreads();  // every thread's reads of the block after thread 0's acquire
    const bool visited = expected > 0 && block_visited<Cfg>(p, ws, b, h, m_block, seq, check_visited);
    convert_block<Cfg, true>(p, ws, b, h, m_block, seq, visited, sdq);
    __syncthreads();  // sdq is rewritten by the next block
  }
  pdl_wait();
}

}  // namespace fa::cuda::sm90_bwd
