// Register-fragment and tile helpers for sm80-class (mma.sync m16n8k16) kernels, shared by the
// FA1/FA2 forwards and usable by the sm80 backward:
//   - views of an m16n8 accumulator fragment as (row, col) and as the A operand of the next MMA,
//   - smem->register GEMM loops with ldmatrix prefetch of the next k-slice,
//   - row-predicated gmem->smem tile loads (rows past the sequence end are zero-filled),
//   - quad (4-lane) reductions for row statistics, fp32 -> fp16/bf16 fragment conversion.
// Everything is CuTe; the helpers assume the SM80 16x8x16 atom layouts (static_asserts check).
#pragma once

#include <type_traits>

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

// Register fragments and smem tiled copies of a tiled m16n8k16 MMA whose W warps are stacked
// along M (Layout<Shape<W, _1, _1>>, Tile<16·W, 16, 16>), with their types written out instead of
// derived. partition_fragment_A/B run the swizzled smem tile's partition algebra and
// make_fragment_like, partition_shape_A/B/C and make_tiled_copy_A/B/C the MMA's thread-value
// algebra, all only to produce these types: ~15k template instantiations, ~0.4 GB of compiler
// memory, in an sm80 forward unit (house limit 2 GB per unit). Fragments are
// A ((2,2,2), M/16W, K/16), B ((2,2), N/8, K/16), C ((2,2), M/16W, N/8), exactly the types
// partition_shape_A/B/C return here; the tiled copies' thread-value layouts are those of
// get_layoutA/B/C_TV for W = 4 and 8 (types compared equal, bf16 and fp16 atoms; other W fall
// back to make_tiled_copy_*). The operand fragments' layout differs from partition_fragment_A/B's
// (compact instead of ordered like the smem strides), which the generated code does not see: the
// array lives in registers and every access (retile_D, gemm) goes through its (V, M, K)
// coordinates. The SASS of the sm80 forward, FA1 and decode units was compared identical
// (cuobjdump) with the derived forms.
template <class TiledMma>
struct MStackedMma;  // left undefined: other MMA layouts need partition_shape_* / make_tiled_copy_*
template <class Arch, int W, int kTileM>
struct MStackedMma<TiledMMA<MMA_Atom<Arch>, Layout<Shape<C<W>, _1, _1>>, Tile<C<kTileM>, _16, _16>>> {
  static_assert(kTileM == 16 * W);
  static_assert(std::is_same_v<typename MMA_Traits<Arch>::Shape_MNK, Shape<_16, _8, _16>>, "m16n8k16 atoms only");
  static constexpr int kWarps = W;
};

template <class Element, class TiledMma, int M, int K>
CUTE_DEVICE auto make_fragment_a(TiledMma const&, Shape<C<M>, C<K>> const&) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  static_assert(K % 16 == 0);
  return make_tensor<Element>(Shape<Shape<_2, _2, _2>, Int<(M + 16 * W - 1) / (16 * W)>, Int<K / 16>>{});
}
template <class Element, class TiledMma, int N, int K>
CUTE_DEVICE auto make_fragment_b(TiledMma const&, Shape<C<N>, C<K>> const&) {
  static_assert(MStackedMma<TiledMma>::kWarps > 0 && N % 8 == 0 && K % 16 == 0);
  return make_tensor<Element>(Shape<Shape<_2, _2>, Int<N / 8>, Int<K / 16>>{});
}
template <class TiledMma, int M, int N>
CUTE_DEVICE auto make_fragment_c(TiledMma const&, Shape<C<M>, C<N>> const&) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  static_assert(N % 8 == 0);
  return make_tensor<typename TiledMma::FrgTypeC>(
      Shape<Shape<_2, _2>, Int<(M + 16 * W - 1) / (16 * W)>, Int<N / 8>>{});
}

template <class... Args, class TiledMma>
CUTE_DEVICE auto tiled_copy_a(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  if constexpr (W == 4 || W == 8) {
    using TV = Layout<Shape<Shape<_4, _8, Int<W>>, Shape<Shape<_2, _2, _2>, Shape<_1, _1>>>,
                      Stride<Stride<Int<32 * W>, _1, _16>, Stride<Stride<Int<16 * W>, _8, Int<128 * W>>, Stride<_0, _0>>>>;
    return TiledCopy<Copy_Atom<Args...>, TV, Shape<Int<16 * W>, _16>>{atom};
  } else {
    return make_tiled_copy_A(atom, mma);
  }
}
template <class... Args, class TiledMma>
CUTE_DEVICE auto tiled_copy_b(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  if constexpr (W == 4 || W == 8) {
    using TV = Layout<Shape<Shape<_4, _8, Int<W>>, Shape<Shape<_2, _2>, Shape<_2, _1>>>,
                      Stride<Stride<_32, _1, _0>, Stride<Stride<_16, _128>, Stride<_8, _0>>>>;
    return TiledCopy<Copy_Atom<Args...>, TV, Shape<_16, _16>>{atom};
  } else {
    return make_tiled_copy_B(atom, mma);
  }
}
template <class... Args, class TiledMma>
CUTE_DEVICE auto tiled_copy_c(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  if constexpr (W == 4 || W == 8) {
    using TV = Layout<Shape<Shape<_4, _8, Int<W>>, Shape<Shape<_2, _2>, Shape<_1, _2>>>,
                      Stride<Stride<Int<32 * W>, _1, _16>, Stride<Stride<Int<16 * W>, _8>, Stride<_0, Int<128 * W>>>>>;
    return TiledCopy<Copy_Atom<Args...>, TV, Shape<Int<16 * W>, _16>>{atom};
  } else {
    return make_tiled_copy_C(atom, mma);
  }
}

// ThrCopy::retile_D of an operand fragment above for an ldmatrix .x4 copy (8 values per thread and
// k16 slice: A is one m16 tile, B two n8 tiles), written out: ((8,1), tiles, K/16) over the same
// registers in the same order (types compared equal to retile_D's for W = 4 and 8). retile_D's
// algebra is ~8k instantiations (~0.2 GB of compiler memory) per forward unit.
template <int kSize, int kStride>
using ModeStride = std::conditional_t<kSize == 1, _0, Int<kStride>>;
template <class TiledMma, class TiledCopy, class ThrCopy, class Engine, class FragLayout>
CUTE_DEVICE auto retile_ldsm_x4(TiledMma const&, TiledCopy const&, ThrCopy const& thr_copy,
                                Tensor<Engine, FragLayout>& frag) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  if constexpr (W == 4 || W == 8) {
    static_assert(decltype(size<1>(typename TiledCopy::TiledLayout_TV{}))::value == 8, "ldmatrix .x4");
    constexpr int kV = decltype(size<0>(frag))::value;  // 8: A, 4: B (values per tile and k16)
    constexpr int kTiles = decltype(size<1>(frag))::value * kV / 8;
    constexpr int kSlices = decltype(size<2>(frag))::value;
    static_assert(kV * decltype(size<1>(frag))::value % 8 == 0);
    using L = Layout<Shape<Shape<_8, _1>, Int<kTiles>, Int<kSlices>>,
                     Stride<Stride<_1, _0>, ModeStride<kTiles, 8>, ModeStride<kSlices, 8 * kTiles>>>;
    return make_tensor(frag.data(), L{});
  } else {
    return thr_copy.retile_D(frag);
  }
}

// ThrCopy::retile_S of an accumulator-shaped 16-bit fragment ((2,2), M/16W, N/8) for the
// tiled_copy_c of a 128-bit auto-vectorising atom (the O tile's smem store), written out (types
// compared equal to retile_S's for W = 4 and 8 and every O tile used).
template <class TiledMma, class TiledCopy, class ThrCopy, class Engine, class FragLayout>
CUTE_DEVICE auto retile_c_store(TiledMma const&, TiledCopy const&, ThrCopy const& thr_copy,
                                Tensor<Engine, FragLayout>& frag) {
  constexpr int W = MStackedMma<TiledMma>::kWarps;
  using Element = typename Engine::value_type;
  using Atom = Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<128>, Element>;
  if constexpr ((W == 4 || W == 8) && sizeof(Element) == 2 && std::is_base_of_v<Atom, TiledCopy>) {
    constexpr int kMt = decltype(size<1>(frag))::value;
    constexpr int kNt = decltype(size<2>(frag))::value;
    static_assert(decltype(size<0>(frag))::value == 4 && kNt % 2 == 0);
    using L = std::conditional_t<
        kMt == 1, Layout<Shape<Shape<_1, _8>, _1, Int<kNt / 2>>, Stride<Stride<_0, _1>, _0, _8>>,
        Layout<Shape<Shape<_1, Shape<_4, _2>>, Int<kMt>, Int<kNt / 2>>, Stride<Stride<_0, Stride<_1, _8>>, _4, Int<8 * kMt>>>>;
    return make_tensor(frag.data(), L{});
  } else {
    return thr_copy.retile_S(frag);
  }
}

// The same written-out types for a tiled m16n8k16 MMA whose warps form a WM x WN grid over M and
// N (Layout<Shape<WM, WN, _1>>, Tile<16·WM, 16·WN, 16>, WN > 1: the sm80 backward's three MMAs).
// Each warp owns 16 rows of every 16·WM and two n8 column tiles of every 16·WN. Fragments:
// A ((2,2,2), M/16WM, K/16), B ((2,2), N/8WN, K/16), C ((2,2), M/16WM, N/8WN); the tiled copies'
// thread-value layouts are get_layoutA/B/C_TV's; the ldmatrix and store retiles are those of
// ThrCopy::retile_D / retile_S. All compared equal (std::is_same) to CuTe's derivation for every
// tile of the backward's table (bf16 and fp16, sm_90a and sm_80 tiles) by a check program (not
// committed: it has to instantiate the algebra this avoids). Other MMAs take CuTe's calls.
template <class TiledMma>
struct WarpGridMma {
  static constexpr bool kKnown = false;
};
template <class Arch, int WM, int WN, int kTileM, int kTileN>
struct WarpGridMma<TiledMMA<MMA_Atom<Arch>, Layout<Shape<C<WM>, C<WN>, _1>>, Tile<C<kTileM>, C<kTileN>, _16>>> {
  static_assert(kTileM == 16 * WM && kTileN == 16 * WN);
  static_assert(std::is_same_v<typename MMA_Traits<Arch>::Shape_MNK, Shape<_16, _8, _16>>, "m16n8k16 atoms only");
  static constexpr bool kKnown = WN > 1 && (WM == 2 || WM == 4) && WM * WN == 8;
  static constexpr int kTM = kTileM, kTN = kTileN;
  using LayoutA_TV = Layout<Shape<Shape<_4, _8, C<WM>, C<WN>>, Shape<Shape<_2, _2, _2>, Shape<_1, _1>>>,
                            Stride<Stride<C<2 * kTM>, _1, _16, _0>, Stride<Stride<C<kTM>, _8, C<8 * kTM>>, Stride<_0, _0>>>>;
  using LayoutB_TV = Layout<Shape<Shape<_4, _8, C<WM>, C<WN>>, Shape<Shape<_2, _2>, Shape<_2, _1>>>,
                            Stride<Stride<C<2 * kTN>, _1, _0, _8>, Stride<Stride<C<kTN>, C<8 * kTN>>, Stride<C<8 * WN>, _0>>>>;
  using LayoutC_TV = Layout<Shape<Shape<_4, _8, C<WM>, C<WN>>, Shape<Shape<_2, _2>, Shape<_1, _2>>>,
                            Stride<Stride<C<2 * kTM>, _1, _16, C<8 * kTM>>, Stride<Stride<C<kTM>, _8>, Stride<_0, C<8 * kTM * WN>>>>>;
};

template <class Element, class TiledMma, int M, int K>
CUTE_DEVICE auto grid_fragment_a(TiledMma const& mma, Shape<C<M>, C<K>> const& shape) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown && M % G::kTM == 0 && K % 16 == 0) {
    return make_tensor<Element>(Shape<Shape<_2, _2, _2>, C<M / G::kTM>, C<K / 16>>{});
  } else {
    return make_tensor<Element>(partition_shape_A(mma, shape));
  }
}
template <class Element, class TiledMma, int N, int K>
CUTE_DEVICE auto grid_fragment_b(TiledMma const& mma, Shape<C<N>, C<K>> const& shape) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown && N % G::kTN == 0 && K % 16 == 0) {
    return make_tensor<Element>(Shape<Shape<_2, _2>, C<N * 2 / G::kTN>, C<K / 16>>{});
  } else {
    return make_tensor<Element>(partition_shape_B(mma, shape));
  }
}
template <class TiledMma, int M, int N>
CUTE_DEVICE auto grid_fragment_c(TiledMma const& mma, Shape<C<M>, C<N>> const& shape) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown && M % G::kTM == 0 && N % G::kTN == 0) {
    return make_tensor<typename TiledMma::FrgTypeC>(Shape<Shape<_2, _2>, C<M / G::kTM>, C<N * 2 / G::kTN>>{});
  } else {
    return partition_fragment_C(mma, shape);
  }
}

template <class... Args, class TiledMma>
CUTE_DEVICE auto grid_tiled_copy_a(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown) {
    return TiledCopy<Copy_Atom<Args...>, typename G::LayoutA_TV, Shape<C<G::kTM>, _16>>{atom};
  } else {
    return make_tiled_copy_A(atom, mma);
  }
}
template <class... Args, class TiledMma>
CUTE_DEVICE auto grid_tiled_copy_b(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown) {
    return TiledCopy<Copy_Atom<Args...>, typename G::LayoutB_TV, Shape<C<G::kTN>, _16>>{atom};
  } else {
    return make_tiled_copy_B(atom, mma);
  }
}
template <class... Args, class TiledMma>
CUTE_DEVICE auto grid_tiled_copy_c(Copy_Atom<Args...> const& atom, TiledMma const& mma) {
  using G = WarpGridMma<TiledMma>;
  if constexpr (G::kKnown) {
    return TiledCopy<Copy_Atom<Args...>, typename G::LayoutC_TV, Shape<C<G::kTM>, C<G::kTN>>>{atom};
  } else {
    return make_tiled_copy_C(atom, mma);
  }
}

// ThrCopy::retile_D of a grid_fragment_a/b for an ldmatrix .x4 copy: ((8,1), tiles, K/16) over
// the fragment's registers in order, as retile_ldsm_x4 above.
template <class TiledMma, class TiledCopy, class ThrCopy, class Engine, class FragLayout>
CUTE_DEVICE auto grid_retile_ldsm_x4(TiledMma const&, TiledCopy const&, ThrCopy const& thr_copy,
                                     Tensor<Engine, FragLayout>& frag) {
  constexpr int kV = decltype(size<0>(frag))::value;  // 8: A, 4: B (values per tile and k16)
  if constexpr (WarpGridMma<TiledMma>::kKnown && (kV == 8 || kV == 4) &&
                decltype(size<1>(typename TiledCopy::TiledLayout_TV{}))::value == 8) {
    constexpr int kTiles = decltype(size<1>(frag))::value * kV / 8;
    constexpr int kSlices = decltype(size<2>(frag))::value;
    static_assert(kV * decltype(size<1>(frag))::value % 8 == 0);
    using L = Layout<Shape<Shape<_8, _1>, C<kTiles>, C<kSlices>>,
                     Stride<Stride<_1, _0>, ModeStride<kTiles, 8>, ModeStride<kSlices, 8 * kTiles>>>;
    return make_tensor(frag.data(), L{});
  } else {
    return thr_copy.retile_D(frag);
  }
}

// ThrCopy::retile_S of an accumulator-shaped 16-bit fragment ((2,2), M/16WM, N/8WN) for the
// grid_tiled_copy_c of an auto-vectorising atom (register -> smem stores of P, dS, dK, dV).
template <class TiledMma, class TiledCopy, class ThrCopy, class Engine, class FragLayout>
CUTE_DEVICE auto grid_retile_c_store(TiledMma const&, TiledCopy const&, ThrCopy const& thr_copy,
                                     Tensor<Engine, FragLayout>& frag) {
  using Element = typename Engine::value_type;
  constexpr int kMt = decltype(size<1>(frag))::value;
  constexpr int kNt = decltype(size<2>(frag))::value;
  if constexpr (WarpGridMma<TiledMma>::kKnown && sizeof(Element) == 2 &&
                std::is_base_of_v<Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<32>, Element>, TiledCopy> &&
                decltype(size<0>(frag))::value == 4 && kNt % 2 == 0) {
    using L = std::conditional_t<
        kMt == 1, Layout<Shape<Shape<_1, _8>, _1, C<kNt / 2>>, Stride<Stride<_0, _1>, _0, ModeStride<kNt / 2, 8>>>,
        Layout<Shape<Shape<_1, Shape<_4, _2>>, C<kMt>, C<kNt / 2>>,
               Stride<Stride<_0, Stride<_1, C<4 * kMt>>>, _4, ModeStride<kNt / 2, 8 * kMt>>>>;
    return make_tensor(frag.data(), L{});
  } else {
    return thr_copy.retile_S(frag);
  }
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
  auto rA_view = retile_ldsm_x4(mma, copy_a, thr_copy_a, rA);
  auto rB_view = retile_ldsm_x4(mma, copy_b, thr_copy_b, rB);
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
  auto rB_view = retile_ldsm_x4(mma, copy_b, thr_copy_b, rB);
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
