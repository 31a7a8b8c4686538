// FlashAttention-2 backward, sm80 class (mma.sync m16n8k16, ldmatrix, cp.async), written in CuTe.
// Runs on sm_80 and, compiled separately, on sm_90.
//
// Three kernels per call, stream-ordered:
//  1. bwd_prepass_kernel — prepost_lanes lanes per (query row, head): D = rowsum(dO ∘ O) in fp32;
//     zeroes the dQ semaphores / first-adder claims and, unless the main kernel's first adders store
//     (FA_SM80_BWD_DQ_STORE), the row's fp32 dQ accumulator.
//  2. bwd_main_kernel — one CTA per (key block, KV head, batch). K_j and V_j stay in shared memory
//     and dK_j, dV_j in fp32 registers while the CTA walks every (query head of the GQA group,
//     query block that sees key block j). Per step:
//        cp.async  Q_i, dO_i -> smem (double-buffered: step i+1 loads while step i computes)
//        S  = Q_i K_j^T, dP = dO_i V_j^T               (ldmatrix + mma.sync, fp32 accumulators)
//        P  = exp2(score·log2e − LSE·log2e), masked / past-the-end entries 0
//        dS = P ∘ (dP − D) · d(score)/d(qk) / scale   (1, or 1 − tanh² with softcap)
//        P, dS -> smem (fp16/bf16)                      __syncthreads
//        dV_j += P^T dO_i                                (ldmatrix.trans of the same smem tiles)
//        dQ_i += dS K_j  -> red.global.add(.v2).f32 into the workspace accumulator (st.global
//                           by the block's first adder, FA_SM80_BWD_DQ_STORE)
//        dK_j += dS^T Q_i                                (MMAs issue while the atomics drain)
//                                                        __syncthreads (smem stage reuse)
//     Key blocks that run side by side start at different query blocks (FA_SM80_BWD_ROTATE_M),
//     so their dQ atomics land on different rows and each query block's first visitor is alone.
//     Deterministic mode orders the dQ adds of one query block by key block with a per-(batch,
//     head, query block) counter: key block j spins until the counter equals its rank.
//     The epilogue stages dK_j, dV_j through smem (reusing K/V's space) for 16-byte stores.
//  3. bwd_convert_dq_kernel — prepost_lanes lanes per (row, head): fp32 dQ -> dq's dtype and
//     strides (0 where no key block reached the row's query block).
// Tile shapes per head dim live in one table (BwdTile); its switches (kStages: Q/dO double
// buffering, kSdPChunks / kDQChunks: register-pressure splitting, warp layouts) and the
// FA_SM80_BWD_* macros are what an ablation varies. p.deterministic is a runtime switch.
// A head dim may have a second row for devices with more than 163 KB of shared memory per block
// (BwdTile's kBigSmem, FA_SM80_BWD_BIG_SMEM_DIMS): sm_9x+ cubins compile only that one, sm_8x
// cubins only the sm80 one, and the launcher picks by the device's compute capability.
// The softcap derivative is folded into dS but the softmax scale is not: dS stays ~1/scale larger
// (fewer fp16 subnormals) and dK (epilogue) and dQ (convert kernel) are multiplied by it once.
#pragma once

#include <cuda_runtime.h>

// clang-format off: cute/tensor.hpp must come first (the others rely on its declarations)
#include <cute/tensor.hpp>
#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/mma_sm80.hpp>
#include <cute/atom/copy_atom.hpp>
#include <cute/atom/mma_atom.hpp>
// clang-format on
#include <cutlass/numeric_types.h>

#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "core/status.hpp"
#include "cuda/common/device_attr.hpp"
#include "cuda/common/env.hpp"
#include "cuda/common/launch_ex.hpp"
#include "cuda/common/head_dim_mask.hpp"
#include "cuda/common/pdl.cuh"
#include "cuda/common/sm80_tile.cuh"
#include "cuda/dispatch.hpp"
#include "cuda/sm80/bwd_block_range.cuh"
#include "cuda/sm80/bwd_partition_types.cuh"
#include "cuda/sm80/bwd_workspace.cuh"

namespace fa::cuda::sm80::bwd {

using namespace cute;

// ---- tile table: one row per head dim ----------------------------------------------------------
// kBlockN keys per CTA (the dK/dV tile held in registers), kBlockM query rows per inner step,
// kStages Q/dO smem buffers. Shared memory = (2·N·D + 2·kStages·M·D + 2·M·N) · 2 bytes must fit
// 163 KB (sm80 opt-in limit); d 96/192/256 halve kBlockN (d 128 too by default, see the macro).
// Build-time switches for ablations and register-pressure experiments (see the table below).
// FA_SM80_BWD_LEAN_LDSM (default 1) sets the defaults of six of them at once: D128_SDP_CHUNKS 1,
// D128_WARPS_MDQ 2, D64_BLOCK_M 128, D256_BLOCK_M 64, D256_DQ_CHUNKS 2 and OPAQUE_TID d64+d128+d256
// (42): tiles that re-read fewer operands from shared memory per MMA (the limiter, see
// D128_SDP_CHUNKS). H200 bf16, session 5 round 1, ours / SDPA-flash backward TFLOP/s, N 1k-16k:
// d64 0.73-0.76 -> 0.79-0.84, d128 0.73-0.77 -> 0.82-0.86, d256 0.65-0.73 -> 0.73-0.82.
// -DFA_SM80_BWD_LEAN_LDSM=0 restores the session-4 tiles (the defaults further down); any of the
// six given explicitly still wins.
#ifndef FA_SM80_BWD_LEAN_LDSM
#define FA_SM80_BWD_LEAN_LDSM 1
#endif
#if FA_SM80_BWD_LEAN_LDSM
// The sm_80 cubin (A100; scalar dQ reductions, no red.v2) keeps the session-4 d 128 layout: the
// one-pass S/dP spilled 36 B there (sm_90a: none). Only the device code reads these three, so the
// arch passes may differ; the d 64 / d 256 tiles set the launch shape and cannot.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FA_SM80_BWD_LEAN_D128 0
#else
#define FA_SM80_BWD_LEAN_D128 1
#endif
#ifndef FA_SM80_BWD_D128_SDP_CHUNKS
#define FA_SM80_BWD_D128_SDP_CHUNKS (FA_SM80_BWD_LEAN_D128 ? 1 : 2)
#endif
#ifndef FA_SM80_BWD_D128_WARPS_MDQ
#define FA_SM80_BWD_D128_WARPS_MDQ (FA_SM80_BWD_LEAN_D128 ? 2 : 4)
#endif
#ifndef FA_SM80_BWD_D64_BLOCK_M
#define FA_SM80_BWD_D64_BLOCK_M 128
#endif
#ifndef FA_SM80_BWD_D256_BLOCK_M
#define FA_SM80_BWD_D256_BLOCK_M 64
#endif
#ifndef FA_SM80_BWD_D256_DQ_CHUNKS
#define FA_SM80_BWD_D256_DQ_CHUNKS 2
#endif
#ifndef FA_SM80_BWD_OPAQUE_TID
#define FA_SM80_BWD_OPAQUE_TID (FA_SM80_BWD_LEAN_D128 ? 42 : 34)
#endif
#endif
#ifndef FA_SM80_BWD_D128_BLOCK_N
// Keys per CTA at d 128. 128 halves the dQ atomics per FLOP and the Q/dO ldmatrix traffic per MMA
// against 64 (FA2's tile); it fits in 255 registers since LSE/D moved to shared memory.
#define FA_SM80_BWD_D128_BLOCK_N 128
#endif
#ifndef FA_SM80_BWD_DQ_RED_V2
// 1: dQ atomics as red.global.add.v2.f32 (sm_90+): one instruction and one full 32-byte sector
// per 4 lanes instead of two half-used sectors; 0: scalar red.global.add.f32 (the sm_80 form).
#define FA_SM80_BWD_DQ_RED_V2 1
#endif
#ifndef FA_SM80_BWD_DQ_BEFORE_DK
// 1: dQ = dS K and its atomics come before dK += dS^T Q, so the atomics drain from the load/store
// unit while dK's MMAs issue; 0: dV, dK, then dQ (the atomics sit right before the barrier and
// the next step's loads queue behind them).
#define FA_SM80_BWD_DQ_BEFORE_DK 1
#endif
#ifndef FA_SM80_BWD_RED_SPREAD
// Head dims (head_dim_bit mask) whose dQ reductions are spread over the dK product's k-slices
// instead of issued back to back before it (the last dQ chunk's, with DQ_BEFORE_DK, in full
// tiles, not by the first adder, not in the deterministic mode). Why: the 16 red.global.add.v2
// of a thread fill the load/store unit's queue, and the warp then sits on lg_throttle (ncu source counters, H200 bf16 N4k,
// session 15: the reductions are 4.8-5.0% of the main kernel's stall samples at d64/d128, the
// later ones of the 16 stalling the most) with dK's MMAs not yet issued behind them.
// Same-call A/B (H200, bf16, d64/d128, N 1k-16k, causal and not): +4..+10% per shape. 0: back to
// back. The sm_80 cubin keeps 0: unmeasured on an A100, and its d256 tile spilled 84 B with it.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FA_SM80_BWD_RED_SPREAD 0
#else
#define FA_SM80_BWD_RED_SPREAD 42
#endif
#endif
#ifndef FA_SM80_BWD_LSE_SMEM
// Head dims (head_dim_bit mask) whose steps' LSE and D rows travel with Q/dO by cp.async into
// shared memory (loaded a step ahead, read after the barrier); the others read them from global
// memory at the top of the step, which puts a global-load latency between the barrier and the
// softmax (ncu source counters, H200 bf16 N4k, session 13: the FSETP / LOP3 / SHF waiting on
// those loads held ~6% of the d64 and d128 stall samples). Timed neutral in session 11 (±1.5%);
// after the banded dQ accumulator (FA_SM80_BWD_DQ_PERM), which took the reductions' L2 traffic
// out of the way, +2..5% at d 64 / d 128 (session 13, two alternations, N 1k/4k/8k causal and
// not), +2..3% at d 256 (whose big-smem tile spilled 8 B with it until the dQ red address's head
// offset was made opaque; then, session 13 call 9: +1..3% at d 256 N 1k/4k/8k, two alternations).
// Default 42 (d 64, d 128, d 256).
// The mask is the same in every arch pass: it sets the shared-memory size the host launches with.
#define FA_SM80_BWD_LSE_SMEM 42
#endif
#ifndef FA_SM80_BWD_FAST_TILES
// 1: a step whose tile needs no mask and has all kBlockM query rows (every step of a non-causal
// call with N % 64 == 0, all but the diagonal ones of a causal call) runs branch-free code: the
// softmax without the per-element mask / row tests (the masked form costs ~10 predicate
// instructions per score even when the mask is off: they are issued, just predicated), dQ
// reductions without a row guard (a guarded red is a branch around it), Q/dO loads without row
// predicates and zero fills. Edge tiles take the general code. 0: every tile takes it.
#define FA_SM80_BWD_FAST_TILES 1
#endif
#ifndef FA_SM80_BWD_STEP_COUNTERS
// 1: the (query head, query block) of the next step comes from counters advanced once per step;
// 0: from step / n_m and step % n_m (two integer divisions per step, ~30 instructions each).
#define FA_SM80_BWD_STEP_COUNTERS 1
#endif
#ifndef FA_SM80_BWD_INCR_ADDR
// Bit mask of offsets carried from step to step instead of recomputed: 1 = Q and dO, 2 = LSE,
// 4 = the workspace row of D and dQ. A carried offset is the previous step's plus kBlockM rows
// while the query head stays the same and the query block is the next one; the full math (64-bit
// products of head, row and batch with their strides) runs only when the head changes or the
// rotated walk wraps. Each carried offset is an int64 live across the whole step: at d 128
// (sm_90a bf16) 1, 6 and 7 spill 64 / 40 / 64 B, 4 does not. 0: full math every step.
#define FA_SM80_BWD_INCR_ADDR 0
#endif
#ifndef FA_SM80_BWD_INCR_ADDR_DIMS
// Head dims (head_dim_bit mask) where FA_SM80_BWD_INCR_ADDR applies; default all but d 64,
// whose 128-row tile spills 8 B with INCR_ADDR=4.
#define FA_SM80_BWD_INCR_ADDR_DIMS 61
#endif
#ifndef FA_SM80_BWD_D128_WARPS_MDQ
// Warps down the query rows of dQ = dS K at d 128 (the other 8 / this many go across the head
// dim). 4: each warp 16 rows x 64 columns (1 + 4 ldmatrix per k-slice); 2: 32 x 32 (2 + 2), 8
// fewer ldmatrix per step, the same number of dQ reductions (FA2's layout at d 128).
#define FA_SM80_BWD_D128_WARPS_MDQ 4
#endif
#ifndef FA_SM80_BWD_D128_SDP_CHUNKS
// Key-column chunks of S = Q K^T and dP = dO V^T at d 128 with 128 keys. 2: S and dP take 16
// registers each instead of 32, but every chunk re-reads the whole Q and dO tiles with ldmatrix
// (32 of a warp's 184 ldmatrix.x4 per step; shared-memory bandwidth is what limits this kernel,
// ncu: L1 ~70% busy at 34% tensor utilisation). 1: one pass, FA2's layout.
#define FA_SM80_BWD_D128_SDP_CHUNKS 2
#endif
#ifndef FA_SM80_BWD_OPAQUE_TID
// 1: per-thread values derived from tid (the ldmatrix addresses of each product, the row/column
// coordinates of S and dQ entries for the row stats, the masked softmax and the guarded dQ
// reductions) are rebuilt in each step, where they are used, from an opaque copy of tid: the
// compiler cannot hoist them out of the step loop and keep ~50 of them live (or spilled) across
// the GEMMs. Costs some integer instructions per step. 0: computed once before the loop.
// A mask of head dims (head_dim_bit: d32 1, d64 2, d96 4, d128 8, d192 16, d256 32; 63 all).
// D128_SDP_CHUNKS=1 and D64_BLOCK_M=128 need it at their head dim to compile without spills
// (sm_90a bf16: d128 100 B -> 0, d64 124 B -> 0).
#define FA_SM80_BWD_OPAQUE_TID 0
#endif
#ifndef FA_SM80_BWD_D64_BLOCK_M
// Query rows per step at d 64 without softcap. 128: PyTorch FA2's 128 x 128 tile at d 64 (the K/V
// operands are re-read from shared memory once per 128 query rows instead of per 64; S and dP
// take 64 registers each); 64: the previous tile.
#define FA_SM80_BWD_D64_BLOCK_M 64
#endif
#ifndef FA_SM80_BWD_D256_BLOCK_M
#define FA_SM80_BWD_D256_BLOCK_M 32  // query rows per step at d 256 (64 needs DQ_CHUNKS 2, 1 stage)
#endif
#ifndef FA_SM80_BWD_D256_DQ_CHUNKS
#define FA_SM80_BWD_D256_DQ_CHUNKS 1  // dQ head-dim slices at d 256
#endif
// dQ head-dim slices at d 128 and d 64 (build-time experiment, default 1): each slice's reductions
// are issued before the next slice's products, so a warp's reductions reach the load/store unit in
// two bursts of 8 with MMAs between, not one of 16 (ncu, session 14: the 16 back-to-back REDG of
// the fast path stall on lg_throttle, 0.22-0.23 cycles per issued instruction at N 8k, where
// PyTorch's FA2 shows none); the price is dS read from shared memory once per slice. At d 256 two
// slices measured 2-3% faster than one (session 14); at d 64 / d 128 two measured 2-3% slower
// than one at every shape (session 15, before RED_SPREAD), so they stay 1.
#ifndef FA_SM80_BWD_D128_DQ_CHUNKS
#define FA_SM80_BWD_D128_DQ_CHUNKS 1
#endif
#ifndef FA_SM80_BWD_D64_DQ_CHUNKS
#define FA_SM80_BWD_D64_DQ_CHUNKS 1
#endif
#ifndef FA_SM80_BWD_D96_BLOCK_N
#define FA_SM80_BWD_D96_BLOCK_N 64  // keys per CTA at d 96
#endif
#ifndef FA_SM80_BWD_D256_WARPS
#define FA_SM80_BWD_D256_WARPS 2  // warps along keys (dK/dV) and rows (dQ) at d 256
#endif
#ifndef FA_SM80_BWD_EXP_BEFORE_DP
// Head dims (head_dim_bit mask, instances without softcap) whose softmax computes P = exp2(...)
// between S = Q K^T and dP = dO V^T, with dS after dP, instead of both after the two products:
// P's exponentials (MUFU, 16 per clock per SM) then have dP's MMAs to overlap with, where
// otherwise each warp issues them after its last MMA with the tensor pipe idle (profile: the
// backward is latency-bound between its barrier phases). Same arithmetic, same registers live
// (S and dP are both held during dP's products either way). H200 (session 6, bf16, TFLOP/s at
// N 1k / 16k non-causal | causal): d 128 225 260 | 176 262 -> 229 267 | 178 270 (+1..3%);
// d 256 176 190 | 148 201 -> 171 187 | 144 195 (-2..3%), and with the big-smem tile 184 206 |
// 156 210 -> 178 197 | 150 201. d 64 (session 13, non-causal N 1k / 4k / 8k, two alternations,
// same values both times): 198 234 240 -> 205 244 251 (+3.5..4.6%; 248 registers, no spill).
// Default 10: d 64 and d 128; the sm_80 cubin keeps 8 (d 64 spilled 8 B there). Only bwd_main
// reads it, so the arch passes may differ. 0: the old order everywhere.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FA_SM80_BWD_EXP_BEFORE_DP 8
#else
#define FA_SM80_BWD_EXP_BEFORE_DP 10
#endif
#endif
#ifndef FA_SM80_BWD_CHEAP_ADDR
// Head dims (head_dim_bit mask) whose per-step addresses and coordinates are built by hand instead
// of by CuTe's generic partition algebra. The values FA_SM80_BWD_OPAQUE_TID rebuilds in every step
// from an opaque tid (so that they are not kept live, and spilled, across the step) cost signed
// div/mod, 64-bit pointer math and swizzle bit-twiddling there: ncu (H200, bf16 d 128, session 10)
// had ours executing 16% more instructions than PyTorch's FA2 at the same tile, ~290 more integer
// ones per warp and step. With the switch: the opaque tid is masked to [0, kNThreads) (divisions
// by powers of two become shifts); full Q/dO tiles are loaded with one base offset per thread plus
// constants (QLoadByHand); S/dP and dQ coordinates, the LSE/D row loads, the P/dS smem stores and
// the dQ reduction addresses are thread 0's constant offsets plus the thread's first entry
// (MmaCBase, pds_store_offset); the A and B ldmatrix slices of a product share one opaque tid;
// the per-step mask test compares against two per-CTA row bounds; the step offsets, see
// FA_SM80_BWD_CHEAP_STEP_DIMS. The same bytes go to the same places (host check of every thread's
// offsets against CuTe's partitions, all tiles). Static count of the d 128 bf16 sm_90a main loop:
// 1934 -> 1756 instructions, integer/uniform 796 -> 633; 255 -> 250 registers, no spills.
// 0: the previous code (identical SASS).
#define FA_SM80_BWD_CHEAP_ADDR 63
#endif
#ifndef FA_SM80_BWD_CHEAP_STEP_DIMS
// Head dims (head_dim_bit mask) of FA_SM80_BWD_CHEAP_ADDR's step offsets (Q, dO, LSE, workspace
// rows: the CTA's part kept, the rest as 32 x 64-bit products); default all but d 64, whose
// 128-row tile spilled 8 B with them (sm_90a bf16; 120 B without keeping the CTA's part).
#define FA_SM80_BWD_CHEAP_STEP_DIMS 61
#endif
#ifndef FA_SM80_BWD_BIG_SMEM_DIMS
// Head dims (head_dim_bit mask) that get a second tile for devices allowing more than the sm80's
// 163 KB of shared memory per block. Only d 256 (32) has one: its 64-row steps get the second
// Q/dO stage (208 KB instead of 144), so step i+1's 64 KB of Q and dO load while step i computes
// instead of after its last barrier, where every step waits for them (PyTorch's FA2
// double-buffers Q at d 256 on H100 the same way). Every sm_90 / sm_100 device has 227 KB, so
// for such a head dim the sm_9x+ cubins compile only the big tile and the sm_8x ones only the
// sm80 tile (one kernel per arch and translation unit, bwd_main_kernel); the launcher picks by
// the device's compute capability. H200 (session 6, bf16, TFLOP/s at N 1k / 16k non-causal |
// causal): d 256 176 190 | 148 201 -> 184 206 | 156 210 (+4.5..8.4%). Default 32; 0: the sm80
// tile on every device (the ablation is a build variant: there is no runtime switch, since each
// cubin holds only one of the two kernels).
#define FA_SM80_BWD_BIG_SMEM_DIMS 32
#endif

// Shared memory per block on sm_80 (A100's opt-in limit); kBigSmem tiles may use sm_90's.
constexpr int kSm80SmemLimit = 163 * 1024;
constexpr int kSm90SmemLimit = 227 * 1024;

template <int kHeadDim, bool kSoftcap, bool kBigSmem = false>
struct BwdTile {
  static_assert(kHeadDim % 32 == 0 && kHeadDim <= 256, "head dims 32..256 in steps of 32");
  // d 256: 64 query rows per step (LEAN_LDSM) halve the K/V operand re-reads per query row; dQ is
  // then computed in two 128-column slices and the per-step tid values are rebuilt from an opaque
  // tid, without which 64 rows spilled ~400 B. 32 rows (the session-4 tile) fit without either.
  static constexpr int kBlockM = kHeadDim == 256 ? FA_SM80_BWD_D256_BLOCK_M
                                 : (kHeadDim == 64 && !kSoftcap) ? FA_SM80_BWD_D64_BLOCK_M
                                                  : 64;
  // d 96 uses 64 keys as well: its 32-wide swizzle rows cost extra address registers and the
  // 128-key tile spilled (~200 bytes).
  // d 128 with softcap keeps 64 keys: tanh and its derivative need registers the 128-key tile
  // does not have (~880 B of spills).
  static constexpr int kBlockN = kHeadDim == 128 ? (kSoftcap ? 64 : FA_SM80_BWD_D128_BLOCK_N)
                                 : kHeadDim == 96 ? FA_SM80_BWD_D96_BLOCK_N
                                 : kHeadDim < 128 ? 128 : 64;
  // Q/dO buffers: 2 (step i+1 loads while step i computes), except d 256 with 64-row steps, where
  // a second stage would exceed the 163 KB sm80 shared-memory limit (kBigSmem: sm_90's 227 KB).
  static constexpr int kStages = (kHeadDim == 256 && kBlockM == 64 && !kBigSmem) ? 1 : 2;
  // S and dP are computed kSdPChunks key columns at a time: with 128 keys and d >= 96 the dK/dV
  // accumulators take 96-128 registers per thread and full-width S and dP (64 more) spill.
  static constexpr int kSdPChunks = (kBlockN == 128 && kHeadDim >= 96)
                                        ? (kHeadDim == 128 ? FA_SM80_BWD_D128_SDP_CHUNKS : 2)
                                        : 1;
  // Warps along keys (dK/dV) and along query rows (dQ); the rest go across the head dim. With
  // d 256 a warp spanning 128 head-dim columns would hold 64 B-operand registers per k-slice.
  static constexpr int kWarpsNdKV = kHeadDim == 256 ? FA_SM80_BWD_D256_WARPS : 4;
  static constexpr int kWarpsMdQ = kHeadDim == 256   ? FA_SM80_BWD_D256_WARPS
                                   : kHeadDim == 128 ? FA_SM80_BWD_D128_WARPS_MDQ
                                                     : 4;
  // dQ = dS K may be computed kDQChunks head-dim slices at a time (fewer accumulator registers,
  // dS re-read per slice): d 256 with 64-row steps.
  static constexpr int kDQChunks = kHeadDim == 256   ? FA_SM80_BWD_D256_DQ_CHUNKS
                                   : kHeadDim == 128 ? FA_SM80_BWD_D128_DQ_CHUNKS
                                   : kHeadDim == 64  ? FA_SM80_BWD_D64_DQ_CHUNKS
                                                     : 1;
};

// The shared-memory layouts and gmem tiled copies of a tile, derived by CuTe. BwdTraits takes them
// from BwdLayoutsTable (bwd_partition_types.cuh: the same types, printed from this struct) where
// the tile is there, which spares the front end this algebra (compile memory only).
template <typename Element, int kHeadDim, int kBlockM, int kBlockN>
struct BwdLayoutsDerived {
  // Row-major [rows, D] tiles, swizzled in 16-byte chunks so that ldmatrix (8 rows × 16 bytes) and
  // its transposed form hit 8 different bank groups. A swizzle row is 64 elements (128 bytes), or 32
  // when D is not a multiple of 64 (96, 192 is fine).
  static constexpr int kSwizzleRow = kHeadDim % 64 == 0 ? 64 : 32;
  static constexpr int kSwizzleBits = kSwizzleRow == 64 ? 3 : 2;
  using SmemAtomRows = decltype(composition(
      Swizzle<kSwizzleBits, 3, 3>{},
      Layout<Shape<_8, Int<kSwizzleRow>>, Stride<Int<kSwizzleRow>, _1>>{}));
  using SmemLayoutQ = decltype(tile_to_shape(SmemAtomRows{}, Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  using SmemLayoutKV = decltype(tile_to_shape(SmemAtomRows{}, Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  // Transposed views (same bytes): the MN-major operands of dV/dK (= ·^T dO, ·^T Q) and dQ (K^T).
  using SmemLayoutQt = decltype(composition(
      SmemLayoutQ{}, make_layout(Shape<Int<kHeadDim>, Int<kBlockM>>{}, GenRowMajor{})));
  using SmemLayoutKt = decltype(composition(
      SmemLayoutKV{}, make_layout(Shape<Int<kHeadDim>, Int<kBlockN>>{}, GenRowMajor{})));
  using SmemAtomPdS =
      decltype(composition(Swizzle<3, 3, 3>{}, Layout<Shape<_8, _64>, Stride<_64, _1>>{}));
  using SmemLayoutPdS = decltype(tile_to_shape(SmemAtomPdS{}, Shape<Int<kBlockM>, Int<kBlockN>>{}));
  using SmemLayoutPdSt = decltype(composition(
      SmemLayoutPdS{}, make_layout(Shape<Int<kBlockN>, Int<kBlockM>>{}, GenRowMajor{})));
  // gmem <-> smem: 16-byte vectors, kSwizzleRow/8 threads per row (256 threads).
  static constexpr int kGmemThreadsPerRow = kSwizzleRow / 8;
  using GmemThreads = Layout<Shape<Int<256 / kGmemThreadsPerRow>, Int<kGmemThreadsPerRow>>,
                             Stride<Int<kGmemThreadsPerRow>, _1>>;
  using GmemLoad = decltype(make_tiled_copy(
      Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>, Element>{}, GmemThreads{},
      Layout<Shape<_1, _8>>{}));
  using GmemStore = decltype(make_tiled_copy(
      Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<128>, Element>{}, GmemThreads{},
      Layout<Shape<_1, _8>>{}));
};

template <typename Element_, int kHeadDim_, bool kSoftcap_ = false, bool kBigSmem_ = false>
struct BwdTraits {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kBigSmem = kBigSmem_;
  using TileCfg = BwdTile<kHeadDim, kSoftcap_, kBigSmem_>;
  static constexpr int kBlockM = TileCfg::kBlockM;
  static constexpr int kBlockN = TileCfg::kBlockN;
  static constexpr int kStages = TileCfg::kStages;
  static constexpr int kSdPChunks = TileCfg::kSdPChunks;
  static constexpr int kBlockNc = kBlockN / kSdPChunks;  // key columns of one S/dP chunk
  static constexpr int kDQChunks = TileCfg::kDQChunks;
  static constexpr int kHeadDimc = kHeadDim / kDQChunks;  // head-dim columns of one dQ chunk
  static constexpr int kNWarps = 8;
  static constexpr int kNThreads = kNWarps * 32;
  static_assert(kBlockM >= kBwdSemBlockM, "dQ semaphores are sized per kBwdSemBlockM query rows");

  // Warp arrangement of the three MMA shapes (each warp owns 16 rows × 16 cols per atom pass):
  static constexpr int kWarpsMSdP = 2;  // S, dP [M x N]: 2 warps down query rows × 4 across keys
  static constexpr int kWarpsNdKV = TileCfg::kWarpsNdKV;  // dK, dV [N x D]
  static constexpr int kWarpsMdQ = TileCfg::kWarpsMdQ;    // dQ [M x D]

  using MmaOp = std::conditional_t<std::is_same_v<Element, cutlass::half_t>,
                                   SM80_16x8x16_F32F16F16F32_TN, SM80_16x8x16_F32BF16BF16F32_TN>;
  using TiledMmaSdP =
      TiledMMA<MMA_Atom<MmaOp>, Layout<Shape<Int<kWarpsMSdP>, Int<kNWarps / kWarpsMSdP>, _1>>,
               Tile<Int<16 * kWarpsMSdP>, Int<16 * (kNWarps / kWarpsMSdP)>, _16>>;
  using TiledMmadKV =
      TiledMMA<MMA_Atom<MmaOp>, Layout<Shape<Int<kWarpsNdKV>, Int<kNWarps / kWarpsNdKV>, _1>>,
               Tile<Int<16 * kWarpsNdKV>, Int<16 * (kNWarps / kWarpsNdKV)>, _16>>;
  using TiledMmadQ =
      TiledMMA<MMA_Atom<MmaOp>, Layout<Shape<Int<kWarpsMdQ>, Int<kNWarps / kWarpsMdQ>, _1>>,
               Tile<Int<16 * kWarpsMdQ>, Int<16 * (kNWarps / kWarpsMdQ)>, _16>>;

  // The smem layouts (swizzled row-major tiles and their transposed views) and gmem copies: see
  // BwdLayoutsDerived.
  static constexpr int kSwizzleRow = kHeadDim % 64 == 0 ? 64 : 32;
  static constexpr int kSwizzleBits = kSwizzleRow == 64 ? 3 : 2;
  using Layouts = std::conditional_t<BwdLayoutsTable<Element, kHeadDim, kBlockM, kBlockN>::kKnown,
                                     BwdLayoutsTable<Element, kHeadDim, kBlockM, kBlockN>,
                                     BwdLayoutsDerived<Element, kHeadDim, kBlockM, kBlockN>>;
  using SmemLayoutQ = typename Layouts::SmemLayoutQ;
  using SmemLayoutKV = typename Layouts::SmemLayoutKV;
  using SmemLayoutQt = typename Layouts::SmemLayoutQt;
  using SmemLayoutKt = typename Layouts::SmemLayoutKt;
  using SmemLayoutPdS = typename Layouts::SmemLayoutPdS;
  using SmemLayoutPdSt = typename Layouts::SmemLayoutPdSt;

  static constexpr int kSmemQ = kBlockM * kHeadDim;  // elements per Q (or dO) stage
  static constexpr int kSmemKV = kBlockN * kHeadDim;
  static constexpr int kSmemPdS = kBlockM * kBlockN;
  // The 163 KB d 256 tile (A100) keeps global LSE/D reads: it spilled 4 B with them (sm_80).
  static constexpr bool kLseSmem =
      (FA_SM80_BWD_LSE_SMEM & head_dim_bit(kHeadDim)) != 0 && (kHeadDim != 256 || kBigSmem);
  static constexpr int kSmemRowStats = kLseSmem ? kStages * 2 * kBlockM : 0;  // floats: LSE, D
  // One int after the row stats: the step's first-adder decision (BwdWorkspace::store_first),
  // handed from thread 0 to the CTA (16 bytes keep the total a multiple of 16).
  static constexpr int kSmemClaimBytes = 16;
  static constexpr int kSmemBytes =
      int(sizeof(Element)) * (2 * kSmemKV + 2 * kStages * kSmemQ + 2 * kSmemPdS) +
      int(sizeof(float)) * kSmemRowStats + kSmemClaimBytes;
  static_assert(kSmemBytes <= (kBigSmem ? kSm90SmemLimit : kSm80SmemLimit),
                "must fit the shared-memory limit of the devices it is launched on");

  // gmem <-> smem: 16-byte vectors, kSwizzleRow/8 threads per row.
  static constexpr int kGmemThreadsPerRow = kSwizzleRow / 8;
  static_assert(kNThreads == 256, "BwdLayoutsDerived's gmem copies");
  using GmemLoad = typename Layouts::GmemLoad;
  using GmemStore = typename Layouts::GmemStore;
  static_assert(kBlockM % (kNThreads / kGmemThreadsPerRow) == 0, "row passes must tile kBlockM");

  using SmemLoad = Copy_Atom<SM75_U32x4_LDSM_N, Element>;   // K-major operands
  using SmemLoadT = Copy_Atom<SM75_U16x8_LDSM_T, Element>;  // MN-major operands (transposed views)
  using SmemStore = Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<32>, Element>;  // 2 accums
};

// Where each key block starts its walk over its query blocks (BwdWorkspace::rotate_m; build macro,
// or the environment variable of that name, read once per process):
//   0  at the first: all CTAs of a head add into the same dQ rows at the same time
//   1  at (key block mod query blocks): neighbouring key blocks add into different rows
//   2  at (key block · query blocks / key blocks) mod query blocks: the same where there are as
//      many query blocks as key blocks (d 64, d 256), spread over all of them where there are
//      more (d 128: 64-row query blocks, 128-key blocks). With the first-adder store
//      (FA_SM80_BWD_DQ_STORE) that is what keeps each query block's first visit with one key
//      block: under 1, key block n - 1 reaches blocks n + 1, n + 2, ... one step after key block
//      n has claimed them and, when n runs late, waits for each of its stores.
#ifndef FA_SM80_BWD_ROTATE_M
#define FA_SM80_BWD_ROTATE_M 2
#endif
inline int bwd_rotate_m() {
  static const int mode = env_int("FA_SM80_BWD_ROTATE_M", FA_SM80_BWD_ROTATE_M);
  return mode;
}

// Launch switches of the three kernels (build macro, or the environment variable of that name,
// read once per process; 0 = off):
//   FA_SM80_BWD_PDL             on sm_90+ devices, the main kernel and the conversion launch as
//                               programmatic dependents of the kernel before them
//                               (cuda/common/pdl.cuh): each one's launch, and the main kernel's
//                               K/V loads, overlap the previous kernel's tail. sm_8x: plain.
//                               Default 0: H200 session 14, with the other two on, N 512 / 1k
//                               d 64 / d 128 / d 256 causal and not, off was +0..+7% (d 256
//                               -4..-7% with it); the FA3 backward keeps its own (FA_SM90_BWD_PDL).
//   FA_SM80_BWD_DQ_STORE        first-adder dQ store (BwdWorkspace::store_first): the pre-pass
//                               does not zero the 4·Hq·total_q·D-byte accumulator; the first key
//                               block to reach a query block (a CAS on its dq_sem entry, or turn 0
//                               in deterministic mode) stores its dS K there, and the others add
//                               once it is visible. Neither the zeros' write nor the first reds'
//                               line fills reach HBM. H200 session 14 (off vs on, packed on):
//                               N 512 / 1k +6..+19% (d 128 causal N 512 +20%), N 2k +4%, d 64
//                               N 4k-16k +1..+3%, d 128 non-causal N 8k -3% with ROTATE_M 1
//                               (+3.5% with 2, which is why 2 is the default).
//   FA_SM80_BWD_PACKED_PREPOST  the pre-pass and the conversion give each (row, head) only the
//                               lanes it has work for (prepost_lanes) instead of a whole warp.
//                               H200 session 14 (on vs off, first-adder store on), N 512 / 1k:
//                               d 64 +13..+28%, d 128 +3..+8%, d 256 (32 lanes either way) 0.
#ifndef FA_SM80_BWD_PDL
#define FA_SM80_BWD_PDL 0
#endif
#ifndef FA_SM80_BWD_DQ_STORE
#define FA_SM80_BWD_DQ_STORE 1
#endif
#ifndef FA_SM80_BWD_PACKED_PREPOST
#define FA_SM80_BWD_PACKED_PREPOST 1
#endif
// The sm_80 cubin has no first-adder code (its 163 KB d 256 tile spilled 8 B with it), and the
// launcher turns the store off on sm_8x devices, so its pre-pass zeroes as before.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define FA_SM80_BWD_DQ_STORE_CODE 0
#else
#define FA_SM80_BWD_DQ_STORE_CODE 1
#endif
inline bool bwd_pdl() {
  static const bool on = env_int("FA_SM80_BWD_PDL", FA_SM80_BWD_PDL) != 0;
  return on;
}
inline bool bwd_dq_store() {
  static const bool on = env_int("FA_SM80_BWD_DQ_STORE", FA_SM80_BWD_DQ_STORE) != 0;
  return on;
}
inline bool bwd_packed_prepost() {
  static const bool on = env_int("FA_SM80_BWD_PACKED_PREPOST", FA_SM80_BWD_PACKED_PREPOST) != 0;
  return on;
}

// Whether a head dim has the big-smem tile (FA_SM80_BWD_BIG_SMEM_DIMS). Where it has, the sm_9x+
// cubins hold only that tile's kernel and the sm_8x cubins only the sm80 tile's: the kernel's
// guard (bwd_main_kernel) and the launcher's choice (run_sm80_bwd) both follow from this.
template <typename Element, int kHeadDim, bool kSoftcap>
constexpr bool has_big_smem_tile() {
  return (FA_SM80_BWD_BIG_SMEM_DIMS & head_dim_bit(kHeadDim)) != 0 &&
         BwdTraits<Element, kHeadDim, kSoftcap, true>::kSmemBytes >
             BwdTraits<Element, kHeadDim, kSoftcap, false>::kSmemBytes;
}

// ---- fragment helpers --------------------------------------------------------------------------

// ((2 cols, 2 row-halves), MMA_M, MMA_N) accumulator -> ((2, MMA_M) rows, (2, MMA_N) cols).
template <class Layout>
CUTE_HOST_DEVICE constexpr auto rowcol(Layout const& acc) {
  return make_layout(make_layout(get<0, 1>(acc), get<1>(acc)),
                     make_layout(get<0, 0>(acc), get<2>(acc)));
}

// (row, col) tile coordinates of a thread's [kRows x kCols] accumulator, in rowcol() order.
template <int kRows, int kCols, class ThrMma>
CUTE_DEVICE auto rowcol_coords(ThrMma const& thr) {
  Tensor c = partition_c(thr, make_identity_tensor(Shape<Int<kRows>, Int<kCols>>{}));
  return make_tensor(c.data(), rowcol(c.layout()));
}

template <typename To, class Engine, class Layout>
CUTE_DEVICE auto convert_to(Tensor<Engine, Layout> const& src) {
  Tensor dst = make_tensor<To>(src.layout());
  CUTE_UNROLL
  for (int i = 0; i < size(src); ++i) dst(i) = To(src(i));
  return dst;
}

// acc += A·B, both from shared memory; ldmatrix of k-slice k+1 overlaps the MMAs of slice k.
// cute::copy, not sm80::copy_vectors: with copy_vectors the d64 SASS differs (some operand
// partitions here have broadcast modes, which cute::copy filters).
template <class TiledMma, class Acc, class RA, class RB, class SA, class SB, class CopyA, class CopyB,
          class ThrCopyA, class ThrCopyB>
CUTE_DEVICE void gemm_smem(TiledMma const& mma, Acc& acc, RA& rA, RB& rB, SA const& sA,
                           SB const& sB, CopyA const& copy_a, CopyB const& copy_b,
                           ThrCopyA const& thr_a, ThrCopyB const& thr_b) {
  gemm_smem(mma, acc, rA, rB, sA, sB, copy_a, copy_b, thr_a, thr_b, [](int) {});
}

// The same, calling after_slice(k) once slice k's MMAs are issued (work to interleave with them).
template <class TiledMma, class Acc, class RA, class RB, class SA, class SB, class CopyA, class CopyB,
          class ThrCopyA, class ThrCopyB, class AfterSlice>
CUTE_DEVICE void gemm_smem(TiledMma const& mma, Acc& acc, RA& rA, RB& rB, SA const& sA,
                           SB const& sB, CopyA const& copy_a, CopyB const& copy_b,
                           ThrCopyA const& thr_a, ThrCopyB const& thr_b, AfterSlice&& after_slice) {
  Tensor rA_view = sm80::grid_retile_ldsm_x4(mma, copy_a, thr_a, rA);
  Tensor rB_view = sm80::grid_retile_ldsm_x4(mma, copy_b, thr_b, rB);
  constexpr int kSlices = decltype(size<2>(rA))::value;
  copy(copy_a, sA(_, _, 0), rA_view(_, _, 0));
  copy(copy_b, sB(_, _, 0), rB_view(_, _, 0));
  CUTE_UNROLL
  for (int k = 0; k < kSlices; ++k) {
    if (k + 1 < kSlices) {
      copy(copy_a, sA(_, _, k + 1), rA_view(_, _, k + 1));
      copy(copy_b, sB(_, _, k + 1), rB_view(_, _, k + 1));
    }
    cute::gemm(mma, rA(_, _, k), rB(_, _, k), acc);
    after_slice(k);
  }
}

// cp.async of rows below row_limit; rows past it are zero-filled (zeros, not garbage: a NaN
// pattern in a padded K/V/Q/dO row would turn 0 · NaN into NaN in dQ, dK or dV).
template <class TiledCopy, class Src, class Dst, class Coord>
CUTE_DEVICE void load_rows(TiledCopy const& tiled_copy, Src const& src, Dst&& dst,
                           Coord const& coord, int64_t row_limit) {
  CUTE_UNROLL
  for (int m = 0; m < size<1>(dst); ++m) {
    if (get<0>(coord(0, m, 0)) < row_limit)
      sm80::copy_vectors(tiled_copy, src(_, m, _), dst(_, m, _));
    else
      clear(dst(_, m, _));
  }
}

// 16-byte vectors (GmemStore's auto-vectorising copy of 8 contiguous elements, written out).
template <class Src, class Dst, class Coord>
CUTE_DEVICE void store_rows(Src const& src, Dst&& dst, Coord const& coord, int64_t row_limit) {
  CUTE_UNROLL
  for (int m = 0; m < size<1>(src); ++m)
    if (get<0>(coord(0, m, 0)) < row_limit) sm80::copy_as<cute::uint128_t>(src(_, m, _), dst(_, m, _));
}

// Dense workspace row of sequence b's first query (see bwd_workspace.cuh).
CUTE_DEVICE int64_t ws_row0(const core::AttnParams& p, int b, const core::SeqInfo& s) {
  return p.varlen ? s.q_start : int64_t(b) * p.seqlen_q;
}
// (batch, tensor row) of a dense workspace row; varlen tensors have batch stride 0.
CUTE_DEVICE void ws_row_to_tensor(const core::AttnParams& p, int64_t row, int64_t* b, int64_t* r) {
  if (p.varlen) {
    *b = 0;
    *r = row;
  } else {
    *b = row / p.seqlen_q;
    *r = row - *b * p.seqlen_q;
  }
}

// Fire-and-forget fp32 add at L2 (atomicAdd with an unused result compiles to ATOMG on sm_90), or
// (kStore) a plain store: the block's first adder (BwdWorkspace::store_first). The caller picks
// one form for a whole loop: one asm with both instructions predicated compiled to a branch
// around each (ncu: 0.2-0.3 cycles of branch_resolving per issued instruction).
template <bool kStore>
CUTE_DEVICE void red_or_store(float* ptr, float v) {
  if constexpr (kStore)
    asm volatile("st.global.f32 [%0], %1;" ::"l"(ptr), "f"(v) : "memory");
  else
    asm volatile("red.global.add.f32 [%0], %1;" ::"l"(ptr), "f"(v) : "memory");
}

// Two adjacent floats (8-byte aligned) in one vector reduction (sm_90 and later; two scalar ones
// before), or a vector store.
template <bool kStore>
CUTE_DEVICE void red_or_store2(float* ptr, float a, float b) {
  if constexpr (kStore) {
    asm volatile("st.global.v2.f32 [%0], {%1, %2};" ::"l"(ptr), "f"(a), "f"(b) : "memory");
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(ptr), "f"(a), "f"(b) : "memory");
#else
    red_or_store<false>(ptr, a);
    red_or_store<false>(ptr + 1, b);
#endif
  }
}

CUTE_DEVICE void store_release(int* ptr, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(ptr), "r"(v) : "memory");
}

// 4-byte cp.async (the .ca form; .cg only moves 16 bytes).
CUTE_DEVICE void cp_async_4(void* smem_dst, const void* gmem_src) {
  const uint32_t dst = uint32_t(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(gmem_src));
}

// 16-byte cp.async, the instruction GmemLoad's atom (SM80_CP_ASYNC_CACHEGLOBAL) issues.
CUTE_DEVICE void cp_async_16(uint32_t smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(smem_dst), "l"(gmem_src));
}

// GmemLoad's partition of a full [T::kBlockM x D] Q/dO tile, by hand (FA_SM80_BWD_CHEAP_ADDR):
// thread t copies the 16-byte chunks at rows row0 + m·kRowsPerPass, columns col0 + k·kSwizzleRow
// to smem elements smem0 + m·kSmemStepM + k·kSmemStepK of the SmemLayoutQ tile. The swizzle XORs
// a row's 16-byte chunk index with bits of (row mod 8), which a step of kRowsPerPass rows (a
// multiple of 8) keeps, and whole swizzle rows (k) are separate atoms, so every chunk is the base
// plus a constant. CuTe's generic partition of an opaque tid spends ~35 integer instructions per
// tensor and step on the same numbers (signed div/mod, 64-bit pointer math).
template <class T>
struct QLoadByHand {
  static constexpr int kTPR = T::kGmemThreadsPerRow;
  static constexpr int kRowsPerPass = T::kNThreads / kTPR;
  static constexpr int kSw = T::kSwizzleRow;
  static constexpr int kPassesM = T::kBlockM / kRowsPerPass;
  static constexpr int kPassesK = T::kHeadDim / kSw;
  static constexpr int kSmemStepM = kRowsPerPass * kSw;
  static constexpr int kSmemStepK = T::kBlockM * kSw;
  static_assert(kRowsPerPass % 8 == 0 && T::kBlockM % kRowsPerPass == 0 && T::kHeadDim % kSw == 0,
                "row passes keep the swizzle phase; whole atoms along the head dim");
  int row0, col0, smem0;
  CUTE_HOST_DEVICE explicit QLoadByHand(int t) {  // 0 <= t < kNThreads
    row0 = t / kTPR;
    const int chunk = t % kTPR;
    col0 = chunk * 8;
    smem0 = row0 * kSw + ((chunk ^ ((row0 % 8) >> (3 - T::kSwizzleBits))) * 8);
  }
};

// (row, col) of thread t's first accumulator entry in a TiledMMA of SM80 16x8 atoms with kWarpsM
// warps down M (warp w at (w mod kWarpsM, w / kWarpsM)); its other entries sit at offsets that
// are the same for every thread, i.e. thread 0's coordinates (FA_SM80_BWD_CHEAP_ADDR).
template <int kWarpsM>
struct MmaCBase {
  int row, col;
  CUTE_HOST_DEVICE explicit MmaCBase(int t)  // 0 <= t < number of threads
      : row((t / 32 % kWarpsM) * 16 + t % 32 / 4), col((t / 32 / kWarpsM) * 8 + t % 4 * 2) {}
};

// Coordinates of thread t's entries from thread 0's (a partition of an identity tensor).
template <class Coords, int kWarpsM>
CUTE_HOST_DEVICE auto coords_from_base(Coords const& c0, MmaCBase<kWarpsM> const& base) {
  return make_tensor(make_inttuple_iter(make_tuple(base.row, base.col)), c0.layout());
}

// SmemLayoutPdS offset of the accumulator pair (row, col) = (base.row + dr, base.col + dc) of a
// thread of the S/dP TiledMMA (FA_SM80_BWD_CHEAP_ADDR). The layout: [kM x kN] of 8 x 64 atoms,
// column-major, chunk (col mod 64) / 8 of a row XORed with row mod 8. With dr a multiple of 8, dc
// of 32 and base.col < 32, every pair is one of two per-thread values (bit 5 = 32 elements flipped
// for dc = 32 mod 64) plus dr·64 + (dc / 64)·kM·64.
CUTE_HOST_DEVICE int pds_store_base(int row, int col) {
  return row * 64 + (((col / 8) ^ (row % 8)) * 8) + col % 8;
}
template <int kM>
CUTE_HOST_DEVICE int pds_store_offset(int base0, int dr, int dc) {
  return ((dc % 64) != 0 ? (base0 ^ 32) : base0) + dr * 64 + (dc / 64) * kM * 64;
}

// A thread's dQ accumulator entries in the banded order (FA_SM80_BWD_DQ_PERM), relative to its
// first: the dQ TiledMMA's C fragment ((2 columns, 2 row halves), MMA_M, MMA_N) has row halves
// 8 rows apart (one band: 8·D floats), MMA_M repeats 16·kWarpsMdQ rows apart and MMA_N repeats
// 8·(8 / kWarpsMdQ) columns apart (that many 8-column blocks of 64 floats).
template <class T>
struct DqPermDst {
  static constexpr int kWm = T::kWarpsMdQ, kWn = T::kNWarps / T::kWarpsMdQ;
  using Layout = cute::Layout<
      cute::Shape<cute::Shape<cute::_2, cute::_2>, cute::Int<T::kBlockM / (16 * kWm)>,
                  cute::Int<T::kHeadDimc / (8 * kWn)>>,
      cute::Stride<cute::Stride<cute::_1, cute::Int<8 * T::kHeadDim>>, cute::Int<16 * kWm * T::kHeadDim>,
                   cute::Int<64 * kWn>>>;
};

CUTE_DEVICE int load_acquire(const int* ptr) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(ptr) : "memory");
  return v;
}

// Lanes per (row, head) in the pre-pass and the conversion: 8 elements (16 bytes) per lane, the
// head dim rounded up to a power of two so a group's shuffles stay inside it. Packed
// (FA_SM80_BWD_PACKED_PREPOST, above) a warp handles 32 / lanes pairs; unpacked one pair per warp,
// as before, which leaves 24 of 32 lanes idle at d 64 (16 at d 128).
template <int kHeadDim>
constexpr int prepost_lanes() {
  return kHeadDim <= 32 ? 4 : kHeadDim <= 64 ? 8 : kHeadDim <= 128 ? 16 : 32;
}
template <int kHeadDim, bool kPacked>
constexpr int prepost_group() {
  return kPacked ? prepost_lanes<kHeadDim>() : 32;
}

// (sequence, row within it) of a dense workspace row; varlen by a binary search of cu_seqlens_q
// (the largest b with cu_seqlens_q[b] <= row, which steps over empty sequences).
CUTE_HOST_DEVICE void ws_row_to_seq(const core::AttnParams& p, int64_t row, int* b, int64_t* r) {
  if (p.varlen) {
    int lo = 0, hi = p.batch;
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (p.cu_seqlens_q[mid] <= row) lo = mid;
      else hi = mid;
    }
    *b = lo;
    *r = row - p.cu_seqlens_q[lo];
  } else {
    *b = int(row / p.seqlen_q);
    *r = row - int64_t(*b) * p.seqlen_q;
  }
}

// Where key block n_block of nb (nb > n_block) starts its walk over its n_m query blocks
// (BwdWorkspace::rotate_m, FA_SM80_BWD_ROTATE_M): an index into the walk, which wraps around after
// the last block.
CUTE_HOST_DEVICE int walk_start(int mode, int n_block, int n_m, int64_t nb) {
  if (n_m > 0 && mode == 1) return n_block % n_m;
  if (n_m > 0 && mode == 2) return int(int64_t(n_block) * n_m / nb % n_m);
  return 0;
}

// ---- kernel 1: D = rowsum(dO ∘ O), zero the dQ accumulator -------------------------------------
// A group of prepost_group lanes per (row, head), head fastest. Zeroes the semaphores / claims and,
// unless the main kernel's first adders store (ws.store_first), the row's dQ accumulator.
template <typename Element, int kHeadDim, bool kPacked>
__global__ void __launch_bounds__(256) bwd_prepass_kernel(const __grid_constant__ core::AttnParams p,
                                                          const BwdWorkspace ws) {
  pdl_trigger();  // FA_SM80_BWD_PDL: the main kernel may be scheduled (it waits for our writes)
  constexpr int kGroup = prepost_group<kHeadDim, kPacked>();
  const int64_t gtid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nthreads = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = gtid; i < ws.n_sem; i += nthreads) ws.dq_sem[i] = 0;
  const int64_t pair = gtid / kGroup;  // (row, head), head fastest
  const int lane = threadIdx.x % kGroup;
  // Lanes past the last pair stay for the whole-warp shuffles below.
  const bool valid = pair < p.total_q * p.heads_q;
  const int64_t row = pair / p.heads_q;
  const int h = int(pair - row * p.heads_q);
  int64_t b = 0, r = 0;
  if (valid) ws_row_to_tensor(p, row, &b, &r);
  float dot = 0.f;
  const int c0 = lane * 8;  // 8 elements (16 bytes) per lane
  if (valid && c0 < kHeadDim) {
    const uint4 ov = *reinterpret_cast<const uint4*>(static_cast<const Element*>(p.o) +
                                                     p.o_str.offset(b, r, h) + c0);
    const uint4 dv = *reinterpret_cast<const uint4*>(static_cast<const Element*>(p.dout) +
                                                     p.do_str.offset(b, r, h) + c0);
    const Element* oe = reinterpret_cast<const Element*>(&ov);
    const Element* de = reinterpret_cast<const Element*>(&dv);
#pragma unroll
    for (int e = 0; e < 8; ++e) dot += float(oe[e]) * float(de[e]);
    if (!ws.store_first) {
      // Columns c0 .. c0 + 7 are contiguous in either accumulator order (c0 is a multiple of 8).
      float4* acc = reinterpret_cast<float4*>(dq_acc_at<kHeadDim>(ws, h, row, c0));
      acc[0] = make_float4(0.f, 0.f, 0.f, 0.f);
      acc[1] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
  // A group is an aligned power-of-two run of lanes: xor offsets below kGroup stay inside it.
#pragma unroll
  for (int o = kGroup / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
  if (valid && lane == 0) ws.dsum[int64_t(h) * p.total_q + row] = dot;
}

// ---- kernel 3: fp32 dQ -> dq ----------------------------------------------------------------------
// A group of prepost_group lanes per (row, head). With ws.store_first, a row whose query block no
// key block reached (its dq_sem entry still 0: no claim, no turn) was never written: dQ = 0 there.
template <typename Element, int kHeadDim, bool kPacked>
__global__ void __launch_bounds__(256) bwd_convert_dq_kernel(
    const __grid_constant__ core::AttnParams p, const BwdWorkspace ws) {
  pdl_wait();  // FA_SM80_BWD_PDL: launched during the main kernel's tail; the accumulator is its output
  constexpr int kGroup = prepost_group<kHeadDim, kPacked>();
  const int64_t pair = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kGroup;
  const int lane = threadIdx.x % kGroup;
  const int c0 = lane * 8;
  if (pair >= p.total_q * p.heads_q || c0 >= kHeadDim) return;
  const int64_t row = pair / p.heads_q;
  const int h = int(pair - row * p.heads_q);
  int64_t b, r;
  ws_row_to_tensor(p, row, &b, &r);
  // Loaded whether or not the block was visited (the workspace is ours to read), so the claim's
  // load does not delay the accumulator's: unpacked, that chain cost d 64 N 512 ~15%.
  const float4* acc = reinterpret_cast<const float4*>(dq_acc_at<kHeadDim>(ws, h, row, c0));
  float4 a0 = acc[0], a1 = acc[1];
  if (ws.store_first) {
    int sb;
    int64_t sr;
    ws_row_to_seq(p, row, &sb, &sr);
    if (*dq_sem_at(ws, p.heads_q, sb, h, sr / ws.sem_block_m) == 0)
      a0 = a1 = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  a0.x *= p.scale, a0.y *= p.scale, a0.z *= p.scale, a0.w *= p.scale;
  a1.x *= p.scale, a1.y *= p.scale, a1.z *= p.scale, a1.w *= p.scale;
  uint4 out;
  Element* oe = reinterpret_cast<Element*>(&out);
  oe[0] = Element(a0.x), oe[1] = Element(a0.y), oe[2] = Element(a0.z), oe[3] = Element(a0.w);
  oe[4] = Element(a1.x), oe[5] = Element(a1.y), oe[6] = Element(a1.z), oe[7] = Element(a1.w);
  *reinterpret_cast<uint4*>(static_cast<Element*>(p.dq) + p.dq_str.offset(b, r, h) + c0) = out;
}

// ---- kernel 2: the key-block-parallel backward -------------------------------------------------
template <class T, bool kMasked, bool kSoftcap>
CUTE_DEVICE void bwd_main(const core::AttnParams& p, const BwdWorkspace& ws);

template <class T, bool kMasked, bool kSoftcap>
__global__ void __launch_bounds__(T::kNThreads, 1)
    bwd_main_kernel(const __grid_constant__ core::AttnParams p, const BwdWorkspace ws) {
#if defined(__CUDA_ARCH__)
  // The cubins are built per arch (code=sm_XX, no PTX), so a cubin only loads on a device of its
  // major arch. sm_8x devices (163 KB at most) cannot hold the big-smem tile, and sm_90 / sm_100
  // devices (227 KB) get it (an sm_9x+ part with less, e.g. sm_12x, gets a clear error instead) (run_sm80_bwd picks by compute capability), so each arch compiles one
  // of the two kernels; the other, never launched there, would only cost build time.
  constexpr bool kHasBig = has_big_smem_tile<typename T::Element, T::kHeadDim, kSoftcap>();
  constexpr bool kThisArch = !kHasBig || (T::kBigSmem == (__CUDA_ARCH__ >= 900));
  if constexpr (!kThisArch) {
    __trap();
  } else
#endif
  {
    pdl_trigger();  // FA_SM80_BWD_PDL: the conversion may be scheduled into our last wave
    bwd_main<T, kMasked, kSoftcap>(p, ws);
  }
}

template <class T, bool kMasked, bool kSoftcap>
CUTE_DEVICE void bwd_main(const core::AttnParams& p, const BwdWorkspace& ws) {
  using Element = typename T::Element;
  constexpr int kM = T::kBlockM, kN = T::kBlockN, kD = T::kHeadDim, kStages = T::kStages;
  constexpr int kNc = T::kBlockNc, kDc = T::kHeadDimc;
  constexpr bool kDQBeforeDK = FA_SM80_BWD_DQ_BEFORE_DK != 0;
  constexpr bool kRedV2 = FA_SM80_BWD_DQ_RED_V2 != 0;
  constexpr bool kDqPerm = FA_SM80_BWD_DQ_PERM != 0;
  constexpr bool kFastTiles = FA_SM80_BWD_FAST_TILES != 0;
  constexpr bool kRedSpread = kDQBeforeDK && kRedV2 && kFastTiles &&
                              (FA_SM80_BWD_RED_SPREAD & head_dim_bit(kD)) != 0;
  constexpr bool kStepCounters = FA_SM80_BWD_STEP_COUNTERS != 0;
  constexpr int kIncrBits =
      (FA_SM80_BWD_INCR_ADDR_DIMS & head_dim_bit(kD)) != 0 ? FA_SM80_BWD_INCR_ADDR : 0;
  constexpr bool kIncrQ = (kIncrBits & 1) != 0;
  constexpr bool kIncrLse = (kIncrBits & 2) != 0;
  constexpr bool kIncrWs = (kIncrBits & 4) != 0;
  constexpr bool kIncrAddr = kIncrBits != 0;
  constexpr bool kOpaqueTid = (FA_SM80_BWD_OPAQUE_TID & head_dim_bit(kD)) != 0;
  constexpr bool kExpBeforeDP = !kSoftcap && (FA_SM80_BWD_EXP_BEFORE_DP & head_dim_bit(kD)) != 0;
  constexpr bool kCheapAddr = (FA_SM80_BWD_CHEAP_ADDR & head_dim_bit(kD)) != 0;
  constexpr bool kCheapTid = kCheapAddr && kOpaqueTid;  // the parts rebuilt from an opaque tid
  constexpr bool kCheapStep = kCheapAddr && (FA_SM80_BWD_CHEAP_STEP_DIMS & head_dim_bit(kD)) != 0;
  // The second (mask-free) copy of the softcap softmax spills 4 bytes next to full-width S and dP
  // (128 keys in one chunk, d <= 64): those instances keep one softmax for every tile.
  constexpr bool kFastSoftmax = kFastTiles && !(kSoftcap && kN == 128 && T::kSdPChunks == 1);

  const int n_block = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const core::SeqInfo seq = core::seq_info(p, b);
  const int64_t n0 = int64_t(n_block) * kN;
  if (n0 >= seq.k_len) {  // the grid covers the longest sequence
    // FA_SM80_BWD_PDL: our grid completes only after the pre-pass's, so the conversion (our
    // dependent) may read what the pre-pass wrote even where every CTA returns here.
    pdl_wait();
    return;
  }
  const int tid = threadIdx.x;
  const int k_rows = int(min(int64_t(kN), seq.k_len - n0));
  const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1,
                        kMasked ? p.window_right : -1);

  extern __shared__ __align__(128) char smem_raw[];
  Element* smem_k = reinterpret_cast<Element*>(smem_raw);
  Element* smem_v = smem_k + T::kSmemKV;
  Element* smem_q = smem_v + T::kSmemKV;
  Element* smem_do = smem_q + kStages * T::kSmemQ;
  Element* smem_p = smem_do + kStages * T::kSmemQ;
  Element* smem_ds = smem_p + T::kSmemPdS;
  // [kStages][LSE row 0..kM-1, D row 0..kM-1] (kLseSmem only)
  float* smem_stats = reinterpret_cast<float*>(smem_ds + T::kSmemPdS);
  // The step's first-adder decision (ws.store_first): thread 0's CAS result, or in deterministic
  // mode whether this is the block's turn 0.
  volatile int* smem_claim = reinterpret_cast<volatile int*>(smem_stats + T::kSmemRowStats);
  // First-adder claims (ws.store_first) outside deterministic mode; that mode's turn 0 stores.
  const bool store_first = FA_SM80_BWD_DQ_STORE_CODE && ws.store_first;
  const bool claim_first = store_first && !p.deterministic;

  Tensor sK = make_tensor(make_smem_ptr(smem_k), typename T::SmemLayoutKV{});
  Tensor sV = make_tensor(make_smem_ptr(smem_v), typename T::SmemLayoutKV{});
  Tensor sKt = make_tensor(make_smem_ptr(smem_k), typename T::SmemLayoutKt{});
  Tensor sP = make_tensor(make_smem_ptr(smem_p), typename T::SmemLayoutPdS{});
  Tensor sdS = make_tensor(make_smem_ptr(smem_ds), typename T::SmemLayoutPdS{});
  Tensor sPt = make_tensor(make_smem_ptr(smem_p), typename T::SmemLayoutPdSt{});
  Tensor sdSt = make_tensor(make_smem_ptr(smem_ds), typename T::SmemLayoutPdSt{});

  // ---- K_j, V_j -> smem
  typename T::GmemLoad gmem_load;
  auto gmem_thr = gmem_load.get_thread_slice(tid);
  {
    const Element* k_ptr = static_cast<const Element*>(p.k) + p.k_str.offset(b, seq.k_start + n0, hk);
    const Element* v_ptr = static_cast<const Element*>(p.v) + p.v_str.offset(b, seq.k_start + n0, hk);
    Tensor gK = make_tensor(make_gmem_ptr(k_ptr), make_shape(Int<kN>{}, Int<kD>{}),
                            make_stride(p.k_str.row, _1{}));
    Tensor gV = make_tensor(make_gmem_ptr(v_ptr), make_shape(Int<kN>{}, Int<kD>{}),
                            make_stride(p.v_str.row, _1{}));
    Tensor cKV = partition_s(gmem_thr, make_identity_tensor(Shape<Int<kN>, Int<kD>>{}));
    load_rows(gmem_load, partition_s(gmem_thr, gK), partition_d(gmem_thr, sK), cKV, k_rows);
    load_rows(gmem_load, partition_s(gmem_thr, gV), partition_d(gmem_thr, sV), cKV, k_rows);
    cp_async_fence();
  }
  // FA_SM80_BWD_PDL: K and V are inputs; from here on we read the pre-pass's output (D, the
  // zeroed accumulator or claims).
  pdl_wait();

  // ---- the (query head, query block) steps of this CTA
  const int group = p.group_size();
  int64_t m_first = 0, m_last = (seq.q_len + kM - 1) / kM;
  if constexpr (kMasked) query_block_range(mask, n0, n0 + k_rows, kM, &m_first, &m_last);
  if constexpr (kMasked && kCheapAddr) asm volatile("" : "+l"(m_first));  // kept, not rebuilt per step
  const int n_m = int(m_last - m_first);
  const int n_steps = group * n_m;
  // Query block of a step. Rotated (ws.rotate_m), neighbouring key blocks, which run at the same
  // time, add into different dQ rows instead of all hammering the same 64 rows' L2 lines.
  const int rot = walk_start(ws.rotate_m, n_block, n_m, (seq.k_len + kN - 1) / kN);
  // A step's query head and the index of its query block in walk order (before the rotation).
  struct StepPos {
    int h, i;
  };
  auto pos_of_step = [&](int step) { return StepPos{hk * group + step / n_m, step % n_m}; };
  auto next_pos = [&](StepPos s) {
    if (++s.i == n_m) s.i = 0, ++s.h;
    return s;
  };
  auto step_m_block = [&](StepPos s) -> int64_t {
    int i = s.i + rot;
    if (i >= n_m) i -= n_m;
    return m_first + i;
  };
  const int64_t row0 = ws_row0(p, b, seq);
  Tensor cQ = partition_s(gmem_thr, make_identity_tensor(Shape<Int<kM>, Int<kD>>{}));

  // Element offsets of a step's first query row in Q, dO, LSE and the [Hq, rows] workspaces
  // (D, and dQ times kD); only carried from step to step with FA_SM80_BWD_INCR_ADDR.
  struct StepAddr {
    int64_t q, dO, lse, ws;
  };
  auto step_addr = [&](StepPos s) {
    const int64_t m0 = step_m_block(s) * kM;
    return StepAddr{p.q_str.offset(b, seq.q_start + m0, s.h),
                    p.do_str.offset(b, seq.q_start + m0, s.h),
                    p.lse_offset(b, s.h, seq.q_start + m0), int64_t(s.h) * p.total_q + row0 + m0};
  };
  // The offsets of step n from those of step s (the step before it): the same head and the next
  // query block move every offset by kM rows; anything else (next head, rotated wrap) recomputes.
  auto next_addr = [&](StepPos s, StepPos n, StepAddr a) {
    if (n.h == s.h && step_m_block(n) == step_m_block(s) + 1) {
      a.q += kM * p.q_str.row;
      a.dO += kM * p.do_str.row;
      a.lse += kM;
      a.ws += kM;
      return a;
    }
    return step_addr(n);
  };

  // FA_SM80_BWD_CHEAP_STEP_DIMS: a step's element offsets as the CTA's part plus its row and head
  // times their strides; rows and heads are below 2^31, so each product is 32 x 64 bits (two
  // instructions) instead of 64 x 64 with sign extensions. The CTA's parts are computed once,
  // before the loop, through an opaque copy: otherwise they are rebuilt in every step (~20
  // uniform instructions) rather than kept.
  auto mul_u32 = [](int64_t v, int64_t stride) { return int64_t(uint32_t(v)) * stride; };
  int64_t q_cta = p.q_str.offset(b, seq.q_start, 0), do_cta = p.do_str.offset(b, seq.q_start, 0),
          lse_cta = p.lse_offset(b, 0, seq.q_start);
  if constexpr (kCheapStep) asm volatile("" : "+l"(q_cta), "+l"(do_cta), "+l"(lse_cta));
  auto q_offset = [&](const core::Strides& str, int64_t cta, int64_t m0, int h) {
    if constexpr (kCheapStep)
      return cta + mul_u32(m0, str.row) + mul_u32(h, str.head);
    else
      return str.offset(b, seq.q_start + m0, h);
  };
  auto lse_offset = [&](int64_t m0, int h) {
    if constexpr (kCheapStep)
      return lse_cta + m0 + mul_u32(h, p.lse_head_stride);
    else
      return p.lse_offset(b, h, seq.q_start + m0);
  };
  auto ws_offset = [&](int64_t m0, int h) {  // row of [Hq, total_q] workspaces
    if constexpr (kCheapStep)
      return mul_u32(h, p.total_q) + row0 + m0;
    else
      return int64_t(h) * p.total_q + row0 + m0;
  };

  auto load_q_do = [&](StepPos pos, int stage, StepAddr a) {
    const int h = pos.h;
    const int64_t m0 = step_m_block(pos) * kM;
    const Element* q_ptr = static_cast<const Element*>(p.q) +
                           (kIncrQ ? a.q : q_offset(p.q_str, q_cta, m0, h));
    const Element* do_ptr = static_cast<const Element*>(p.dout) +
                            (kIncrQ ? a.dO : q_offset(p.do_str, do_cta, m0, h));
    Tensor gQ = make_tensor(make_gmem_ptr(q_ptr), make_shape(Int<kM>{}, Int<kD>{}),
                            make_stride(p.q_str.row, _1{}));
    Tensor gdO = make_tensor(make_gmem_ptr(do_ptr), make_shape(Int<kM>{}, Int<kD>{}),
                             make_stride(p.do_str.row, _1{}));
    Tensor sQ = make_tensor(make_smem_ptr(smem_q + stage * T::kSmemQ), typename T::SmemLayoutQ{});
    Tensor sdO = make_tensor(make_smem_ptr(smem_do + stage * T::kSmemQ), typename T::SmemLayoutQ{});
    if constexpr (kExpBeforeDP) {
      // The thread's copy offsets from an opaque tid, rebuilt per step instead of kept live from
      // the K/V load to the epilogue (d 128 spilled them otherwise).
      int t = tid;
      asm volatile("" : "+r"(t));
      if constexpr (kCheapAddr) t &= T::kNThreads - 1;
      auto g_thr = gmem_load.get_thread_slice(t);
      if (kFastTiles && m0 + kM <= seq.q_len) {
        if constexpr (kCheapAddr) {
          using L = QLoadByHand<T>;
          const L l(t);
          auto load = [&](const Element* g, int64_t row_stride, Element* smem) {
            const Element* g0 = g + l.row0 * row_stride + l.col0;
            const uint32_t s0 = uint32_t(__cvta_generic_to_shared(smem + l.smem0));
            CUTE_UNROLL
            for (int m = 0; m < L::kPassesM; ++m) {
              CUTE_UNROLL
              for (int k = 0; k < L::kPassesK; ++k)
                cp_async_16(s0 + uint32_t(sizeof(Element)) * (m * L::kSmemStepM + k * L::kSmemStepK),
                            g0 + m * L::kRowsPerPass * row_stride + k * L::kSw);
            }
          };
          load(q_ptr, p.q_str.row, smem_q + stage * T::kSmemQ);
          load(do_ptr, p.do_str.row, smem_do + stage * T::kSmemQ);
        } else {
          sm80::copy_vectors(gmem_load, partition_s(g_thr, gQ), partition_d(g_thr, sQ));
          sm80::copy_vectors(gmem_load, partition_s(g_thr, gdO), partition_d(g_thr, sdO));
        }
      } else {
        Tensor c_q = partition_s(g_thr, make_identity_tensor(Shape<Int<kM>, Int<kD>>{}));
        load_rows(gmem_load, partition_s(g_thr, gQ), partition_d(g_thr, sQ), c_q, seq.q_len - m0);
        load_rows(gmem_load, partition_s(g_thr, gdO), partition_d(g_thr, sdO), c_q, seq.q_len - m0);
      }
    } else if (kFastTiles && m0 + kM <= seq.q_len) {
      sm80::copy_vectors(gmem_load, partition_s(gmem_thr, gQ), partition_d(gmem_thr, sQ));
      sm80::copy_vectors(gmem_load, partition_s(gmem_thr, gdO), partition_d(gmem_thr, sdO));
    } else {
      load_rows(gmem_load, partition_s(gmem_thr, gQ), partition_d(gmem_thr, sQ), cQ, seq.q_len - m0);
      load_rows(gmem_load, partition_s(gmem_thr, gdO), partition_d(gmem_thr, sdO), cQ, seq.q_len - m0);
    }
    if constexpr (T::kLseSmem) {
      // Threads 0..kM-1 fetch LSE rows, kM..2kM-1 D rows; rows past the end are never read (the
      // softmax substitutes LSE = +inf there), so they are left as they are.
      static_assert(2 * kM <= T::kNThreads, "one thread per LSE / D row");
      const int row = tid % kM;
      if (tid < 2 * kM && row < seq.q_len - m0) {
        const float* src =
            tid < kM ? (kIncrLse ? p.lse + a.lse + row
                                 : p.lse + p.lse_offset(b, h, seq.q_start + m0 + row))
                     : (kIncrWs ? ws.dsum + a.ws + row
                                : ws.dsum + int64_t(h) * p.total_q + row0 + m0 + row);
        cp_async_4(smem_stats + stage * 2 * kM + tid, src);
      }
    }
  };
  StepAddr addr{};  // this step's (kIncrAddr)
  if constexpr (kIncrAddr) addr = step_addr(StepPos{hk * group, 0});
  if (n_steps > 0) load_q_do(StepPos{hk * group, 0}, 0, addr);
  cp_async_fence();

  // ---- MMA partitions
  typename T::TiledMmaSdP mma_sdp;
  typename T::TiledMmadKV mma_dkv;
  typename T::TiledMmadQ mma_dq;
  auto thr_sdp = mma_sdp.get_thread_slice(tid);
  auto thr_dkv = mma_dkv.get_thread_slice(tid);
  auto thr_dq = mma_dq.get_thread_slice(tid);

  Tensor acc_dk = sm80::grid_fragment_c(mma_dkv, Shape<Int<kN>, Int<kD>>{});
  Tensor acc_dv = sm80::grid_fragment_c(mma_dkv, Shape<Int<kN>, Int<kD>>{});
  clear(acc_dk);
  clear(acc_dv);

  // Register operand fragments (shapes only; ldmatrix fills them one k-slice ahead).
  Tensor rQ = sm80::grid_fragment_a<Element>(mma_sdp, Shape<Int<kM>, Int<kD>>{});
  Tensor rdO = sm80::grid_fragment_a<Element>(mma_sdp, Shape<Int<kM>, Int<kD>>{});
  Tensor rK = sm80::grid_fragment_b<Element>(mma_sdp, Shape<Int<kNc>, Int<kD>>{});
  Tensor rV = sm80::grid_fragment_b<Element>(mma_sdp, Shape<Int<kNc>, Int<kD>>{});
  Tensor rPt = sm80::grid_fragment_a<Element>(mma_dkv, Shape<Int<kN>, Int<kM>>{});
  Tensor rdSt = sm80::grid_fragment_a<Element>(mma_dkv, Shape<Int<kN>, Int<kM>>{});
  Tensor rdOt = sm80::grid_fragment_b<Element>(mma_dkv, Shape<Int<kD>, Int<kM>>{});
  Tensor rQt = sm80::grid_fragment_b<Element>(mma_dkv, Shape<Int<kD>, Int<kM>>{});
  Tensor rdS = sm80::grid_fragment_a<Element>(mma_dq, Shape<Int<kM>, Int<kN>>{});
  Tensor rKt = sm80::grid_fragment_b<Element>(mma_dq, Shape<Int<kDc>, Int<kN>>{});

  // smem -> register copies
  auto s2r_sdp_a = sm80::grid_tiled_copy_a(typename T::SmemLoad{}, mma_sdp);
  auto s2r_sdp_b = sm80::grid_tiled_copy_b(typename T::SmemLoad{}, mma_sdp);
  auto s2r_dkv_a = sm80::grid_tiled_copy_a(typename T::SmemLoadT{}, mma_dkv);
  auto s2r_dkv_b = sm80::grid_tiled_copy_b(typename T::SmemLoadT{}, mma_dkv);
  auto s2r_dq_a = sm80::grid_tiled_copy_a(typename T::SmemLoad{}, mma_dq);
  auto s2r_dq_b = sm80::grid_tiled_copy_b(typename T::SmemLoadT{}, mma_dq);

  // tid, or (FA_SM80_BWD_OPAQUE_TID) a fresh opaque copy of it per call.
  auto thread_id = [&] {
    int t = tid;
    if constexpr (kOpaqueTid) asm volatile("" : "+r"(t));
    if constexpr (kOpaqueTid && kCheapAddr) t &= T::kNThreads - 1;
    return t;
  };
  // This thread's slices of the A and B smem -> register copies of one product, taken in the step
  // where they are used; FA_SM80_BWD_CHEAP_ADDR: both from one opaque tid, so that the lane bits
  // they share are computed once (~10 instructions per step at d 128).
  auto thr_slices = [&](auto const& copy_a, auto const& copy_b) {
    const int ta = thread_id();
    const int tb = kCheapAddr ? ta : thread_id();
    return cute::make_tuple(copy_a.get_thread_slice(ta), copy_b.get_thread_slice(tb));
  };

  // register -> smem stores of P and dS
  auto r2s_pds = sm80::grid_tiled_copy_c(typename T::SmemStore{}, mma_sdp);
  auto r2s_pds_thr = r2s_pds.get_thread_slice(tid);

  // (row, col) coordinates of this thread's S/dP accumulator entries and of its dQ entries;
  // s_coords() / dq_coords() rebuild them from an opaque tid (FA_SM80_BWD_OPAQUE_TID), each
  // call a fresh value the compiler cannot share with another use.
  // FA_SM80_BWD_CHEAP_ADDR: thread 0's coordinates (constants) plus the thread's first entry's.
  auto s_coords = [&] {
    if constexpr (kCheapTid)
      return coords_from_base(rowcol_coords<kM, kNc>(mma_sdp.get_thread_slice(0)),
                              MmaCBase<T::kWarpsMSdP>(thread_id()));
    else
      return rowcol_coords<kM, kNc>(mma_sdp.get_thread_slice(thread_id()));
  };
  auto dq_coords = [&] {
    if constexpr (kCheapTid)
      return coords_from_base(
          partition_c(mma_dq.get_thread_slice(0), make_identity_tensor(Shape<Int<kM>, Int<kDc>>{})),
          MmaCBase<T::kWarpsMdQ>(thread_id()));
    else
      return partition_c(mma_dq.get_thread_slice(thread_id()),
                         make_identity_tensor(Shape<Int<kM>, Int<kDc>>{}));
  };
  Tensor cS = s_coords();  // shape only
  constexpr int kRows = decltype(size<0>(cS))::value;  // query rows this thread touches in S
  constexpr int kCols = decltype(size<1>(cS))::value;

  const float scale_log2 = p.scale * core::kLog2e;
  const float cap_inv_scale = kSoftcap ? p.scale / p.softcap : 0.f;  // qk -> tanh argument

  // The query rows whose blocks need no mask for this key block (FA_SM80_BWD_CHEAP_ADDR): a block
  // [m0, m0 + q_rows) is unmasked (Mask::block_unmasked, given n0 + kN <= k_len) iff m0 >= lo and
  // m0 + q_rows - 1 <= hi, two compares per step instead of its 64-bit arithmetic.
  struct {
    int64_t lo, hi;
  } unmasked_rows{};
  if constexpr (kMasked && kCheapAddr) {
    const int64_t shift = mask.k_len - mask.q_len;  // diag(i) = i + shift
    unmasked_rows.lo = mask.right >= 0 ? n0 + kN - 1 - shift - mask.right : INT64_MIN;
    unmasked_rows.hi = mask.left >= 0 ? n0 + mask.left - shift : INT64_MAX;
    asm volatile("" : "+l"(unmasked_rows.lo), "+l"(unmasked_rows.hi));  // kept, not rebuilt
  }

  StepPos pos{hk * group, 0};  // this step's (kStepCounters)
  for (int step = 0; step < n_steps; ++step) {
    const int stage = kStages == 2 ? (step & 1) : 0;
    if constexpr (!kStepCounters) pos = pos_of_step(step);
    const StepPos pos_next = kStepCounters ? next_pos(pos) : pos_of_step(step + 1);
    StepAddr addr_next{};
    if constexpr (kIncrAddr) addr_next = next_addr(pos, pos_next, addr);
    if (kStages == 2 && step + 1 < n_steps) load_q_do(pos_next, stage ^ 1, addr_next);
    cp_async_fence();
    // All groups but the newest (the prefetch of step + 1) are complete: K/V and this step's Q/dO.
    if constexpr (kStages == 2) cp_async_wait<1>();
    else cp_async_wait<0>();
    __syncthreads();

    const int h = pos.h;
    const int64_t m_block = step_m_block(pos);
    const int64_t m0 = m_block * kM;
    const int q_rows = int(min(int64_t(kM), seq.q_len - m0));
    // This query block's dq_sem entry (its semaphore or first-adder claim).
    auto sem_of_step = [&] { return dq_sem_at(ws, p.heads_q, b, h, m_block); };
    // ws.store_first: claim the block now; the CAS's answer is needed only at the barrier before
    // dQ, so its L2 round trip overlaps S and dP. 0: ours to store; 2: stored, add; 1: another
    // key block is storing it (waited for below).
    int claim = 2;
    if (claim_first && tid == 0) claim = atomicCAS(sem_of_step(), 0, 1);

    // LSE (log2 domain; rows past the end or fully masked map to +inf so P = 0) and D per row,
    // from shared memory (kLseSmem) or global memory.
    const float* lse_ptr = T::kLseSmem ? smem_stats + stage * 2 * kM
                           : kIncrLse  ? p.lse + addr.lse
                                       : p.lse + lse_offset(m0, h);
    const float* dsum_ptr = T::kLseSmem ? smem_stats + stage * 2 * kM + kM
                            : kIncrWs   ? ws.dsum + addr.ws
                                        : ws.dsum + ws_offset(m0, h);

    Tensor sQ = make_tensor(make_smem_ptr(smem_q + stage * T::kSmemQ), typename T::SmemLayoutQ{});
    Tensor sdO = make_tensor(make_smem_ptr(smem_do + stage * T::kSmemQ), typename T::SmemLayoutQ{});
    Tensor sQt = make_tensor(make_smem_ptr(smem_q + stage * T::kSmemQ), typename T::SmemLayoutQt{});
    Tensor sdOt = make_tensor(make_smem_ptr(smem_do + stage * T::kSmemQ), typename T::SmemLayoutQt{});

    // S = Q K^T, dP = dO V^T, then P and dS, one chunk of kNc key columns at a time.
    auto sdp_thr = thr_slices(s2r_sdp_a, s2r_sdp_b);
    auto s2r_sdp_a_thr = get<0>(sdp_thr);
    auto s2r_sdp_b_thr = get<1>(sdp_thr);
    Tensor tSsQ = partition_s(s2r_sdp_a_thr, sQ);
    Tensor tSsdO = partition_s(s2r_sdp_a_thr, sdO);
    // Per-element masking only where the tile is cut by the mask or the key range ends.
    bool need_mask = n0 + kN > seq.k_len;
    if constexpr (kMasked && kCheapAddr)
      need_mask = need_mask || m0 < unmasked_rows.lo || m0 + q_rows - 1 > unmasked_rows.hi;
    else if constexpr (kMasked)
      need_mask = need_mask || !mask.block_unmasked(m0, m0 + q_rows, n0, n0 + kN);
    // Interior tile: no mask and all kM rows (see FA_SM80_BWD_FAST_TILES); uniform across the CTA.
    const bool fast_tile = kFastTiles && !need_mask && q_rows == kM;
    // This thread's rows' LSE and D, loaded once for both chunks (ptxas hoisted them anyway; doing
    // it here keeps them out of the two softmax variants below).
    float row_lse_log2[kRows], row_dsum[kRows];
    Tensor cSr = s_coords();  // = cS when !kOpaqueTid (the same value, CSE'd)
    if (fast_tile && kCheapTid) {
      // The thread's first row as one pointer offset, the others as immediates.
      const MmaCBase<T::kWarpsMSdP> base(thread_id());
      Tensor c0 = rowcol_coords<kM, kNc>(mma_sdp.get_thread_slice(0));  // constants
      const float* lse_t = lse_ptr + base.row;
      const float* dsum_t = dsum_ptr + base.row;
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const int dr = get<0>(c0(r, 0));
        row_lse_log2[r] = core::lse_for_backward(lse_t[dr]) * core::kLog2e;
        row_dsum[r] = dsum_t[dr];
      }
    } else if (fast_tile) {
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const int row = get<0>(cSr(r, 0));
        row_lse_log2[r] = core::lse_for_backward(lse_ptr[row]) * core::kLog2e;
        row_dsum[r] = dsum_ptr[row];
      }
    } else {
      CUTE_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const int row = get<0>(cSr(r, 0));
        const bool in = row < q_rows;
        row_lse_log2[r] = in ? core::lse_for_backward(lse_ptr[row]) * core::kLog2e : INFINITY;
        row_dsum[r] = in ? dsum_ptr[row] : 0.f;
      }
    }
#pragma unroll 1
    for (int chunk = 0; chunk < T::kSdPChunks; ++chunk) {
      Tensor acc_s = sm80::grid_fragment_c(mma_sdp, Shape<Int<kM>, Int<kNc>>{});
      Tensor acc_dp = sm80::grid_fragment_c(mma_sdp, Shape<Int<kM>, Int<kNc>>{});
      clear(acc_s);
      clear(acc_dp);
      Tensor sKc = local_tile(sK, Shape<Int<kNc>, Int<kD>>{}, make_coord(chunk, 0));
      Tensor sVc = local_tile(sV, Shape<Int<kNc>, Int<kD>>{}, make_coord(chunk, 0));
      gemm_smem(mma_sdp, acc_s, rQ, rK, tSsQ, partition_s(s2r_sdp_b_thr, sKc), s2r_sdp_a, s2r_sdp_b,
                s2r_sdp_a_thr, s2r_sdp_b_thr);
      if constexpr (!kExpBeforeDP)
        gemm_smem(mma_sdp, acc_dp, rdO, rV, tSsdO, partition_s(s2r_sdp_b_thr, sVc), s2r_sdp_a,
                  s2r_sdp_b, s2r_sdp_a_thr, s2r_sdp_b_thr);
      auto gemm_dp = [&] {  // kExpBeforeDP: called between P and dS
        gemm_smem(mma_sdp, acc_dp, rdO, rV, tSsdO, partition_s(s2r_sdp_b_thr, sVc), s2r_sdp_a,
                  s2r_sdp_b, s2r_sdp_a_thr, s2r_sdp_b_thr);
      };

      // P and dS in place (fp32)
      Tensor sc = make_tensor(acc_s.data(), rowcol(acc_s.layout()));
      Tensor dp = make_tensor(acc_dp.data(), rowcol(acc_dp.layout()));
      // Two copies of the same arithmetic: the interior one has no per-element mask test and
      // does not build the tile's mask bounds (~35 uniform instructions per chunk).
      auto probs_and_grads = [&](auto allowed) {
        CUTE_UNROLL
        for (int r = 0; r < kRows; ++r) {
          CUTE_UNROLL
          for (int c = 0; c < kCols; ++c) {
            float prob, grad;
            if constexpr (kSoftcap) {
              const float t = tanhf(sc(r, c) * cap_inv_scale);
              prob = exp2f(p.softcap * t * core::kLog2e - row_lse_log2[r]);
              grad = 1.f - t * t;
            } else {
              prob = exp2f(fmaf(sc(r, c), scale_log2, -row_lse_log2[r]));
              grad = 1.f;
            }
            if (!allowed(r, c)) prob = 0.f;
            sc(r, c) = prob;
            dp(r, c) = prob * (dp(r, c) - row_dsum[r]) * grad;
          }
        }
      };
      if (kFastSoftmax && fast_tile) {
        if constexpr (kExpBeforeDP) {
          // P, then dP's products, then dS, in one basic block, so the scheduler can put the
          // exp2 (MUFU) between dP's ldmatrix and MMAs instead of the warp issuing them all after
          // its last MMA. Interior tiles only: with the mask's coordinates live too, d 128
          // spilled 44 B (the masked tiles, a few per CTA, keep the other order).
          CUTE_UNROLL
          for (int r = 0; r < kRows; ++r) {
            CUTE_UNROLL
            for (int c = 0; c < kCols; ++c)
              sc(r, c) = exp2f(fmaf(sc(r, c), scale_log2, -row_lse_log2[r]));
          }
          gemm_dp();
          CUTE_UNROLL
          for (int r = 0; r < kRows; ++r) {
            CUTE_UNROLL
            for (int c = 0; c < kCols; ++c) dp(r, c) = sc(r, c) * (dp(r, c) - row_dsum[r]);
          }
        } else {
          probs_and_grads([](int, int) { return true; });
        }
      } else {
        if constexpr (kExpBeforeDP) gemm_dp();
        const TileMask tile_mask(mask, m0, n0 + chunk * kNc);
        Tensor cSm = s_coords();
        probs_and_grads([&](int r, int c) -> bool {
          const int row = get<0>(cSm(r, c)), col = get<1>(cSm(r, c));
          if constexpr (kOpaqueTid) return !need_mask | tile_mask.allowed_flat(row, col);
          else return !need_mask || tile_mask.allowed(row, col);
        });
      }
      Tensor rP = convert_to<Element>(acc_s);
      Tensor rdSc = convert_to<Element>(acc_dp);
      Tensor sPc = local_tile(sP, Shape<Int<kM>, Int<kNc>>{}, make_coord(0, chunk));
      Tensor sdSc = local_tile(sdS, Shape<Int<kM>, Int<kNc>>{}, make_coord(0, chunk));
      if constexpr (kExpBeforeDP && kCheapTid) {
        // The partition of r2s_pds by hand (see pds_store_offset): two base offsets per thread.
        static_assert(kNc % 64 == 0, "chunks of whole 64-column atoms");
        static_assert(decltype(size<0, 0>(acc_s))::value == 2, "column pairs in mode (0, 0)");
        const MmaCBase<T::kWarpsMSdP> base(thread_id());
        const int base0 = pds_store_base(base.row, base.col);
        Tensor c0 = partition_c(mma_sdp.get_thread_slice(0),
                                make_identity_tensor(Shape<Int<kM>, Int<kNc>>{}));  // constants
        auto store = [&](auto const& frag, Element* smem_chunk) {
          Tensor w = recast<uint32_t>(make_tensor(frag.data(), make_layout(size(frag))));
          CUTE_UNROLL
          for (int i = 0; i < size(frag); i += 2) {
            const int off = pds_store_offset<kM>(base0, get<0>(c0(i)), get<1>(c0(i)));
            *reinterpret_cast<uint32_t*>(smem_chunk + off) = w(i / 2);
          }
        };
        store(rP, smem_p + chunk * kM * kNc);
        store(rdSc, smem_ds + chunk * kM * kNc);
      } else if constexpr (kExpBeforeDP) {
        // The store addresses from an opaque tid here, not kept from the kernel's start (d 128
        // spilled one of them otherwise).
        auto r2s_thr = r2s_pds.get_thread_slice(thread_id());
        sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_sdp, r2s_pds, r2s_thr, rP), partition_d(r2s_thr, sPc));
        sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_sdp, r2s_pds, r2s_thr, rdSc), partition_d(r2s_thr, sdSc));
      } else {
        sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_sdp, r2s_pds, r2s_pds_thr, rP), partition_d(r2s_pds_thr, sPc));
        sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_sdp, r2s_pds, r2s_pds_thr, rdSc), partition_d(r2s_pds_thr, sdSc));
      }
    }
    if (claim_first && tid == 0) {
      // The claimer sets 2 once its stores are visible; it waits for nothing in between (its
      // release follows its own step), so this wait ends.
      if (claim == 1)
        while (load_acquire(sem_of_step()) != 2) __nanosleep(32);
      *smem_claim = claim == 0;
    }
    __syncthreads();

    // dV += P^T dO, dQ_i += dS K_j (atomics), dK += dS^T Q; see FA_SM80_BWD_DQ_BEFORE_DK.
    auto dkv_thr = thr_slices(s2r_dkv_a, s2r_dkv_b);
    auto s2r_dkv_a_thr = get<0>(dkv_thr);
    auto s2r_dkv_b_thr = get<1>(dkv_thr);
    Tensor tdVsPt = partition_s(s2r_dkv_a_thr, sPt);
    gemm_smem(mma_dkv, acc_dv, rPt, rdOt, tdVsPt, partition_s(s2r_dkv_b_thr, sdOt), s2r_dkv_a,
              s2r_dkv_b, s2r_dkv_a_thr, s2r_dkv_b_thr);
    auto gemm_dk = [&](auto&& after_slice) {
      auto ab_thr = thr_slices(s2r_dkv_a, s2r_dkv_b);
      auto a_thr = get<0>(ab_thr);
      auto b_thr = get<1>(ab_thr);
      gemm_smem(mma_dkv, acc_dk, rdSt, rQt, partition_s(a_thr, sdSt), partition_s(b_thr, sQt),
                s2r_dkv_a, s2r_dkv_b, a_thr, b_thr, after_slice);
    };
    if constexpr (!kDQBeforeDK) gemm_dk([](int) {});

    // dQ_i += dS K_j into the fp32 workspace
    {
      // [Hq, rows, D] with a compile-time row stride: every red.global of a thread is one base
      // register plus an immediate offset (a runtime stride cost ~64 registers of addresses).
      // Row-major (the sm_80 cubin, or DQ_PERM=0) only: the banded order's addresses are built
      // per thread below (tdQg).
      float* dq_ptr = kDqPerm ? ws.dq_accum : dq_acc_at<kD>(ws, h, row0 + m0, 0);
      Tensor gdQ = make_tensor(make_gmem_ptr(dq_ptr), Shape<Int<kM>, Int<kD>>{},
                               Stride<Int<kD>, _1>{});
      int* sem = nullptr;
      if (p.deterministic) {
        // Wait until the key blocks before this one (for this query block) have added theirs.
        sem = sem_of_step();
        int rank = n_block;
        if constexpr (kMasked) rank -= int(first_key_block(mask, m0, m0 + q_rows, kN));
        if (tid == 0) {
          while (load_acquire(sem) != rank) __nanosleep(32);
          *smem_claim = store_first && rank == 0;  // turn 0 stores
        }
        __syncthreads();
      }
#pragma unroll 1
      for (int chunk = 0; chunk < T::kDQChunks; ++chunk) {
        Tensor acc_dq = sm80::grid_fragment_c(mma_dq, Shape<Int<kM>, Int<kDc>>{});
        clear(acc_dq);
        Tensor sKtc = local_tile(sKt, Shape<Int<kDc>, Int<kN>>{}, make_coord(chunk, 0));
        auto dq_thr = thr_slices(s2r_dq_a, s2r_dq_b);
        auto s2r_dq_a_thr = get<0>(dq_thr);
        auto s2r_dq_b_thr = get<1>(dq_thr);
        Tensor tdQsdS = partition_s(s2r_dq_a_thr, sdS);
        gemm_smem(mma_dq, acc_dq, rdS, rKt, tdQsdS, partition_s(s2r_dq_b_thr, sKtc), s2r_dq_a,
                  s2r_dq_b, s2r_dq_a_thr, s2r_dq_b_thr);
        // Store instead of add: this step is the block's first adder. Read from shared memory
        // here, not kept in a register across the products (d 256 spilled 4 B with that).
        const bool first = store_first && *smem_claim != 0;
        // The thread's red addresses: DqPermDst below with kDqPerm, else a partition of gdQ.
        auto tdQg = [&] {
          if constexpr (kDqPerm) {
            // The thread's first entry is (base.row, chunk·kDc + base.col); every other one is a
            // whole number of 8-row bands and 8-column blocks away, i.e. at a compile-time
            // distance in either row alignment of the tile (varlen rows start anywhere).
            const MmaCBase<T::kWarpsMdQ> base(thread_id());
            // The head's offset is formed here from an opaque copy of h: hoisted to the top of
            // the step, the 64-bit product was kept live across it and spilled 8 B at d 256 with
            // FA_SM80_BWD_LSE_SMEM.
            int h_now = h;
            asm volatile("" : "+r"(h_now));
            float* first = dq_acc_at<kD>(ws, h_now, row0 + m0 + base.row, chunk * kDc + base.col);
            return make_tensor(make_gmem_ptr(first), typename DqPermDst<T>::Layout{});
          } else {
            return partition_c(thr_dq, local_tile(gdQ, Shape<Int<kM>, Int<kDc>>{}, make_coord(0, chunk)));
          }
        }();
        static_assert(decltype(size(tdQg))::value == decltype(size(acc_dq))::value);
        // Row-major with kExpBeforeDP: the thread's dQ offsets from an opaque tid, rebuilt here
        // rather than kept live from the kernel's start (d 256 spilled 8 B of edge-tile red
        // addresses otherwise).
        if constexpr (!kDqPerm && kExpBeforeDP && kCheapTid) {
          // Thread 0's partition moved by the thread's first entry (gdQ's strides are constants).
          const MmaCBase<T::kWarpsMdQ> base(thread_id());
          Tensor g0 = partition_c(mma_dq.get_thread_slice(0),
                                  local_tile(gdQ, Shape<Int<kM>, Int<kDc>>{}, make_coord(0, chunk)));
          tdQg = make_tensor(g0.data() + (base.row * kD + base.col), g0.layout());
        } else if constexpr (!kDqPerm && kExpBeforeDP) {
          tdQg = partition_c(mma_dq.get_thread_slice(thread_id()),
                             local_tile(gdQ, Shape<Int<kM>, Int<kDc>>{}, make_coord(0, chunk)));
        }
        // The adds (or the first adder's stores) of the chunk; `first` is uniform over the CTA.
        auto put = [&](auto store) {
          constexpr bool kStore = decltype(store)::value;
          if constexpr (kRedV2) {
            // Accumulator values 2i and 2i + 1 are columns c, c + 1 (c even) of one row.
            static_assert(decltype(size<0, 0>(acc_dq))::value == 2, "column pairs in mode (0, 0)");
            // The row guard of an asm red cannot be predicated: ptxas branches around each one.
            if (kFastTiles && q_rows == kM) {
              CUTE_UNROLL
              for (int i = 0; i < size(acc_dq); i += 2) red_or_store2<kStore>(&tdQg(i), acc_dq(i), acc_dq(i + 1));
            } else {
              Tensor cdQ = dq_coords();
              CUTE_UNROLL
              for (int i = 0; i < size(acc_dq); i += 2)
                if (get<0>(cdQ(i)) < q_rows) red_or_store2<kStore>(&tdQg(i), acc_dq(i), acc_dq(i + 1));
            }
          } else {
            Tensor cdQ = dq_coords();
            CUTE_UNROLL
            for (int i = 0; i < size(acc_dq); ++i)
              if (get<0>(cdQ(i)) < q_rows) red_or_store<kStore>(&tdQg(i), acc_dq(i));
          }
        };
        // kRedSpread: dK runs inside the last chunk, its k-th slice followed by the k-th share
        // of that chunk's reductions (the other chunks' go back to back: their registers are
        // needed by the next chunk). Uniform over the CTA, like `first`.
        const bool last = chunk + 1 == T::kDQChunks;
        const bool spread = kRedSpread && last && !first && !p.deterministic && q_rows == kM;
        if (first) put(cute::true_type{});
        else if (!spread) put(cute::false_type{});
        if constexpr (kRedSpread) {
          if (last) gemm_dk([&](int k) {
            constexpr int kPairs = decltype(size(acc_dq))::value / 2;
            constexpr int kSlices = decltype(size<2>(rdSt))::value;
            static_assert(kPairs % kSlices == 0, "whole reductions per dK slice");
            if (spread) {
              CUTE_UNROLL
              for (int j = 0; j < kPairs / kSlices; ++j) {
                const int i = 2 * (k * (kPairs / kSlices) + j);
                red_or_store2<false>(&tdQg(i), acc_dq(i), acc_dq(i + 1));
              }
            }
          });
        }
      }
      if (p.deterministic) {
        __threadfence();
        __syncthreads();
        if constexpr (T::kBigSmem || kExpBeforeDP) {
          // Rebuilt from an opaque m_block: kept from above, the pointer spilled 8 B (d 256).
          int64_t mb = m_block;
          asm volatile("" : "+l"(mb));
          sem = dq_sem_at(ws, p.heads_q, b, h, mb);
        }
        if (tid == 0) atomicAdd(sem, 1);
      }
    }
    if constexpr (kDQBeforeDK && !kRedSpread) gemm_dk([](int) {});
    __syncthreads();  // every thread is done with this stage's Q/dO and with sP/sdS
    // The first adder's stores (every thread's, ordered before thread 0 by the barrier; the fence
    // is cumulative) become visible GPU-wide before the claim says 2.
    if (claim_first && tid == 0 && *smem_claim != 0) {
      __threadfence();
      store_release(sem_of_step(), 2);
    }
    if (kStages == 1 && step + 1 < n_steps) load_q_do(pos_next, 0, addr_next);
    pos = pos_next;
    if constexpr (kIncrAddr) addr = addr_next;
  }

  // ---- epilogue: dK, dV -> smem (K/V's space) -> 16-byte predicated stores
  cp_async_wait<0>();  // no step ran: the K/V loads may still be in flight
  __syncthreads();
  {
    auto r2s_dkv = sm80::grid_tiled_copy_c(typename T::SmemStore{}, mma_dkv);
    auto r2s_dkv_thr = r2s_dkv.get_thread_slice(tid);
    CUTE_UNROLL
    for (int i = 0; i < size(acc_dk); ++i) acc_dk(i) *= p.scale;
    Tensor rdK = convert_to<Element>(acc_dk);
    Tensor rdV = convert_to<Element>(acc_dv);
    sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_dkv, r2s_dkv, r2s_dkv_thr, rdK), partition_d(r2s_dkv_thr, sK));
    sm80::copy_as<uint32_t>(sm80::grid_retile_c_store(mma_dkv, r2s_dkv, r2s_dkv_thr, rdV), partition_d(r2s_dkv_thr, sV));
  }
  __syncthreads();
  {
    typename T::GmemStore gmem_store;
    auto st_thr = gmem_store.get_thread_slice(tid);
    Element* dk_ptr = static_cast<Element*>(p.dk) + p.dk_str.offset(b, seq.k_start + n0, hk);
    Element* dv_ptr = static_cast<Element*>(p.dv) + p.dv_str.offset(b, seq.k_start + n0, hk);
    Tensor gdK = make_tensor(make_gmem_ptr(dk_ptr), make_shape(Int<kN>{}, Int<kD>{}),
                             make_stride(p.dk_str.row, _1{}));
    Tensor gdV = make_tensor(make_gmem_ptr(dv_ptr), make_shape(Int<kN>{}, Int<kD>{}),
                             make_stride(p.dv_str.row, _1{}));
    Tensor cKV = partition_s(st_thr, make_identity_tensor(Shape<Int<kN>, Int<kD>>{}));
    store_rows(partition_s(st_thr, sK), partition_d(st_thr, gdK), cKV, k_rows);
    store_rows(partition_s(st_thr, sV), partition_d(st_thr, gdV), cKV, k_rows);
  }
}

}  // namespace fa::cuda::sm80::bwd

namespace fa::cuda {

// FA2 backward launcher (family "bwd", sm80): pre-pass, main kernel, dQ conversion.
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm80_bwd(const core::AttnParams& p, cudaStream_t stream, void* ws_ptr) {
  using T = sm80::bwd::BwdTraits<Element, kHeadDim, kSoftcap>;
  const char* name = "sm80 FA2 backward";
  if (!p.lse) return core::invalid(std::string(name) + ": lse is required");
  if (!kMasked && (p.window_left >= 0 || p.window_right >= 0))
    return core::unsupported(std::string(name) + ": this instance has no mask support");
  if (!kSoftcap && p.softcap > 0.f)
    return core::unsupported(std::string(name) + ": this instance has no softcap support");
  // 16-byte vector and cp.async accesses need 8-element aligned rows.
  const void* ptrs[] = {p.q, p.k, p.v, p.o, p.dout, p.dq, p.dk, p.dv};
  for (const void* ptr : ptrs)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      return core::unsupported(std::string(name) + ": tensors must be 16-byte aligned");
  const core::Strides strs[] = {p.q_str, p.k_str, p.v_str, p.o_str, p.do_str, p.dq_str, p.dk_str, p.dv_str};
  for (const core::Strides& s : strs)
    if (s.batch % 8 || s.row % 8 || s.head % 8)
      return core::unsupported(std::string(name) +
                               ": batch/row/head strides must be multiples of 8 elements");
  if (p.batch > 65535 || p.heads_kv > 65535)
    return core::unsupported(std::string(name) + ": batch and KV heads must be <= 65535");

  // Which of the head dim's tiles this device runs: the same rule as bwd_main_kernel's guard
  // (sm_9x+ cubins hold only the big-smem tile's kernel where there is one).
  using TBig = sm80::bwd::BwdTraits<Element, kHeadDim, kSoftcap, true>;
  constexpr bool kHasBig = sm80::bwd::has_big_smem_tile<Element, kHeadDim, kSoftcap>();
  static_assert(!kHasBig || (TBig::kBlockN == T::kBlockN && TBig::kBlockM == T::kBlockM),
                "the two tiles share the launch shape and the workspace layout");
  const int cc_major = device_attr<cudaDevAttrComputeCapabilityMajor>(p.device_id);
  if (cc_major == 0)
    return core::unsupported(std::string(name) + ": could not query the device's compute capability");
  const bool use_big = kHasBig && cc_major >= 9;
  if (use_big &&
      device_attr<cudaDevAttrMaxSharedMemoryPerBlockOptin>(p.device_id) < TBig::kSmemBytes)
    return core::unsupported(std::string(name) + ": needs " + std::to_string(TBig::kSmemBytes) +
                             " B of shared memory per block on this arch (the sm80-size tile is "
                             "compiled for sm_8x only; see FA_SM80_BWD_BIG_SMEM_DIMS)");

  sm80::BwdWorkspace ws = sm80::bwd_workspace_layout(p, ws_ptr, nullptr);
  // Rotation reorders the dQ additions, so the deterministic mode (ordered adds) keeps the plain
  // order (rotated, each key block would wait on its predecessors at every step).
  ws.rotate_m = p.deterministic ? 0 : sm80::bwd::bwd_rotate_m();
  ws.store_first = cc_major >= 9 && sm80::bwd::bwd_dq_store() ? 1 : 0;  // FA_SM80_BWD_DQ_STORE_CODE
  ws.sem_block_m = T::kBlockM;
  // Programmatic dependent launches need sm_90 (griddepcontrol).
  const bool pdl = cc_major >= 9 && sm80::bwd::bwd_pdl();
  const bool packed = sm80::bwd::bwd_packed_prepost();
  const int64_t pair_threads =
      p.total_q * p.heads_q * (packed ? sm80::bwd::prepost_lanes<kHeadDim>() : 32);
  const int64_t pair_blocks = (pair_threads + 255) / 256;
  const int64_t sem_blocks = (ws.n_sem + 255) / 256;
  const int64_t pre_blocks = pair_blocks > sem_blocks ? pair_blocks : sem_blocks;
  if (pre_blocks > 0) {
    if (packed)
      sm80::bwd::bwd_prepass_kernel<Element, kHeadDim, true><<<unsigned(pre_blocks), 256, 0, stream>>>(p, ws);
    else
      sm80::bwd::bwd_prepass_kernel<Element, kHeadDim, false><<<unsigned(pre_blocks), 256, 0, stream>>>(p, ws);
  }

  // Both tiles of a head dim have the same kBlockN (grid) and kBlockM (workspace semaphores).
  auto launch_main = [&](auto traits) -> cudaError_t {
    using TT = decltype(traits);
    const int64_t n_blocks = (p.seqlen_k + TT::kBlockN - 1) / TT::kBlockN;
    if (n_blocks <= 0) return cudaSuccess;
    auto kernel = sm80::bwd::bwd_main_kernel<TT, kMasked, kSoftcap>;
    if (TT::kSmemBytes > 48 * 1024) {
      cudaError_t e = set_max_dynamic_smem(kernel, int(TT::kSmemBytes), p.device_id);
      if (e != cudaSuccess) return e;
    }
    dim3 grid(unsigned(n_blocks), unsigned(p.heads_kv), unsigned(p.batch));
    return launch_ex(LaunchConfig(grid, dim3(TT::kNThreads), size_t(TT::kSmemBytes), stream, pdl && pre_blocks > 0),
                     kernel, p, ws);
  };
  cudaError_t e = cudaSuccess;
  if constexpr (kHasBig)  // (never instantiates the big tile's kernel for other head dims)
    e = use_big ? launch_main(TBig{}) : launch_main(T{});
  else
    e = launch_main(T{});
  if (e != cudaSuccess) return cuda_call_failed(e, name);
  if (pair_blocks > 0) {
    // A programmatic dependent of the main kernel, which launch_main skips without keys.
    const LaunchConfig cvt(dim3(unsigned(pair_blocks)), dim3(256), 0, stream, pdl && p.seqlen_k > 0);
    e = packed ? launch_ex(cvt, sm80::bwd::bwd_convert_dq_kernel<Element, kHeadDim, true>, p, ws)
               : launch_ex(cvt, sm80::bwd::bwd_convert_dq_kernel<Element, kHeadDim, false>, p, ws);
    if (e != cudaSuccess) return cuda_call_failed(e, name);
  }
  return check_launch(name);
}

}  // namespace fa::cuda
