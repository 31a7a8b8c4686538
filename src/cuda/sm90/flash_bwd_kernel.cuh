// FlashAttention-3 backward main kernel for Hopper (sm90a): TMA + WGMMA, warp specialised.
//
// One CTA owns kBlockN keys of one KV head (grid: key block x KV head x sequence) and keeps their
// dK and dV in registers (fp32) while it walks every (query head of the GQA group, query block)
// that sees those keys. Roles:
//   producer warpgroup, warp 0 (1 thread issues): K and V once (TMA), then per step Q and dO tiles
//     (TMA) and their LSE*log2e and D slices (cp.async.bulk) into a kStages-deep ring of stages.
//   producer warpgroup, warp 1 (kDqTma, 1 thread issues): per step, the dQ block the consumers
//     staged in smem is added to the fp32 accumulator in global memory by the TMA unit
//     (cp.reduce.async.bulk .add.f32), in the deterministic mode in its turn (see below).
//   consumer warpgroups (kConsumerWGs x 128 threads, WG w owns keys [64w, 64w + 64)):
//     S^T  = K Q^T,  dP^T = V dO^T           (WGMMA SS, 64 keys x kBlockM queries per WG)
//     P^T  = exp2(S^T * scale*log2e - LSE*log2e), dS^T = P^T * (dP^T - D) [* softcap grad]
//     dV  += P^T dO,  dK += dS^T Q           (WGMMA RS: P^T and dS^T stay in registers as the A
//                                             operand; dO and Q are read through transposed
//                                             (MN-major) views of the same smem tiles)
//     dS^T -> smem (stmatrix), then          (WGMMA SS, dQ columns split between the WGs; the A
//     dQ_blk = dS K                           operand is the transposed view of the dS^T tile)
//     (opt-in, kPrefetchS: the next step's S^T is queued behind dQ_blk before it is staged)
//     Unmasked tiles run a P^T loop without mask tests (kMaskSplit): at d64 the element-wise
//     work is as large as the GEMMs' issue cost, so its instruction count is the critical path.
//     dQ_blk -> smem staging buffer (kDqTma), or straight to global with red.global.add.v4.f32.
//     Why the TMA reduce: at d128 each step adds 32 KB of fp32 dQ per CTA; as REDs that is 8 x 16-byte
//     atomics per consumer thread per step on the LSU path, issued by the warps that should be
//     feeding the tensor cores, while the staging costs 8 conflict-free st.shared.v4 per thread.
//     dQ_acc is stored per query block in the consumers' fragment order (BwdConfig::dq_frag_offset)
//     so both forms write whole 512-byte runs per warp; bwd_convert_dq undoes the permutation.
// We work on S^T rather than S ("swap AB") so that the accumulators of S^T/dP^T have keys as rows:
// exactly the A-operand register layout of the dV/dK products, which then need no smem round trip.
// Head dims 192/256 use a "split-D" tile instead (BwdConfig::kSplitD): 64 keys shared by both WGs,
// S^T/dP^T split by query columns, dK/dV/dQ split by head dim, P^T and dS^T both via smem (SS,
// stored by stmatrix). There dV is issued as soon as P^T is in smem and dQ before dK, so that the
// dS^T phase and the dQ REDs (no room for the TMA staging buffer) run under wgmmas
// (BwdConfig::kDvEarly, kDqFirst), and causal grids launch in a grouped longest-first order
// (cta_coord).
// d128 calls without mask or softcap take an 80-query tile instead (FA3's; FA_SM90_BWD_D128_NC_BLOCK_M,
// default 80, 64 = off; instantiated with kMasked = false): S^T/dP^T are 64 keys x 80
// queries per WG (our m64n80k16 atom, bwd_wgmma_n80.hpp); dQ_blk = dS K would need a wgmma M of 80,
// so it computes dQ^T = K^T dS^T (BwdConfig::kDqSwapAB) from dS stored (query, key) by transposing
// stmatrix, and issues dV after dS^T (kDvAfterDs: registers). The dQ accumulator then holds dQ^T
// in fragment order (the conversion maps it back: dq_row / dq_col), and the workspace's rows are
// padded to 320 for it (bwd_workspace.hpp).
//
// Synchronisation: per stage a "Q full" and a "dO full" transaction barrier (producer arms them
// with the byte count, TMA completes them) and an "empty" barrier that all consumer threads
// arrive on once their WGMMAs reading that stage have retired. dS^T is double buffered in smem;
// the consumers meet at one named barrier per step between writing dS^T and the dQ product (the
// other WG reads our half), and double buffering makes that one barrier enough for the reuse too.
// dQ staging (kDqTma): one buffer, handed between the consumers and the dQ warp with two named
// barriers (DqFull: staged, DqEmpty: the TMA has read it). FA_SM90_BWD_DQ_DEFER (per head dim,
// BwdConfig::kDqDefer; default d64) stages a step's dQ_blk in the next step, under its S^T
// wgmma; FA_SM90_BWD_DQ_BEFORE_DK (per head dim, kDqBeforeDk; default d128) issues dQ before dK
// and stages it under dK.
// Deterministic mode: before adding its dQ block, a CTA waits until the per-(head, query block)
// turn counter equals its rank among the key blocks that see that query block, then bumps it
// (with kDqTma the dQ warp waits, not the consumers, and bumps after the bulk add completes).
// Fused dQ conversion (FA_SM90_BWD_FUSED_CONVERT=1, kDqTma only; default off): after each add the
// dQ warp waits for its completion and decrements the block's arrival counter; the CTA that takes
// it to 0 remembers the step (one smem bit) and its consumers convert those blocks after the
// epilogue (fused_convert_dq), so bwd_convert_dq is not launched.
// First-adder store (BwdParams::dq_store_first, FA_SM90_BWD_DQ_STORE; kDqTma only): the
// accumulator is not zeroed beforehand; each block's first adder (turn 0, or the winner of a CAS
// on the turn counter) stores it with a bulk copy and the others add after it (dq_writer).
// Clusters (FA_SM90_BWD_CLUSTER, default off: measured slower): two adjacent key blocks share
// their Q/dO loads by TMA multicast and release each stage to both producers.
// Registers: setmaxnreg gives the consumers 240 and the producer 24 of the 65536.
#pragma once

#include <cuda_runtime.h>

// cute/tensor.hpp first: the atom headers rely on its declarations.
#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "cuda/common/head_dim_mask.hpp"
#include "cuda/common/pdl.cuh"
#include "cuda/common/quad_store.cuh"
#include "cuda/common/sm90_pair_load.cuh"
#include "cuda/common/sm90_stmatrix.cuh"
#include "cuda/common/mma_partition.hpp"
#include "cuda/sm90/bwd_wgmma_n80.hpp"
#include "cuda/sm90/bwd_workspace.hpp"

// ---- precomputed MMA partition types (compile memory only; cuda/common/mma_partition.hpp) -------
// CuTe's partition algebra is ~20k template instantiations per unit in cicc's front end (it put
// the d 96 units over the house limit of 2 GB). The table below holds the types of every tile the
// instances and ablations build, as printed by this file's generator mode
// (FA_SM90_BWD_PARTITION_GEN, at its end; scripts/gen_partition_tables.sh).
namespace fa::cuda {
#ifndef FA_SM90_BWD_PARTITION_GEN
// ---- generated table (see the generator at the end of the file) ----
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<256> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<256> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<256> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<256> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<96> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::C<1>, cute::C<3> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<96> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::C<1>, cute::C<3> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<128> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<64> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<96> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<192> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<192> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<96> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<192> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<64>, cute::C<192> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<80> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<80> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<80> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaShapeC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::tuple<cute::C<128>, cute::C<80> >> : MmaKnown<cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::C<1>, cute::C<1> >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<80>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64>, cute::C<10240> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<5>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<128>, cute::C<1>, cute::C<16> >, cute::tuple<cute::C<5120>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<8>, cute::C<512> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<10240> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<80>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64>, cute::C<10240> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<5>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<128>, cute::C<1>, cute::C<16> >, cute::tuple<cute::C<5120>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<8>, cute::C<512> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<10240> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<6> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<6> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<4> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<4> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<6> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<6> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<4> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<4> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> >, cute::tuple<cute::C<0>, cute::C<16384> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> >, cute::tuple<cute::C<0>, cute::C<16384> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<16>, cute::C<6> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<2048> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<6> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<1024>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<2048> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64>, cute::C<16384> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<16384> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> >, cute::tuple<cute::C<0>, cute::C<16384> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> >, cute::tuple<cute::C<0>, cute::C<16384> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<16>, cute::C<6> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<2048> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<6> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<1024>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<2048> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<32>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64>, cute::C<16384> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<16384> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::tuple<cute::C<2>, cute::C<64>, cute::C<1024> >, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<512>, cute::C<8> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgA<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64>, cute::C<1> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<0> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64>, cute::C<3> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<80>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64>, cute::C<10240> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<5>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<10240> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<128>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<4> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<16384> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<16384> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<4> >, cute::C<64> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64>, cute::C<3> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<80>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64>, cute::C<10240> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<5>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<5120> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<10240> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<16> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<128>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<4> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<16384> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<16384> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<4> >, cute::C<64> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<16>, cute::C<6> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<16> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<16> >, cute::tuple<cute::C<3>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<16> >, cute::tuple<cute::C<4096>, cute::C<256> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<16>, cute::C<6> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<16> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<16>, cute::C<16> >, cute::tuple<cute::C<3>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<16> >, cute::tuple<cute::C<4096>, cute::C<256> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<6> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<12288> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<6> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<1024>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<12288> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<16384> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<16384> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<6> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<12288> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<6> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<1024>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<12288> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<16384> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<2048>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<16384> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<6144> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<6144> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<0> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<1> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<0> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<64> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<4096>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<8192> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<8192> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<64>, cute::C<4096> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024>, cute::C<4096> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<32>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<256> >, cute::tuple<cute::C<1>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<6144> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<2>, cute::C<3> >, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<32>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<2048> >, cute::tuple<cute::C<0>, cute::C<6144> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<0> >, cute::tuple<cute::C<0>, cute::C<4096> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<16>, cute::tuple<cute::C<0>, cute::C<4096> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<8> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<4096> >, cute::tuple<cute::C<0>, cute::C<8192> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<64>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<8192> >, cute::C<64> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<8192>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<1>, cute::C<64> >, cute::tuple<cute::C<0>, cute::C<1024> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<128> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<2> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<8> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<4096> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<64>, cute::C<3> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32>, cute::C<6144> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512>, cute::C<6144> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<6> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32>, cute::C<12288> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<6144>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512>, cute::C<12288> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<6> >, cute::C<64> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<6144>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<64>, cute::C<3> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32>, cute::C<6144> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512>, cute::C<6144> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<6> >, cute::C<64>, cute::C<2> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32>, cute::C<12288> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4>, cute::C<2> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<6144>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512>, cute::C<12288> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<32>, cute::C<6> >, cute::C<64> >, cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<32>, cute::C<3> >, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<4> > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<6144>, cute::C<0> > >, cute::tuple<cute::tuple<cute::tuple<cute::C<1>, cute::C<2048> >, cute::C<32> >, cute::tuple<cute::C<0>, cute::C<512> > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<10> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<80>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<10> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<80>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<10> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<80>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > > > >> {};
template <> struct MmaThrfrgB<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::tuple<cute::C<8>, cute::C<10> >, cute::tuple<cute::C<64>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<512> >, cute::tuple<cute::C<1>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::C<128>, cute::tuple<cute::C<1>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<80>, cute::C<16> >, cute::tuple<cute::C<1>, cute::tuple<cute::C<4>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<2> > > > >, cute::tuple<cute::tuple<cute::C<0>, cute::tuple<cute::C<0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::C<64>, cute::C<1> >, cute::tuple<cute::C<0>, cute::tuple<cute::C<16>, cute::C<5120> >, cute::tuple<cute::C<0>, cute::C<10240> > > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<256> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<128>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<256> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<128>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<256> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<128>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<256> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<16> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<128>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<96> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<16>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x16x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<96> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<2> >, cute::tuple<cute::C<1>, cute::C<3> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<16>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x32x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<32>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<64>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<64>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<128> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<64>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<64> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<8> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<96> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<192> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<96>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32BF16BF16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<192> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<96>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_RS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<96> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<192> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<96>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::MMA_64x96x16_F32F16F16_SS<(cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::ScaleIn)1, (cute::SM90::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >, cute::tuple<cute::C<0>, cute::C<1>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<64>, cute::C<192> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<1>, cute::C<2> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<12> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::C<0>, cute::ScaledBasis<cute::C<96>, 1> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<80> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::bfloat16_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<80> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)0, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<80> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
template <> struct MmaThrfrgC<cute::TiledMMA<cute::MMA_Atom<fa::cuda::sm90::wgmma_bwd::SsN80<cutlass::half_t, (cute::SM90::GMMA::Major)1, (cute::SM90::GMMA::Major)0> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > >, cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore> >, cute::Layout<cute::tuple<cute::C<128>, cute::C<80> >, cute::tuple<cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<1>, 1> > >> : MmaKnown<cute::Layout<cute::tuple<cute::tuple<cute::tuple<cute::C<4>, cute::C<8>, cute::C<4> >, cute::tuple<cute::C<2>, cute::C<1> > >, cute::tuple<cute::tuple<cute::C<2>, cute::C<2>, cute::C<10> >, cute::tuple<cute::C<1>, cute::C<1> > > >, cute::tuple<cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<2>, 1>, cute::ScaledBasis<cute::C<1>, 0>, cute::ScaledBasis<cute::C<16>, 0> >, cute::tuple<cute::ScaledBasis<cute::C<64>, 0>, cute::C<0> > >, cute::tuple<cute::tuple<cute::ScaledBasis<cute::C<1>, 1>, cute::ScaledBasis<cute::C<8>, 0>, cute::ScaledBasis<cute::C<8>, 1> >, cute::tuple<cute::C<0>, cute::C<0> > > > >> {};
// ---- end of generated table ----
#endif
}  // namespace fa::cuda

namespace fa::cuda::sm90_bwd {

using namespace cute;

// K-major smem atom (8 rows x W elements, W*2 bytes swizzled) for the widest W in {64, 32, 16}
// dividing `width`: an MN-major (transposed) view then splits at atom boundaries only.
template <typename T, int width>
using KMajorAtom = std::conditional_t<
    width % 64 == 0, GMMA::Layout_K_SW128_Atom<T>,
    std::conditional_t<width % 32 == 0, GMMA::Layout_K_SW64_Atom<T>, GMMA::Layout_K_SW32_Atom<T>>>;

// The 80-query tile's types (BwdConfig with kBlockM = 80), as classes whose ::type is computed only
// for the configuration that picks them (std::conditional_t of decltypes would build both sides
// in every unit: compile memory). TypeIs wraps the other side.
template <class X>
struct TypeIs {
  using type = X;
};
// A tiled m64n80k16 wgmma, the consumer WGs along M.
template <class T, int kWGs, GMMA::Major kMajorA, GMMA::Major kMajorB>
struct TiledN80 {
  using type = decltype(make_tiled_mma(sm90::wgmma_bwd::SsN80<T, kMajorA, kMajorB>{}, Layout<Shape<Int<kWGs>, _1, _1>>{}));
};
// dS (kBM queries, kBN keys, 2 buffers), keys contiguous (SW128 K-major); Transposed: its dS^T view.
template <class T, int kBM, int kBN>
struct DsKeysLayout {
  using type = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, Shape<Int<kBM>, Int<kBN>, _2>{}));
};
template <class T, int kBM, int kBN>
struct DsKeysLayoutTransposed {
  using type = decltype(composition(typename DsKeysLayout<T, kBM, kBN>::type{},
                                    make_layout(Shape<Int<kBN>, Int<kBM>, _2>{}, Stride<Int<kBM>, _1, Int<kBM * kBN>>{})));
};

// kStagesReq: Q/dO ring depth (0: the default below). kDqTmaReq: dQ through smem and a TMA bulk
// reduce-add (see the file comment) where smem allows it, else red.global.add.v4 from registers.
// kSplitDReq: the split-D tile at head dims <= 128 too (an ablation of the tile shape).
// kMaskSplitReq: tiles that need no mask take a copy of the P^T loop without per-element mask
// predicates (see "P^T" in bwd_main). kDsStsmReq: dS^T goes to smem by stmatrix from a swizzled
// address computed once (BwdConfig::kDsStsm). kPrefetchSReq (opt-in, off in the instances): the next
// step's S^T = K Q^T is issued before this step's dQ is staged (BwdConfig::kPrefetchS).
// The defaults are what the instances use; bwd_ablation_*.cu instantiate the others (bf16 d128,
// and d64 for the two element-wise switches).
template <typename Element, int kHeadDim_, int kStagesReq = 0, bool kDqTmaReq = true, bool kSplitDReq = false,
          bool kMaskSplitReq = true, bool kDsStsmReq = true, bool kPrefetchSReq = false, int kBlockMReq = 0>
struct BwdConfig {
  using T = Element;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kConsumerWGs = 2;
  // Head dims above 128 ("split-D"): dK + dV of 64 keys x d would need 2d fp32 registers per
  // thread in one warpgroup, more than it has. Both WGs then share one 64-key block and split the
  // head dim of dK/dV (and dQ) instead; S^T/dP^T are split by query columns, and P^T goes through
  // smem like dS^T (the dV/dK products become SS).
  static constexpr bool kSplitD = kHeadDim > 128 || kSplitDReq;
  // Queries per step (the N of S^T): 64, or at d64 FA_SM90_BWD_D64_BLOCK_M (128: S^T/dP^T are
  // wgmmas of N = 128 instead of 64, half as many steps, each A operand (K, V) read from smem once
  // per 128 queries instead of per 64; S^T + dP^T then take 128 accumulator registers per thread
  // instead of 64, which only d64 (dK + dV = 64) has room for).
  // Or 80 at d128 (FA_SM90_BWD_D128_NC_BLOCK_M; the launcher sends only non-causal calls without
  // softcap there): FA3's non-causal d128 tile, 25% more work per step for the same per-step
  // costs (barriers, waits, the dQ reduce-add). S^T/dP^T are wgmmas of N = 80 (our own atom,
  // bwd_wgmma_n80.hpp); dQ is computed transposed (kDqSwapAB).
  static constexpr int kBlockM =
      kBlockMReq > 0 ? kBlockMReq : (kHeadDim == 64 && !kSplitD ? FA_SM90_BWD_D64_BLOCK_M : 64);
  static_assert(kBlockM == 64 || (kBlockM == 128 && !kSplitD) || (kBlockM == 80 && kHeadDim == 128 && !kSplitD),
                "128-query steps only in the per-WG-keys form, 80-query ones only at d128");
  // dQ_blk = dS K has M = kBlockM, which at 80 is no per-WG wgmma M (64): kBlockM = 80 computes
  // dQ^T = K^T dS^T instead (M = head dim, 64 per WG; N = 80 queries; K = keys), with A = K^T the
  // MN-major view of the K tile and B = dS from smem, stored with keys contiguous (SmemLayoutdS).
  // Its accumulator is dQ^T: rows are head-dim columns (DqShape, dq_row / dq_col).
  static constexpr bool kDqSwapAB = kBlockM == 80;
  // The workspace's row padding for this tile (row_pad_for). Every query block stays inside its
  // sequence's padded rows, and so do the 64-row preprocess CTAs and turn counters. A block uses
  // the counter of the 64 rows its first row is in: distinct per block as kBlockM >= kTurnRows.
  static constexpr int kSeqRowPad = row_pad_for(kBlockM);
  static_assert(kSeqRowPad % kBlockM == 0 && kSeqRowPad % kTurnRows == 0 && kBlockM >= kTurnRows,
                "query block vs the workspace's row padding");
  // keys per CTA: one wgmma M (64) per WG, or one shared by both WGs (split-D)
  static constexpr int kBlockN = kSplitD ? 64 : 64 * kConsumerWGs;
  // Q/dO ring depth. Split-D tiles (32 KB per Q or dO stage at d256) leave room for two only, and
  // so does kBlockM = 128 (64 KB of double-buffered dS^T; three stages would need 229 KB).
  // kBlockM = 80 too (FA3's choice there): three stages would need 264 KB.
  static constexpr int kStages = kStagesReq > 0 ? kStagesReq : (kSplitD || kBlockM == 128 || kBlockM == 80 ? 2 : 3);
  // dQ staging buffer (kBlockM x d fp32: 32 KB at d128) fits beside the ring up to d128 only
  // (d192 split-D would leave ~1 KB of the 227 KB; d256 does not fit).
  static constexpr bool kDqTma = kDqTmaReq && kHeadDim <= 128;
  static constexpr int kConsumerThreads = 128 * kConsumerWGs;
  // + the producer warpgroup: warp 0 loads, warp 1 issues the dQ reduce-adds (kDqTma)
  static constexpr int kThreads = kConsumerThreads + 128;
  // dQ of one query block in "fragment order": consumer thread tid's accumulator values
  // 4j..4j+3 sit at dq_frag_offset(tid, 4j): each WG's half is contiguous (one bulk reduce) and a
  // warp's 16-byte stores (smem or RED.v4) cover 512 contiguous bytes (no bank conflicts, whole
  // L2 sectors). bwd_convert_dq maps it back through the same MMA partition.
  static constexpr int kDqFragValues = kBlockM * kHeadDim / kConsumerThreads;  // per thread
  static constexpr int kDqHalf = kBlockM * kHeadDim / kConsumerWGs;           // floats per WG
  // The dQ accumulator's (M, N) shape: (queries, head dim), or dQ^T's (kDqSwapAB).
  using DqShape = std::conditional_t<kDqSwapAB, Shape<Int<kHeadDim>, Int<kBlockM>>, Shape<Int<kBlockM>, Int<kHeadDim>>>;
  // (query row, head-dim column) of an accumulator element coordinate in DqShape.
  template <class Coord>
  static __host__ __device__ int dq_row(Coord const& c) {
    if constexpr (kDqSwapAB) return int(get<1>(c));
    else return int(get<0>(c));
  }
  template <class Coord>
  static __host__ __device__ int dq_col(Coord const& c) {
    if constexpr (kDqSwapAB) return int(get<0>(c));
    else return int(get<1>(c));
  }
  static constexpr int kDqSyncThreads = kConsumerThreads + 32;  // consumers + the dQ warp
  static_assert(kDqFragValues % 4 == 0, "dQ fragment stored as float4");
  static __host__ __device__ constexpr int dq_frag_offset(int tid, int i) {
    return (tid / 128) * kDqHalf + ((i / 4) * 128 + tid % 128) * 4 + i % 4;
  }
  static constexpr int kConsumerRegs = 240;          // 2 x 128 x 240 + 128 x 24 <= 65536
  static constexpr int kProducerRegs = 24;
  // Ablation switch: compute P and issue dV while dP^T is still in flight (FA_SM90_BWD_OVERLAP=0
  // at compile time turns it off).
#ifndef FA_SM90_BWD_OVERLAP
#define FA_SM90_BWD_OVERLAP 1
#endif
  static constexpr bool kOverlapSdP = FA_SM90_BWD_OVERLAP != 0;
  // kBlockM = 80: P is still computed under dP^T, but dV is issued only once dP^T has retired and
  // dS^T is computed (FA3's order). Why: with dV in flight during the dS^T loop, P^T (fp32, for
  // dS^T) and its bf16 copy (dV's A operand) are live beside dP^T and dK + dV: 128 + 40 + 40 + 20
  // accumulator registers of the 240, and ptxas spilled 136 bytes.
  static constexpr bool kDvAfterDs = kDqSwapAB;
  // Why the mask split: with one loop, the mask test is predicated per element even in tiles that
  // need none (3 compares, a predicate op and a select per score, issued whether or not they are
  // predicated off): ~40% of the P^T loop's instructions at d64, on the consumers' critical path.
  static constexpr bool kMaskSplit = kMaskSplitReq;
  // Why stmatrix for dS^T: the CuTe copy of the accumulator fragment compiles to 16 generic 4-byte
  // stores per thread, each behind ~5 instructions of 64-bit address and swizzle arithmetic.
  // stmatrix.x4 stores four 8x8 bf16 matrices (8 registers' worth of a 64-key x 64-query WG tile
  // row pair) per instruction, and with the 128-byte swizzle the four addresses of a thread differ
  // from one base only by an XOR with a constant: 4 STSM + 4 LOP3 per step instead of ~100
  // instructions. For the 64-query SW128 dS^T tile; at kBlockM = 128 the tile is two SW128 atoms
  // wide (queries 64..127 in the second, kBlockN rows further on), which only adds a constant per
  // column pair. Split-D (d192/d256, FA_SM90_BWD_SPLITD_STSM, default 1): each WG holds 64 keys x
  // 32 queries of the same 64 x 64 SW128 tile, so P^T and dS^T are 2 STSM each, from a base that
  // also XORs in the WG's query half (ds_stsm_lane_base); 0 keeps the CuTe copy there.
#ifndef FA_SM90_BWD_SPLITD_STSM
#define FA_SM90_BWD_SPLITD_STSM 1
#endif
  static constexpr bool kDsStsm =
      kDsStsmReq && (kSplitD ? (FA_SM90_BWD_SPLITD_STSM != 0 && kHeadDim > 128 && kBlockM == 64)
                             : (kBlockM == 64 || kBlockM == 128));
  // S^T / dP^T values per consumer thread (64 keys x kBlockM queries per WG, or 64 x kBlockM/2 in
  // split-D).
  static constexpr int kSdPValues = kBlockN * kBlockM / kConsumerThreads;
  // Split-D (d192/d256) order of the three SS products of a step, FA_SM90_BWD_SPLITD_ORDER:
  //   0  after dS^T is in smem: dV, dK, dQ; wait for all; then the dQ REDs (the tensor pipe idles
  //      through the dS phase, the barrier and the REDs: 16 red.v4 per thread at d256)
  //   1  after dS^T: dQ, dV, dK; the REDs as soon as dQ retires, under dV and dK (kDqFirst)
  //   2  (default) as 1, and dV issued right after P^T is in smem (its own named barrier), so it
  //      runs under the dS^T phase, which then waits for dP^T with dV still in flight (kDvEarly)
  // Registers are the same in all three (dQ's accumulators were already in flight beside dK/dV's).
  // Only at head dims above 128 (the split_d ablation at d128 keeps order 0 and its TMA dQ path).
#ifndef FA_SM90_BWD_SPLITD_ORDER
#define FA_SM90_BWD_SPLITD_ORDER 2
#endif
  static_assert(FA_SM90_BWD_SPLITD_ORDER >= 0 && FA_SM90_BWD_SPLITD_ORDER <= 2, "split-D order: 0, 1 or 2");
  static constexpr bool kDqFirst = kSplitD && kHeadDim > 128 && FA_SM90_BWD_SPLITD_ORDER >= 1;
  static constexpr bool kDvEarly = kSplitD && kHeadDim > 128 && FA_SM90_BWD_SPLITD_ORDER >= 2;
  // CTA launch order for right-bounded masks (causal, sliding window), FA_SM90_BWD_CTA_ORDER:
  // 1 (default, head dims above 128) lets the launcher pick BwdParams::cta_group (cta_coord): key
  // blocks of a few heads interleaved, the longest (lowest) key blocks first. 0: blockIdx as is,
  // every head's key blocks in turn, so the last head's longest CTA starts in the grid's last
  // wave(s). Never in the deterministic mode (its order of CTAs is what makes its waits safe).
  // 2: at every head dim (an experiment for d64-d128; their registers were checked spill-free).
#ifndef FA_SM90_BWD_CTA_ORDER
#define FA_SM90_BWD_CTA_ORDER 1
#endif
  static constexpr bool kGroupedOrder =
      (kHeadDim > 128 && FA_SM90_BWD_CTA_ORDER != 0) || FA_SM90_BWD_CTA_ORDER == 2;
  // The grouped order only where a sequence has at least FA_SM90_BWD_CTA_ORDER_MIN_NBLOCKS key
  // blocks (default 16; 0 = always, the session-4 behaviour). H200, d256 causal ÷ cuDNN: N512
  // (8 key blocks) 0.95 in blockIdx order (session 3) but 0.84-0.86 grouped (session 4); N1k (16)
  // 0.92 -> 0.94 and N4k 0.89 -> 0.98 grouped. With few key blocks per head the CTAs are short
  // (1..8 steps) and the blockIdx order's tail is short too, while a group spreads the resident
  // CTAs over G heads (G = 64 at N512: ~2 CTAs per head) instead of ~16 heads x 8 key blocks, so
  // each head's Q/dO/dQ blocks are re-read from DRAM by its later CTAs instead of from L2 (the
  // likely cause; not profiled). Run time: FA_SM90_BWD_CTA_MIN_NBLOCKS and FA_SM90_BWD_CTA_WAVES
  // override the threshold and the group's target size (flash_bwd.cuh, cta_order_knobs).
#ifndef FA_SM90_BWD_CTA_ORDER_MIN_NBLOCKS
#define FA_SM90_BWD_CTA_ORDER_MIN_NBLOCKS 16
#endif
  static constexpr int kGroupedMinNBlocks = FA_SM90_BWD_CTA_ORDER_MIN_NBLOCKS;
  // S^T of the next step is issued right behind this step's dQ product, before its dQ is staged:
  // the tensor pipe then never drains at the step boundary (dQ staging, the loop's bookkeeping and
  // the next step's first wait used to run with nothing queued behind dQ). Costs the next S^T's
  // accumulators (64 x kBlockM / 128 registers) across the dQ staging. Needs a second ring stage
  // (the next step's Q is loaded while this step's stage is still held). Head dims <= 64 only:
  // at d128 (dK + dV = 128 accumulator registers) ptxas spilled 4 bytes and serialised the wgmmas
  // (C7515) with it; split-D (d192/d256) has even less room.
  static constexpr bool kPrefetchS = kPrefetchSReq && kStages >= 2 && !kSplitD && kHeadDim <= 64 && kBlockM == 64;
  // Deferred dQ staging, FA_SM90_BWD_DQ_DEFER (compile time, a head-dim mask, head_dim_bit:
  // d64 2, d96 4, d128 8; default 2 = d64 only, 0 = off everywhere): a step's dQ_blk stays in registers across
  // the loop's back edge and is staged for the dQ warp in the next step, once that step's S^T
  // (form 1) or S^T and dP^T (form 2, FA_SM90_BWD_DQ_DEFER_FORM) are queued on the tensor pipe;
  // the last one after the loop. Why: staged at the end of its step, the DqEmpty barrier,
  // 8 st.shared.v4 per thread (32 KB per CTA at d128) and the async-proxy fence sit between dQ's
  // retirement and the next S^T's issue with no wgmma queued behind them, and DqEmpty (a barrier
  // of both WGs) holds the WG whose dQ retired first until the other's has too.
  // H200 (session 6, round 1, form 1 at d64 and d128, same call vs the default build): d64
  // non-causal N1k-16k +0.7..+1.7%, d128 non-causal -0.7..-3.5% (the spread between calls is up to
  // ~5%); form 2 at d64 -1..-3%. Hence per head dim. Round 2 (same call): d64 N1k/8k +0.5..+2%
  // non-causal and causal again, so d64 defers by default. Costs the 32 dQ registers across the back
  // edge (they are copied out of the per-step accumulator after it retires, so that the wgmma's
  // read-write operands do not keep them live through the step), plus S^T's (1) or S^T's and
  // dP^T's (2) accumulators in flight during the stores. Form 2 only at head dims <= 64, where
  // dK + dV leave room for it (d128: ptxas spilled 84 bytes); above, 2 means 1. kDqTma without
  // split-D or kPrefetchS only. Bit 1 (d32, no sm90 backward instance) is rejected so that a
  // leftover -DFA_SM90_BWD_DQ_DEFER=1 of the earlier 0/1/2 form does not silently do nothing.
#ifndef FA_SM90_BWD_DQ_DEFER
#define FA_SM90_BWD_DQ_DEFER 2
#endif
#ifndef FA_SM90_BWD_DQ_DEFER_FORM
#define FA_SM90_BWD_DQ_DEFER_FORM 1
#endif
  static_assert((FA_SM90_BWD_DQ_DEFER & 1) == 0,
                "FA_SM90_BWD_DQ_DEFER is a head-dim mask (d64 2, d96 4, d128 8); the form is FA_SM90_BWD_DQ_DEFER_FORM");
  static_assert(FA_SM90_BWD_DQ_DEFER_FORM == 1 || FA_SM90_BWD_DQ_DEFER_FORM == 2, "dQ defer form: 1 or 2");
  static constexpr int kDqDefer =
      !(kDqTma && !kSplitD && !kPrefetchS) || (FA_SM90_BWD_DQ_DEFER & head_dim_bit(kHeadDim)) == 0
          ? 0
          : (FA_SM90_BWD_DQ_DEFER_FORM == 2 && kHeadDim <= 64 ? 2 : 1);
  // dQ before dK, FA_SM90_BWD_DQ_BEFORE_DK (compile time, a head-dim mask like DQ_DEFER; default
  // 8 = d128 only, 0 = off): dS^T goes to smem and both WGs meet first, then dQ and dK are issued back to back
  // and dQ_blk is staged (or added) as soon as dQ retires, while dK still runs, instead of after
  // both with nothing queued on the tensor pipe. The stmatrix stores, fence and DsWritten barrier
  // then run ahead of dK with only dV in flight: this trades that window for the staging's (the
  // DqEmpty barrier with the dQ warp and twice the bytes: 32 KB of fp32 dQ vs 16 KB of bf16 dS^T
  // at d128). The registers live at the staging are those live at dQ's issue before (dK, dV, dQ
  // accumulators and dS^T as dK's A operand). Without split-D, kPrefetchS or kDqDefer.
  // H200 (session 6, round 2, same call vs the default build), d128 N1k/N8k: non-causal +0.2% /
  // +0.9%, causal +0.3% / +2.8%; small, but never below, hence the default at d128.
#ifndef FA_SM90_BWD_DQ_BEFORE_DK
#define FA_SM90_BWD_DQ_BEFORE_DK 8
#endif
  static_assert((FA_SM90_BWD_DQ_BEFORE_DK & 1) == 0, "FA_SM90_BWD_DQ_BEFORE_DK is a head-dim mask (d64 2, d128 8)");
  static constexpr bool kDqBeforeDk =
      (FA_SM90_BWD_DQ_BEFORE_DK & head_dim_bit(kHeadDim)) != 0 && !kSplitD && !kPrefetchS && kDqDefer == 0;
  // dK/dV epilogue addressed per key row (bwd_main's epilogue); -DFA_SM90_BWD_EPILOGUE_ROWS=0 at
  // compile time restores the per-pair addressing (ablation).
#ifndef FA_SM90_BWD_EPILOGUE_ROWS
#define FA_SM90_BWD_EPILOGUE_ROWS 1
#endif
  static constexpr bool kEpilogueRows = FA_SM90_BWD_EPILOGUE_ROWS != 0;
  // kEpilogueRows stores after a transpose inside each quad (cuda/common/quad_store.cuh),
  // FA_SM90_BWD_EPI_STORE16: 1 = 16-byte stores (two shuffle rounds), 2 = 8-byte (one round),
  // 0 = one 4-byte store per column pair. Only where dK and dV are aligned to the store
  // (BwdParams::dkv_store_wide, host-checked); otherwise the 4-byte stores. H200 session 10 (ncu,
  // bf16 d128 N2k): the 4-byte dK/dV stores were ~7% of bwd_main's stall samples; same-call A/B
  // against 0: d128 N512/1k/2k +13/+8/+11%, d64/d256 +4-11% at N <= 2k, N >= 8k +0.5-2% (LOG.md).
#ifndef FA_SM90_BWD_EPI_STORE16
#define FA_SM90_BWD_EPI_STORE16 1
#endif
  static_assert(FA_SM90_BWD_EPI_STORE16 >= 0 && FA_SM90_BWD_EPI_STORE16 <= 2, "FA_SM90_BWD_EPI_STORE16: 0, 1 or 2");
  static constexpr int kEpiStoreRounds =
      !kEpilogueRows ? 0 : FA_SM90_BWD_EPI_STORE16 == 1 ? 2 : FA_SM90_BWD_EPI_STORE16 == 2 ? 1 : 0;
  static_assert(kHeadDim % (8 << kEpiStoreRounds) == 0, "whole sets of 8-column groups per row");
  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 256, "tile table covers head dims 64 ... 256");
  // Width the swizzle atoms of Q/dO must divide: their transposed views are the B operand of the
  // dV/dK products, whose N (head dim) is split across the WGs in the split-D form.
  static constexpr int kQAtomWidth = kSplitD ? kHeadDim / kConsumerWGs : kHeadDim;

  using D = Int<kHeadDim>;
  using BM = Int<kBlockM>;
  using BN = Int<kBlockN>;
  using ST = Int<kStages>;

  // Q and dO: (kBlockM, D, stages), head dim contiguous. Read K-major by S^T/dP^T and MN-major
  // (transposed view) by dK/dV.
  using SmemLayoutQ = decltype(tile_to_shape(KMajorAtom<T, kQAtomWidth>{}, Shape<BM, D, ST>{}));
  using SmemLayoutQt = decltype(composition(
      SmemLayoutQ{}, make_layout(Shape<D, BM, ST>{}, Stride<BM, _1, Int<kBlockM * kHeadDim>>{})));
  // K: K-major A of S^T, MN-major B of dQ whose N (head dim) is split over the consumer WGs, so
  // the atom width must divide kHeadDim / kConsumerWGs.
  using SmemLayoutK =
      decltype(tile_to_shape(KMajorAtom<T, kHeadDim / kConsumerWGs>{}, Shape<BN, D>{}));
  using SmemLayoutKt =
      decltype(composition(SmemLayoutK{}, make_layout(Shape<D, BN>{}, Stride<BN, _1>{})));
  using SmemLayoutV = decltype(tile_to_shape(KMajorAtom<T, kQAtomWidth>{}, Shape<BN, D>{}));
  // dS^T: (kBlockN, kBlockM, 2 buffers), queries contiguous (the accumulator holds query pairs).
  // dQ reads it as dS (kBlockM, kBlockN), M-major.
  // kDqSwapAB: dS itself, (kBlockM, kBlockN, 2 buffers) with keys contiguous: the K-major B
  // operand of dQ^T (80 queries are no multiple of a swizzle atom's width that stmatrix can fill,
  // 64 keys per WG are one SW128 atom), written by transposing stmatrix (ds_stsm_t_lane_offset).
  // dS^T is then its transposed view (used by nothing but the generic declarations).
  using SmemLayoutdSt = typename std::conditional_t<
      kDqSwapAB, DsKeysLayoutTransposed<T, kBlockM, kBlockN>,
      TypeIs<decltype(tile_to_shape(KMajorAtom<T, kBlockM>{}, Shape<BN, BM, _2>{}))>>::type;
  using SmemLayoutdS = typename std::conditional_t<
      kDqSwapAB, DsKeysLayout<T, kBlockM, kBlockN>,
      TypeIs<decltype(composition(SmemLayoutdSt{}, make_layout(Shape<BM, BN, _2>{},
                                                               Stride<BN, _1, Int<kBlockM * kBlockN>>{})))>>::type;
  using SmemLayoutDsStorage = std::conditional_t<kDqSwapAB, SmemLayoutdS, SmemLayoutdSt>;

  // S^T = K Q^T and dP^T = V dO^T: WGs split the keys (M), or in split-D the queries (N).
  using MmaSdP = std::conditional_t<
      kSplitD,
      decltype(make_tiled_mma(
          SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, Int<kBlockM / kConsumerWGs>, D>,
                                     GMMA::Major::K, GMMA::Major::K>(),
          Layout<Shape<_1, Int<kConsumerWGs>, _1>>{})),
      typename std::conditional_t<
          kBlockM == 80, TiledN80<T, kConsumerWGs, GMMA::Major::K, GMMA::Major::K>,
          TypeIs<decltype(make_tiled_mma(
              SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, BM, D>, GMMA::Major::K, GMMA::Major::K>(),
              Layout<Shape<Int<kConsumerWGs>, _1, _1>>{}))>>::type>;
  // dV += P^T dO and dK += dS^T Q: A from registers (RS), or in split-D from smem with the head
  // dim (N) split across the WGs.
  using MmadKV = std::conditional_t<
      kSplitD,
      decltype(make_tiled_mma(
          SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, Int<kHeadDim / kConsumerWGs>, BM>,
                                     GMMA::Major::K, GMMA::Major::MN>(),
          Layout<Shape<_1, Int<kConsumerWGs>, _1>>{})),
      decltype(make_tiled_mma(
          SM90::GMMA::rs_op_selector<T, T, float, Shape<_64, D, BM>, GMMA::Major::K, GMMA::Major::MN>(),
          Layout<Shape<Int<kConsumerWGs>, _1, _1>>{}))>;
  // dQ_blk = dS K: the WGs split the head dim (N), or at kBlockM = 128 the queries (M), which
  // keeps the wgmmas at N = 64 (d64) instead of 32 per WG: half as many, each reading its dS
  // (A) slice from smem once. Either way each WG's part is a contiguous half of the fragment order.
  static constexpr bool kDqSplitM = kBlockM == 128;
  // kDqSwapAB: dQ^T = K^T dS^T, the WGs split the head dim (M) and each WG's part is again a
  // contiguous half of the fragment order.
  using MmadQ = typename std::conditional_t<
      kDqSwapAB, TiledN80<T, kConsumerWGs, GMMA::Major::MN, GMMA::Major::K>,
      TypeIs<std::conditional_t<
          kDqSplitM,
          decltype(make_tiled_mma(
              SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, D, BN>, GMMA::Major::MN, GMMA::Major::MN>(),
              Layout<Shape<Int<kConsumerWGs>, _1, _1>>{})),
          decltype(make_tiled_mma(
              SM90::GMMA::ss_op_selector<T, T, float, Shape<_64, Int<kHeadDim / kConsumerWGs>, BN>,
                                         GMMA::Major::MN, GMMA::Major::MN>(),
              Layout<Shape<_1, Int<kConsumerWGs>, _1>>{}))>>>::type;
  static_assert(!kDqSplitM || kBlockM == 64 * kConsumerWGs, "one 64-row wgmma per WG");

  // Global tensors as TMA sees them: (rows, head dim, heads, batch); varlen: rows are global and
  // batch is 1.
  using ShapeG = Shape<int32_t, int32_t, int32_t, int32_t>;
  using StrideG = Stride<int64_t, _1, int64_t, int64_t>;
  using GTensor = decltype(make_tensor(make_gmem_ptr(static_cast<T const*>(nullptr)), ShapeG{}, StrideG{}));
  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{}, GTensor{}, take<0, 2>(SmemLayoutQ{}),
                                      Shape<BM, D>{}, _1{}));
  using TmaK = decltype(make_tma_copy(SM90_TMA_LOAD{}, GTensor{}, SmemLayoutK{}, Shape<BN, D>{}, _1{}));
  using TmaV = decltype(make_tma_copy(SM90_TMA_LOAD{}, GTensor{}, SmemLayoutV{}, Shape<BN, D>{}, _1{}));
  // Clusters of two key blocks (FA_SM90_BWD_CLUSTER, a head-dim mask; per-WG-keys tiles only):
  // the two CTAs of a cluster walk the same query blocks in the same order, so each loads half
  // of every Q and dO tile and the TMA multicast writes it into both. Why: a CTA re-reads the
  // whole Q and dO of its head once per 128 keys (32 KB per 64-query step at d128), which pairs
  // halve. The launcher uses it for unmasked, non-varlen, non-deterministic calls with an even
  // number of key blocks; FA_SM90_BWD_CLUSTER=0 in the environment turns it off at run time.
  // Default 0 (off): H200, session 11, a build with d64/d96/d128 on (14), non-causal N 512..16k,
  // on/off/on/off in one call, TFLOP/s (mean of two runs): d128 350 vs 368 at N512, 443 vs 463 at
  // 1k, 525 vs 546 at 8k, 541 vs 545 at 16k (N4k 527 vs 522, within its spread); d64 -3% at N <= 4k,
  // equal at 8k-16k. Tests passed both ways (109 on, 79 off), memcheck and synccheck clean on two
  // Grid cases (racecheck did not finish in 60 s). Likely cause, not profiled: a stage is
  // refilled only once both CTAs have released it, so each CTA also waits for its peer's slowest
  // step, and the shared query rotation sends both CTAs' dQ reduce-adds to the same block at the
  // same moment.
#ifndef FA_SM90_BWD_CLUSTER
#define FA_SM90_BWD_CLUSTER 0
#endif
  static constexpr bool kClusterable =
      !kSplitD && !kDqSwapAB && (FA_SM90_BWD_CLUSTER & head_dim_bit(kHeadDim)) != 0;
  struct NoTma {};
  using TmaQMc = std::conditional_t<kClusterable,
                                    decltype(make_tma_copy(SM90_TMA_LOAD_MULTICAST{}, GTensor{},
                                                           take<0, 2>(SmemLayoutQ{}), Shape<BM, D>{}, _2{})),
                                    NoTma>;

  static constexpr uint32_t kBytesQ = kBlockM * kHeadDim * sizeof(T);
  static constexpr uint32_t kBytesRow = kBlockM * sizeof(float);  // one LSE or D slice
  static constexpr uint32_t kBytesKV = 2 * kBlockN * kHeadDim * sizeof(T);

  struct SharedStorage {
    array_aligned<T, cosize_v<SmemLayoutK>, 1024> k;
    array_aligned<T, cosize_v<SmemLayoutV>, 1024> v;
    array_aligned<T, cosize_v<SmemLayoutQ>, 1024> q;
    array_aligned<T, cosize_v<SmemLayoutQ>, 1024> dout;
    array_aligned<T, cosize_v<SmemLayoutDsStorage>, 1024> ds;
    array_aligned<T, kSplitD ? cosize_v<SmemLayoutdSt> : 8, kSplitD ? 1024 : 16> pt;  // P^T, split-D only
    array_aligned<float, kDqTma ? kBlockM * kHeadDim : 4, 128> dq;  // dQ staging, fragment order
    alignas(16) float lse[kStages][kBlockM];
    alignas(16) float dpsum[kStages][kBlockM];
    uint64_t bar_kv;
    uint64_t bar_q[kStages];
    uint64_t bar_do[kStages];
    uint64_t bar_empty[kStages];
    uint32_t dq_last[kFusedConvert ? kFuseWords : 1];  // kFusedConvert: bit s = this CTA added step s's block last
  };
  static_assert(sizeof(SharedStorage) <= 227 * 1024, "shared memory of one CTA exceeds the H200's 227 KB");
};

#ifndef FA_SM90_BWD_TIMELINE
#define FA_SM90_BWD_TIMELINE 0
#endif

template <class Cfg>
struct BwdParams {
  core::AttnParams p;
  BwdWorkspace ws;
  typename Cfg::TmaQ tma_q;
  typename Cfg::TmaQ tma_do;
  typename Cfg::TmaK tma_k;
  typename Cfg::TmaV tma_v;
  float scale_log2;   // softmax scale * log2(e)
  float cap_inv;      // softmax scale / softcap (softcap on)
  float cap_log2;     // softcap * log2(e)
  int cta_group = 0;  // > 0 (Cfg::kGroupedOrder): CTA order in groups of this many (KV head,
                      // sequence) pairs, key block major within a group (cta_coord); 0: blockIdx
  int fused_convert = 0;  // kFusedConvert and this call qualifies: the last adder converts dQ
  int dq_store_first = 0;  // kDqTma, FA_SM90_BWD_DQ_STORE, few key blocks: the first adder stores (dq_writer)
  int rotate_m = 0;        // FA_SM90_BWD_ROTATE_M: each CTA walks its query blocks from its own start
  int dkv_store_wide = 0;  // Cfg::kEpiStoreRounds > 0 and dK, dV aligned to its bytes: quad-transposed stores
  int cluster = 0;         // Cfg::kClusterable: launched in clusters of two key blocks (Q/dO multicast)
  int convert_follows = 0;  // Cfg::kDqTma: bwd_convert_dq_follow converts each (sequence, KV head) once
                            // its key blocks report their dQ adds complete (ws.kv_done)
  typename Cfg::TmaQMc tma_q_mc;   // cluster: the multicast Q / dO maps
  typename Cfg::TmaQMc tma_do_mc;
#if FA_SM90_BWD_TIMELINE
  unsigned long long* timeline = nullptr;  // Stamp::kCount stamps per CTA (bwd_stamp), or none
#endif
};

// Per-CTA timeline (diagnostic builds only: -DFA_SM90_BWD_TIMELINE=1; the launcher fills it when
// FA_SM90_BWD_TIMELINE_OUT names a file, flash_bwd.cuh). %globaltimer stamps of where a CTA's
// fixed costs sit: entry, K/V arrived, first Q arrived, last step done, epilogue done, dQ warp
// done, producer done; slot 0 holds the SM id and the step count. scripts/bwd_timeline.py reads it.
enum class Stamp : int { Sm = 0, Entry, KvIn, FirstQ, LoopEnd, EpiEnd, DqEnd, ProdEnd, kCount };
template <class Cfg>
__device__ __forceinline__ void bwd_stamp(const BwdParams<Cfg>& prm, Stamp slot, unsigned long long value = 0) {
#if FA_SM90_BWD_TIMELINE
  if (prm.timeline == nullptr) return;
  unsigned long long t = value;
  if (slot != Stamp::Sm) asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  const long long cta = blockIdx.x + int64_t(gridDim.x) * (blockIdx.y + int64_t(gridDim.y) * blockIdx.z);
  prm.timeline[cta * int(Stamp::kCount) + int(slot)] = t;
#else
  (void)prm, (void)slot, (void)value;
#endif
}

// Whether this launch runs in clusters of two (BwdParams::cluster).
template <class Cfg>
__device__ __forceinline__ bool bwd_in_cluster(const BwdParams<Cfg>& prm) {
  if constexpr (Cfg::kClusterable) return prm.cluster != 0;
  else return false;
}
// The Q/dO stage's release: every consumer thread on its own CTA's barrier, or in clusters one
// thread per consumer warpgroup on the barrier of both CTAs (either CTA's producer overwrites the
// stage in both). One arrival stands for the warpgroup: the release follows the retirement of the
// last wgmma reading the stage, which every warp of the warpgroup issued after its reads of the
// stage's LSE / D rows, and a wgmma and its completion are warpgroup-wide.
template <class Cfg>
__device__ __forceinline__ void bwd_release_stage(const BwdParams<Cfg>& prm, uint64_t* bar) {
  if (bwd_in_cluster(prm)) {
    if (threadIdx.x % 128 == 0) {
      cutlass::arch::ClusterBarrier::arrive(bar, 0u, 1u);
      cutlass::arch::ClusterBarrier::arrive(bar, 1u, 1u);
    }
    return;
  }
  cutlass::arch::ClusterBarrier::arrive(bar);
}

// Rotated query-block order (BwdParams::rotate_m; never in the deterministic mode, whose turns
// assume every CTA goes in ascending order): key block n of a sequence with nb key blocks starts
// at the query block n * m_count / nb of its range and wraps around. Without it every key block of
// a head walks the same query blocks in the same order at the same time (non-causal: all start at
// block 0), so up to nb reduce-adds of one dQ block reach L2 together and, with dq_store_first,
// all but one wait for the first store; rotated, a block's adds are spread over the whole pass.
// (Hint from the session-4 ablation at d128 N8k: the deterministic mode, which staggers the CTAs
// by its turns, was 1.4% faster than the default there.) The three loops over a CTA's steps
// (producer, dQ warp, consumers) all take m from rotated_m, so they agree. Default
// FA_SM90_BWD_ROTATE_M: 1 (default since session 7) rotated, 0 the previous order. H200, bf16,
// non-causal (causal has a right bound and never rotates): session 5 round 3 +2.4% / +1.2% at
// d128 N2k / 4k, -3.5% at d64 N2k, the rest within 1.5%; session 7 round 2, N 512/1k/4k/8k, d64
// +3.2/+1.9/+0.7/+0.2%, d128 +0.6/+1.6/+3.3/+0.2%, d256 +1.6/+1.2/+0.3/-0.2% (one process
// each); session 7 round 3, three alternating processes each, N 2k/4k/8k: d64 +1.2/-0.5/-0.6%,
// d128 +1.3/-0.4/-0.2%, i.e. within the spread (the single-process rows were noise). Kept on:
// the session-7 release grid ran with it. The run-time variable of the same name (0 / 1)
// overrides it (flash_bwd.cuh).
#ifndef FA_SM90_BWD_ROTATE_M
#define FA_SM90_BWD_ROTATE_M 1
#endif

// Programmatic dependent launch (FA_SM90_BWD_PDL, default on, env 0 = off; flash_bwd.cuh): the
// main kernel is launched as a programmatic dependent of bwd_preprocess, and bwd_convert_dq as one
// of the main kernel (pdl_trigger / pdl_wait, cuda/common/pdl.cuh), so a kernel's launch and
// prologue (CTA rasterisation, barrier init, the K/V loads) overlap the previous kernel's tail
// instead of following its last CTA. The dependent waits before its first access to the
// workspace (LSE*log2e, D, the dQ accumulator and its counters).
FA_HD int rotation_start(int n_block, int k_len, int block_n, int m_count) {
  const int nb = (k_len + block_n - 1) / block_n;
  return m_count > 1 && nb > 0 ? int(int64_t(n_block) * m_count / nb) % m_count : 0;
}
// A CTA's rotation start (0 without BwdParams::rotate_m); in clusters both key blocks of a pair
// start where the pair's first one does, so they walk the same query blocks in the same order.
template <class Cfg>
__device__ __forceinline__ int cta_rotation(const BwdParams<Cfg>& prm, int n_block, int k_len, int m_count) {
  if (!prm.rotate_m) return 0;
  return rotation_start(bwd_in_cluster(prm) ? n_block & ~1 : n_block, k_len, Cfg::kBlockN, m_count);
}
// The query block of iteration mi (0 <= mi < m_count) of [m_first, m_first + m_count) from m_rot on.
FA_HD int rotated_m(int mi, int m_first, int m_count, int m_rot) {
  const int r = mi + m_rot;
  return m_first + (r >= m_count ? r - m_count : r);
}

// Query blocks [first, last) with a row that sees a key of [n0, n1) (n1 clipped to k_len). The
// inverse of Mask::key_range: both come from the same two band inequalities, which keeps the
// deterministic mode's turn numbering consistent with the blocks each CTA really visits.
FA_HD void query_block_range(const core::Mask& m, int64_t n0, int64_t n1, int block_m, int* first,
                             int* last) {
  const int64_t shift = m.k_len - m.q_len;  // diag(i) = i + shift
  int64_t lo = 0, hi = m.q_len;
  if (m.right >= 0) lo = max(lo, n0 - shift - m.right);
  if (m.left >= 0) hi = min(hi, n1 - 1 - shift + m.left + 1);
  *first = int(lo / block_m);
  *last = hi > lo ? int((hi + block_m - 1) / block_m) : *first;
}

// The CTA's view of the mask in 32-bit block-local terms (sequence lengths and TMA coordinates
// are 32-bit anyway): in the tile of query block i0 and this CTA's keys n0.., key kj is visible
// to query qi iff lo <= kj - qi <= hi and kj < key_end (Mask::allowed with i0, n0 folded in).
// Keeping 32-bit scalars instead of the 64-bit Mask in the loop saves registers the
// accumulators need.
struct BlockBand {
  int lo, hi, key_end;
  __device__ bool allowed(int qi, int kj) const {
    const int d = kj - qi;
    return d >= lo && d <= hi && kj < key_end;
  }
  // The same band seen from a thread whose first accumulator element is (key kj_t, query q_t):
  // allowed(qi - q_t, kj - kj_t) of the result equals allowed(qi, kj) of this one. The per-element
  // operands are then compile-time offsets, compared against three per-step registers, instead of
  // one precomputed kj - qi register per element (64 at kBlockM = 128, which spilled).
  __device__ BlockBand relative(int kj_t, int q_t) const {
    const int dd = kj_t - q_t;
    return {lo - dd, hi - dd, key_end - kj_t};
  }
  template <int kBlockM, int kBlockN>
  __device__ bool whole_tile_visible() const {
    return lo <= -(kBlockM - 1) && hi >= kBlockN - 1 && key_end >= kBlockN;
  }
};

struct CtaBand {
  static constexpr int kBig = 1 << 30;
  int diag0;    // k_len - q_len: query row i sits at key i + diag0
  int left;     // kBig when unbounded
  int right;    // kBig when unbounded
  int key_end;  // k_len - n0
  int k_last;   // k_len - 1
  int diag_n0;  // diag0 - n0: block() needs no n0 (one register fewer in the main loop)

  __device__ CtaBand(const core::Mask& m, int64_t n0) {
    auto clamp = [](int64_t v) { return int(v < -kBig ? -kBig : (v > kBig ? kBig : v)); };
    diag0 = int(m.k_len - m.q_len);
    left = m.left >= 0 ? clamp(m.left) : kBig;
    right = m.right >= 0 ? clamp(m.right) : kBig;
    key_end = int(m.k_len - n0);
    k_last = int(m.k_len - 1);
    diag_n0 = int(m.k_len - m.q_len - n0);
  }
  __device__ BlockBand block(int i0) const {
    const int shift = diag_n0 + i0;
    return {shift - left, shift + right, key_end};
  }
  // First key any row of the query block at i0 sees (Mask::key_range's lower end).
  __device__ int first_key(int i0) const { return max(0, diag0 + i0 - left); }
  // Last key any row of the query block at i0 sees (Mask::key_range's upper end - 1); the block's
  // last row sees it, as every row's key interval moves right with the row.
  __device__ int last_key(int i0, int block_m, int q_len) const {
    if (right >= kBig) return k_last;
    const int64_t v = int64_t(diag0) + min(i0 + block_m, q_len) - 1 + right;
    return int(v < k_last ? v : k_last);
  }
  // Deterministic mode: this CTA's place in the fixed order in which the key blocks that see the
  // query block at i0 add their dQ to it. Ascending key blocks by default. With a right bound
  // (causal, sliding window) a higher key block starts at a later query block and so reaches any
  // given one earlier: the order is descending, and the launcher reverses blockIdx.x for it
  // (bwd_main), so in both orders a CTA only ever waits for CTAs launched before it (resident or
  // finished: no deadlock however many CTAs fit the GPU), and ideally never waits at all.
  __device__ int dq_turn(int i0, int n_block, int block_m, int block_n, int q_len, bool descending) const {
    return descending ? last_key(i0, block_m, q_len) / block_n - n_block : n_block - first_key(i0) / block_n;
  }
};

// Accumulator layout ((2,2,N/8), M, N) of a wgmma C fragment, viewed as the A-operand register
// layout ((2,2,2), M, (N/16, N)) of a following RS wgmma with K = N (16-bit A).
template <class Layout>
FA_HD auto acc_as_a_operand(Layout acc) {
  auto l = logical_divide(layout<0, 2>(acc), Shape<_2>{});  // ((2, N/16))
  return make_layout(make_layout(layout<0, 0>(acc), layout<0, 1>(acc), layout<0, 0>(l)),
                     layout<1>(acc), coalesce(make_layout(layout<0, 1>(l), layout<2>(acc))));
}

// Issues one warpgroup GEMM (all k-blocks) as one wgmma batch; the caller waits with
// warpgroup_wait<N>. kZeroInit: C = A B instead of C += A B.
template <bool kZeroInit, class Mma, class TA, class TB, class TC>
__device__ void wgmma_batch(Mma& mma, TA const& a, TB const& b, TC& c) {
  // RS form: A is a register tensor of the element type (SS: a tensor of smem descriptors).
  constexpr bool kRegA = std::is_same_v<typename TA::value_type, typename Mma::ValTypeA>;
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
  CUTE_UNROLL
  for (int k = 0; k < size<2>(a); ++k) {
    cute::gemm(mma, a(_, _, k), b(_, _, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  warpgroup_fence_operand(c);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
}

// Named barrier among the consumer warpgroups only (id 0 is __syncthreads).
__device__ __forceinline__ void consumer_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Signal a named barrier without waiting (the other side of a bar.sync with the same count).
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Named barrier `id` of `threads` threads that also ORs a predicate over them (bar.red.or).
__device__ __forceinline__ int barrier_or(int id, int threads, int pred) {
  int out;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.s32 p, %1, 0;\nbarrier.cta.red.or.pred q, %2, %3, p;\nselp.s32 %0, 1, 0, q;\n}\n"
      : "=r"(out)
      : "r"(pred), "r"(id), "r"(threads)
      : "memory");
  return out;
}
__device__ __forceinline__ void red_add_v4(float* addr, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(addr), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
}

// gmem[0, bytes) += smem[0, bytes) (fp32), done by the TMA unit; completion is tracked with the
// issuing thread's bulk async-groups (commit, then wait).
__device__ __forceinline__ void bulk_reduce_add_f32(float* gmem, const float* smem, uint32_t bytes) {
  const uint32_t s = uint32_t(__cvta_generic_to_shared(smem));
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(gmem),
               "r"(s), "r"(bytes)
               : "memory");
}
// As bulk_reduce_add_f32, or with `store` a plain copy (gmem = smem), by predicate: one address
// computation for both (the dQ warp runs in 24 registers).
__device__ __forceinline__ void bulk_store_or_add_f32(float* gmem, const float* smem, uint32_t bytes, bool store) {
  const uint32_t s = uint32_t(__cvta_generic_to_shared(smem));
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.u32 p, %3, 0;\n"
      " @p cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
      " @!p cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n}\n" ::"l"(gmem),
      "r"(s), "r"(bytes), "r"(uint32_t(store))
      : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// All but the newest N groups have finished reading their smem source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// All but the newest N groups are complete, their global writes included.
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Every group is complete, its global writes included.
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
// Orders this thread's generic-proxy global accesses with its async-proxy (TMA) ones.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Returns the old value; acquire (we may read the other CTAs' adds) and release (ours) at once.
__device__ __forceinline__ int atom_add_acq_rel(int* p, int v) {
  int old;
  asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__device__ __forceinline__ void red_add_release(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float a, float b) {
  union {
    T h[2];
    uint32_t u;
  } pack;
  pack.h[0] = T(a);
  pack.h[1] = T(b);
  return pack.u;
}

template <typename T>
__device__ __forceinline__ void store_pair(T* dst, float a, float b) {
  // Two adjacent head-dim elements in one 32-bit store (the launcher checked 4-byte alignment).
  *reinterpret_cast<uint32_t*>(dst) = pack_pair<T>(a, b);
}

using sm90::stmatrix_x4;
using sm90::stmatrix_x4_trans;

// kDsStsm: this lane's stmatrix row address in dS^T buffer 0 (bytes, shared window), for the column
// pair j = 0 of the S^T accumulator (64 keys x 64 queries per WG, SW128 K-major: element (key R,
// query C) of buffer b at b*kBlockN*64 + R*64 + ((C/8) ^ (R%8))*8 + C%8). Lane l addresses row
// r = l%8 of matrix q = l/8, which holds rows 8(q%2).. of the warp's 16 and query columns
// 8(j + q/2)..; the column pair j (even) then only XORs 16*j into the address, as the row part is a
// multiple of 128 bytes and the swizzled chunk is (j + q/2) ^ r = j ^ (q/2 ^ r). Checked against
// CuTe's dS^T tensor by scripts/check_sm90_bwd_layout.cu.
// kSplitD (64 keys x 64 queries, WG w holds all 64 keys and queries 32w..32w+31): the warp's rows
// are (tid/32 % 4)*16.., and the query chunk is 4w + j + q/2 with disjoint bits (j in {0, 2}), so
// the WG's half is one more XOR (4w ^ ...) in the base and j still XORs 16*j.
template <bool kSplitD = false>
FA_HD uint32_t ds_stsm_lane_offset(int tid) {
  const int lane = tid % 32, q = lane / 8, r = lane % 8;
  if constexpr (kSplitD) {
    const int row = ((tid / 32) % 4) * 16 + (q % 2) * 8 + r;
    return uint32_t(row * 128 + ((((q / 2) ^ r) ^ (4 * (tid / 128))) * 16));
  } else {
    const int row = (tid / 32) * 16 + (q % 2) * 8 + r;  // key row: WG w's warps cover 64w..64w+63
    return uint32_t(row * 128 + (((q / 2) ^ r) * 16));
  }
}
template <bool kSplitD = false>
__device__ __forceinline__ uint32_t ds_stsm_lane_base(const void* ds_smem, int tid) {
  return uint32_t(__cvta_generic_to_shared(ds_smem)) + ds_stsm_lane_offset<kSplitD>(tid);
}

// kDqSwapAB (kBlockM = 80): this lane's transposing-stmatrix row address in dS buffer 0 (bytes),
// for the column pair j = 0 of the S^T accumulator. dS is (query, key) with keys contiguous, SW128
// K-major (SmemLayoutdS): element (query q, key k) at byte
//   (q/8 + (kBlockM/8) (k/64)) * 1024 + (q%8) * 128 + (((k%64)/8) ^ (q%8)) * 16 + (k%8) * 2,
// i.e. 1024-byte atoms of 8 queries x 64 keys, kBlockM/8 of them per 64-key column. Packed
// register 2j + h of the accumulator is the 8x8 matrix (keys 8h.. of the warp's 16, queries
// 8j..) in the mma fragment layout; stmatrix .trans stores its column c (query 8j + c, 8 keys)
// as one 16-byte row at the address of lane 8m + c, for matrix m = (h = m%2, j + m/2) of an x4.
// That row is key chunk 2w + h (w: the warp in the WG) of the WG's 64-key column, in atom
// j + m/2 of it: the column pair j only adds 1024 * j (the XOR sees query % 8 = c either way).
// Checked against CuTe's dS tensor by scripts/check_sm90_bwd_layout.cu and
// tests/cuda/test_sm90_bwd_nc80_layout.cu.
template <int kBlockM>
FA_HD uint32_t ds_stsm_t_lane_offset(int tid) {
  const int lane = tid % 32, m = lane / 8, c = lane % 8;
  const int wg = tid / 128, chunk = 2 * ((tid / 32) % 4) + m % 2;
  return uint32_t(((m / 2) + wg * (kBlockM / 8)) * 1024 + c * 128 + ((chunk ^ c) * 16));
}

// a if kFirst, else b (both lvalues; picks a tensor at compile time without a copy).
template <bool kFirst, class A, class B>
__device__ __forceinline__ auto& select_ref(A& a, B& b) {
  if constexpr (kFirst) return a;
  else return b;
}

// Named barriers (0 is __syncthreads). DqFull/DqEmpty: the consumers and the dQ warp hand the dQ
// staging buffer back and forth (the two WGs are in step anyway: DsWritten).
// PtWritten: split-D with kDvEarly, both WGs' P^T halves are in smem (dV reads them).
// DqDone / FuseTile (fused dQ conversion): the dQ warp's arrivals are all done / the consumers'
// row-major dQ tile in smem is written or free.
enum class BarrierId : int {
  DsWritten = 1,
  DqTurn = 2,
  DqFull = 3,
  DqEmpty = 4,
  PtWritten = 5,
  DqDone = 6,
  FuseTile = 7,
  TailSum = 8
};

// The dQ warp (kDqTma): per step, waits until the consumers have staged dQ_blk in smem, has the
// TMA unit add it to the fp32 accumulator (cp.reduce.async.bulk .add.f32: the consumers issue no
// per-element atomics), and hands the buffer back once the TMA has read it. In the deterministic
// mode it first waits for the query block's turn and passes the turn on once its add is
// complete, so the consumers only ever wait for a busy staging buffer, never for another CTA
// directly. Runs in the producer warpgroup's 24 registers: the loop keeps few values live.
// kFusedConvert: the dQ warp's lane 0 arrives at step s's block (query block at padded row prow),
// its add complete and proxy-fenced; the arrival that takes the counter to 0 marks s for conversion.
template <class Cfg>
__device__ __forceinline__ void fused_arrive(const BwdParams<Cfg>& prm, uint32_t* sdq_last, int64_t prow, int s) {
  __threadfence();
  if (atom_add_acq_rel(prm.ws.dq_arrive + prow / kTurnRows, -1) == 1) sdq_last[s >> 5] |= 1u << (s & 31);
}

template <class Cfg>
// One loop over the CTA's steps (query head of the group, then query block in rotated_m order);
// step s is also the fused conversion's bit index (fused_convert_dq maps it back the same way).
__device__ void dq_writer(const BwdParams<Cfg>& prm, const float* sdq, uint32_t* sdq_last, int hk, int m_first, int m_count,
                          int m_rot, int64_t prow_seq, int n_block, const CtaBand& band, int q_len, bool descending) {
  constexpr int kBlockM = Cfg::kBlockM, kHeadDim = Cfg::kHeadDim;
  const bool lane0 = threadIdx.x % 32 == 0;
  const int group = prm.p.group_size();
  const int n_steps = group * m_count;
  int64_t pend_prow = 0;  // kFusedConvert, non-deterministic: the step whose arrival is pending
  int pend_step = -1;
  named_arrive(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);  // the buffer starts free
  for (int step = 0; step < n_steps; ++step) {
    const int h = hk * group + step / m_count;
    const int m = rotated_m(step % m_count, m_first, m_count, m_rot);
    const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + int64_t(m) * kBlockM;
    int* turn = prm.ws.dq_turn + prow / kTurnRows;
    const int my_turn = band.dq_turn(m * kBlockM, n_block, kBlockM, Cfg::kBlockN, q_len, descending);
    if (prm.p.deterministic && lane0) {
      while (load_acquire(turn) != my_turn) __nanosleep(32);
      fence_proxy_async_global();  // the previous adder's writes before our TMA's reads
    }
    __syncwarp();  // bar.sync/arrive with the whole warp converged
    consumer_sync(int(BarrierId::DqFull), Cfg::kDqSyncThreads);
    if (lane0) {
      // dq_store_first: the block's first adder stores instead (bwd_preprocess did not zero the
      // accumulator). Deterministic mode: turn 0 is first, and the turns order the rest. Else the
      // turn counter (0 from bwd_preprocess, unused otherwise) says who: the CAS 0 -> 1 winner
      // stores, and sets it to 2 once the store is complete (the same wait / proxy fence /
      // release as a deterministic turn); the others wait for 2 before adding. The winner's
      // store follows its CAS with nothing to wait for in between, so every wait ends.
      bool first = false;
      if (prm.dq_store_first) {
        if (prm.p.deterministic) {
          first = my_turn == 0;
        } else {
          first = atomicCAS(turn, 0, 1) == 0;
          if (!first) {
            while (load_acquire(turn) != 2) __nanosleep(32);
            fence_proxy_async_global();  // the store before our TMA's reads
          }
        }
      }
      // One transfer per WG half (16 KB at d128), the size FA3 uses, rather than one of 32 KB.
      float* dq_blk = prm.ws.dq_acc + prow * kHeadDim;
#pragma unroll
      for (int wg = 0; wg < Cfg::kConsumerWGs; ++wg)
        bulk_store_or_add_f32(dq_blk + wg * Cfg::kDqHalf, sdq + wg * Cfg::kDqHalf, Cfg::kDqHalf * 4, first);
      bulk_commit();
      bulk_wait_read<0>();
      if (first && !prm.p.deterministic) {
        bulk_wait_all();
        fence_proxy_async_global();
        store_release(turn, 2);
      }
    }
    __syncwarp();
    // After the last step nobody waits (an arrival without its bar.sync would stay pending).
    if (step + 1 < n_steps) named_arrive(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);
    if (prm.p.deterministic && lane0) {
      bulk_wait_all();
      fence_proxy_async_global();
      store_release(turn, my_turn + 1);
    }
    if constexpr (kFusedConvert) {
      if (prm.fused_convert && lane0) {
        // An add must be complete in global memory (wait_group, not .read), ordered before the
        // generic-proxy counter update (proxy fence) and visible GPU-wide (release) before the
        // counter says so. The previous step's add is the one arrived for here (all groups but
        // the newest complete), so the add's completion latency overlaps the next step
        // instead of holding this warp; the deterministic mode has waited for this one anyway.
        if (prm.p.deterministic) {
          fused_arrive(prm, sdq_last, prow, step);
        } else {
          if (pend_step >= 0) {
            bulk_wait<1>();
            fence_proxy_async_global();
            fused_arrive(prm, sdq_last, pend_prow, pend_step);
          }
          pend_prow = prow;
          pend_step = step;
        }
      }
    }
  }
  // The writes must be complete (and the smem read) before the CTA exits.
  if (lane0) bulk_wait_all();
  if constexpr (kFusedConvert) {
    if (lane0 && pend_step >= 0) {  // non-deterministic mode: the last step's arrival
      fence_proxy_async_global();
      fused_arrive(prm, sdq_last, pend_prow, pend_step);
    }
  }
  __syncwarp();
}

// This CTA's key block: blockIdx.x, reversed in the deterministic mode with a right-bounded mask
// (CtaBand::dq_turn). Read through volatile asm so that the compiler recomputes it where needed
// instead of keeping it in one of the consumers' registers across the main loop.
template <bool kMasked>
__device__ __forceinline__ int key_block_index(const core::AttnParams& p) {
  uint32_t x, nx;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
  asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(nx));
  return kMasked && p.deterministic && p.window_right >= 0 ? int(nx - 1 - x) : int(x);
}

struct CtaCoord {
  int n_block, hk, b;
  int piece = -1;  // tail split (BwdWorkspace::split_ways): this CTA's piece of its tile, or -1
  int slot = -1;   // its tile's slot among the tail tiles
};

// This CTA's (key block, KV head, sequence). By default (key_block_index, blockIdx.y, blockIdx.z).
// With prm.cta_group = G > 0 the linear block index L (x fastest) is read in groups of G (KV head,
// sequence) pairs (the last group may be smaller, gs): within a group, key block L' / gs of pair
// L' % gs, so the G pairs' key block 0 come first, then their key block 1, ... With a causal mask
// key block n has (n_blocks - n) query blocks to do: each group is launched longest first, and a
// group of ~2 waves of CTAs keeps the tail short while the CTAs resident at a time still share
// the few heads' Q, dO and dQ accumulator in L2. Every field is read through volatile asm (see
// key_block_index), so the epilogue can call this again instead of keeping the values live.
// Tail split (BwdWorkspace::split_ways > 0): the 1-D grid's CTA index through tail_cta
// (bwd_workspace.hpp), the tile split into (key block, KV head, sequence) as the 3-D grid has it.
template <class Cfg, bool kMasked>
__device__ __forceinline__ CtaCoord cta_coord(const BwdParams<Cfg>& prm) {
  if (prm.ws.split_ways > 0) {
    uint32_t x;
    asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
    const TailCta t = tail_cta(int(x), prm.ws.split_first, prm.ws.split_ways);
    const int nb = int((prm.p.seqlen_k + Cfg::kBlockN - 1) / Cfg::kBlockN);
    const int pair = t.tile / nb;
    CtaCoord c{t.tile - pair * nb, pair % prm.p.heads_kv, pair / prm.p.heads_kv};
    if (t.piece >= 0) {
      c.piece = t.piece;
      c.slot = t.tile - prm.ws.split_first;
    }
    return c;
  }
  if constexpr (Cfg::kGroupedOrder) {
    const int G = prm.cta_group;
    if (G > 0) {
      uint32_t x, y, z, nx, ny, nz;
      asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
      asm volatile("mov.u32 %0, %%ctaid.y;\n" : "=r"(y));
      asm volatile("mov.u32 %0, %%ctaid.z;\n" : "=r"(z));
      asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(nx));
      asm volatile("mov.u32 %0, %%nctaid.y;\n" : "=r"(ny));
      asm volatile("mov.u32 %0, %%nctaid.z;\n" : "=r"(nz));
      // The launcher sets G only when nx * ny * nz fits in an int.
      const int lin = int(x + nx * (y + ny * z));
      const int pairs = int(ny * nz), per_group = G * int(nx);
      const int g = lin / per_group, w = lin - g * per_group;
      const int gs = min(G, pairs - g * G);
      const int pair = g * G + w % gs;
      return {w / gs, pair % int(ny), pair / int(ny)};
    }
  }
  return {key_block_index<kMasked>(prm.p), int(blockIdx.y), int(blockIdx.z)};
}

// Whether every row of a block can be accessed with 16-byte vectors: row 0 is 16-byte aligned and
// the row stride keeps it so (a row is kHeadDim * 2 bytes, a multiple of 16 for every head dim).
template <typename Element>
__device__ __forceinline__ bool rows_aligned16(const Element* row0, int64_t row_stride) {
  return (reinterpret_cast<uintptr_t>(row0) % 16 == 0) && (row_stride * int64_t(sizeof(Element))) % 16 == 0;
}

// The dQ conversion's two halves, shared by bwd_convert_dq and the fused conversion so both
// produce the same bits. The tile is row-major with rows padded by 16 bytes (kLd): the fragment
// order's stores (a warp: 8 rows x 4 column pairs) then hit 32 distinct banks at every head dim
// (row stride = 4 banks mod 32 for d64/128/192/256 and 20 for d96), and 16-byte row reads stay
// 16-byte aligned.
template <int kHeadDim>
constexpr int dq_tile_ld() { return kHeadDim + 8; }

// This thread's accumulator values v (fragment order, cdQ their tile coordinates) times scale, in
// the output dtype, into the tile.
template <class Cfg, class CoordTensor>
__device__ __forceinline__ void dq_fragment_to_tile(const float4 (&v)[Cfg::kDqFragValues / 4], const CoordTensor& cdQ,
                                                    float scale, uint16_t* tile) {
  using Element = typename Cfg::T;
  constexpr int kLd = dq_tile_ld<Cfg::kHeadDim>();
  CUTE_UNROLL
  for (int i = 0; i < Cfg::kDqFragValues; i += 4) {
    const float e[4] = {v[i / 4].x, v[i / 4].y, v[i / 4].z, v[i / 4].w};
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int r = Cfg::dq_row(cdQ(i + k)), c = Cfg::dq_col(cdQ(i + k));
      tile[r * kLd + c] = Element(e[k] * scale).raw();
    }
  }
}

// The tile's first rows_left rows to dq rows r0.. of (batch b, head h), 16 bytes per store where
// the rows allow it. kThreads threads, tid this thread's index among them.
template <class Cfg, int kThreads>
__device__ __forceinline__ void dq_tile_to_rows(const uint16_t* tile, const core::AttnParams& p, int b, int64_t r0,
                                                int h, int rows_left, int tid) {
  using Element = typename Cfg::T;
  constexpr int kLd = dq_tile_ld<Cfg::kHeadDim>();
  constexpr int kChunks = Cfg::kHeadDim / 8;  // 16-byte chunks per row
  static_assert((Cfg::kBlockM * kChunks) % kThreads == 0);
  Element* dq = static_cast<Element*>(p.dq);
  const bool vec = rows_aligned16(dq + p.dq_str.offset(b, r0, h), p.dq_str.row);
  CUTE_UNROLL
  for (int k = 0; k < Cfg::kBlockM * kChunks / kThreads; ++k) {
    const int idx = k * kThreads + tid;
    const int r = idx / kChunks, ch = idx % kChunks;
    if (r < rows_left) {
      const uint4 w = *reinterpret_cast<const uint4*>(&tile[r * kLd + ch * 8]);
      Element* dst = dq + p.dq_str.offset(b, r0 + r, h) + ch * 8;
      if (vec) {
        *reinterpret_cast<uint4*>(dst) = w;
      } else {
        uint16_t s[8];
        memcpy(s, &w, sizeof(w));
        CUTE_UNROLL
        for (int j = 0; j < 8; ++j) reinterpret_cast<uint16_t*>(dst)[j] = s[j];
      }
    }
  }
}

// Fused dQ conversion (kFusedConvert), run by the consumers after the epilogue: every block whose
// bit the dQ warp set (this CTA's add took its arrival counter to 0, so every visiting CTA's add
// is complete and visible) is converted exactly as bwd_convert_dq does it (same fragment order,
// same fp32 value times scale, same rounding: dQ is bit-identical), through a row-major tile in
// the dQ staging buffer, which the dQ warp no longer uses. The accumulator is read with ld.cg:
// other SMs wrote it, this SM's L1 must not answer.
template <class Cfg, bool kMasked>
__device__ __forceinline__ void fused_convert_dq(const BwdParams<Cfg>& prm, const uint32_t* sdq_last, uint16_t* sdq,
                                              int tid) {
  using Element = typename Cfg::T;
  constexpr int kBlockM = Cfg::kBlockM, kHeadDim = Cfg::kHeadDim, kThreads = Cfg::kConsumerThreads;
  static_assert(sizeof(Element) == 2);
  const core::AttnParams& p = prm.p;
  const CtaCoord cc = cta_coord<Cfg, kMasked>(prm);
  const core::SeqInfo seq = core::seq_info(p, cc.b);
  const int64_t n0 = int64_t(cc.n_block) * Cfg::kBlockN;
  const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1, kMasked ? p.window_right : -1);
  int m_first = 0, m_last = 0;
  query_block_range(mask, n0, min(n0 + Cfg::kBlockN, seq.k_len), kBlockM, &m_first, &m_last);
  const int m_count = m_last - m_first, group = p.group_size();
  const int m_rot = cta_rotation(prm, cc.n_block, int(seq.k_len), m_count);
  const int64_t prow_seq = padded_row_start<Cfg::kSeqRowPad>(p, cc.b, seq.q_start);
  typename Cfg::MmadQ mma_dq;
  Tensor cdQ = mma_part_c(mma_dq.get_thread_slice(tid), make_identity_tensor(typename Cfg::DqShape{}));
  static_assert(decltype(size(cdQ))::value == Cfg::kDqFragValues);
  static_assert(kBlockM * dq_tile_ld<kHeadDim>() * 2 <= kBlockM * kHeadDim * 4, "the tile fits the staging buffer");
#pragma unroll 1
  for (int w = 0; w < kFuseWords; ++w) {
    uint32_t bits = sdq_last[w];
#pragma unroll 1
    while (bits) {
      const int s = w * 32 + __ffs(int(bits)) - 1;
      bits &= bits - 1;
      // Bit s is the dQ warp's step s (dq_writer): the same head and rotated query block.
      const int h = cc.hk * group + s / m_count;
      const int64_t row0 = int64_t(rotated_m(s % m_count, m_first, m_count, m_rot)) * kBlockM;
      const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + row0;
      const float* acc = prm.ws.dq_acc + prow * kHeadDim + Cfg::dq_frag_offset(tid, 0);
      float4 v[Cfg::kDqFragValues / 4];
      CUTE_UNROLL
      for (int i = 0; i < Cfg::kDqFragValues; i += 4) v[i / 4] = __ldcg(reinterpret_cast<const float4*>(acc + i * 128));
      consumer_sync(int(BarrierId::FuseTile), kThreads);  // the previous block's tile has been read
      dq_fragment_to_tile<Cfg>(v, cdQ, p.scale, sdq);
      consumer_sync(int(BarrierId::FuseTile), kThreads);
      const int rows_left = int(min(seq.q_len - row0, int64_t(kBlockM)));
      dq_tile_to_rows<Cfg, kThreads>(sdq, p, cc.b, seq.q_start + row0, h, rows_left, tid);
    }
  }
}

// Tail split (BwdWorkspace::split_ways): this piece's fp32 dK and dV are added to its tile's
// zeroed slot (thread-interleaved float4s, whole 512-byte runs per warp); the piece whose arrival
// completes the count reads the sums back into dk / dv and returns true (it stores the tile).
// The fence before the count orders every thread's adds before it; the counting thread's
// acquire and the barrier order the other pieces' adds before the reads.
template <class Cfg, class Acc>
__device__ __forceinline__ bool tail_reduce(const BwdParams<Cfg>& prm, Acc& dk, Acc& dv, int slot, int tid) {
  constexpr int kT = Cfg::kConsumerThreads;
  constexpr int kV = decltype(size(dk))::value;
  static_assert(kV % 4 == 0 && kV * kT == Cfg::kBlockN * Cfg::kHeadDim, "one tile of dK per consumer set");
  float* part = prm.ws.dkv_part + int64_t(slot) * (2 * kV * kT) + 4 * tid;
  CUTE_UNROLL
  for (int i = 0; i < kV; i += 4) {
    red_add_v4(part + i * kT, dk(i), dk(i + 1), dk(i + 2), dk(i + 3));
    red_add_v4(part + (kV + i) * kT, dv(i), dv(i + 1), dv(i + 2), dv(i + 3));
  }
  __threadfence();
  consumer_sync(int(BarrierId::TailSum), kT);
  int last = 0;
  if (tid == 0) last = atom_add_acq_rel(prm.ws.dkv_count + slot, 1) == prm.ws.split_ways - 1;
  if (!barrier_or(int(BarrierId::TailSum), kT, last)) return false;
  __threadfence();
  CUTE_UNROLL
  for (int i = 0; i < kV; i += 4) {
    const float4 a = __ldcg(reinterpret_cast<const float4*>(part + i * kT));
    const float4 v = __ldcg(reinterpret_cast<const float4*>(part + (kV + i) * kT));
    dk(i) = a.x, dk(i + 1) = a.y, dk(i + 2) = a.z, dk(i + 3) = a.w;
    dv(i) = v.x, dv(i + 1) = v.y, dv(i + 2) = v.z, dv(i + 3) = v.w;
  }
  return true;
}

template <class Cfg, bool kMasked, bool kSoftcap>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
bwd_main(const __grid_constant__ BwdParams<Cfg> prm) {
  using T = typename Cfg::T;
  constexpr int kBlockM = Cfg::kBlockM, kBlockN = Cfg::kBlockN, kHeadDim = Cfg::kHeadDim;
  constexpr int kStages = Cfg::kStages, kConsumerThreads = Cfg::kConsumerThreads;
  using SharedStorage = typename Cfg::SharedStorage;

  extern __shared__ __align__(1024) char smem_raw[];
  SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem_raw);
  const core::AttnParams& p = prm.p;

  if (threadIdx.x == 0) bwd_stamp(prm, Stamp::Entry);
  // Deterministic mode with a right-bounded mask: descending key blocks (CtaBand::dq_turn).
  const bool dq_descending = kMasked && p.deterministic && p.window_right >= 0;
  const CtaCoord cc = cta_coord<Cfg, kMasked>(prm);
  const int n_block = cc.n_block, hk = cc.hk, b = cc.b;
  const core::SeqInfo seq = core::seq_info(p, b);
  const int64_t n0 = int64_t(n_block) * kBlockN;
  if (n0 >= seq.k_len) {  // varlen: this sequence has fewer key blocks than the grid
    // FA_SM90_BWD_PDL: even a grid of such CTAs ends only after bwd_preprocess, so bwd_convert_dq
    // (which waits for this grid) never reads an accumulator that is still being zeroed.
    pdl_wait();
    return;
  }
  const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1,
                        kMasked ? p.window_right : -1);
  const int64_t n1 = min(n0 + kBlockN, seq.k_len);
  int m_first = 0, m_last = 0;
  query_block_range(mask, n0, n1, kBlockM, &m_first, &m_last);
  // A tail-split piece walks its share [lo, hi) of the key block's query blocks, in every query
  // head of the group; everything below (rotation, steps) then sees just that range.
  if (cc.piece >= 0) {
    int lo = 0, hi = 0;
    tail_piece_range(cc.piece, prm.ws.split_ways, m_last - m_first, &lo, &hi);
    m_last = m_first + hi;
    m_first += lo;
  }
  const int m_count = m_last - m_first;
  const int group = p.group_size();
  const int n_steps = m_count * group;  // (query head of the group) x (query block)
  const int64_t prow_seq = padded_row_start<Cfg::kSeqRowPad>(p, b, seq.q_start);
  const int b_tma = p.varlen ? 0 : b;
  const int m_rot = cta_rotation(prm, n_block, int(seq.k_len), m_count);
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));
    bwd_stamp(prm, Stamp::Sm, (static_cast<unsigned long long>(n_steps) << 32) | sm);
  }
  pdl_trigger();  // bwd_convert_dq may be scheduled once every CTA has started (pdl_wait there)

  if (threadIdx.x == 0) {
    cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_kv, 1);
    for (int s = 0; s < kStages; ++s) {
      cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_q[s], 1);
      cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_do[s], 1);
      cutlass::arch::ClusterBarrier::init(&ss.bar_empty[s],
                                          bwd_in_cluster(prm) ? 2 * Cfg::kConsumerWGs : kConsumerThreads);
    }
    cutlass::arch::fence_barrier_init();
    if constexpr (kFusedConvert)
      for (int w = 0; w < kFuseWords; ++w) ss.dq_last[w] = 0u;
  }
  __syncthreads();
  // The peer's barriers are initialised before its producer multicasts into this CTA or its
  // consumers arrive here.
  if (bwd_in_cluster(prm)) {
    cute::cluster_arrive_relaxed();
    cute::cluster_wait();
  }

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Cfg::SmemLayoutQ{});
  Tensor sdO = make_tensor(make_smem_ptr(ss.dout.data()), typename Cfg::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Cfg::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Cfg::SmemLayoutV{});

  if (threadIdx.x < 128) {
    // ---------------- producer ----------------
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if constexpr (Cfg::kDqTma) {
      if (threadIdx.x / 32 == 1) {
        // The accumulator, counters (kv_done too, even without steps): bwd_preprocess.
        if (n_steps > 0 || prm.convert_follows) pdl_wait();
        if (n_steps > 0)
          dq_writer<Cfg>(prm, ss.dq.data(), ss.dq_last, hk, m_first, m_count, m_rot, prow_seq, n_block,
                         CtaBand(mask, n0), int(seq.q_len), dq_descending);
        // The conversion bits are final: the consumers may start converting.
        if (kFusedConvert && prm.fused_convert) named_arrive(int(BarrierId::DqDone), Cfg::kDqSyncThreads);
        if (prm.convert_follows && threadIdx.x % 32 == 0) {
          // dq_writer's last wait_group 0 (this lane) made every add of this CTA complete; the
          // proxy fence orders those async-proxy writes before the release that reports them.
          // (KV head, sequence) read again (cta_coord: volatile) rather than kept across the loop.
          const CtaCoord c = cta_coord<Cfg, kMasked>(prm);
          fence_proxy_async_global();
          red_add_release(prm.ws.kv_done + int64_t(c.b) * p.heads_kv + c.hk, 1);
        }
        if (threadIdx.x == 32) bwd_stamp(prm, Stamp::DqEnd);
        return;
      }
    }
    if (threadIdx.x != 0 || n_steps == 0) return;
    prefetch_tma_descriptor(prm.tma_q.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_do.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_k.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_v.get_tma_descriptor());
    const int rows_q = p.varlen ? int(p.total_q) : int(p.seqlen_q);
    const int rows_k = p.varlen ? int(p.total_k) : int(p.seqlen_k);
    const int batch_g = p.varlen ? 1 : p.batch;
    Tensor mK = prm.tma_k.get_tma_tensor(make_shape(rows_k, kHeadDim, p.heads_kv, batch_g));
    Tensor mV = prm.tma_v.get_tma_tensor(make_shape(rows_k, kHeadDim, p.heads_kv, batch_g));

    {  // K and V of this CTA, once.
      auto tile = Shape<Int<kBlockN>, Int<kHeadDim>>{};
      Tensor gK = local_tile(domain_offset(make_coord(int(seq.k_start), _0{}), mK(_, _, hk, b_tma)),
                             tile, make_coord(n_block, _0{}));
      Tensor gV = local_tile(domain_offset(make_coord(int(seq.k_start), _0{}), mV(_, _, hk, b_tma)),
                             tile, make_coord(n_block, _0{}));
      auto [tKgK, tKsK] = tma_partition(prm.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK),
                                        group_modes<0, 2>(gK));
      auto [tVgV, tVsV] = tma_partition(prm.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV),
                                        group_modes<0, 2>(gV));
      cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_kv, Cfg::kBytesKV);
      copy(prm.tma_k.with(ss.bar_kv), tKgK, tKsK);
      copy(prm.tma_v.with(ss.bar_kv), tVgV, tVsV);
    }
    pdl_wait();  // LSE*log2e and D: bwd_preprocess (K/V above are inputs)

    // The Q/dO loads, per CTA or (kMc, in clusters) half a tile each into both CTAs of the pair
    // (each CTA's full barrier still expects the whole tile; LSE and D rows stay per CTA).
    auto load_steps = [&](auto mc) {
      constexpr bool kMc = decltype(mc)::value;
      using Load = PairLoad<kMc>;
      auto const& tma_q = Load::pick(prm.tma_q_mc, prm.tma_q);
      auto const& tma_do = Load::pick(prm.tma_do_mc, prm.tma_do);
      Tensor mQc = tma_q.get_tma_tensor(make_shape(rows_q, kHeadDim, p.heads_q, batch_g));
      Tensor mdOc = tma_do.get_tma_tensor(make_shape(rows_q, kHeadDim, p.heads_q, batch_g));
      int stage = 0, phase = 0;
#pragma unroll 1  // unrolled, the loop does not fit the producer's 24 registers
      for (int step = 0; step < n_steps; ++step) {
        const int h = hk * group + step / m_count;
        const int m = rotated_m(step % m_count, m_first, m_count, m_rot);
        auto tile = Shape<Int<kBlockM>, Int<kHeadDim>>{};
        Tensor gQ = local_tile(domain_offset(make_coord(int(seq.q_start), _0{}), mQc(_, _, h, b_tma)),
                               tile, make_coord(m, _0{}));
        Tensor gdO = local_tile(domain_offset(make_coord(int(seq.q_start), _0{}), mdOc(_, _, h, b_tma)),
                                tile, make_coord(m, _0{}));
        auto [tQgQ, tQsQ] = Load::partition(tma_q, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));
        auto [tdOgdO, tdOsdO] = Load::partition(tma_do, group_modes<0, 2>(sdO), group_modes<0, 2>(gdO));
        const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + int64_t(m) * kBlockM;

        // Parity phase^1: the first pass through the ring finds every stage free.
        cutlass::arch::ClusterBarrier::wait(&ss.bar_empty[stage], phase ^ 1);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_q[stage],
                                                                       Cfg::kBytesQ + Cfg::kBytesRow);
        copy(Load::with(tma_q, ss.bar_q[stage]), tQgQ, tQsQ(_, stage));
        SM90_BULK_COPY_G2S::copy(prm.ws.lse_log2 + prow, &ss.bar_q[stage], ss.lse[stage], Cfg::kBytesRow);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_do[stage],
                                                                       Cfg::kBytesQ + Cfg::kBytesRow);
        copy(Load::with(tma_do, ss.bar_do[stage]), tdOgdO, tdOsdO(_, stage));
        SM90_BULK_COPY_G2S::copy(prm.ws.dpsum + prow, &ss.bar_do[stage], ss.dpsum[stage], Cfg::kBytesRow);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      // In clusters the peer's consumers arrive on this CTA's barriers: wait until every stage
      // this producer filled has been released by both CTAs before the CTA may exit.
      if constexpr (kMc) {
#pragma unroll 1
        for (int k = 0; k < kStages; ++k) {
          cutlass::arch::ClusterBarrier::wait(&ss.bar_empty[stage], phase ^ 1);
          if (++stage == kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    };
    if constexpr (Cfg::kClusterable) {
      if (bwd_in_cluster(prm)) {
        load_steps(std::true_type{});
        bwd_stamp(prm, Stamp::ProdEnd);
        return;
      }
    }
    load_steps(std::false_type{});
    bwd_stamp(prm, Stamp::ProdEnd);
    return;
  }

  // ---------------- consumers ----------------
  cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
  const int tid = threadIdx.x - 128;
  // Before the first global access: the RED dQ path adds to the accumulator bwd_preprocess
  // zeroes, and the fused conversion reads it (their data otherwise comes through smem).
  pdl_wait();

  Tensor sQt = make_tensor(make_smem_ptr(ss.q.data()), typename Cfg::SmemLayoutQt{});
  Tensor sdOt = make_tensor(make_smem_ptr(ss.dout.data()), typename Cfg::SmemLayoutQt{});
  Tensor sKt = make_tensor(make_smem_ptr(ss.k.data()), typename Cfg::SmemLayoutKt{});
  Tensor sdSt = make_tensor(make_smem_ptr(ss.ds.data()), typename Cfg::SmemLayoutdSt{});
  Tensor sdS = make_tensor(make_smem_ptr(ss.ds.data()), typename Cfg::SmemLayoutdS{});

  typename Cfg::MmaSdP mma_sdp;
  typename Cfg::MmadKV mma_dkv;
  typename Cfg::MmadQ mma_dq;
  auto thr_sdp = mma_sdp.get_thread_slice(tid);
  auto thr_dkv = mma_dkv.get_thread_slice(tid);
  auto thr_dq = mma_dq.get_thread_slice(tid);

  Tensor tSrK = mma_frag_a(thr_sdp, sK);     // (MMA, MMA_M, MMA_K)
  Tensor tSrQ = mma_frag_b(thr_sdp, sQ);     // (MMA, MMA_N, MMA_K, stages)
  Tensor tdPrV = mma_frag_a(thr_sdp, sV);
  Tensor tdPrdO = mma_frag_b(thr_sdp, sdO);
  Tensor tdVrdO = mma_frag_b(thr_dkv, sdOt);  // (MMA, MMA_N, MMA_K, stages)
  Tensor tdKrQ = mma_frag_b(thr_dkv, sQt);
  // dQ_blk = dS K: A = dS (MMA, MMA_M, MMA_K, buffers), B = K^T. kDqSwapAB (dQ^T = K^T dS^T):
  // A = K^T, B = dS (MMA, MMA_N, MMA_K, buffers).
  auto tdQrA = [&] {
    if constexpr (Cfg::kDqSwapAB) return mma_frag_a(thr_dq, sKt);
    else return mma_frag_a(thr_dq, sdS);
  }();
  auto tdQrB = [&] {
    if constexpr (Cfg::kDqSwapAB) return mma_frag_b(thr_dq, sdS);
    else return mma_frag_b(thr_dq, sKt);
  }();

  Tensor tdVrdV = mma_frag_c(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor tdKrdK = mma_frag_c(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  clear(tdVrdV);
  clear(tdKrdK);

  // Element coordinates of the accumulators: S^T is (key, query), dQ is (query, head dim).
  Tensor tScS = mma_part_c(thr_sdp, make_identity_tensor(Shape<Int<kBlockN>, Int<kBlockM>>{}));

  // Generic dS^T (and split-D P^T) store to smem: the !kDsStsm ablation only. Built in discarded
  // branches elsewhere, so the stmatrix instances never instantiate CuTe's tiled-copy algebra
  // (~2.7k template instances, ~60 MB of the compiler's peak memory per unit).
  auto copy_ds = [&] {
    if constexpr (Cfg::kDsStsm || Cfg::kDqSwapAB)
      return 0;
    else
      return make_tiled_copy_C(Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<128>, T>{}, mma_sdp);
  }();
  auto thr_copy_ds = [&] {
    if constexpr (Cfg::kDsStsm || Cfg::kDqSwapAB)
      return 0;
    else
      return copy_ds.get_thread_slice(tid);
  }();
  auto tdSsdS = [&] {  // (CPY, CPY_M, CPY_N, buffers)
    if constexpr (Cfg::kDsStsm || Cfg::kDqSwapAB)
      return 0;
    else
      return thr_copy_ds.partition_D(sdSt);
  }();
  // Split-D only: P^T in smem (the SS operands of dV/dK are partitioned where used).
  Tensor sPt = make_tensor(make_smem_ptr(ss.pt.data()), typename Cfg::SmemLayoutdSt{});

  // kDsStsm: the lane's dS^T stmatrix address (buffer 0, column pair 0); unused otherwise. P^T
  // (split-D) sits at a compile-time distance from dS^T in the same layout.
  // kDqSwapAB: the lane's transposing-stmatrix address in dS instead (ds_stsm_t_lane_offset).
  const uint32_t ds_base =
      Cfg::kDsStsm     ? ds_stsm_lane_base<Cfg::kSplitD>(ss.ds.data(), tid)
      : Cfg::kDqSwapAB ? uint32_t(__cvta_generic_to_shared(ss.ds.data())) + ds_stsm_t_lane_offset<kBlockM>(tid)
                       : 0u;
  const uint32_t pt_from_ds =
      uint32_t(reinterpret_cast<const char*>(ss.pt.data()) - reinterpret_cast<const char*>(ss.ds.data()));
  // One S^T-shaped bf16 tile (P^T or dS^T) to smem buffer `buf` by stmatrix. The packed register
  // 2j + h holds rows 8h + lane/4, query columns 8j + 2(lane%4) + {0, 1} (the wgmma accumulator
  // layout), i.e. matrix (h, j) of stmatrix. Query columns 64.. (kBlockM = 128) are in the second
  // SW128 atom column, kBlockN * 64 elements further on; the offsets added are multiples of 1024
  // bytes, so the XOR (bits 4-6) applies to them unchanged.
  auto stsm_tile = [&](uint32_t tile_base, auto& r, int buffer) {
    static_assert(decltype(size(r))::value == Cfg::kSdPValues, "one S^T accumulator's worth");
    Tensor r32 = recast<uint32_t>(r);
    const uint32_t base = tile_base + uint32_t(buffer) * uint32_t(kBlockN * kBlockM * sizeof(T));
    CUTE_UNROLL
    for (int j = 0; j < Cfg::kSdPValues / 4; j += 2)
      stmatrix_x4((base + uint32_t((j / 8) * kBlockN * 64 * sizeof(T))) ^ uint32_t(16 * (j % 8)), r32(2 * j),
                  r32(2 * j + 1), r32(2 * j + 2), r32(2 * j + 3));
  };

  // kDqSwapAB: dS^T from the S^T-shaped accumulator into the (query, key) dS tile, one
  // transposing stmatrix.x4 per 16 queries (ds_stsm_t_lane_offset: the addresses).
  auto stsm_t_tile = [&](auto& r, int buffer) {
    static_assert(decltype(size(r))::value == Cfg::kSdPValues, "one S^T accumulator's worth");
    Tensor r32 = recast<uint32_t>(r);
    const uint32_t base = ds_base + uint32_t(buffer) * uint32_t(kBlockN * kBlockM * sizeof(T));
    CUTE_UNROLL
    for (int j = 0; j < Cfg::kSdPValues / 4; j += 2)
      stmatrix_x4_trans(base + uint32_t(j * 1024), r32(2 * j), r32(2 * j + 1), r32(2 * j + 2), r32(2 * j + 3));
  };

  if (n_steps > 0) cutlass::arch::ClusterBarrier::wait(&ss.bar_kv, 0);
  if (tid == 0) bwd_stamp(prm, Stamp::KvIn);

  const CtaBand cta_band(mask, n0);
  int stage = 0, phase = 0, buf = 0;
  // With kPrefetchS the S^T accumulators live across steps (issued at the end of the previous
  // step). Not with softcap: its P^T/dS^T loop keeps tanh's derivative per score, and ptxas then
  // serialised the wgmmas (C7511, d64).
  constexpr bool kPrefetchS = Cfg::kPrefetchS && !kSoftcap;
  Tensor tSrS_carried = mma_frag_c(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
  if constexpr (kPrefetchS) {
    if (n_steps > 0) {
      cutlass::arch::ClusterBarrier::wait(&ss.bar_q[0], 0);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, 0), tSrS_carried);
      warpgroup_wait<0>();
    }
  }
  // dQ_blk (fragment order) to the staging buffer once the dQ warp has finished reading the
  // previous one (conflict-free 16-byte stores), then handed to the dQ warp, which issues the
  // reduce-add (and in the deterministic mode waits for its turn) while we go on.
  auto stage_dq = [&](auto const& acc) {
    consumer_sync(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);
    // The thread index is re-read (volatile) so that this address is not kept live across
    // the loop in a register the softcap variant does not have.
    uint32_t tid_now;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid_now));
    float* sdq = ss.dq.data() + Cfg::dq_frag_offset(int(tid_now) - 128, 0);
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 4)
      *reinterpret_cast<float4*>(sdq + i * 128) = make_float4(acc(i), acc(i + 1), acc(i + 2), acc(i + 3));
    cutlass::arch::fence_view_async_shared();  // generic-proxy stores -> the TMA unit's reads
    named_arrive(int(BarrierId::DqFull), Cfg::kDqSyncThreads);
  };
  // kDqDefer: the previous step's dQ_blk, staged in this step (see BwdConfig::kDqDefer).
  Tensor tdQrdQ_prev = mma_frag_c(mma_dq, typename Cfg::DqShape{});
  int steps_left = n_steps;
  for (int h = hk * group; h < (hk + 1) * group; ++h) {
  for (int mi = 0; mi < m_count; ++mi) {
    const int i0 = rotated_m(mi, m_first, m_count, m_rot) * kBlockM;
    const BlockBand band = cta_band.block(i0);
    const bool need_mask = !band.template whole_tile_visible<kBlockM, kBlockN>();
    --steps_left;

    // Without kPrefetchS the accumulators are a fresh tensor per step: the wgmma's accumulator
    // operands are read-write, so a tensor declared outside the loop would keep the previous
    // step's 32 values live across the back edge (at d128 that alone spilled).
    Tensor tSrS_step = mma_frag_c(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
    auto& tSrS = select_ref<kPrefetchS>(tSrS_carried, tSrS_step);
    Tensor tdPrdP = mma_frag_c(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
    if constexpr (!kPrefetchS) {
      cutlass::arch::ClusterBarrier::wait(&ss.bar_q[stage], phase);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, stage), tSrS);
    }
    // kDqDefer: every step but the first stages the previous step's dQ_blk under this step's
    // S^T (1), or under S^T and dP^T (2).
    if constexpr (Cfg::kDqDefer == 1) {
      if (steps_left + 1 < n_steps) stage_dq(tdQrdQ_prev);
    }
    cutlass::arch::ClusterBarrier::wait(&ss.bar_do[stage], phase);
    if (FA_SM90_BWD_TIMELINE && tid == 0 && steps_left + 1 == n_steps) bwd_stamp(prm, Stamp::FirstQ);
    wgmma_batch<true>(mma_sdp, tdPrV, tdPrdO(_, _, _, stage), tdPrdP);
    if constexpr (Cfg::kDqDefer == 2) {
      if (steps_left + 1 < n_steps) stage_dq(tdQrdQ_prev);
    }
    // Overlap: P is computed (and dV issued) while the dP^T product is still running. Softcap
    // needs tanh's derivative in dS, so it waits for dP^T and does both in one pass instead of
    // keeping 32 more registers alive.
    constexpr bool kOverlap = Cfg::kOverlapSdP && !kSoftcap;
    warpgroup_wait<kOverlap ? 1 : 0>();

    // P^T (and without overlap dS^T), element-wise; masked entries get P = 0 (hence dS = 0).
    const float* lse = ss.lse[stage];
    const float* dpsum = ss.dpsum[stage];
    // kMaskTile: this tile needs the per-element mask. With kMaskSplit the loop exists twice and
    // the branch is uniform per step; without it, one loop tests need_mask per element.
    auto scores_to_p = [&](auto mask_tile) {
      constexpr bool kMaskTile = decltype(mask_tile)::value;
      // kBlockM = 128: the mask test in thread-relative coordinates (BlockBand::relative).
      const int kj_t = get<0>(tScS(0)), q_t = get<1>(tScS(0));
      const BlockBand rband = band.relative(kj_t, q_t);
      // Without a mask (the 80-query tile's instance) only keys past k_len are hidden: one
      // compile-time row offset against one register, instead of kj - qi per element (hoisted
      // out of the loop by the compiler: 20 registers, which spilled).
      auto visible = [&](int qi, int kj) {
        if constexpr (!kMasked) return kj - kj_t < rband.key_end;
        else if constexpr (kBlockM == 128) return rband.allowed(qi - q_t, kj - kj_t);
        else return band.allowed(qi, kj);
      };
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) {
        const int kj = get<0>(tScS(i)), qi = get<1>(tScS(i));
        float x, grad = 1.f;
        if constexpr (kSoftcap) {
          // tanh(u) = 1 - 2 / (2^(2u log2 e) + 1): absolute error ~1e-7, far cheaper than tanhf;
          // |u| <= 15 keeps 2^(...) finite (tanh(15) is 1 in fp32).
          const float u = fminf(fmaxf(tSrS(i) * prm.cap_inv, -15.f), 15.f);
          const float t = 1.f - 2.f / (exp2f(u * (2.f * core::kLog2e)) + 1.f);
          x = t * prm.cap_log2;
          grad = 1.f - t * t;  // d(softcap*tanh(u))/du; the softmax scale is applied at the end
        } else {
          x = tSrS(i) * prm.scale_log2;
        }
        float pr;
        if constexpr (Cfg::kMaskSplit && !kSoftcap) {
          // One FFMA instead of FMUL + FADD (the mask select no longer sits between them).
          pr = exp2f(fmaf(tSrS(i), prm.scale_log2, -lse[qi]));
          if (kMaskTile && !visible(qi, kj)) pr = 0.f;
        } else if constexpr (Cfg::kMaskSplit) {
          pr = (kMaskTile && !visible(qi, kj)) ? 0.f : exp2f(x - lse[qi]);
        } else {
          if (need_mask && !visible(qi, kj)) x = -INFINITY;
          pr = exp2f(x - lse[qi]);
        }
        tSrS(i) = pr;
        if constexpr (!kOverlap) tdPrdP(i) = pr * (tdPrdP(i) - dpsum[qi]) * grad;
      }
    };
    if (!Cfg::kMaskSplit || need_mask)
      scores_to_p(std::true_type{});
    else
      scores_to_p(std::false_type{});
    Tensor rP = make_tensor<T>(tSrS.layout());
    if constexpr (!Cfg::kDvAfterDs) {  // (kDvAfterDs: below, after dS^T)
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) rP(i) = T(tSrS(i));
      if constexpr (!Cfg::kSplitD) {
        // dV += P^T dO with the A operand straight from registers.
        Tensor tdVrP = make_tensor(rP.data(), acc_as_a_operand(tSrS.layout()));
        wgmma_batch<false>(mma_dkv, tdVrP, tdVrdO(_, _, _, stage), tdVrdV);
      } else {
        // P^T to smem: dV reads both WGs' query halves.
        if constexpr (Cfg::kDsStsm) {
          stsm_tile(ds_base + pt_from_ds, rP, buf);
        } else {
          Tensor tPsPt = thr_copy_ds.partition_D(sPt);
          copy(copy_ds, thr_copy_ds.retile_S(rP), tPsPt(_, _, _, buf));
        }
        if constexpr (Cfg::kDvEarly) {
          // dV as soon as both halves of P^T are in smem: it runs while dS^T is computed and stored.
          // The double-buffered P^T needs no second barrier for its reuse: a WG writes buffer b
          // again two steps on, after passing the other WG's next PtWritten, which that WG reaches
          // only after waiting for all of its wgmmas of this step (this dV among them).
          cutlass::arch::fence_view_async_shared();
          consumer_sync(int(BarrierId::PtWritten), kConsumerThreads);
          Tensor tdVrPt = mma_frag_a(thr_dkv, sPt);  // (MMA, MMA_M, MMA_K, buffers)
          wgmma_batch<false>(mma_dkv, tdVrPt(_, _, _, buf), tdVrdO(_, _, _, stage), tdVrdV);
        }
      }
    }

    if constexpr (kOverlap) {
      // dP^T is done (batches retire in order); dV may still run (split-D issued none, or with
      // kDvEarly the SS one just above; kDvAfterDs: not issued yet)
      warpgroup_wait<(Cfg::kSplitD && !Cfg::kDvEarly) || Cfg::kDvAfterDs ? 0 : 1>();
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) {
        const int qi = get<1>(tScS(i));
        tdPrdP(i) = tSrS(i) * (tdPrdP(i) - dpsum[qi]);
      }
    }
    if constexpr (Cfg::kDvAfterDs) {
      static_assert(!Cfg::kSplitD, "dV from registers");
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) rP(i) = T(tSrS(i));
      Tensor tdVrP = make_tensor(rP.data(), acc_as_a_operand(tSrS.layout()));
      wgmma_batch<false>(mma_dkv, tdVrP, tdVrdO(_, _, _, stage), tdVrdV);
    }
    Tensor rdS = make_tensor<T>(tdPrdP.layout());
    CUTE_UNROLL
    for (int i = 0; i < size(tdPrdP); ++i) rdS(i) = T(tdPrdP(i));
    // dK += dS^T Q, A from registers as well (kDqBeforeDk: after dQ, below).
    // (Generic so that split-D instances, whose dK is an SS product, never instantiate it.)
    auto issue_dk = [&](auto) {
      Tensor tdKrdS = make_tensor(rdS.data(), acc_as_a_operand(tdPrdP.layout()));
      wgmma_batch<false>(mma_dkv, tdKrdS, tdKrQ(_, _, _, stage), tdKrdK);
    };
    if constexpr (!Cfg::kSplitD && !Cfg::kDqBeforeDk) issue_dk(0);

    // dS^T to smem for dQ (both WGs read both halves). The fence makes the generic-proxy stores
    // visible to the async proxy (wgmma reads smem through it).
    if constexpr (Cfg::kDqSwapAB) {
      stsm_t_tile(rdS, buf);
    } else if constexpr (Cfg::kDsStsm) {
      stsm_tile(ds_base, rdS, buf);
    } else {
      // What copy(copy_ds, retile_S(rdS), ...) ends in: the accumulator layout already is the
      // copy's source partition (make_tiled_copy_C of the same MMA), and the vectors are the
      // 32-bit query pairs, so neither retile_S nor cute::copy's common-vector/alignment algebra
      // is needed (~4k template instances, ~110 MB of compiler memory per unit; same SASS).
      static_assert(sizeof(T) == 2, "query pairs of 16-bit elements");
      Tensor s32 = recast<uint32_t>(rdS);
      Tensor d32 = recast<uint32_t>(tdSsdS(_, _, _, buf));
      CUTE_UNROLL
      for (int i = 0; i < size(d32); ++i) d32(i) = s32(i);
    }
    cutlass::arch::fence_view_async_shared();
    consumer_sync(int(BarrierId::DsWritten), kConsumerThreads);
    Tensor tdQrdQ = mma_frag_c(mma_dq, typename Cfg::DqShape{});
    static_assert(decltype(size(tdQrdQ))::value == Cfg::kDqFragValues);
    if constexpr (Cfg::kSplitD) {
      // Both query halves of P^T and dS^T are in smem now (FA_SM90_BWD_SPLITD_ORDER: the order).
      Tensor tdVrPt = mma_frag_a(thr_dkv, sPt);  // (MMA, MMA_M, MMA_K, buffers)
      Tensor tdKrdSt = mma_frag_a(thr_dkv, sdSt);
      if constexpr (Cfg::kDqFirst) wgmma_batch<true>(mma_dq, tdQrA(_, _, _, buf), tdQrB, tdQrdQ);
      if constexpr (!Cfg::kDvEarly) wgmma_batch<false>(mma_dkv, tdVrPt(_, _, _, buf), tdVrdO(_, _, _, stage), tdVrdV);
      wgmma_batch<false>(mma_dkv, tdKrdSt(_, _, _, buf), tdKrQ(_, _, _, stage), tdKrdK);
    }
    if constexpr (!Cfg::kDqFirst) {
      if constexpr (Cfg::kDqSwapAB) wgmma_batch<true>(mma_dq, tdQrA, tdQrB(_, _, _, buf), tdQrdQ);
      else wgmma_batch<true>(mma_dq, tdQrA(_, _, _, buf), tdQrB, tdQrdQ);
    }
    if constexpr (Cfg::kDqBeforeDk) issue_dk(0);  // dQ is waited for below, with dK in flight
    if constexpr (kPrefetchS) {
      // Wait for dV/dK first (their register operands P^T, dS^T are then free), so that only
      // dQ's and the next S^T's accumulators are in flight, then queue the next S^T behind dQ.
      // It is retired at the end of this iteration (after the dQ staging), not in the next one:
      // ptxas does not follow wgmma groups across the loop's back edge and serialised every
      // wgmma (C7514/C7515) when the group was in flight there. Issued after the last step too
      // (reading a stage whose loads have all completed; the result is dropped), so that every
      // path has the same groups in flight.
      warpgroup_wait<1>();
      const int next = stage + 1 == kStages ? 0 : stage + 1;
      if (steps_left > 0) cutlass::arch::ClusterBarrier::wait(&ss.bar_q[next], next == 0 ? phase ^ 1 : phase);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, next), tSrS);
      warpgroup_wait<1>();  // dQ done; the next S^T may still run
    } else if constexpr (!Cfg::kDqFirst && !Cfg::kDqBeforeDk) {
      warpgroup_wait<0>();
    }

    // dQ_blk to the fp32 accumulator in the workspace (staged for the dQ warp, or REDs).
    auto add_dq = [&]() {
      if constexpr (Cfg::kDqDefer > 0) {
        // Kept for the next step (or after the loop) in registers that no wgmma defines: ends
        // the per-step accumulator's live range here. The copy is an asm mov because a plain
        // one is coalesced away, and ptxas, which does not follow wgmma groups across the back
        // edge, then injected a warpgroup.wait before the staging's first read (C7517), i.e.
        // waited for this step's S^T there.
        CUTE_UNROLL
        for (int i = 0; i < size(tdQrdQ); ++i) asm volatile("mov.b32 %0, %1;\n" : "=f"(tdQrdQ_prev(i)) : "f"(tdQrdQ(i)));
      } else if constexpr (Cfg::kDqTma) {
        stage_dq(tdQrdQ);
      } else {
        // dQ_blk added to the fp32 accumulator from registers. Rows past the sequence end are added
        // too: they are padding of this (head, sequence) that nobody reads, and their dS is 0.
        const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + i0;
        float* dq_blk = prm.ws.dq_acc + prow * kHeadDim;
        int* turn = prm.ws.dq_turn + prow / kTurnRows;
        int my_turn = 0;
        if (p.deterministic) {
          my_turn = cta_band.dq_turn(i0, n_block, kBlockM, kBlockN, int(seq.q_len), dq_descending);
          if (tid == 0)
            while (load_acquire(turn) != my_turn) __nanosleep(32);
          consumer_sync(int(BarrierId::DqTurn), kConsumerThreads);
        }
        // One base pointer plus compile-time offsets (folded into the REDs' immediates).
        float* gdq = dq_blk + Cfg::dq_frag_offset(tid, 0);
        CUTE_UNROLL
        for (int i = 0; i < size(tdQrdQ); i += 4)
          red_add_v4(gdq + i * 128, tdQrdQ(i), tdQrdQ(i + 1), tdQrdQ(i + 2), tdQrdQ(i + 3));
        if (p.deterministic) {
          // The barrier orders every consumer's REDs before thread 0's release store (the same
          // pattern as CUTLASS's GenericBarrier), so no thread needs a full fence of its own.
          consumer_sync(int(BarrierId::DqTurn), kConsumerThreads);
          if (tid == 0) store_release(turn, my_turn + 1);
        }
      }
    };
    if constexpr (Cfg::kDqBeforeDk) {
      // Groups in order: (dV), dQ, dK. dQ_blk leaves while dK runs; dK reads this stage's Q, so
      // the stage goes back only once it has retired.
      warpgroup_wait<1>();
      add_dq();
      warpgroup_wait<0>();
      bwd_release_stage(prm, &ss.bar_empty[stage]);
    } else if constexpr (Cfg::kDqFirst) {
      // dQ has retired (and the early dV, which was issued before it); dK (and with order 1 dV)
      // still runs while the REDs are issued. The stage goes back once those retire too.
      warpgroup_wait<Cfg::kDvEarly ? 1 : 2>();
      add_dq();
      warpgroup_wait<0>();
      bwd_release_stage(prm, &ss.bar_empty[stage]);
    } else {
      // Every wgmma reading this stage's Q/dO has retired: hand the stage back to the producer.
      bwd_release_stage(prm, &ss.bar_empty[stage]);
      add_dq();
    }

    if constexpr (kPrefetchS) warpgroup_wait<0>();  // the next step's S^T (see above)
    buf ^= 1;
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  }
  if constexpr (Cfg::kDqDefer > 0) {
    if (n_steps > 0) stage_dq(tdQrdQ_prev);  // the last step's dQ_blk
  }
  if (tid == 0) bwd_stamp(prm, Stamp::LoopEnd);

  // Epilogue: dK (times the softmax scale, which dS^T left out) and dV of the valid keys.
  Tensor tdKVc = mma_part_c(thr_dkv, make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  T* dk = static_cast<T*>(p.dk);
  T* dv = static_cast<T*>(p.dv);
  const CtaCoord ce = cta_coord<Cfg, kMasked>(prm);  // = (n_block, hk, b), recomputed
  // A tail-split piece adds its sums to the tile's slot; only the last one to arrive stores.
  if (ce.piece >= 0 && !tail_reduce<Cfg>(prm, tdKrdK, tdVrdV, ce.slot, tid)) {
    if (tid == 0) bwd_stamp(prm, Stamp::EpiEnd);
    return;
  }
  const int64_t n0_epi = int64_t(ce.n_block) * kBlockN;         // = n0
  const int b_e = ce.b, hk_e = ce.hk;
  const core::SeqInfo seq_e = Cfg::kGroupedOrder ? core::seq_info(p, b_e) : seq;
  if constexpr (Cfg::kEpilogueRows) {
    // The thread's values sit in two key rows (kj0, kj0 + 8) at columns c0 + 8j + {0, 1}: value
    // i = e + 2h + 4j of the one-atom wgmma accumulator (checked against the MMA partition by
    // scripts/check_sm90_bwd_layout.cu). One row address per row instead of a 64-bit offset
    // computation per stored pair (~25 instructions each, ~4% of a d64 N1k CTA's instructions).
    static_assert(decltype(size<1>(tdKrdK))::value == 1 && decltype(size<2>(tdKrdK))::value == 1,
                  "one wgmma atom per thread and accumulator");
    const int kj0 = get<0>(tdKVc(0)), c0 = get<1>(tdKVc(0));
    bool wide = false;
    if constexpr (Cfg::kEpiStoreRounds > 0) {
      if (prm.dkv_store_wide) {
        // Row h's word j is values (2h + 4j, +1): columns c0 + 8j, +1 with c0 = 8n + 2 (lane % 4),
        // n the same in the quad (split-D: the WG's half of the head dim starts at 8n;
        // scripts/check_sm90_bwd_layout.cu). The shuffles run in every lane, before the key
        // predicate (one row per quad, but other quads of the warp may skip theirs).
        constexpr int kR = Cfg::kEpiStoreRounds;
        constexpr int kWords = decltype(size(tdKrdK))::value / 4;  // per row
        static_assert(kWords % (1 << kR) == 0, "whole sets of 8-column groups per row");
        const int q = int(threadIdx.x) % 4;
        bool lane_bit[kR];
        CUTE_UNROLL
        for (int b = 0; b < kR; ++b) lane_bit[b] = (q >> b) & 1;
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          uint32_t wk[kWords], wv[kWords];
          CUTE_UNROLL
          for (int j = 0; j < kWords; ++j) {
            wk[j] = pack_pair<T>(tdKrdK(2 * h + 4 * j) * p.scale, tdKrdK(2 * h + 4 * j + 1) * p.scale);
            wv[j] = pack_pair<T>(tdVrdV(2 * h + 4 * j), tdVrdV(2 * h + 4 * j + 1));
          }
          quad_transpose<kR>(wk, lane_bit);
          quad_transpose<kR>(wv, lane_bit);
          const int64_t key = n0_epi + kj0 + 8 * h;
          if (key < seq_e.k_len) {
            const int col = c0 - 2 * q + quad_store_column(q, kR);
            quad_store_row<kR>(dk + p.dk_str.offset(b_e, seq_e.k_start + key, hk_e) + col, wk);
            quad_store_row<kR>(dv + p.dv_str.offset(b_e, seq_e.k_start + key, hk_e) + col, wv);
          }
        }
        wide = true;
      }
    }
    if (!wide) {
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int64_t key = n0_epi + kj0 + 8 * h;
        if (key < seq_e.k_len) {
          T* dk_row = dk + p.dk_str.offset(b_e, seq_e.k_start + key, hk_e) + c0;
          T* dv_row = dv + p.dv_str.offset(b_e, seq_e.k_start + key, hk_e) + c0;
          CUTE_UNROLL
          for (int i = 2 * h; i < size(tdKrdK); i += 4) {
            store_pair(dk_row + 8 * (i / 4), tdKrdK(i) * p.scale, tdKrdK(i + 1) * p.scale);
            store_pair(dv_row + 8 * (i / 4), tdVrdV(i), tdVrdV(i + 1));
          }
        }
      }
    }
  } else {
    CUTE_UNROLL
    for (int i = 0; i < size(tdKrdK); i += 2) {
      const int kj = get<0>(tdKVc(i)), c = get<1>(tdKVc(i));
      const int64_t key = n0_epi + kj;
      if (key < seq_e.k_len) {
        store_pair(dk + p.dk_str.offset(b_e, seq_e.k_start + key, hk_e) + c, tdKrdK(i) * p.scale,
                   tdKrdK(i + 1) * p.scale);
        store_pair(dv + p.dv_str.offset(b_e, seq_e.k_start + key, hk_e) + c, tdVrdV(i), tdVrdV(i + 1));
      }
    }
  }
  if (tid == 0) bwd_stamp(prm, Stamp::EpiEnd);
  if constexpr (kFusedConvert && Cfg::kDqTma && !Cfg::kDqSwapAB) {
    if (prm.fused_convert) {
      consumer_sync(int(BarrierId::DqDone), Cfg::kDqSyncThreads);
      __threadfence();  // with the dQ warp's acquiring atom: the other CTAs' adds before our reads
      uint32_t tid_now;
      asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid_now));
      fused_convert_dq<Cfg, kMasked>(prm, ss.dq_last, reinterpret_cast<uint16_t*>(ss.dq.data()),
                                     int(tid_now) - 128);
    }
  }
}

}  // namespace fa::cuda::sm90_bwd

#ifdef FA_SM90_BWD_PARTITION_GEN
// Generator of the table at the top of the file (host program):
//   nvcc -std=c++17 -I include -I src -isystem .deps/cutlass/include --expt-relaxed-constexpr
//     -DFA_SM90_BWD_PARTITION_GEN -x cu src/cuda/sm90/flash_bwd_kernel.cuh -o /tmp/gen90
//   /tmp/gen90 | sort -u   -> the lines between the table's markers
// Tabled tiles: every one the instances and ablations build (session 45; the d 96 ones first,
// whose units were over 2 GB). A tile left out compiles through CuTe's call.
namespace fa::cuda::sm90_bwd::gen {
using namespace fa::cuda::mma_partition_gen;
template <class Cfg, class L>
using Smem = mma_partition_gen::Smem<typename Cfg::T, L>;
template <class Cfg>
void per_config() {
  using SdP = typename Cfg::MmaSdP;
  using KV = typename Cfg::MmadKV;
  using DQ = typename Cfg::MmadQ;
  using BM = Int<Cfg::kBlockM>;
  using BN = Int<Cfg::kBlockN>;
  using D = Int<Cfg::kHeadDim>;
  emit_a<SdP, Smem<Cfg, typename Cfg::SmemLayoutK>>();
  emit_a<SdP, Smem<Cfg, typename Cfg::SmemLayoutV>>();
  emit_b<SdP, Smem<Cfg, typename Cfg::SmemLayoutQ>>();
  emit_b<KV, Smem<Cfg, typename Cfg::SmemLayoutQt>>();
  emit_a<KV, Smem<Cfg, typename Cfg::SmemLayoutdSt>>();
  if constexpr (Cfg::kDqSwapAB) {  // dQᵀ = Kᵀ · dSᵀ (the 80-query tile)
    emit_a<DQ, Smem<Cfg, typename Cfg::SmemLayoutKt>>();
    emit_b<DQ, Smem<Cfg, typename Cfg::SmemLayoutdS>>();
  } else {
    emit_a<DQ, Smem<Cfg, typename Cfg::SmemLayoutdS>>();
    emit_b<DQ, Smem<Cfg, typename Cfg::SmemLayoutKt>>();
  }
  emit_shape_c<KV, Shape<BN, D>>();
  emit_shape_c<SdP, Shape<BN, BM>>();
  emit_shape_c<DQ, typename Cfg::DqShape>();
  emit_c<SdP, Id<Shape<BN, BM>>>();
  emit_c<KV, Id<Shape<BN, D>>>();
  emit_c<DQ, Id<typename Cfg::DqShape>>();
}
template <class E, int D>
void per_softcap_tile() {
  if constexpr (BwdConfig<E, D>::kBlockM == 128)
    per_config<BwdConfig<E, D, 0, true, false, true, true, false, 64>>();
}
}  // namespace fa::cuda::sm90_bwd::gen

namespace fa::cuda::sm90_bwd::gen {
// Every tile the instances build for element E (flash_bwd.cuh, run_sm90_bwd): the default per
// head dim, the 64-query tile softcap takes where the default has 128, and the d128 80-query tile.
template <class E>
void per_type() {
  per_config<BwdConfig<E, 64>>();
  per_config<BwdConfig<E, 96>>();
  per_config<BwdConfig<E, 128>>();
  per_config<BwdConfig<E, 192>>();
  per_config<BwdConfig<E, 256>>();
  per_softcap_tile<E, 64>();
  per_softcap_tile<E, 96>();
  per_softcap_tile<E, 128>();
  per_softcap_tile<E, 192>();
  per_softcap_tile<E, 256>();
  per_config<BwdConfig<E, 128, 0, true, false, true, true, false, 80>>();
}
}  // namespace fa::cuda::sm90_bwd::gen

int main() {
  using namespace fa::cuda::sm90_bwd;
  gen::per_type<cutlass::bfloat16_t>();
  gen::per_type<cutlass::half_t>();
  // the ablation tiles (bf16; flash_bwd.cuh, BwdAbl*)
  using bf16 = cutlass::bfloat16_t;
  gen::per_config<BwdConfig<bf16, 128, 0, false, false>>();
  gen::per_config<BwdConfig<bf16, 128, 2, true, false>>();
  gen::per_config<BwdConfig<bf16, 128, 1, true, false>>();
  gen::per_config<BwdConfig<bf16, 128, 0, true, true>>();
  gen::per_config<BwdConfig<bf16, 64, 0, true, false, false, true>>();
  gen::per_config<BwdConfig<bf16, 128, 0, true, false, false, true>>();
  gen::per_config<BwdConfig<bf16, 64, 0, true, false, true, false>>();
  gen::per_config<BwdConfig<bf16, 128, 0, true, false, true, false>>();
  gen::per_config<BwdConfig<bf16, 64, 0, true, false, true, true, true>>();
}
#endif
