// Epilogue of the Hopper forward (flash_fwd_kernel.cuh): a consumer warpgroup's finished rows,
// O / l in registers, converted to the output type (convert) and written out (store): through
// shared memory and one TMA store per warpgroup where the call allows it (stmatrix staging into
// the warpgroup's half of the O buffer), else by predicated direct stores from registers (16 bytes
// after a transpose inside each quad where O is aligned for it); the rows' LSE by direct stores.
// The kernel may run the two halves at different points (FA_SM90_FWD_EPI_OVERLAP, _EPI_LATE:
// convert at the tile's end, store behind the next tile's first GEMMs).
#pragma once

#include <cute/tensor.hpp>  // first, as in flash_fwd_kernel.cuh

#include <cutlass/arch/barrier.h>
#include <cutlass/numeric_conversion.h>

#include <cstdint>

#include "core/params.hpp"
#include "cuda/common/mma_partition.hpp"
#include "cuda/common/quad_store.cuh"
#include "cuda/common/sm90_stmatrix.cuh"
#include "cuda/scheduler/tile_scheduler.hpp"
#include "cuda/sm90/fwd_softmax.hpp"
#include "cuda/sm90/fwd_timeline.hpp"

// O staging of the TMA-store epilogue: 1 = stmatrix.x4 (16 columns × 16 rows per warp and
// instruction) at 32-bit shared addresses from SmemLayoutOHalf; 0 = one 32-bit store per column
// pair through CuTe's tensor, which compiled to generic 64-bit-addressed stores with the swizzle
// redone per store (32 stores per thread at d128; the epilogue was ~1000 instructions per warp,
// ~420 with stmatrix), in the gap between tiles that ping-pong does not hide.
// Layout check: scripts/check_sm90_fwd_layout.cu.
#ifndef FA_SM90_FWD_O_STSM
#define FA_SM90_FWD_O_STSM 1
#endif

// Direct O stores (d192/d256, which have no room for the TMA-store buffer; varlen; packed GQA):
// 1 = each thread computes the 64-bit address of its 2 rows once and stores the row's column
// pairs at constant offsets from it (STG [R+imm]); 0 = the address recomputed per column pair,
// which the compiler kept: ~30 instructions (64-bit multiplies, a branch region) per 4-byte store.
// Static SASS of bf16 d256: epilogue ~2750 → ~600 instructions per warp, against ~490 per key
// block of the mainloop; at N512 (7 key blocks per tile) the old epilogue was ~2750 of the ~6500
// instructions a consumer warp executes per tile, ~40% (ncu, session 6: 53.6 M instructions vs
// cuDNN's 26.6 M). Same stores.
// H200, session 6 round 2 (bf16, TFLOP/s at N 512/1k/8k, builds O_ROW_PTR=0 KEEP_TILE=0 → that
// round's defaults, mask split off; at d256 only this switch differs between the two): d256
// non-causal 416 572 731 → 423 577 749, causal 253 391 652 → 264 402 686. Same-code spread
// between calls up to ~5%.
#ifndef FA_SM90_FWD_O_ROW_PTR
#define FA_SM90_FWD_O_ROW_PTR 1
#endif

// Direct O stores (FA_SM90_FWD_O_ROW_PTR path) through a transpose inside each quad
// (cuda/common/quad_store.cuh): 1 = 16-byte stores (two shuffle rounds), 2 = 8-byte stores (one
// round), 0 = one 4-byte store per column pair. A row's quad then writes 64 (32) contiguous bytes
// per instruction instead of four 4-byte pieces of 16-byte runs. Only where O's base and strides
// are aligned to the store (Params::o_store_wide, host-checked); otherwise the 4-byte stores.
// H200 session 10 (ncu, bf16 d256 N512 non-causal): the 4-byte stores and the conversions waiting
// on their source registers were ~21% of the kernel's stall samples; same-call A/B against 0:
// d256 N512 520 vs 410 TFLOP/s, causal 331 vs 254, N1k +13/+15%, N >= 4k within 2% (LOG.md).
#ifndef FA_SM90_FWD_O_STORE16
#define FA_SM90_FWD_O_STORE16 1
#endif
static_assert(FA_SM90_FWD_O_STORE16 >= 0 && FA_SM90_FWD_O_STORE16 <= 2,
              "FA_SM90_FWD_O_STORE16: 0, 1 or 2");

namespace fa::cuda::sm90 {

// Kernel: the FwdKernel whose tiles it writes (tile shape, output type, shared storage, O layout).
template <class Kernel>
struct FwdEpilogue {
  using Params = typename Kernel::Params;
  using SharedStorage = typename Kernel::SharedStorage;
  using TileWork = typename Kernel::TileWork;
  using Softmax = typename Kernel::Softmax;
  using TiledMmaPV = typename Kernel::TiledMmaPV;
  using SmemLayoutOHalf = typename Kernel::SmemLayoutOHalf;
  using OutElement = typename Kernel::OutElementC;
  static constexpr int kBlockM = Kernel::kBlockM;
  static constexpr int kHeadDim = Kernel::kHeadDimC;
  static constexpr int kWgRows = Kernel::kWgRows;
  static constexpr int kConsumerWGs = Kernel::kConsumerWGs;
  static constexpr bool kFp8 = Kernel::kFp8;
  static constexpr bool kTmaStoreO = Kernel::kTmaStoreO;
  static constexpr int kOStoreRounds = Kernel::kOStoreRounds;
  static constexpr uint32_t kEpilogueBarrierWG1 = Kernel::kEpilogueBarrierWG1;
  static constexpr bool kTileChain = Kernel::kTileChain;

  // Epilogue, first half: O / l → OutElement (rO) and the rows' LSE. fp8: O · (v_scale / l).
  template <class TensorO, class TensorRO>
  __device__ __forceinline__ static void convert(Softmax& softmax, TensorO& tOrO, TensorRO& rO,
                                                 float (&lse)[Softmax::kRowsC],
                                                 float v_scale = 1.f) {
    using namespace cute;
    Tensor o_rc = make_tensor(tOrO.data(), acc_rowcol_layout(tOrO.layout()));
    constexpr int kRows = Softmax::kRowsC;
    float inv_sum[kRows];
    softmax.finalize(inv_sum, lse);
    if constexpr (kFp8) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) inv_sum[r] *= v_scale;  // an empty row stays 0
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int c = 0; c < size<1>(o_rc); ++c) o_rc(r, c) *= inv_sum[r];
    // fp32 → Element once; each thread holds column pairs (2j, 2j+1): one 32-bit store per pair.
    static_assert(decltype(size<0, 0>(tOrO))::value == 2);
    constexpr int kN = decltype(size(tOrO))::value;
    cutlass::NumericArrayConverter<OutElement, float, kN> conv;
    *reinterpret_cast<cutlass::Array<OutElement, kN>*>(rO.data()) =
        conv(*reinterpret_cast<cutlass::Array<float, kN> const*>(tOrO.data()));
  }

  // Epilogue, second half (consumer thread ctid): O stores (TMA or direct) and LSE stores.
  template <class TensorRO>
  __device__ __forceinline__ static void store(Params const& params, SharedStorage& ss,
                                               sched::TileCoord const& tc, TileWork const& we,
                                               TensorRO const& rO,
                                               float const (&lse)[Softmax::kRowsC],
                                               int ctid FA_FWD_TL_PARAM) {
    FA_FWD_TL_NONE
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int consumer_wg = ctid / 128;
    TiledMmaPV mma_pv;
    auto thr_pv = mma_pv.get_thread_slice(ctid);
    Tensor cO = mma_part_c(thr_pv, make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
    using Pair = cutlass::Array<OutElement, 2>;
    bool stored = false;
    if constexpr (kTmaStoreO) {
      if (params.tma_store_o) {
        store_o_tma(params, ss, tc, we.m0, we.seq.q_len, consumer_wg, cO, rO FA_FWD_TL_ARG);
        stored = true;
      }
    }
    if (!stored) {
      // Direct stores: varlen (a TMA box could write rows of the next sequence), O not laid out
      // for TMA, or no room for the O buffer.
      // Packed GQA also lands here (its rows are not one head's contiguous block).
      OutElement* o_base = static_cast<OutElement*>(p.o);
#if FA_SM90_FWD_O_ROW_PTR
      // One address per row, the row's column pairs at constant offsets from it
      // (FA_SM90_FWD_O_ROW_PTR).
      Tensor cO_rc = make_tensor(cO.data(), acc_rowcol_layout(cO.layout()));
      Tensor rO_rc = make_tensor(rO.data(), acc_rowcol_layout(rO.layout()));
      static_assert(decltype(size<1>(rO_rc))::value % 2 == 0);
      bool wide = false;
      if constexpr (kOStoreRounds > 0) {
        if (params.o_store_wide) {
          store_o_rows_wide(params, tc, we, cO, rO);
          wide = true;
        }
      }
      if (!wide) {
#pragma unroll
        for (int r = 0; r < decltype(size<0>(rO_rc))::value; ++r) {
          const int row = get<0>(cO_rc(r, 0));
          const int q_pos = we.m0 + (row >> Kernel::pack_shift_of(params));
          if (q_pos < we.seq.q_len) {
            const int col0 = get<1>(cO_rc(r, 0));
            OutElement* o_row =
                o_base +
                p.o_str.offset(tc.batch, we.seq.q_start + q_pos, tile_row_head(params, tc, row)) +
                col0;
#pragma unroll
            for (int c = 0; c < size<1>(rO_rc); c += 2) {
              Pair v;
              v[0] = rO_rc(r, c);
              v[1] = rO_rc(r, c + 1);
              // A compile-time constant (the fragment layout is static): an immediate store offset.
              *reinterpret_cast<Pair*>(o_row + (get<1>(cO_rc(r, c)) - col0)) = v;
            }
          }
        }
      }
#else
#pragma unroll
      for (int i = 0; i < size(rO); i += 2) {
        const int row = get<0>(cO(i));
        const int col = get<1>(cO(i));
        const int q_pos = we.m0 + (row >> Kernel::pack_shift_of(params));
        if (q_pos < we.seq.q_len) {
          const int64_t off =
              p.o_str.offset(tc.batch, we.seq.q_start + q_pos, tile_row_head(params, tc, row)) +
              col;
          *reinterpret_cast<Pair*>(o_base + off) = *reinterpret_cast<Pair const*>(&rO(i));
        }
      }
#endif
    }
    store_lse(params, tc, we, cO, lse);
  }

  // The rows' LSE (the threads holding column 0 of a row).
  template <class TensorCO>
  __device__ __forceinline__ static void store_lse(Params const& params, sched::TileCoord const& tc,
                                                   TileWork const& we, TensorCO const& cO,
                                                   float const (&lse)[Softmax::kRowsC]) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    if (p.lse != nullptr) {
      Tensor cO_rc = make_tensor(cO.data(), acc_rowcol_layout(cO.layout()));
#pragma unroll
      for (int r = 0; r < Softmax::kRowsC; ++r) {
        const int row = get<0>(cO_rc(r, 0));
        const int q_pos = we.m0 + (row >> Kernel::pack_shift_of(params));
        if (get<1>(cO_rc(r, 0)) == 0 && q_pos < we.seq.q_len)
          p.lse[p.lse_offset(tc.batch, tile_row_head(params, tc, row), we.seq.q_start + q_pos)] =
              lse[r];
      }
    }
  }

  // FA_SM90_FWD_EPI_LATE: the deferred half of a staged tile's epilogue (its O is in this
  // warpgroup's buffer already): the proxy fence, the barrier, the TMA store, the LSE stores.
  // Only TMA-store calls stage, and those are batch form and unpacked (the launcher's rule): the
  // tile starts at row m_block · kBlockM of a sequence of seqlen_q rows at offset 0, so the
  // pending tile costs its coordinates and two LSE values in registers, nothing more.
  template <class Pending>
  __device__ __forceinline__ static void finish_pending(Params const& params, SharedStorage& ss,
                                                        Pending& pend, int ctid) {
    using namespace cute;
    if constexpr (kTmaStoreO) {
      const int consumer_wg = ctid / 128;
      TileWork we;  // only what the stores read
      we.m0 = pend.tc.m_block * kBlockM;
      we.seq.q_start = 0;
      we.seq.q_len = params.attn.seqlen_q;
      issue_o_tma(params, ss, pend.tc, we.m0, we.seq.q_len, consumer_wg);
      TiledMmaPV mma_pv;
      Tensor cO = mma_part_c(mma_pv.get_thread_slice(ctid),
                             make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
      store_lse(params, pend.tc, we, cO, pend.lse);
    }
    pend.valid = false;
  }

  // Direct O stores after a quad transpose (kOStoreRounds, cuda/common/quad_store.cuh): row r's
  // word g (values (r, 2g), (r, 2g + 1) of the row-column view: columns 8g + 2q, +1, lane q = the
  // thread's lane % 4, checked against CuTe's partition by scripts/check_sm90_fwd_layout.cu). The
  // shuffles run in every lane, before the row predicate (a quad's row is the same in its 4 lanes,
  // but other quads of the warp may skip theirs).
  template <class TensorCO, class TensorRO>
  __device__ __forceinline__ static void store_o_rows_wide(Params const& params,
                                                           sched::TileCoord const& tc,
                                                           TileWork const& we, TensorCO const& cO,
                                                           TensorRO const& rO) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    Tensor cO_rc = make_tensor(cO.data(), acc_rowcol_layout(cO.layout()));
    Tensor rO_rc = make_tensor(rO.data(), acc_rowcol_layout(rO.layout()));
    constexpr int kWords = decltype(size<1>(rO_rc))::value / 2;
    static_assert(kWords * 8 == kHeadDim,
                  "a row's words cover the head dim (one wgmma atom per row)");
    const int q = int(threadIdx.x) % 4;
    bool lane_bit[kOStoreRounds];
#pragma unroll
    for (int b = 0; b < kOStoreRounds; ++b) lane_bit[b] = (q >> b) & 1;
#pragma unroll
    for (int r = 0; r < decltype(size<0>(rO_rc))::value; ++r) {
      uint32_t w[kWords];
#pragma unroll
      for (int g = 0; g < kWords; ++g) {
        cutlass::Array<OutElement, 2> v;
        v[0] = rO_rc(r, 2 * g);
        v[1] = rO_rc(r, 2 * g + 1);
        w[g] = reinterpret_cast<uint32_t const&>(v);
      }
      quad_transpose<kOStoreRounds>(w, lane_bit);
      const int row = get<0>(cO_rc(r, 0));
      const int q_pos = we.m0 + (row >> Kernel::pack_shift_of(params));
      if (q_pos < we.seq.q_len) {
        OutElement* o_row =
            static_cast<OutElement*>(p.o) +
            p.o_str.offset(tc.batch, we.seq.q_start + q_pos, tile_row_head(params, tc, row)) +
            quad_store_column(q, kOStoreRounds);
        quad_store_row<kOStoreRounds>(o_row, w);
      }
    }
  }

  // Query head of tile row `row`: the tile's head, or packed, head-in-group row & (G - 1) of the
  // tile's KV head (pack_shift = 0 makes both the same expression).
  __device__ static int tile_row_head(Params const& params, sched::TileCoord const& tc, int row) {
    const int shift = Kernel::pack_shift_of(params);
    return (tc.head << shift) + (row & ((1 << shift) - 1));
  }

  // Byte offset in the (1024-byte aligned) SmemLayoutOHalf buffer of the row that `lane` addresses
  // for stmatrix number j (columns 16j..16j+15): row `row`, column half lane >> 4. The GMMA atoms'
  // swizzle acts on byte addresses (smem_ptr_flag), so it is applied to the unswizzled byte offset.
  CUTE_HOST_DEVICE static uint32_t o_stsm_offset(int row, int j, int lane) {
    constexpr SmemLayoutOHalf l{};
    return uint32_t(
        l.layout_a()(int(sizeof(OutElement)) * int(l.layout_b()(row, j * 16 + (lane >> 4) * 8))));
  }

  // TMA-store epilogue of one consumer warpgroup: its 64 rows go registers → its half of the O
  // buffer (same swizzle as Q, so the 32-bit pair stores of a warp hit distinct banks) → one
  // thread issues the store. Two halves, which FA_SM90_FWD_EPI_LATE runs a tile apart.
  template <class TensorCO, class TensorRO>
  __device__ __forceinline__ static void store_o_tma(Params const& params, SharedStorage& ss,
                                                     sched::TileCoord const& tc, int m0,
                                                     int64_t q_len, int consumer_wg,
                                                     TensorCO const& cO,
                                                     TensorRO const& rO FA_FWD_TL_PARAM) {
    stage_o_tma(ss, consumer_wg, cO, rO FA_FWD_TL_ARG);
    issue_o_tma(params, ss, tc, m0, q_len, consumer_wg);
  }

  // First half: the warpgroup's O into its buffer, once the previous store has read it.
  template <class TensorCO, class TensorRO>
  __device__ __forceinline__ static void stage_o_tma(SharedStorage& ss, int consumer_wg,
                                                     TensorCO const& cO,
                                                     TensorRO const& rO FA_FWD_TL_PARAM) {
    FA_FWD_TL_NONE
    using namespace cute;
    const bool leader = threadIdx.x % 128 == 0;
    const uint32_t barrier = kEpilogueBarrierWG1 + uint32_t(consumer_wg);
    Tensor sO = make_tensor(make_smem_ptr(ss.o.data() + consumer_wg * cosize_v<SmemLayoutOHalf>),
                            SmemLayoutOHalf{});
    // The previous tile's store must have finished reading this buffer before it is overwritten
    // (long done by now: a whole tile's mainloop ran in between).
    if (leader) tma_store_wait<0>();
    cutlass::arch::NamedBarrier::sync(128, barrier);
    timeline_stamp(tl, FwdStamp::EpiBar);
    if constexpr (FA_SM90_FWD_O_STSM != 0) {
      // Registers 4j..4j+3 (values 8j..8j+7: rows r, r+8 of columns 16j..16j+15) are the four
      // 8×8 matrices of instruction j; lane L addresses row L & 15, column half L >> 4 of them.
      int tid = int(threadIdx.x);
      // kTileChain: recomputed per tile rather than hoisted out of the tile loop and kept live
      // (d64's three warpgroups spilled two of these offsets).
      if constexpr (kTileChain) asm volatile("" : "+r"(tid));
      const int lane = tid % 32;
      const int row = (tid % 128) / 32 * 16 + (lane & 15);
      const uint32_t base =
          cast_smem_ptr_to_uint(ss.o.data() + consumer_wg * cosize_v<SmemLayoutOHalf>);
#pragma unroll
      for (int j = 0; j < kHeadDim / 16; ++j) {
        auto r = [&](int m) { return *reinterpret_cast<uint32_t const*>(&rO(8 * j + 2 * m)); };
        const uint32_t addr = base + o_stsm_offset(row, j, lane);
        stmatrix_x4(addr, r(0), r(1), r(2), r(3));
      }
    } else {
#pragma unroll
      for (int i = 0; i < size(cO); i += 2) {
        const int row = get<0>(cO(i)) - consumer_wg * kWgRows;
        const int col = get<1>(cO(i));
        *reinterpret_cast<cutlass::Array<OutElement, 2>*>(&sO(row, col)) =
            *reinterpret_cast<cutlass::Array<OutElement, 2> const*>(&rO(i));
      }
    }
  }

  // Second half, by the threads that staged it: their writes made visible to the async proxy
  // (TMA), all 128 writers done, then one thread issues the store. TMA clips rows beyond the
  // sequence (batch form only).
  __device__ __forceinline__ static void issue_o_tma(Params const& params, SharedStorage& ss,
                                                     sched::TileCoord const& tc, int m0,
                                                     int64_t q_len, int consumer_wg) {
    using namespace cute;
    const bool leader = threadIdx.x % 128 == 0;
    const uint32_t barrier = kEpilogueBarrierWG1 + uint32_t(consumer_wg);
    Tensor sO = make_tensor(make_smem_ptr(ss.o.data() + consumer_wg * cosize_v<SmemLayoutOHalf>),
                            SmemLayoutOHalf{});
    cutlass::arch::fence_view_async_shared();
    cutlass::arch::NamedBarrier::sync(128, barrier);
    if (leader && m0 + consumer_wg * kWgRows < q_len) {
      Tensor mO = params.tma_o.get_tma_tensor(params.shape_q)(_, _, tc.head, tc.batch);
      Tensor gO = local_tile(mO, Shape<Int<kWgRows>, Int<kHeadDim>>{},
                             make_coord(tc.m_block * kConsumerWGs + consumer_wg, _0{}));
      auto [tOgO, tOsO] = tma_partition(params.tma_o, _0{}, Layout<_1>{}, group_modes<0, 2>(sO),
                                        group_modes<0, 2>(gO));
      copy(params.tma_o, tOsO, tOgO);
      tma_store_arrive();
    }
  }
};

}  // namespace fa::cuda::sm90
