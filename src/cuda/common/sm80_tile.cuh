// Register-fragment and tile helpers for sm80-class (mma.sync m16n8k16) kernels, shared by the
// FA1/FA2 forwards and usable by the sm80 backward:
//   - views of an m16n8 accumulator fragment as (row, col) and as the A operand of the next MMA,
//   - smem->register GEMM loops with ldmatrix prefetch of the next k-slice,
//   - row-predicated gmem->smem tile loads (rows past the sequence end are zero-filled),
//   - quad (4-lane) reductions for row statistics, fp32 -> fp16/bf16 fragment conversion.
// Everything is CuTe; the helpers assume the SM80 16x8x16 atom layouts (static_asserts check).
#pragma once

#include <cute/tensor.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>

namespace fa::cuda::sm80 {

using namespace cute;

// An m16n8 accumulator fragment has layout ((2 cols, 2 row-halves), MMA_M, MMA_N). The (row, col)
// view puts the two row-halves with the M tiles and the column pairs with the N tiles, so row r
// of the view is one query row and softmax loops read naturally.
template <class Layout>
CUTE_HOST_DEVICE constexpr auto acc_rowcol(Layout const& acc) {
  static_assert(decltype(rank(acc))::value == 3, "expects ((2,2), MMA_M, MMA_N)");
  static_assert(decltype(size<0>(acc))::value == 4, "expects the m16n8 accumulator layout");
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)), make_layout(get<0, 0>(acc), get<2>(acc)));
}

// The accumulator of two adjacent n8 tiles holds exactly the A-operand values of one k16 slice of
// m16n8k16 (rows g/g+8, columns 2t..2t+1 and +8), so P = softmax(S) feeds P·V straight from
// registers: ((2,2), MMA_M, MMA_N) -> ((2,2,2), MMA_M, MMA_N/2).
template <class Layout>
CUTE_HOST_DEVICE constexpr auto acc_as_operand_a(Layout const& acc) {
  static_assert(decltype(size<2>(acc))::value % 2 == 0, "P·V needs an even number of n8 tiles");
  auto l = logical_divide(acc, Shape<Underscore, Underscore, _2>{});  // ((2,2), M, (2, N/2))
  return make_layout(make_layout(get<0>(l), get<2, 0>(l)), get<1>(l), get<2, 1>(l));
}

// Register fragments of the MMA operands for a (rows, k) tile, from the tile's shape
// (partition_shape_A/B). partition_fragment_A/B of the shared-memory tile would run the swizzled
// smem layout's partition algebra and make_fragment_like only to type a register array: ~200 MB of
// compiler memory in an sm80 forward unit (house limit 2 GB). The fragment's layout differs (compact
// instead of ordered like the smem strides), which the generated code does not see: the array lives
// in registers and every access (retile_D, gemm) goes through its (V, M, K) coordinates; the SASS of
// the forward units was compared identical (cuobjdump) with the old form.
template <class Element, class TiledMma, class ShapeMK>
CUTE_DEVICE auto make_fragment_a(TiledMma const& mma, ShapeMK const& shape_mk) {
  return make_tensor<Element>(partition_shape_A(mma, shape_mk));
}
template <class Element, class TiledMma, class ShapeNK>
CUTE_DEVICE auto make_fragment_b(TiledMma const& mma, ShapeNK const& shape_nk) {
  return make_tensor<Element>(partition_shape_B(mma, shape_nk));
}

// cute::copy(atom, src, dst) for (V, Rest...) partitions without broadcast (stride-0) modes: the
// same atom.call per vector, in the same order (modes 1.. grouped, as cute::copy does). cute::copy's
// static-shape path first runs the layout algebra of its broadcast filter (nullspace,
// zipped_divide) on the full partition types: about a thousand template instantiations per
// call-site type that change nothing here, and the compiler's memory grows with instantiations.
template <class Atom, class Src, class Dst>
CUTE_DEVICE void copy_vectors(Atom const& atom, Src const& src, Dst&& dst) {
  constexpr int R = decltype(rank(src))::value;
  static_assert(R >= 2 && R == decltype(rank(dst))::value, "expects (V, Rest...)");
  if constexpr (R > 2) {
    copy_vectors(atom, group_modes<1, R>(src), group_modes<1, R>(dst));
  } else {
    static_assert(decltype(size<1>(src))::value == decltype(size<1>(dst))::value);
    CUTE_UNROLL
    for (int i = 0; i < size<1>(dst); ++i) atom.call(src(_, i), dst(_, i));
  }
}

// cute::copy with an AutoVectorizingCopyWithAssumedAlignment atom whose vector width the caller
// knows (VecT): the element-wise loop over VecT-recast views that cute::copy ends in, without its
// common-vector/alignment algebra (~100 MB of compiler memory per call-site type).
template <class VecT, class Src, class Dst>
CUTE_DEVICE void copy_as(Src const& src, Dst&& dst) {
  Tensor s = recast<VecT>(src);
  Tensor d = recast<VecT>(dst);
  CUTE_UNROLL
  for (int i = 0; i < size(d); ++i) d(i) = s(i);
}

// acc += A·B with both operands in shared memory: ldmatrix of k-slice k+1 is issued before the
// MMAs of slice k so shared-memory latency hides behind tensor-core work.
// kPrefetch = false leaves the load order to ptxas (fewer live fragments when registers are tight).
template <bool kPrefetch = true, class Acc, class RA, class RB, class SA, class SB, class TiledMma,
          class CopyA, class CopyB, class ThrCopyA, class ThrCopyB>
CUTE_DEVICE void gemm_ss(Acc& acc, RA& rA, RB& rB, SA const& sA, SB const& sB, TiledMma const& mma,
                         CopyA const& copy_a, CopyB const& copy_b, ThrCopyA const& thr_copy_a,
                         ThrCopyB const& thr_copy_b) {
  auto rA_view = thr_copy_a.retile_D(rA);
  auto rB_view = thr_copy_b.retile_D(rB);
  constexpr int kSlices = decltype(size<2>(rA))::value;
  if constexpr (kPrefetch) {
    copy_vectors(copy_a, sA(_, _, 0), rA_view(_, _, 0));
    copy_vectors(copy_b, sB(_, _, 0), rB_view(_, _, 0));
  }
  CUTE_UNROLL
  for (int k = 0; k < kSlices; ++k) {
    const int kl = kPrefetch ? k + 1 : k;  // the slice loaded in this step
    if (kl < kSlices) {
      copy_vectors(copy_a, sA(_, _, kl), rA_view(_, _, kl));
      copy_vectors(copy_b, sB(_, _, kl), rB_view(_, _, kl));
    }
    cute::gemm(mma, rA(_, _, k), rB(_, _, k), acc);
  }
}

// acc += A·B with A already in registers (P) and B in shared memory (V^T via ldmatrix.trans).
// kPrefetch issues slice k+1's ldmatrix before slice k's MMAs; off, ptxas schedules the loads
// itself, which matters when B is wide (V^T at d >= 128 is 32 registers per slice).
template <bool kPrefetch = true, class Acc, class RA, class RB, class SB, class TiledMma, class CopyB,
          class ThrCopyB>
CUTE_DEVICE void gemm_rs(Acc& acc, RA const& rA, RB& rB, SB const& sB, TiledMma const& mma,
                         CopyB const& copy_b, ThrCopyB const& thr_copy_b) {
  auto rB_view = thr_copy_b.retile_D(rB);
  constexpr int kSlices = decltype(size<2>(rA))::value;
  if constexpr (kPrefetch) copy_vectors(copy_b, sB(_, _, 0), rB_view(_, _, 0));
  CUTE_UNROLL
  for (int k = 0; k < kSlices; ++k) {
    if constexpr (kPrefetch) {
      if (k < kSlices - 1) copy_vectors(copy_b, sB(_, _, k + 1), rB_view(_, _, k + 1));
    } else {
      copy_vectors(copy_b, sB(_, _, k), rB_view(_, _, k));
    }
    cute::gemm(mma, rA(_, _, k), rB(_, _, k), acc);
  }
}

// Loads a (rows, head_dim) tile; src/dst/coord are a gmem tiled copy's partitions
// (CPY, CPY_M, CPY_K). Rows at or past row_limit are zero-filled with plain stores instead of
// being read: past the sequence end memory may be another sequence's or unmapped, and zeros keep
// padded V rows from turning 0·garbage into NaN in P·V. The head dim is always whole (instances
// are compiled per exact head dim), so only rows are predicated.
template <class TiledCopy, class Src, class Dst, class Coord>
CUTE_DEVICE void load_rows(TiledCopy const& tiled_copy, Src const& src, Dst&& dst, Coord const& coord,
                           int row_limit) {
  CUTE_UNROLL
  for (int m = 0; m < size<1>(dst); ++m) {
    if (get<0>(coord(0, m, 0)) < row_limit) {
      copy_vectors(tiled_copy, src(_, m, _), dst(_, m, _));
    } else {
      clear(dst(_, m, _));
    }
  }
}

// Stores rows below row_limit of a tile (the epilogue's predicated 16-byte stores).
template <class TiledCopy, class Src, class Dst, class Coord>
CUTE_DEVICE void store_rows(TiledCopy const& tiled_copy, Src const& src, Dst&& dst, Coord const& coord,
                            int row_limit) {
  CUTE_UNROLL
  for (int m = 0; m < size<1>(src); ++m) {
    if (get<0>(coord(0, m, 0)) < row_limit) copy_vectors(tiled_copy, src(_, m, _), dst(_, m, _));
  }
}

// The four lanes of a quad hold one accumulator row between them (lane % 4 picks columns).
CUTE_DEVICE float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
CUTE_DEVICE float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// fp32 fragment -> To fragment of the same layout, converted two at a time (cvt.rn.f16x2/bf16x2).
template <typename To, class Engine, class Layout>
CUTE_DEVICE auto convert_fragment(Tensor<Engine, Layout> const& src) {
  using From = typename Engine::value_type;
  constexpr int N = decltype(size(src))::value;
  Tensor dst = make_tensor<To>(src.layout());
  cutlass::NumericArrayConverter<To, From, N> convert;
  *reinterpret_cast<cutlass::Array<To, N>*>(dst.data()) =
      convert(*reinterpret_cast<const cutlass::Array<From, N>*>(src.data()));
  return dst;
}

}  // namespace fa::cuda::sm80
