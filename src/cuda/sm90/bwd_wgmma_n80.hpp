// The m64n80k16 SS wgmma atom (fp32 accumulators, bf16 / fp16 inputs from shared memory) of the
// backward's 80-query tile (BwdConfig with kBlockM = 80, FA_SM90_BWD_D128_NC_BLOCK_M):
//   S^T = K Q^T, dP^T = V dO^T   A (K, V) and B (Q, dO) K-major
//   dQ^T = K^T dS^T              A = K^T, the MN-major view of the K tile; B = dS, K-major
// Why our own: N = 80 is not among CuTe's base shapes; CUTLASS's extended ones are ~76k lines of
// headers parsed in every unit that enables them (fwd_wgmma_ext.hpp: why the forward has its own
// N = 80 atom too). That one is K-major only and its type belongs to the forward's kernels, so the
// backward has this one, with the operand majors as template arguments (PTX imm-trans-a/b).
// What CuTe needs from an atom: see fwd_wgmma_ext.hpp.
#pragma once

#include <cute/arch/mma_sm90_gmma.hpp>        // GMMA::Major, GMMA::ScaleOut, CUTE_ARCH_MMA_SM90A_ENABLED
#include <cute/atom/mma_traits_sm90_gmma.hpp>  // GMMA::smem_desc, ABLayout, CLayout_64xN
#include <cutlass/numeric_types.h>

#include <cstdint>

namespace fa::cuda::sm90::wgmma_bwd {

// D(64 x 80, fp32) (+)= A(64 x 16) . B(80 x 16)^T; kMajorA / kMajorB: K or MN (the transpose bits).
template <class Element, cute::GMMA::Major kMajorA, cute::GMMA::Major kMajorB>
struct SsN80;

using cute::SM90::GMMA::mma_unpack;  // found by argument-dependent lookup in this namespace

// The 40 accumulator operands, by preprocessor (no list typed out): FA_N80_ACC(F, S) applies F to
// 0 .. 39 with S() between them.
#define FA_N80_DEC(F, S, t)                                                                       \
  F(t##0) S() F(t##1) S() F(t##2) S() F(t##3) S() F(t##4) S() F(t##5) S() F(t##6) S() F(t##7)    \
  S() F(t##8) S() F(t##9)
#define FA_N80_ACC(F, S) FA_N80_DEC(F, S, ) S() FA_N80_DEC(F, S, 1) S() FA_N80_DEC(F, S, 2) S() FA_N80_DEC(F, S, 3)
#define FA_N80_COMMA() ,
#define FA_N80_PARAM(i) float& d##i
#define FA_N80_OUT(i) "+f"(d##i)
#define FA_N80_REG(i) "%" #i
#define FA_N80_REG_SEP() ", "

#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)
// Operands: %0..%39 accumulators, %40 desc_a, %41 desc_b, %42 scale_D, %43 / %44 trans-a / trans-b.
#define FA_N80_BODY(PTX_T)                                                                        \
  asm volatile(                                                                                   \
      "{\n"                                                                                       \
      ".reg .pred p;\n"                                                                           \
      "setp.ne.b32 p, %42, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n80k16.f32." PTX_T "." PTX_T " "                            \
      "{" FA_N80_ACC(FA_N80_REG, FA_N80_REG_SEP) "}, "                                            \
      "%40, %41, p, 1, 1, %43, %44;\n"                                                            \
      "}\n"                                                                                       \
      : FA_N80_ACC(FA_N80_OUT, FA_N80_COMMA)                                                      \
      : "l"(desc_a), "l"(desc_b), "r"(int32_t(scale_D)), "n"(int32_t(kMajorA)), "n"(int32_t(kMajorB)));
#else
#define FA_N80_BODY(PTX_T) CUTE_INVALID_CONTROL_PATH("wgmma m64n80k16 needs sm_90a");
#endif

#define FA_N80_ATOM(PTX_T, ELEMENT)                                                               \
  template <cute::GMMA::Major kMajorA, cute::GMMA::Major kMajorB>                                 \
  struct SsN80<ELEMENT, kMajorA, kMajorB> {                                                       \
    using DRegisters = void;                                                                      \
    using ARegisters = uint64_t[1];                                                               \
    using BRegisters = uint64_t[1];                                                               \
    using CRegisters = float[40];                                                                 \
    CUTE_HOST_DEVICE static void fma(uint64_t const& desc_a, uint64_t const& desc_b,              \
                                     FA_N80_ACC(FA_N80_PARAM, FA_N80_COMMA),                      \
                                     cute::GMMA::ScaleOut const scale_D = cute::GMMA::ScaleOut::One) { \
      FA_N80_BODY(PTX_T)                                                                          \
    }                                                                                             \
  };

FA_N80_ATOM("bf16", cutlass::bfloat16_t)
FA_N80_ATOM("f16", cutlass::half_t)

#undef FA_N80_ATOM
#undef FA_N80_BODY
#undef FA_N80_REG_SEP
#undef FA_N80_REG
#undef FA_N80_OUT
#undef FA_N80_PARAM
#undef FA_N80_COMMA
#undef FA_N80_ACC
#undef FA_N80_DEC

}  // namespace fa::cuda::sm90::wgmma_bwd

namespace cute {

template <class Element, GMMA::Major kMajorA, GMMA::Major kMajorB>
struct MMA_Traits<fa::cuda::sm90::wgmma_bwd::SsN80<Element, kMajorA, kMajorB>> {
  using ValTypeD = float;
  using ValTypeA = Element;
  using ValTypeB = Element;
  using ValTypeC = float;

  using FrgTypeA = GMMA::smem_desc<kMajorA>;
  using FrgTypeB = GMMA::smem_desc<kMajorB>;

  using Shape_MNK = Shape<_64, _80, _16>;
  using ThrID = Layout<_128>;
  using ALayout = GMMA::ABLayout<64, 16>;
  using BLayout = GMMA::ABLayout<80, 16>;
  using CLayout = GMMA::CLayout_64xN<80>;

  GMMA::ScaleOut accumulate_ = GMMA::ScaleOut::One;
};

}  // namespace cute
