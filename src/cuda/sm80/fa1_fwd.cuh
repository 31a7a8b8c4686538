// FlashAttention-1 forward (Dao et al. 2022, Algorithm 1) on sm80-class tensor cores.
//
// Kept as the first paper wrote it, to measure what FA2's reordering buys:
//   - one CTA per (query head, batch); nothing else is parallel;
//   - the OUTER loop runs over K/V blocks j (K_j, V_j loaded to smem once), the INNER loop over
//     query blocks i; for each (j, i) the CTA reads Q_i from HBM and the running state of rows i —
//     the normalised output O_i (fp32), row max m_i and row sum l_i — from the workspace in HBM,
//     folds in block j and writes the state back, O renormalised at every step:
//        m_new = max(m_i, rowmax(S_ij)),  P = exp(S_ij - m_new),
//        l_new = e^(m_i - m_new) l_i + rowsum(P),
//        O_i  <- (l_i e^(m_i - m_new) O_i + P V_j) / l_new.
//   - On the last K/V block a query block sees, O_i is written to the output (fp16/bf16) and
//     LSE = m + ln l instead of to the workspace; query blocks that see no key get O = 0, LSE = -inf.
// The tile math (mma.sync m16n8k16, ldmatrix, cp.async, swizzled smem) is FA2's, from fwd_traits.
//
// Synchronisation: __syncthreads before K_j/V_j overwrite smem and before each Q_i load (every warp
// is done with the previous tile); cp.async groups are drained before use. The workspace rows of a
// query block are touched only by the threads that own them in the MMA layout, except m/l, which
// the 4 lanes of a quad read and lane 0 writes after a __syncwarp.
#pragma once

#include <cuda_runtime.h>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm80/fwd_softmax.cuh"
#include "cuda/sm80/fwd_traits.cuh"

namespace fa::cuda {

namespace sm80 {

// FA1 tiles: 64 query rows (4 warps x 16) x 64 keys for both head dims (K_j, V_j, Q_i = 48 KB at
// d128). The paper sized blocks from the SRAM size M as B_c = M/4d; 64 is that size for ~64 KB.
// P·V_j and the O_i update run kOChunk head-dim columns at a time: each chunk's P·V, fold with the
// old O_i and write-back finish before the next starts, so a thread holds 32 O values instead of
// 64 at d128 (with the whole row, the masked d128 instances spilled 36 B at 255 registers).
// kOChunk = kHeadDim is the unchunked form.
template <int kHeadDim>
struct Fa1TileSize {
  static constexpr int kBlockM = 64;
  static constexpr int kBlockN = 64;
  static constexpr int kNWarps = 4;
  static constexpr int kOChunk = kHeadDim > 64 ? 64 : kHeadDim;
};

// Workspace: O [Hq, total_q, D] fp32, then m and l [Hq, total_q] fp32.
struct Fa1Workspace {
  float* o;
  float* m;
  float* l;
};

// (kRows, kHeadDim) rows of a [rows, D] global tensor starting at row.
template <int kRows, int kHeadDim, typename Element>
CUTE_DEVICE auto gmem_tile(const Element* base, int64_t row_stride, int row) {
  return make_tensor(make_gmem_ptr(base + int64_t(row) * row_stride),
                     Shape<Int<kRows>, Int<kHeadDim>>{}, make_stride(row_stride, _1{}));
}

// Final output of one query block from the normalised O in registers: (row, col) view columns
// [c_begin, c_end) of o_rc (one head-dim chunk, or all), and the LSE when write_lse. Column pairs
// of the m16n8 fragment are contiguous: one 32-bit store each (rows are 16-byte aligned).
template <typename Element, int kRows, class ORowCol, class CoordRowCol>
CUTE_DEVICE void fa1_write_output(const core::AttnParams& p, Element* o_base, int q_len,
                                  int64_t lse_row0, int batch, int head, int row0,
                                  ORowCol const& o_rc, CoordRowCol const& coord, int c_begin,
                                  int c_end, const float (&lse)[kRows], bool write_lse) {
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int i = row0 + get<0>(coord(r, 0));
    if (i >= q_len) continue;
    Element* out_row = o_base + int64_t(i) * p.o_str.row;
    CUTE_UNROLL
    for (int c = c_begin; c < c_end; c += 2) {
      const int col = get<1>(coord(r, c));
      cutlass::Array<Element, 2> pair;
      pair[0] = Element(o_rc(r, c));
      pair[1] = Element(o_rc(r, c + 1));
      *reinterpret_cast<cutlass::Array<Element, 2>*>(out_row + col) = pair;
    }
    if (p.lse != nullptr && write_lse) p.lse[p.lse_offset(batch, head, lse_row0 + i)] = lse[r];
  }
}

template <typename Traits, bool kMasked, bool kSoftcap>
__global__ void __launch_bounds__(Traits::kNThreads, 1)
    fa1_fwd_kernel(const core::AttnParams p, const Fa1Workspace ws) {
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kHeadDim = Traits::kHeadDim;

  const int head = blockIdx.x;
  const int batch = blockIdx.y;
  const int tid = threadIdx.x;
  const core::SeqInfo seq = core::seq_info(p, batch);
  const int q_len = int(seq.q_len), k_len = int(seq.k_len);
  if (q_len == 0) return;
  const core::Mask mask(q_len, k_len, kMasked ? p.window_left : -1, kMasked ? p.window_right : -1);
  const int num_m_blocks = (q_len + kBlockM - 1) / kBlockM;
  const int num_n_blocks = (k_len + kBlockN - 1) / kBlockN;

  // K/V blocks [lo, hi) that query block mb sees.
  auto kv_blocks = [&](int mb, int* lo, int* hi) {
    const int row0 = mb * kBlockM;
    int64_t first = 0, last = k_len;
    if constexpr (kMasked) mask.key_range(row0, cute::min(row0 + kBlockM, q_len), &first, &last);
    *lo = int(first / kBlockN);
    *hi = last > first ? int((last + kBlockN - 1) / kBlockN) : *lo;
  };

  const int kv_head = head / p.group_size();
  const Element* q_base = static_cast<const Element*>(p.q) + p.q_str.offset(batch, seq.q_start, head);
  const Element* k_base = static_cast<const Element*>(p.k) + p.k_str.offset(batch, seq.k_start, kv_head);
  const Element* v_base = static_cast<const Element*>(p.v) + p.v_str.offset(batch, seq.k_start, kv_head);
  Element* o_base = static_cast<Element*>(p.o) + p.o_str.offset(batch, seq.q_start, head);
  // Row 0 of this (head, sequence) in the workspace's [Hq, total_q] row space.
  const int64_t ws_row0 = int64_t(head) * p.total_q + (p.varlen ? seq.q_start : int64_t(batch) * p.seqlen_q);


  extern __shared__ __align__(128) char fa1_smem[];
  Tensor sQ = make_tensor(make_smem_ptr(reinterpret_cast<Element*>(fa1_smem)), typename Traits::SmemLayoutQ{});
  Tensor sK = make_tensor(sQ.data() + Traits::kSmemQBytes / int(sizeof(Element)), typename Traits::SmemLayoutKV{});
  Tensor sV = make_tensor(sK.data() + Traits::kSmemKVBytes / int(sizeof(Element)), typename Traits::SmemLayoutKV{});
  Tensor sVt = make_tensor(sV.data(), typename Traits::SmemLayoutVt{});

  typename Traits::GmemCopyQKV gmem_copy;
  auto gmem_thr = gmem_copy.get_thread_slice(tid);
  Tensor tQsQ = gmem_thr.partition_D(sQ);
  Tensor tKsK = gmem_thr.partition_D(sK);
  Tensor tVsV = gmem_thr.partition_D(sV);
  Tensor tQcQ = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor tKVcKV = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));

  typename Traits::TiledMma tiled_mma;
  auto thr_mma = tiled_mma.get_thread_slice(tid);
  Tensor tSrQ = make_fragment_a<Element>(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  Tensor tSrK = make_fragment_b<Element>(tiled_mma, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  // P·V operand fragment of one head-dim chunk of V^T (see Fa1TileSize::kOChunk).
  constexpr int kOChunk = Fa1TileSize<kHeadDim>::kOChunk;
  static_assert(kHeadDim % kOChunk == 0 && kOChunk % 16 == 0, "whole chunks of n8 tile pairs");
  Tensor tOrVt_chunk = make_fragment_b<Element>(tiled_mma, Shape<Int<kOChunk>, Int<kBlockN>>{});
  auto smem_copy_q = tiled_copy_a(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_thr_q = smem_copy_q.get_thread_slice(tid);
  Tensor tSsQ = smem_thr_q.partition_S(sQ);
  auto smem_copy_k = tiled_copy_b(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_thr_k = smem_copy_k.get_thread_slice(tid);
  Tensor tSsK = smem_thr_k.partition_S(sK);
  auto smem_copy_v = tiled_copy_b(typename Traits::SmemCopyAtomTransposed{}, tiled_mma);
  auto smem_thr_v = smem_copy_v.get_thread_slice(tid);

  // Tile coordinates of this thread's S and O elements, as (row, col) views.
  Tensor tScS = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
  Tensor tScS_rc = make_tensor(tScS.data(), acc_rowcol(tScS.layout()));
  Tensor tOcO = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor tOcO_rc = make_tensor(tOcO.data(), acc_rowcol(tOcO.layout()));
  constexpr int kRows = decltype(size<0>(tOcO_rc))::value;
  constexpr int kCols = decltype(size<1>(tOcO_rc))::value;
  static_assert(kCols % 2 == 0, "O columns come in contiguous pairs");
  // One n8 tile = 2 columns of the (row, col) view, so chunk ch is view columns
  // [ch * kChunkCols, (ch + 1) * kChunkCols), the same values as acc_o's n8 tiles of that chunk.
  static_assert(kCols == kHeadDim / 4, "O fragment: one n8 tile per 8 head-dim columns");
  constexpr int kChunkCols = kOChunk / 4;
  const bool quad_leader = get<1>(tOcO_rc(0, 0)) == 0;

  const ScoreScale score_scale = make_score_scale<kSoftcap>(p.scale, p.softcap);

  // Query blocks that see no key are never visited by Algorithm 1's loops: O = 0, LSE = -inf.
  {
    Tensor zero_acc = make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
    clear(zero_acc);
    Tensor zero_o = make_tensor(zero_acc.data(), acc_rowcol(zero_acc.layout()));
    float lse_empty[kRows];
    CUTE_UNROLL
    for (int r = 0; r < kRows; ++r) lse_empty[r] = -INFINITY;
    for (int mb = 0; mb < num_m_blocks; ++mb) {
      int lo, hi;
      kv_blocks(mb, &lo, &hi);
      if (lo >= hi)
        fa1_write_output(p, o_base, q_len, seq.q_start, batch, head, mb * kBlockM, zero_o, tOcO_rc,
                         0, kCols, lse_empty, quad_leader);
    }
  }

  // ---- Algorithm 1: outer loop over K/V blocks, inner loop over query blocks -------------------
  for (int n = 0; n < num_n_blocks; ++n) {
    const int col0 = n * kBlockN;
    __syncthreads();  // every warp is done with K_{j-1}, V_{j-1} and the last Q tile
    load_rows(gmem_copy, gmem_thr.partition_S(gmem_tile<kBlockN, kHeadDim>(k_base, p.k_str.row, col0)), tKsK,
              tKVcKV, k_len - col0);
    load_rows(gmem_copy, gmem_thr.partition_S(gmem_tile<kBlockN, kHeadDim>(v_base, p.v_str.row, col0)), tVsV,
              tKVcKV, k_len - col0);
    cp_async_fence();

    for (int mb = 0; mb < num_m_blocks; ++mb) {
      int lo, hi;
      kv_blocks(mb, &lo, &hi);
      if (n < lo || n >= hi) continue;  // uniform across the CTA
      const int row0 = mb * kBlockM;
      const int rows_here = cute::min(kBlockM, q_len - row0);

      __syncthreads();  // every warp is done reading the previous Q tile
      load_rows(gmem_copy, gmem_thr.partition_S(gmem_tile<kBlockM, kHeadDim>(q_base, p.q_str.row, row0)), tQsQ,
                tQcQ, rows_here);
      cp_async_fence();
      cp_async_wait<0>();
      __syncthreads();

      Tensor acc_s = make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kBlockN>>{});
      clear(acc_s);
      gemm_ss(acc_s, tSrQ, tSrK, tSsQ, tSsK, tiled_mma, smem_copy_q, smem_copy_k, smem_thr_q, smem_thr_k);
      Tensor s_rc = make_tensor(acc_s.data(), acc_rowcol(acc_s.layout()));
      if constexpr (kSoftcap) {
        if (score_scale.capped) apply_softcap(acc_s, score_scale.tanh_arg);
      }
      if (col0 + kBlockN > k_len ||
          (kMasked && !mask.block_unmasked(row0, row0 + rows_here, col0, col0 + kBlockN)))
        mask_scores<kMasked, kBlockN>(s_rc, tScS_rc, mask, row0, col0);

      // Running state of this thread's rows, from HBM (or empty on the first block they see).
      const bool first = n == lo;
      const bool last = n == hi - 1;
      float m_new[kRows], coef_old[kRows], coef_new[kRows], lse[kRows], l_new[kRows];
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const int i = row0 + get<0>(tScS_rc(r, 0));
        const bool valid = i < q_len;
        const float m_old = (first || !valid) ? -INFINITY : ws.m[ws_row0 + i];
        const float l_old = (first || !valid) ? 0.f : ws.l[ws_row0 + i];
        float block_max = m_old;
        CUTE_UNROLL
        for (int c = 0; c < size<1>(s_rc); ++c) block_max = fmaxf(block_max, s_rc(r, c));
        m_new[r] = quad_max(block_max);
        const float m_scaled = m_new[r] == -INFINITY ? 0.f : core::log2_ref(m_new[r], score_scale.log2);
        float sum = 0.f;
        CUTE_UNROLL
        for (int c = 0; c < size<1>(s_rc); ++c) {
          s_rc(r, c) = exp2f(core::exp2_arg(s_rc(r, c), score_scale.log2, m_scaled));
          sum += s_rc(r, c);
        }
        // 0 if m_old = -inf
        const float carried = exp2f(core::ref_delta(core::log2_ref(m_old, score_scale.log2), m_scaled)) * l_old;
        l_new[r] = carried + quad_sum(sum);
        const bool empty = !(l_new[r] > 0.f);
        coef_old[r] = empty ? 0.f : carried / l_new[r];
        coef_new[r] = empty ? 0.f : 1.f / l_new[r];
        lse[r] = empty ? -INFINITY : m_new[r] * score_scale.natural + logf(l_new[r]);
      }

      // P·V_j for this block alone, then the paper's renormalised update of O_i, one head-dim
      // chunk at a time (a chunk's O values are dead once written back or out).
      Tensor acc_o = make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
      // acc_o's n8 tiles grouped per chunk: (frag, MMA_M, (tiles per chunk, chunk)).
      Tensor acc_o_by_chunk =
          logical_divide(acc_o, Shape<Underscore, Underscore, Int<kOChunk / 8>>{});
      Tensor o_rc = make_tensor(acc_o.data(), acc_rowcol(acc_o.layout()));
      Tensor p_frag = convert_fragment<Element>(acc_s);
      Tensor tOrP = make_tensor(p_frag.data(), acc_as_operand_a(p_frag.layout()));
      CUTE_UNROLL
      for (int ch = 0; ch < kHeadDim / kOChunk; ++ch) {
        Tensor acc_o_chunk = acc_o_by_chunk(_, _, make_coord(_, ch));
        clear(acc_o_chunk);
        Tensor tOsVt_chunk = smem_thr_v.partition_S(
            local_tile(sVt, Shape<Int<kOChunk>, Int<kBlockN>>{}, make_coord(ch, 0)));
        gemm_rs(acc_o_chunk, tOrP, tOrVt_chunk, tOsVt_chunk, tiled_mma, smem_copy_v, smem_thr_v);

        const int c_begin = ch * kChunkCols;
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) {
          const int i = row0 + get<0>(tOcO_rc(r, 0));
          float* ws_o_row = ws.o + (ws_row0 + i) * kHeadDim;
          CUTE_UNROLL
          for (int c = c_begin; c < c_begin + kChunkCols; c += 2) {
            const int col = get<1>(tOcO_rc(r, c));
            float2 old = make_float2(0.f, 0.f);
            if (!first && i < q_len) old = *reinterpret_cast<const float2*>(ws_o_row + col);
            o_rc(r, c) = coef_old[r] * old.x + coef_new[r] * o_rc(r, c);
            o_rc(r, c + 1) = coef_old[r] * old.y + coef_new[r] * o_rc(r, c + 1);
            if (!last && i < q_len)
              *reinterpret_cast<float2*>(ws_o_row + col) = make_float2(o_rc(r, c), o_rc(r, c + 1));
          }
        }
        if (last)
          fa1_write_output(p, o_base, q_len, seq.q_start, batch, head, row0, o_rc, tOcO_rc, c_begin,
                           c_begin + kChunkCols, lse, quad_leader && ch == 0);
      }
      if (!last) {
        __syncwarp();  // the quad's reads of m_i, l_i above happen before lane 0 overwrites them
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) {
          const int i = row0 + get<0>(tOcO_rc(r, 0));
          if (quad_leader && i < q_len) {
            ws.m[ws_row0 + i] = m_new[r];
            ws.l[ws_row0 + i] = l_new[r];
          }
        }
      }
    }
  }
}

}  // namespace sm80

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm80_fa1_fwd(const core::AttnParams& p, cudaStream_t stream, void* ws) {
  using Tile = sm80::Fa1TileSize<kHeadDim>;
  using Traits = sm80::FwdTraits<Element, kHeadDim, Tile::kBlockM, Tile::kBlockN, Tile::kNWarps>;
  if (p.heads_q == 0 || p.batch == 0 || p.total_q == 0) return core::Status::success();
  FA_RETURN_IF_ERROR(sm80::check_vector_alignment(p, "sm80 FA1 forward"));
  if (p.batch > 65535) return core::unsupported("sm80 FA1 forward grid: batch must be <= 65535");
  if (ws == nullptr) return core::internal("sm80 FA1 forward: missing workspace");
  const int64_t rows = int64_t(p.heads_q) * p.total_q;
  sm80::Fa1Workspace w;
  w.o = static_cast<float*>(ws);
  w.m = w.o + rows * kHeadDim;
  w.l = w.m + rows;
  auto kernel = &sm80::fa1_fwd_kernel<Traits, kMasked, kSoftcap>;
  constexpr int kSmem = Traits::kSmemBytes;
  if (kSmem > 48 * 1024) {
    cudaError_t e = set_max_dynamic_smem(kernel, kSmem, p.device_id);
    if (e != cudaSuccess)
      return cuda_call_failed(e, "sm80 FA1 forward: cudaFuncSetAttribute(max dynamic shared memory)");
  }
  dim3 grid(unsigned(p.heads_q), unsigned(p.batch));
  kernel<<<grid, Traits::kNThreads, kSmem, stream>>>(p, w);
  return check_launch("sm80 FA1 forward");
}

}  // namespace fa::cuda
