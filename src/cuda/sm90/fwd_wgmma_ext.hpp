// Our own SS wgmma atoms (m64nNk16, fp32 accumulators, bf16 / fp16 inputs, A and B K-major in
// shared memory through GMMA descriptors) for the forward's Q·Kᵀ key blocks that are not among
// CuTe's base shapes: N = 80 (unmasked d256) and N = 112 (d192, FwdTile in fwd_tile_config.hpp).
//
// Why not CUTLASS's: its non-base N (24, 40, ..., 248) live in cute/arch/mma_sm90_gmma_ext.hpp and
// cute/atom/mma_traits_sm90_gmma_ext.hpp, ~76k lines for every N × type × operand source, which
// cudafe++ and cicc parse in each unit that enables them (~10 s of a unit's ~33 s, against a budget
// of 30 s per unit; issue 3 item 5). We need two N and two input types, SS and K-major only.
//
// What CuTe needs from an atom (cute/atom/mma_atom.hpp, mma_traits_sm90_gmma.hpp):
//   - the operation: ARegisters / BRegisters = one 64-bit shared-memory descriptor each,
//     CRegisters = the N/2 fp32 accumulators a thread holds, DRegisters = void (D aliases C), and
//     a static fma(desc_a, desc_b, c_0, ..., c_{N/2-1}, scale_D) that GMMA's mma_unpack calls
//     with the accumulators exploded into single references and the traits' accumulate_ as
//     scale_D;
//   - MMA_Traits: value types, FrgTypeA/B = GMMA::smem_desc (so partition_fragment_A/B build
//     descriptor iterators), Shape_MNK, ThrID = the 128 threads of a warpgroup, ALayout / BLayout
//     (GMMA::ABLayout: every thread sees the whole tile through the descriptor), CLayout =
//     GMMA::CLayout_64xN<N> (the accumulator fragment: 2 × 2 values per 8 columns per thread),
//     and the accumulate_ member wgmma_gemm sets to Zero for the first k-block.
// The PTX (ISA "wgmma.mma_async"): D is a brace list of N/2 .f32 registers, then the A and B
// descriptors, then scale-d (a predicate: 0 = D = A·B, 1 = D += A·B), imm-scale-a, imm-scale-b
// (1: no negation) and imm-trans-a, imm-trans-b (0: K-major), the last four constants here.
#pragma once

#include <cute/arch/mma_sm90_gmma.hpp>        // GMMA::ScaleOut, CUTE_ARCH_MMA_SM90A_ENABLED
#include <cute/atom/mma_traits_sm90_gmma.hpp>  // GMMA::smem_desc, ABLayout, CLayout_64xN
#include <cutlass/numeric_types.h>

#include <cstdint>

namespace fa::cuda::sm90::wgmma {

// Operation: D(64 × N, fp32) (+)= A(64 × 16, Q rows) · B(N × 16, key rows)ᵀ. Specialised below
// per (input type, N) for the N that FA_SM90_FWD_OWN_N (fwd_tile_config.hpp) lists; FwdKernel
// takes CuTe's op selector for every other key block.
template <class Element, int N>
struct SsF32;

// CuTe finds the GMMA mma_unpack (descriptors, C aliased to D, accumulate_ passed as scale_D) by
// argument-dependent lookup in the operation's namespace, which for these operations is this one.
using cute::SM90::GMMA::mma_unpack;

// ---- operand lists by preprocessor, so no list of N/2 operands is typed out ----
// FA_WGMMA_DEC(F, S, t) applies F to the ten operand indices t0 .. t9 (t empty: 0 .. 9), S()
// between them. F / S pairs: a parameter list, an asm output list, the asm template's register
// list.
#define FA_WGMMA_DEC(F, S, t)                                                                     \
  F(t##0) S() F(t##1) S() F(t##2) S() F(t##3) S() F(t##4) S() F(t##5) S() F(t##6) S() F(t##7)    \
  S() F(t##8) S() F(t##9)
#define FA_WGMMA_ACC40(F, S)                                                                      \
  FA_WGMMA_DEC(F, S, ) S() FA_WGMMA_DEC(F, S, 1) S() FA_WGMMA_DEC(F, S, 2) S() FA_WGMMA_DEC(F, S, 3)
#define FA_WGMMA_ACC56(F, S)                                                                      \
  FA_WGMMA_ACC40(F, S) S() FA_WGMMA_DEC(F, S, 4) S() F(50) S() F(51) S() F(52) S() F(53) S()      \
  F(54) S() F(55)
#define FA_WGMMA_COMMA() ,
#define FA_WGMMA_PARAM(i) float& d##i
#define FA_WGMMA_OUT(i) "+f"(d##i)
#define FA_WGMMA_REG(i) "%" #i
#define FA_WGMMA_REG_SEP() ", "

// One atom: N, the PTX input type, the CUTLASS element type, the accumulator list macro (N/2
// operands: %0 .. %(N/2 - 1)), and the operand indices that follow them: desc_a, desc_b, scale_D.
#define FA_WGMMA_SS_F32(N, PTX_T, ELEMENT, ACC, I_DESC_A, I_DESC_B, I_SCALE_D)                    \
  template <>                                                                                     \
  struct SsF32<ELEMENT, N> {                                                                      \
    static_assert(I_DESC_A == N / 2 && I_DESC_B == N / 2 + 1 && I_SCALE_D == N / 2 + 2,           \
                  "operand indices follow the N/2 accumulators");                                 \
    using DRegisters = void;                                                                      \
    using ARegisters = uint64_t[1];                                                               \
    using BRegisters = uint64_t[1];                                                               \
    using CRegisters = float[N / 2];                                                              \
    CUTE_HOST_DEVICE static void fma(                                                             \
        uint64_t const& desc_a, uint64_t const& desc_b, ACC(FA_WGMMA_PARAM, FA_WGMMA_COMMA),      \
        cute::GMMA::ScaleOut const scale_D = cute::GMMA::ScaleOut::One) {                         \
      FA_WGMMA_SS_F32_BODY(N, PTX_T, ACC, I_DESC_A, I_DESC_B, I_SCALE_D)                          \
    }                                                                                             \
  };

#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
#define FA_WGMMA_SS_F32_BODY(N, PTX_T, ACC, I_DESC_A, I_DESC_B, I_SCALE_D)                        \
  asm volatile(                                                                                   \
      "{\n"                                                                                       \
      ".reg .pred p;\n"                                                                           \
      "setp.ne.b32 p, %" #I_SCALE_D ", 0;\n"                                                      \
      "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX_T "." PTX_T " "                        \
      "{" ACC(FA_WGMMA_REG, FA_WGMMA_REG_SEP) "}, "                                               \
      "%" #I_DESC_A ", %" #I_DESC_B ", p, 1, 1, 0, 0;\n"                                          \
      "}\n"                                                                                       \
      : ACC(FA_WGMMA_OUT, FA_WGMMA_COMMA)                                                         \
      : "l"(desc_a), "l"(desc_b), "r"(int32_t(scale_D)));
#else
// Host pass and other architectures: CuTe's own atoms trap the same way.
#define FA_WGMMA_SS_F32_BODY(N, PTX_T, ACC, I_DESC_A, I_DESC_B, I_SCALE_D)                        \
  CUTE_INVALID_CONTROL_PATH("wgmma m64n" #N "k16 needs sm_90a");
#endif

FA_WGMMA_SS_F32(80, "bf16", cutlass::bfloat16_t, FA_WGMMA_ACC40, 40, 41, 42)
FA_WGMMA_SS_F32(80, "f16", cutlass::half_t, FA_WGMMA_ACC40, 40, 41, 42)
FA_WGMMA_SS_F32(112, "bf16", cutlass::bfloat16_t, FA_WGMMA_ACC56, 56, 57, 58)
FA_WGMMA_SS_F32(112, "f16", cutlass::half_t, FA_WGMMA_ACC56, 56, 57, 58)

#undef FA_WGMMA_SS_F32
#undef FA_WGMMA_SS_F32_BODY
#undef FA_WGMMA_REG_SEP
#undef FA_WGMMA_REG
#undef FA_WGMMA_OUT
#undef FA_WGMMA_PARAM
#undef FA_WGMMA_COMMA
#undef FA_WGMMA_ACC56
#undef FA_WGMMA_ACC40
#undef FA_WGMMA_DEC

}  // namespace fa::cuda::sm90::wgmma

namespace cute {

template <class Element, int N>
struct MMA_Traits<fa::cuda::sm90::wgmma::SsF32<Element, N>> {
  using ValTypeD = float;
  using ValTypeA = Element;
  using ValTypeB = Element;
  using ValTypeC = float;

  using FrgTypeA = GMMA::smem_desc<GMMA::Major::K>;
  using FrgTypeB = GMMA::smem_desc<GMMA::Major::K>;

  using Shape_MNK = Shape<_64, Int<N>, _16>;
  using ThrID = Layout<_128>;
  using ALayout = GMMA::ABLayout<64, 16>;
  using BLayout = GMMA::ABLayout<N, 16>;
  using CLayout = GMMA::CLayout_64xN<N>;

  GMMA::ScaleOut accumulate_ = GMMA::ScaleOut::One;
};

}  // namespace cute
