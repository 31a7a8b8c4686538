// Tile sizes and CuTe layouts of the sm80-class forwards (FA2 and FA1). The tile-size table is the
// one place to tune; everything else is derived from it.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/params.hpp"
#include "core/status.hpp"
#include "cuda/common/sm80_tile.cuh"

namespace fa::cuda::sm80 {

// FA2 forward tiles by head dim. Each warp owns 16·k query rows (kBlockM / kNWarps must be a
// multiple of 16). Sizes keep acc_o + acc_s + operand fragments within 255 registers and the
// Q + K + V tiles within shared memory (H200 227 KB, A100 163 KB):
//   d ≤ 128: 128 x 64, 4 warps (32 rows each): S is 32 fp32 per thread, O is d/2. A 128 x 128 tile
//            at d64 (FA2's non-causal choice) spills 180 B here: S doubles and so do K fragments.
//   d 192/256: 128 x 64, 8 warps (one 16-row slab each): O at 32 rows/warp would not fit.
// 128 query rows per CTA halve K/V re-reads from L2 compared with 64 (all query blocks of a head
// stream the same K/V).
// At 4 warps ptxas reports 242-255 registers for d ≤ 128. With the lean/boundary loop steps, the
// exact conditional O rescale, row sums pinned before P·V and per-step (opaque) addressing
// (flash_fwd.cuh: FA_SM80_FWD_SKIP_UNCHANGED_RESCALE, _PIN_ROW_SUM, _OPAQUE_ADDR) the sm_90a bf16
// spills are 0 B at d32-d96, d192 and d256 and 16 B (d128) / 52 B (d128 masked) at d128 (were
// 176 / 268 B with the inline rescale): loop-invariant values the boundary step needs. At d128
// FA_SM80_FWD_MASK_BOUNDS32 and _BOUNDARY_THREAD_LOADS (flash_fwd.cuh) remove those too (0 B in
// all six d128 instances, 254-255 registers). 8 warps would remove them at the cost of twice the
// K/V ldmatrix traffic per FLOP. Build with -DFA_SM80_FWD_WARPS_SMALL_D=8 to measure that trade.
#ifndef FA_SM80_FWD_WARPS_SMALL_D
#define FA_SM80_FWD_WARPS_SMALL_D 4
#endif
#ifndef FA_SM80_FWD_D128_BLOCK_N
#define FA_SM80_FWD_D128_BLOCK_N 64  // keys per step at d 96/128 (32 still spills 136 B at d128)
#endif
// Query rows per CTA of the masked (causal/local) instances at d 192/256. 128 (8 warps, 128 KB of
// smem at d256: one CTA per SM) is the default. 64 (4 warps, one 16-row slab each; 96 KB at d256,
// two CTAs per SM) is the alternative for short causal sequences: twice the CTAs over the same
// work, the diagonal's partly masked blocks cover half as many rows, and two CTAs per SM let one
// CTA's softmax overlap the other's MMAs. Cost: every query block re-reads K/V, twice the L2->smem
// traffic per FLOP, and 4 warps per CTA. Measured on the H200 (session 4, d256 causal N 512-4096,
// against PyTorch's FA2 in the same run): 0.97-1.00x with 64, 0.81-0.89x with 128, so 64 is the
// default. FA_SM80_FWD_WIDE_D_BLOCK_M is the same choice for the unmasked instances: d256
// non-causal N 512/2k/8k 0.98/0.98/0.99x with 64, 0.88/0.91/0.95x with 128 (same run), default 64.
#ifndef FA_SM80_FWD_WIDE_D_MASKED_BLOCK_M
#define FA_SM80_FWD_WIDE_D_MASKED_BLOCK_M 64
#endif
#ifndef FA_SM80_FWD_WIDE_D_BLOCK_M
#define FA_SM80_FWD_WIDE_D_BLOCK_M 64
#endif
template <int kHeadDim, bool kMasked>
struct FwdTileSize {
  static constexpr bool kNarrowM =
      kHeadDim > 128 && (kMasked ? FA_SM80_FWD_WIDE_D_MASKED_BLOCK_M : FA_SM80_FWD_WIDE_D_BLOCK_M) == 64;
  static_assert(FA_SM80_FWD_WIDE_D_MASKED_BLOCK_M == 64 || FA_SM80_FWD_WIDE_D_MASKED_BLOCK_M == 128);
  static_assert(FA_SM80_FWD_WIDE_D_BLOCK_M == 64 || FA_SM80_FWD_WIDE_D_BLOCK_M == 128);
  static constexpr int kBlockM = kNarrowM ? 64 : 128;
  static constexpr int kBlockN = (kHeadDim == 96 || kHeadDim == 128) ? FA_SM80_FWD_D128_BLOCK_N : 64;
  static constexpr int kNWarps = kHeadDim <= 128 ? FA_SM80_FWD_WARPS_SMALL_D : (kNarrowM ? 4 : 8);
};

template <typename Element_, int kHeadDim_, int kBlockM_, int kBlockN_, int kNWarps_>
struct FwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockN = kBlockN_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kNThreads = kNWarps * 32;
  static_assert(kBlockM % (16 * kNWarps) == 0, "each warp owns whole 16-row MMA slabs");
  static_assert(kBlockN % 16 == 0 && kHeadDim % 16 == 0, "MMA k-slices are 16 wide");

  // Shared tiles are rows of 64 elements (128 B, all 32 banks) where the head dim allows, else 32;
  // the XOR swizzle permutes 16-byte chunks across 8 rows so that both the cp.async row writes and
  // the ldmatrix 8x8 reads (plain and transposed) hit 8 distinct bank groups.
  static constexpr int kSmemRowElems = kHeadDim % 64 == 0 ? 64 : 32;
  static constexpr int kSwizzleBits = kSmemRowElems == 64 ? 3 : 2;
  using SmemLayoutAtom = decltype(composition(
      Swizzle<kSwizzleBits, 3, 3>{},
      Layout<Shape<_8, Int<kSmemRowElems>>, Stride<Int<kSmemRowElems>, _1>>{}));
  using SmemLayoutQ = decltype(tile_to_shape(SmemLayoutAtom{}, Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  using SmemLayoutKV = decltype(tile_to_shape(SmemLayoutAtom{}, Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  // V^T (head_dim x keys) is the same memory read column-wise: the B operand of P·V.
  using SmemLayoutVt = decltype(composition(
      SmemLayoutKV{}, make_layout(Shape<Int<kHeadDim>, Int<kBlockN>>{}, GenRowMajor{})));
  using SmemLayoutVtPlain = decltype(get_nonswizzle_portion(SmemLayoutVt{}));
  using SmemLayoutO = SmemLayoutQ;  // O is staged in Q's tile for the coalesced store

  static constexpr int kSmemQBytes = int(cosize_v<SmemLayoutQ>) * int(sizeof(Element));
  static constexpr int kSmemKVBytes = int(cosize_v<SmemLayoutKV>) * int(sizeof(Element));
  static constexpr int kSmemBytes = kSmemQBytes + 2 * kSmemKVBytes;

  using MmaAtomArch = std::conditional_t<std::is_same_v<Element, cutlass::half_t>,
                                         SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x16_F32BF16BF16F32_TN>;
  // Warps stacked along M: warp w owns rows 16w + 16·kNWarps·i of the block.
  using TiledMma = TiledMMA<MMA_Atom<MmaAtomArch>, Layout<Shape<Int<kNWarps>, _1, _1>>,
                            Tile<Int<16 * kNWarps>, _16, _16>>;

  using SmemCopyAtom = Copy_Atom<SM75_U32x4_LDSM_N, Element>;            // Q, K: ldmatrix
  using SmemCopyAtomTransposed = Copy_Atom<SM75_U16x8_LDSM_T, Element>;  // V^T: ldmatrix.trans
  using SmemCopyAtomO = Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<128>, Element>;

  // gmem <-> smem: 16-byte vectors, kGmemThreadsPerRow threads cover one smem row of a tile.
  static constexpr int kGmemElemsPerVector = 16 / int(sizeof(Element));
  static constexpr int kGmemThreadsPerRow = kSmemRowElems / kGmemElemsPerVector;
  using GmemThreadLayout = Layout<Shape<Int<kNThreads / kGmemThreadsPerRow>, Int<kGmemThreadsPerRow>>,
                                  Stride<Int<kGmemThreadsPerRow>, _1>>;
  static_assert(kBlockN % (kNThreads / kGmemThreadsPerRow) == 0, "tile rows per copy pass");
  using GmemCopyQKV = decltype(make_tiled_copy(
      Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>, Element>{}, GmemThreadLayout{},
      Layout<Shape<_1, Int<kGmemElemsPerVector>>>{}));
  using GmemCopyO = decltype(make_tiled_copy(Copy_Atom<UniversalCopy<cute::uint128_t>, Element>{},
                                             GmemThreadLayout{},
                                             Layout<Shape<_1, Int<kGmemElemsPerVector>>>{}));
};

// The kernels move Q/K/V/O in 16-byte vectors (cp.async, ldmatrix-friendly rows): every base
// pointer must be 16-byte aligned and every batch/row/head stride a multiple of 8 elements.
// Validation accepts any stride, so the launchers check and refuse with a clear message.
inline core::Status check_vector_alignment(const core::AttnParams& p, const char* who) {
  auto aligned = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; };
  auto strided = [](const core::Strides& s) {
    return s.batch % 8 == 0 && s.row % 8 == 0 && s.head % 8 == 0;
  };
  if (!aligned(p.q) || !aligned(p.k) || !aligned(p.v) || !aligned(p.o) || !strided(p.q_str) ||
      !strided(p.k_str) || !strided(p.v_str) || !strided(p.o_str))
    return core::unsupported(std::string(who) +
                             ": q, k, v and out need 16-byte aligned data and batch/row/head "
                             "strides that are multiples of 8 elements");
  return core::Status::success();
}

}  // namespace fa::cuda::sm80
