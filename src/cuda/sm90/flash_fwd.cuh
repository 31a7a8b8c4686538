// FlashAttention-3 forward for Hopper (sm90a): TMA + WGMMA + warp specialisation, persistent.
//
// A CTA computes kBlockM × kHeadDim output tiles of (batch, query head) pairs: with the persistent
// grid (one CTA per SM) it walks a static, causal-heavy-first list of tiles
// (sched::StaticLptScheduler); varlen keeps one tile per CTA. Roles:
//   WarpRole::Producer  (warpgroup 0, one elected thread): per tile, TMA-loads Q into a
//                       kQStages-slot ring (2 at d64-d128: the next tile's Q loads during this
//                       tile's mainloop), and K_j, V_j for every key block j (last block first) into
//                       a kStages ring (PipelineTma). Ring positions continue across tiles, so the
//                       next tile's Q and first K/V blocks load while the consumers finish this one.
//   WarpRole::Consumer  (warpgroups 1..2, or 1..3 for 192-row d64 tiles, 64 query rows each):
//                       S = Q·Kᵀ with both operands in shared memory (wgmma SS), masking and
//                       online softmax in registers,
//                       O += P·V with P from registers (wgmma RS, V read through an MN-major view),
//                       then the epilogue (O / l → bf16/fp16; each warpgroup stages its 64 rows in
//                       shared memory by stmatrix and one thread TMA-stores them; LSE stored
//                       directly).
// Synchronisation: mbarriers only between roles — each ring slot (Q's too) has a full (TMA
// transaction) and an empty (kConsumerThreads arrivals) barrier; Q's slot is released after the
// tile's last Q·Kᵀ. `setmaxnreg` hands the producer's registers to the consumers. Unmasked
// d128-d256 tiles run in clusters of two (FA_SM90_FWD_CLUSTER): the pair takes query blocks 2p,
// 2p + 1 of one head, each producer loads half of every K/V block into both CTAs (TMA multicast),
// and a K/V slot's empty barrier then counts one arrival per consumer warpgroup of both CTAs. Switches
// (fwd_feature bits; FA_SM90_FWD_ABLATE picks a bf16 d128 variant with one of them off):
//   kIntraWgOverlap: S_{j+1} = Q·K_{j+1}ᵀ is issued before O += P_j·V_j and the softmax of j+1
//                    runs while that PV wgmma is in flight (FA3 §3.2).
//   kPingPong:       the consumer warpgroups take turns issuing their GEMMs through named
//                    barriers (a round robin of three with 192-row d64 tiles), so one warpgroup's
//                    softmax overlaps the others' GEMMs (FA3 §3.1).
//   kPersistent:     the persistent grid above (off: one CTA per tile).
//   kTmaStore:       the TMA-store epilogue (off, or d192/d256 without room, or varlen, or an O
//                    layout TMA cannot address: predicated direct stores from registers, 16 bytes
//                    each after a transpose inside each quad where O is aligned for it,
//                    FA_SM90_FWD_O_STORE16).
//   kTmaLoad:        off: the whole producer warpgroup loads by cp.async (PipelineCpAsync).
//   kWarpSpecialised: off: no producer warpgroup and no setmaxnreg; consumer thread 0 issues the
//                    TMA loads between its GEMMs (load_one, issue points in consume_tile).
// GQA packing (runtime, fwd_pack_gqa.hpp decides): with a short query a tile's rows are
// (query position i, head-in-group g) pairs r = i·G + g of one KV head, loaded by a rank-5 Q map
// (d, G, Nq, Hk, B); masks use the query position m0 + (r >> log2 G), LSE and O (direct stores)
// go to query head hk·G + (r & (G-1)). The scheduler then walks (query block, KV head) tiles.
// Tails: TMA zero-fills rows beyond the tensor; rows of another varlen sequence that TMA does load
// are masked as keys (col >= k_len) and never stored as queries.
// FP8 (Element = e4m3, FwdKernel::kFp8; fa::cuda::fp8_attention): the same roles and
// synchronisation on quantised inputs (core/fp8.hpp). The producer loads Vᵀ boxes (d × kBlockN,
// keys contiguous) instead of V rows; both GEMMs are e4m3 wgmma (k32), P·V with P converted in
// place into its A fragment; the softmax folds in q_scale · k_scale(j) per key block, the epilogue
// v_scale, and O is written in OutElement (bf16 / fp16).
#pragma once

#include "cuda/sm90/fwd_tile_config.hpp"  // before CuTe: decides the extended shapes below

// CUTLASS's extended wgmma shapes (N = 24, 40, ..., 248) are two headers of 76k lines, parsed by
// both cudafe++ and cicc in every unit that includes them (~10 s of CPU per unit against a
// budget of 30 s; session 6: sm90_fwd_bf16_hd128 57 -> 24 s without them, same SASS). The default
// key blocks that are not base shapes (d192 112, d256 80) take our atoms (fwd_wgmma_ext.hpp)
// instead, so no default unit includes them. They are enabled only where
// FA_SM90_FWD_NEEDS_EXT_MMA (fwd_tile_config.hpp) says a tile still needs one
// (FA_SM90_FWD_OWN_EXT_MMA=0, or a key block switch set to a value without an atom of ours): for
// a generated instance file, which names its tile (FA_INSTANCE_HEAD_DIM, FA_INSTANCE_MASKED,
// scripts/gen_instances.py), in the device pass only: the host pass (cudafe++, host g++)
// instantiates FwdKernel for its layouts, TMA types and Params but never its MMAs (only the
// kernel body uses them), so there TiledMmaQK may be the narrower atom the base list gives. Any
// other includer gets them, in both passes, when any head dim's tile needs them. The atom of a
// base-shape tile is the same either way: the op selector takes the widest N dividing the tile's,
// which for a base-shape tile is that N itself.
#if !defined(CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED) &&                                            \
    (defined(FA_INSTANCE_HEAD_DIM)                                                                \
         ? (defined(__CUDA_ARCH__) &&                                                             \
            FA_SM90_FWD_NEEDS_EXT_MMA(FA_INSTANCE_HEAD_DIM, FA_INSTANCE_MASKED))                  \
         : FA_SM90_FWD_ANY_NEEDS_EXT_MMA)
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#endif

#include <cuda_runtime.h>

#include <cute/tensor.hpp>  // first: the atom headers below assume it
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "core/status.hpp"
#include "cuda/common/env.hpp"
#include "cuda/common/launch_ex.hpp"
#include "cuda/common/tma_memo.hpp"
#include "cuda/common/quad_store.cuh"
#include "cuda/common/sm90_pair_load.cuh"
#include "cuda/common/sm90_pipeline.hpp"
#include "cuda/common/sm90_stmatrix.cuh"
#include "cuda/common/timeline_dump.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/scheduler/tile_scheduler.hpp"
#include "cuda/sm90/fwd_pack_gqa.hpp"
#include "cuda/sm90/fwd_softmax.hpp"
#if FA_SM90_FWD_OWN_EXT_MMA
#include "cuda/sm90/fwd_wgmma_ext.hpp"
#endif

namespace fa::cuda::sm90 {

enum class WarpRole { Producer, Consumer };

// One wgmma batch: C (+)= A·B over the K mode, committed as one group. kWait >= 0 waits until at
// most kWait groups are pending; -1 leaves it in flight (the caller waits later).
template <bool kZeroInit, int kWait, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma_gemm(TiledMma& mma, TA const& a, TB const& b, TC& c) {
  using namespace cute;
  constexpr bool kRegA = !is_base_of<GMMA::DescriptorIterator, typename TiledMma::FrgTypeA>::value;
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
#pragma unroll
  for (int k = 0; k < size<2>(a); ++k) {
    cute::gemm(mma, a(_, _, k), b(_, _, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  if constexpr (kWait >= 0) warpgroup_wait<kWait>();
  warpgroup_fence_operand(c);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
}

// Feature switches of the forward kernel, one bit each: the default instances use kAll, and an
// ablation instance (FA_SM90_FWD_ABLATE, bf16 d128) clears exactly one bit to show what it buys.
namespace fwd_feature {
constexpr unsigned kIntraWgOverlap = 1u << 0;  // softmax of block j+1 under the PV wgmma of j
constexpr unsigned kPingPong = 1u << 1;        // consumer warpgroups take turns issuing GEMMs
constexpr unsigned kPersistent = 1u << 2;      // grid = #SMs, tiles from sched::StaticLptScheduler
constexpr unsigned kTmaStore = 1u << 3;        // O: registers → smem → TMA store (where it fits)
constexpr unsigned kTmaLoad = 1u << 4;         // Q/K/V by TMA (off: cp.async from the producer WG)
constexpr unsigned kWarpSpecialised = 1u << 5; // producer warpgroup (off: consumers load, no setmaxnreg)
constexpr unsigned kAll = kIntraWgOverlap | kPingPong | kPersistent | kTmaStore | kTmaLoad | kWarpSpecialised;
}  // namespace fwd_feature

struct NoTmaO {};  // the O tensor map of an instance without the TMA-store epilogue

// O staging of the TMA-store epilogue: 1 = stmatrix.x4 (16 columns × 16 rows per warp and
// instruction) at 32-bit shared addresses from SmemLayoutOHalf; 0 = one 32-bit store per column
// pair through CuTe's tensor, which compiled to generic 64-bit-addressed stores with the swizzle
// redone per store (32 stores per thread at d128; the epilogue was ~1000 instructions per warp,
// ~420 with stmatrix), in the gap between tiles that ping-pong does not hide.
// Layout check: scripts/check_sm90_fwd_layout.cu.
// Q descriptors from a warp-uniform warpgroup index (see consume_tile); 0 = from the thread index.
#ifndef FA_SM90_FWD_Q_DESC_UNIFORM
#define FA_SM90_FWD_Q_DESC_UNIFORM 1
#endif

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
static_assert(FA_SM90_FWD_O_STORE16 >= 0 && FA_SM90_FWD_O_STORE16 <= 2, "FA_SM90_FWD_O_STORE16: 0, 1 or 2");

// Head dims (head_dim_bit mask: d64 2, d96 4, d128 8, d192 16, d256 32) whose epilogue uses the
// tile coordinates and TileWork computed before the mainloop, kept live across it; the others
// re-derive them from the tile's round after the mainloop (at d192/d256 the O accumulator leaves
// no registers to keep them). Same values either way. Default 14 (d64-d128; d96 not timed).
// H200, session 6 round 2 (bf16, TFLOP/s at N 512/1k/8k, builds O_ROW_PTR=0 KEEP_TILE=0 → that
// round's defaults, mask split off; at d64/d128 only this switch differs between the two, their
// O stores use the TMA buffer): d64 non-causal 364 424 534 → 382 435 533, causal 190 271 441 →
// 195 280 434; d128 non-causal 483 583 617 → 495 593 683, causal 290 415 661 → 306 429 635.
// Same-code spread between calls up to ~5%; d128 N8k has a known slow mode.
#ifndef FA_SM90_FWD_KEEP_TILE
#define FA_SM90_FWD_KEEP_TILE 14
#endif

// Score masking without a left bound (apply_mask), per head dim (head_dim_bit mask: d64 2, d96 4,
// d128 8, d192 16, d256 32; 0 = none): a uniform branch to a loop that tests the right bound only
// (one compare + one select per score) instead of both bounds (two compares + a select). Same
// result; the loop is compiled twice. Default 10 (d64, d128).
// H200, session 6 round 2 (bf16, causal, TFLOP/s at N 512/1k/8k, that round's default build,
// mask split off → the FA_SM90_FWD_SHORT_N=1 build, which has this switch at every head dim):
// d128 306 429 635 → 316 440 650 (the one switch that differs at masked d128); d256 264 402 686
// → 259 400 680 (ditto at d256, not in the default); d64 195 280 434 → 195 287 454, measured together with
// FA_SM90_FWD_EPI_OVERLAP_MASKED=2 (not separated). Same-code spread between calls up to ~5%.
// Bit 1 (d32, no sm90 forward instance) is rejected so a leftover -DFA_SM90_FWD_MASK_SPLIT=1 of
// the earlier on/off form fails to compile instead of doing nothing.
#ifndef FA_SM90_FWD_MASK_SPLIT
#define FA_SM90_FWD_MASK_SPLIT 10
#endif
static_assert((FA_SM90_FWD_MASK_SPLIT & 1) == 0,
              "FA_SM90_FWD_MASK_SPLIT is a head-dim mask (d64 2, d96 4, d128 8, d192 16, d256 32)");

// Score masking by bit masks (apply_mask_bits), per head dim (head_dim_bit mask: d64 2, d96 4,
// d128 8, d192 16, d256 32; 0 = none): each row's allowed columns become the set bits of a
// 32-bit mask, tested bit by bit, which ptxas compiles to R2P (seven predicates per instruction)
// instead of one compare per score; both bounds cost the same. Where on, FA_SM90_FWD_MASK_SPLIT
// does not apply. Default 0 (off): it lost on the H200 (session 28, bf16 causal, TFLOP/s at N
// 512/1k/2k, two alternations each, compare form → bit masks): d64 218, 217 / 289, 293 / 346, 346
// → 209, 209 / 284, 288 / 339, 346; d128 and d256 within the ±3% spread. The d64 masked kernel's
// SASS has 424 fewer instructions (4856 → 4432, static count; ISETP 561 → 200, 16 R2P), yet it
// runs slower. A reading, not profiled: each R2P writes the whole predicate file, so the selects
// wait on it, where the compares were independent. With it on, the fp8 d256 masked kernels spill
// 12 bytes.
#ifndef FA_SM90_FWD_MASK_R2P
#define FA_SM90_FWD_MASK_R2P 0
#endif
static_assert((FA_SM90_FWD_MASK_R2P & 1) == 0,
              "FA_SM90_FWD_MASK_R2P is a head-dim mask (d64 2, d96 4, d128 8, d192 16, d256 32)");

// Where the intra-warpgroup-overlap mainloop multiplies O by the softmax's rescale factor.
// 0 (default): after the P·V wait, on the path from that wait to the next Q·Kᵀ issue (rescale,
// then P → bf16, then the ping-pong wait). 1: one iteration later, between issuing S_{j+1} = Q·K_{j+1}ᵀ
// and issuing O += P_j·V_j, i.e. while the Q·Kᵀ wgmma runs (as in the FA3 paper's code); the factor
// from block j's softmax waits in rescale_o until then, and the tile's last P·V is preceded by
// one more rescale. Same arithmetic, same order of operations on O. Default 0: H200, session 5
// round 3, early was +1-3% at non-causal d128/d256 N 4k-16k, within 2% at short N and -6% at
// causal d128 N8k, not a clear win.
// 2: both placements compiled in, the environment variable FA_SM90_FWD_EARLY_RESCALE=1 (read once
// per process) picks the early one at run time (a uniform branch), so one build A/Bs and tests it.
#ifndef FA_SM90_FWD_EARLY_RESCALE
#define FA_SM90_FWD_EARLY_RESCALE 0
#endif
static_assert(FA_SM90_FWD_EARLY_RESCALE >= 0 && FA_SM90_FWD_EARLY_RESCALE <= 2, "0, 1 or 2");

// Ping-pong as a run-time choice (Params::pingpong, FA_SM90_FWD_PINGPONG in the environment), a
// build-time experiment: 1 compiles a uniform branch around every turn (8 more SASS instructions
// in the d64 masked kernel), so one build can time ping-pong on and off at every head dim;
// 0 (default) compiles it out, and ping-pong instances always take turns. Why: at d128 causal
// the no_pingpong ablation was +3.5% at N1k and +4.2% at N2k, one run each (session 28), and
// -4.1% at N8k (session 27). Built and compiled here, never run on a GPU (session 28's call
// was lost with the machine).
#ifndef FA_SM90_FWD_PINGPONG_RUNTIME
#define FA_SM90_FWD_PINGPONG_RUNTIME 0
#endif

// Per-tile timeline of the persistent forward (diagnostic builds only: -DFA_SM90_FWD_TIMELINE=1;
// the launcher fills it when FA_SM90_FWD_TIMELINE_OUT names a file, cuda/common/timeline_dump.hpp). For
// every tile a consumer warpgroup computes, its thread 0 records clock64() (SM cycles) at the
// points FwdStamp names; slot Info holds the tile's key blocks | query block << 16 | SM id << 40.
// scripts/fwd_timeline.py reads it. Production builds compile none of it.
#ifndef FA_SM90_FWD_TIMELINE
#define FA_SM90_FWD_TIMELINE 0
#endif
// The timeline's row pointer travels as an extra argument of consume_tile, epilogue_store and
// store_o_tma only in timeline builds, so production builds keep their exact SASS.
// A deferred epilogue's stores (kEpiOverlap) stamp nothing: they belong to an earlier tile's row.
#if FA_SM90_FWD_TIMELINE
#define FA_FWD_TL_PARAM , unsigned long long* tl
#define FA_FWD_TL_ARG , tl
#define FA_FWD_TL_NOARG , nullptr
#define FA_FWD_TL_NONE
#else
#define FA_FWD_TL_PARAM
#define FA_FWD_TL_ARG
#define FA_FWD_TL_NOARG
#define FA_FWD_TL_NONE [[maybe_unused]] constexpr unsigned long long* tl = nullptr;
#endif
// A mainloop wait, its cycles added to waits[i] in timeline builds; the plain statement otherwise
// (wrapping it in a lambda, even one that only runs it, changed the d256 masked kernels' SASS).
#if FA_SM90_FWD_TIMELINE
#define FA_FWD_TIMED(i, stmt)                      \
  do {                                             \
    const unsigned long long t0_ = clock64();      \
    stmt;                                          \
    waits[i] += clock64() - t0_;                   \
  } while (0)
#else
#define FA_FWD_TIMED(i, stmt) stmt
#endif
enum class FwdStamp : int {
  Info = 0,
  Start,    // consume_tile entered
  QIn,      // the tile's Q slot is loaded
  KIn,      // its first K block is loaded
  Turn,     // first ping-pong turn taken (the first Q·Kᵀ is issued next)
  S0Done,   // first Q·Kᵀ retired
  LoopEnd,  // last P·V retired
  EpiConv,  // O normalised and converted, LSE computed
  EpiBar,   // TMA-store epilogue: the O buffer is free and every warp of the warpgroup is here
  End,      // epilogue done (or, with the epilogue overlap, handed to the next tile)
  // Cycles spent, summed over the mainloop's iterations after the first block, waiting for: a K
  // block, a V block, the ping-pong turn, S (the Q·Kᵀ wgmma), O (the P·V wgmma).
  KWait,
  VWait,
  TurnWait,
  SWait,
  PVWait,
  // Between tiles (consume's loop, clock64() values): the previous tile's consume_tile returned
  // and the scheduler is called; it returned this tile; tile_work returned (then Start).
  NextCall,
  NextDone,
  WorkDone,
  // FA_SM90_FWD_TILE_CHAIN, the tile's tail (cycles): waiting for the next tile's record, its Q,
  // its first K block, and the ping-pong turn of the last P·V.
  TailRec,
  TailQ,
  TailK,
  TailTurn,
  kCount
};

// K-major shared-memory swizzle atom of a row of kCols elements of T: the widest swizzle whose
// byte width (128/64/32) divides the row's bytes. Written in bytes so that 1-byte (fp8) rows of
// 128 elements take the 128-byte swizzle, as 2-byte rows of 64 elements do.
template <class T, int kCols>
using KMajorSmemAtom = std::conditional_t<
    kCols * int(sizeof(T)) % 128 == 0, cute::GMMA::Layout_K_SW128_Atom<T>,
    std::conditional_t<kCols * int(sizeof(T)) % 64 == 0, cute::GMMA::Layout_K_SW64_Atom<T>,
                       cute::GMMA::Layout_K_SW32_Atom<T>>>;

// Element: the inputs' type (bf16, fp16, or e4m3 for the FP8 forward); OutElement: O's type (the
// same for 16-bit inputs, bf16 or fp16 for e4m3).
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap,
          unsigned kFeatures = fwd_feature::kAll, typename OutElement = Element>
struct FwdKernel {
  // FP8 forward (core/fp8.hpp, FA3 §3.3): e4m3 Q, K and Vᵀ with per-block scales. Differences from
  // the 16-bit path, all compile-time: V arrives transposed (Vᵀ, K-major for the 8-bit P·V
  // wgmma) and P is converted in place into that wgmma's A fragment (p_fp8_source); the softmax
  // keeps its max in log2-scaled units because each key block has its own scale; the epilogue
  // multiplies O by V's scale. No softcap, GQA packing, varlen or ablations (the host rejects them).
  static constexpr bool kFp8 = std::is_same_v<Element, cutlass::float_e4m3_t>;
  static_assert(kFp8 ? (!kSoftcap && (std::is_same_v<OutElement, cutlass::bfloat16_t> ||
                                      std::is_same_v<OutElement, cutlass::half_t>))
                     : std::is_same_v<OutElement, Element>,
                "fp8: bf16/fp16 output, no softcap; 16-bit: O has the inputs' type");
  static constexpr bool kIntraWgOverlap = (kFeatures & fwd_feature::kIntraWgOverlap) != 0;
  static constexpr bool kPersistent = (kFeatures & fwd_feature::kPersistent) != 0;
  static constexpr bool kTmaLoad = (kFeatures & fwd_feature::kTmaLoad) != 0;
  static constexpr bool kWarpSpecialised = (kFeatures & fwd_feature::kWarpSpecialised) != 0;
  static_assert(kWarpSpecialised || (kTmaLoad && kIntraWgOverlap),
                "the non-specialised variant issues TMA loads from the overlapped mainloop");
  // GQA packing needs the TMA producer warpgroup (the rank-5 Q map). The cp.async and
  // non-specialised ablations never pack, and compile the packing arithmetic out: the latter
  // runs at 255 registers, where the packed Q load in its mainloop made it spill.
  static constexpr bool kCanPack = kTmaLoad && kWarpSpecialised && !kFp8;

  using Tile = std::conditional_t<kFp8, FwdTileFp8<kHeadDim, kMasked>, FwdTile<kHeadDim, kMasked>>;
  static constexpr int kHeadDimC = kHeadDim;
  static constexpr bool kMaskedC = kMasked;
  using OutElementC = OutElement;
  static constexpr bool kEarlyQRelease = FA_SM90_FWD_EARLY_Q_RELEASE != 0;  // see fwd_tile_config.hpp
  static constexpr int kBlockM = Tile::kBlockM;
  static constexpr int kBlockN = Tile::kBlockN;
  static constexpr int kStages = Tile::kStages;
  static constexpr int kConsumerWGs = kBlockM / 64;  // one m64 wgmma row-block per warpgroup
  // One consumer warpgroup (kBlockM = 64, fwd_tile_config.hpp) has nobody to take turns with.
  static constexpr bool kPingPong = (kFeatures & fwd_feature::kPingPong) != 0 && kConsumerWGs > 1;
  // fp8: K scales per key block (core::fp8::kKBlock keys each; FA_SM90_FWD_FP8_*_BLOCK_N).
  static constexpr int kKScales = kFp8 ? kBlockN / core::fp8::kKBlock : 1;
  static_assert(!kFp8 || (kBlockN % core::fp8::kKBlock == 0 && (kBlockM / 64) * 64 == kBlockM),
                "fp8: whole K-scale blocks per key block, whole Q-scale blocks per warpgroup");
  static constexpr int kWgRows = 64;
  static constexpr int kConsumerThreads = kConsumerWGs * 128;
  // + the producer warpgroup; without it the consumers are threads 0..255.
  static constexpr int kThreads = kConsumerThreads + (kWarpSpecialised ? 128 : 0);
  static constexpr int kConsumerBase = kWarpSpecialised ? 128 : 0;
  // 3 warpgroups: d64 with FA_SM90_FWD_D64_BLOCK_M = 192 or FA_SM90_FWD_FP8_D64_BLOCK_M = 192
  // (fwd_tile_config.hpp) only.
  // 1 warpgroup: 64-row tiles, two CTAs per SM (kCtasPerSm), each with its own producer, ring
  // and tile walk. Why: a 128-row tile's two warpgroups share one tile and so reach its fixed
  // cost (the epilogue, the next tile's Q wait and first Q·Kᵀ: 1.0-1.35 key blocks at d64,
  // docs/perf/fa3_fwd_limits.md) at the same moment; two independent CTAs drift apart, and one's
  // fixed cost runs under the other's GEMMs. Costs: each CTA loads every K/V block its rows see
  // (twice the L2 → shared-memory traffic per FLOP), half the shared memory per CTA, and no
  // ping-pong (the hardware interleaves the two CTAs' warps as it likes). Measured slower
  // (session 29, fwd_tile_config.hpp): off by default.
  static_assert(kConsumerWGs == 2 || (kConsumerWGs == 3 && kWarpSpecialised) ||
                    (kConsumerWGs == 1 && kWarpSpecialised && kTmaLoad && kPersistent && !kFp8),
                "register split and ping-pong are set up for 2 or 3 consumer warpgroups, or 1 (persistent TMA)");
  static constexpr int kCtasPerSm = kConsumerWGs == 1 ? 2 : 1;
  // Shared memory one CTA may use: 228 KB per SM, 1 KB of it reserved per CTA.
  static constexpr int kSmemBudget = (228 / kCtasPerSm - 1) * 1024;
  // setmaxnreg: 128 × 24 + 256 × 240 = 64512 ≤ 65536 registers per SM (2 consumer warpgroups);
  // 128 × 24 + 384 × 160 = 64512 (3); 2 CTAs × (128 × 24 + 128 × 232) = 65536 (1: the launch
  // bound gives each CTA 256 × 128, which the producer's release exactly covers).
  static constexpr uint32_t kProducerRegs = 24;
  static constexpr uint32_t kConsumerRegs = kConsumerWGs == 1 ? 232 : kConsumerWGs == 2 ? 240 : 160;

  using TileShapeQK = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::Int<kHeadDim>>;
  using TileShapePV = cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>, cute::Int<kBlockN>>;
  using AtomLayout = cute::Layout<cute::Shape<cute::Int<kConsumerWGs>, cute::_1, cute::_1>>;
  // Q·Kᵀ: both operands K-major in shared memory (SS). Key blocks of 80 / 112 take our atoms
  // (fwd_wgmma_ext.hpp; FA_SM90_FWD_OWN_EXT_MMA), all others CuTe's selector.
  using CuteAtomQK = decltype(cute::GMMA::ss_op_selector<Element, Element, float, TileShapeQK>());
#if FA_SM90_FWD_OWN_EXT_MMA
  using MmaAtomQK =
      std::conditional_t<FA_SM90_FWD_OWN_N(kBlockN), wgmma::SsF32<Element, kBlockN>, CuteAtomQK>;
#else
  using MmaAtomQK = CuteAtomQK;
#endif
  using TiledMmaQK = decltype(cute::make_tiled_mma(MmaAtomQK{}, AtomLayout{}));
  // P·V: A = P (registers, K-major by construction), B = V whose K mode (the key index) is not
  // the contiguous one in shared memory: MN-major. fp8: 8-bit wgmma takes B only K-major, so V
  // is loaded as Vᵀ (core/fp8.hpp), whose key index is contiguous.
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<Element, Element, float, TileShapePV, cute::GMMA::Major::K,
                                 kFp8 ? cute::GMMA::Major::K : cute::GMMA::Major::MN>(),
      AtomLayout{}));
  // One atom per warpgroup row-block spans the whole key block / head dim: fails where the tile
  // needs an extended shape that FA_SM90_FWD_NEEDS_EXT_MMA (fwd_tile_config.hpp) did not enable.
  // Not in the host pass of an instance that needs them, which has no extended shapes and builds
  // no MMA (top of file).
#if defined(__CUDA_ARCH__) || !defined(FA_INSTANCE_HEAD_DIM) ||                                    \
    !FA_SM90_FWD_NEEDS_EXT_MMA(FA_INSTANCE_HEAD_DIM, FA_INSTANCE_MASKED)
  static_assert(cute::size<1>(typename TiledMmaQK::AtomShape_MNK{}) == kBlockN &&
                    cute::size<1>(typename TiledMmaPV::AtomShape_MNK{}) == kHeadDim,
                "wgmma atom narrower than the tile: extended MMA shapes needed (fwd_tile_config.hpp)");
#endif

  // fp8 P: the e4m3 A fragment of the k32 RS wgmma, kBlockN / 8 32-bit registers per thread in
  // CuTe's ALayout_64x32 order, values (4, 2, 2) per k-block = (k + 1, row + 8, k + 16), i.e.
  // register 4kb + 2h + r8 holds k = 32kb + 16h + 4t + (0..3) of row r + 8·r8 (t: lane % 4).
  using PFragFp8 = cute::Layout<cute::Shape<cute::Shape<cute::_4, cute::_2, cute::_2>, cute::_1,
                                            cute::Int<kBlockN / 32>>>;
  // The S accumulator value (flat index into the m64nNk32 C fragment: column pair e, row + 8 r8,
  // 8-column group j at e + 2 r8 + 4 j) that becomes byte b of P register `reg`. The S columns a
  // thread holds, 8j + 2t + e, are not the k indices the A fragment wants, 4t + i (+ 16); instead
  // of moving bytes between lanes, Vᵀ's keys are stored permuted within each 32-key chunk
  // (core::fp8::vt_key): A's k = 32kb + s multiplies the V row of key 32kb + vt_key(s), which is
  // exactly the S column taken here: j = 4kb + 2h + (b >> 1), e = b & 1.
  // Checked against CuTe's partitions by scripts/check_sm90_fwd_layout.cu.
  CUTE_HOST_DEVICE static constexpr int p_fp8_source(int reg, int b) {
    const int r8 = reg & 1, h = (reg >> 1) & 1, kb = reg >> 2;
    return 4 * (4 * kb + 2 * h + (b >> 1)) + 2 * r8 + (b & 1);
  }

  // K-major swizzle atom of Q and K rows (the head dim).
  using SmemAtom = KMajorSmemAtom<Element, kHeadDim>;
  using SmemLayoutQ =
      decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}));
  using SmemLayoutKV = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>, cute::Int<kStages>>{}));
  // Columns of one swizzle atom: SmemLayoutQ stores the head dim in chunks of this many columns,
  // each chunk kBlockM rows × one 16/32/64/128-byte row (the packed Q load writes chunk by chunk).
  static constexpr int kRowBytes = kHeadDim * int(sizeof(Element));
  static constexpr int kSwizzleBytes = kRowBytes % 128 == 0 ? 128 : (kRowBytes % 64 == 0 ? 64 : 32);
  static constexpr int kSwizzleCols = kSwizzleBytes / int(sizeof(Element));
  static_assert(SmemLayoutQ{}.layout_b()(cute::make_coord(1, 0)) == kSwizzleCols &&
                    (kHeadDim == kSwizzleCols ||
                     SmemLayoutQ{}.layout_b()(cute::make_coord(0, kSwizzleCols)) == kBlockM * kSwizzleCols),
                "the packed Q load assumes row-contiguous column chunks in SmemLayoutQ");
  // V seen as (head dim, key, stage): the B operand of P·V. 16-bit: the same bytes as the loaded
  // V rows, a transposed view. fp8: Vᵀ as loaded, keys contiguous (K-major, 128 keys = 128 bytes).
  using SmemLayoutVtView = decltype(cute::composition(
      SmemLayoutKV{},
      cute::make_ordered_layout(cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{},
                                cute::Step<cute::_2, cute::_1, cute::_3>{})));
  using SmemLayoutVtFp8 = decltype(cute::tile_to_shape(
      KMajorSmemAtom<Element, kBlockN>{},
      cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{}));
  using SmemLayoutVt = std::conditional_t<kFp8, SmemLayoutVtFp8, SmemLayoutVtView>;
  using SmemLayoutV = std::conditional_t<kFp8, SmemLayoutVtFp8, SmemLayoutKV>;  // as TMA writes it
  // One consumer warpgroup's 64 output rows: each warpgroup stages and stores its own half, so
  // neither waits for the other (they run half a GEMM apart under ping-pong).
  using SmemLayoutOHalf = decltype(cute::tile_to_shape(
      KMajorSmemAtom<OutElement, kHeadDim>{}, cute::Shape<cute::Int<kWgRows>, cute::Int<kHeadDim>>{}));

  static constexpr uint32_t kBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesKV = kBlockN * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesO = kBlockM * kHeadDim * sizeof(OutElement);
  // The TMA-store epilogue needs its own O buffer (reusing Q's would hold the next tile's Q load
  // until the store has read it, which is the overlap the persistent loop exists for). d192/d256
  // have no room for it (tile table): they keep the direct stores (O in global memory directly).
  static constexpr uint32_t kBytesRing = 2 * kStages * kBytesKV;  // K and V rings
  // Q slots (FA_SM90_FWD_Q_STAGES): two where the persistent TMA producer can use them and they fit
  // (next to the O buffer at d64-d128); the producer then loads tile t+1's Q into the other slot
  // while tile t still runs. One slot otherwise (d192/d256 at their default kBlockN, the
  // one-tile-per-CTA and loader ablations).
  static constexpr bool kQ2Fits = FA_SM90_FWD_Q_STAGES == 2 && kPersistent && kTmaLoad && kWarpSpecialised &&
                                  2 * kBytesQ + kBytesRing + 1024 <= kSmemBudget;
  // d192/d256 (narrow-kBlockN builds, fwd_tile_config.hpp) have room for a second Q slot or the O
  // buffer, not both: the Q slot goes first (its load sits on the critical path between tiles;
  // the direct O stores do not wait for anything). d64-d128 keep the O buffer first, so e.g.
  // d128 kBlockN 160 keeps its TMA store and one Q slot.
  static constexpr bool kQBeforeO = kHeadDim > 128;
  static constexpr bool kTmaStoreO = (kFeatures & fwd_feature::kTmaStore) != 0 &&
                                     (kQBeforeO && kQ2Fits ? 2 : 1) * kBytesQ + kBytesRing + kBytesO + 1024 <=
                                         kSmemBudget;
  // Shuffle rounds of the direct O stores' quad transpose (FA_SM90_FWD_O_STORE16; 0 = 4-byte stores).
  static constexpr int kOStoreRounds =
      FA_SM90_FWD_O_ROW_PTR == 0 ? 0 : FA_SM90_FWD_O_STORE16 == 1 ? 2 : FA_SM90_FWD_O_STORE16 == 2 ? 1 : 0;
  static_assert(kHeadDim % (8 << kOStoreRounds) == 0, "whole sets of 8-column groups per row");
  static constexpr int kQStages =
      kQ2Fits && 2 * kBytesQ + kBytesRing + (kTmaStoreO ? kBytesO : 0) + 1024 <= kSmemBudget ? 2 : 1;
  // Each slot starts 1024-byte aligned (the 128-byte swizzle's repeat).
  static_assert(kBytesQ % 1024 == 0, "Q slot alignment");

  // Global tensors as TMA sees them: (row, dim, head, batch); varlen uses batch 1 and global rows.
  using GmemLayout = cute::Layout<cute::Shape<int32_t, int32_t, int32_t, int32_t>,
                                  cute::Stride<int64_t, cute::_1, int64_t, int64_t>>;
  using TmaQ = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      SmemLayoutQ{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}, cute::_1{}));
  using TmaKV = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutKV{}), cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>>{}, cute::_1{}));
  // fp8 Vᵀ as TMA sees it: (head dim, key, KV head, batch), keys contiguous; (kHeadDim, kBlockN) boxes.
  using TmaVt = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutVtFp8{}), cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>>{}, cute::_1{}));
  using TmaV = std::conditional_t<kFp8, TmaVt, TmaKV>;
  // Clusters of two with K/V multicast (FA_SM90_FWD_CLUSTER, fwd_tile_config.hpp): equal-length
  // tiles only (no mask), the TMA producer warpgroup and the persistent walk that pairs them.
  static constexpr bool kCluster = !kMasked && !kFp8 && kTmaLoad && kWarpSpecialised && kPersistent &&
                                   (FA_SM90_FWD_CLUSTER & head_dim_bit(kHeadDim)) != 0;
  // Each CTA of the pair loads kBlockN / 2 rows of a K or V block into both CTAs.
  using TmaKVMc = std::conditional_t<
      kCluster,
      decltype(cute::make_tma_copy(
          cute::SM90_TMA_LOAD_MULTICAST{},
          cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
          cute::take<0, 2>(SmemLayoutKV{}), cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>>{}, cute::_2{})),
      NoTmaO>;
  using TmaO = std::conditional_t<
      kTmaStoreO,
      decltype(cute::make_tma_copy(
          cute::SM90_TMA_STORE{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<OutElement*>(nullptr)), GmemLayout{}),
          SmemLayoutOHalf{}, cute::Shape<cute::Int<kWgRows>, cute::Int<kHeadDim>>{}, cute::_1{})),
      NoTmaO>;

  struct NoSmemO {};
  using SmemO = std::conditional_t<
      kTmaStoreO, cute::array_aligned<OutElement, kConsumerWGs * cute::cosize_v<SmemLayoutOHalf>, 1024>, NoSmemO>;

  using PipeQ = std::conditional_t<kTmaLoad, PipelineTma<kQStages>, PipelineCpAsync<kQStages>>;
  using PipeKV = std::conditional_t<kTmaLoad, PipelineTma<kStages>, PipelineCpAsync<kStages>>;
  static constexpr int kProducerThreads = 128;

  // What one tile needs besides its coordinates: its sequence, mask and key-block range.
  // m0, m_end: the query positions [m0, m_end) the tile covers (kBlockM of them unpacked,
  // kBlockM / G packed: tile row r is position m0 + (r >> pack_shift)).
  struct TileWork {
    core::SeqInfo seq;
    core::Mask mask;
    int m0 = 0;
    int m_end = 0;
    int n_block_max = 0;
    int n_blocks = 0;
  };
  // FA_SM90_FWD_TILE_HANDOFF (fwd_tile_config.hpp): the producer hands each tile to the
  // consumers through a 2-record ring; tc.m_block < 0 ends the walk.
  static constexpr bool kTileHandoff = FA_SM90_FWD_TILE_HANDOFF != 0 && kWarpSpecialised && kTmaLoad;
  struct TileRecord {
    sched::TileCoord tc;
    TileWork w;
  };
  using TileRing = HandoffRing<TileRecord, 2>;
  struct NoTileRing {};
  // FA_SM90_FWD_TILE_PREFETCH: the next tile's record, read under this tile's last P·V.
  static constexpr bool kTilePrefetch = kTileHandoff && kIntraWgOverlap &&
                                        (FA_SM90_FWD_TILE_PREFETCH & head_dim_bit(kHeadDim)) != 0;
  struct NextTile {
    TileRecord rec;
    bool valid = false;
  };

  struct SharedStorage {
    cute::array_aligned<Element, kQStages * cute::cosize_v<SmemLayoutQ>, 1024> q;  // kQStages slots
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutV>, 1024> v;
    SmemO o;
    // Q is a kQStages-slot ring (one slot per tile): a slot is reloaded once the consumers' last
    // Q·Kᵀ of the tile that used it has retired.
    PipeQ pipe_q;
    PipeKV pipe_k;
    PipeKV pipe_v;
    [[no_unique_address]] std::conditional_t<kTileHandoff, TileRing, NoTileRing> tiles;
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  static_assert(kSmemBytes <= kSmemBudget, "tile does not fit in shared memory");

  // Named barriers: ping-pong (scheduler) ids WarpSchedulerWG1 + w for consumer warpgroup w, then
  // each warpgroup's epilogue barrier (2 warpgroups: ids 0-1 and 2-3, as FwdNamedBarrier lists).
  static constexpr uint32_t kSchedulerBarrier0 = uint32_t(FwdNamedBarrier::WarpSchedulerWG1);
  static_assert(uint32_t(FwdNamedBarrier::WarpSchedulerWG2) == kSchedulerBarrier0 + 1);
  static constexpr uint32_t kEpilogueBarrierWG1 = kSchedulerBarrier0 + kConsumerWGs;

  using Scheduler = sched::StaticLptScheduler;
  // Online softmax of a consumer thread's 2 rows (one m64 accumulator row-block per warpgroup);
  // FA_SM90_FWD_POLY_EXP2 (fwd_softmax.hpp): part of its exponentials on the FMA pipe.
  using Softmax = OnlineSoftmax<2, (FA_SM90_FWD_TREE_REDUCE & head_dim_bit(kHeadDim)) != 0, kFp8,
                                fwd_poly_exp2_cols(kHeadDim, kFp8)>;
  // FA_SM90_FWD_EPI_OVERLAP (fwd_tile_config.hpp): a tile's epilogue deferred until the next tile
  // of the CTA has issued its first Q·Kᵀ. Needs the overlapped mainloop and the producer warpgroup.
  static constexpr bool kEpiOverlap =
      ((kMasked ? FA_SM90_FWD_EPI_OVERLAP_MASKED : FA_SM90_FWD_EPI_OVERLAP) & head_dim_bit(kHeadDim)) != 0 &&
      kIntraWgOverlap && kWarpSpecialised && !kFp8;
  // FA_SM90_FWD_EPI_LATE (fwd_tile_config.hpp): the deferred stores wait further, until the next
  // tile's first Q·Kᵀ / P·V pair is issued.
  static constexpr bool kEpiLate =
      kEpiOverlap && (FA_SM90_FWD_EPI_LATE & head_dim_bit(kHeadDim)) != 0;
  // FA_SM90_FWD_TILE_CHAIN (fwd_tile_config.hpp): the next tile's first Q·Kᵀ in the same turn as
  // this tile's last P·V. Needs the next tile's record before that turn (the handoff), its Q in
  // the other slot, and O's registers free right after the tile (the late epilogue).
  // FA_SM90_FWD_Q_AHEAD (fwd_tile_config.hpp): the producer loads a tile's Q with the previous
  // tile's first key block instead of after its last.
  static constexpr bool kQAhead = kTmaLoad && kWarpSpecialised && kQStages > 1 &&
                                  (FA_SM90_FWD_Q_AHEAD & head_dim_bit(kHeadDim)) != 0;
  static constexpr bool kTileChain = kEpiLate && kTileHandoff && kQStages > 1 &&
                                     (FA_SM90_FWD_TILE_CHAIN & head_dim_bit(kHeadDim)) != 0;
  // What a chained tile inherits from the previous call: its first block's P (the P·V operand)
  // and the softmax state after that block. (Not O's factor for it: O starts at zero.)
  using TensorP = decltype(cute::make_tensor<Element>(
      cute::partition_fragment_C(TiledMmaQK{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{})
          .layout()));
  struct ChainCarry {
    TensorP rP;
    Softmax softmax{0.f};
    bool valid = false;
  };
  struct NoChainCarry {};
  using Carry = std::conditional_t<kTileChain, ChainCarry, NoChainCarry>;

  struct Params {
    TmaQ tma_q;
    TmaKV tma_k;
    TmaV tma_v;
    TmaO tma_o;
    cute::Shape<int32_t, int32_t, int32_t, int32_t> shape_q, shape_k;
    core::AttnParams attn;
    float score_scale_log2;  // multiplies raw scores inside exp2
    float softcap_prescale;  // scale / softcap (softcap only)
    Scheduler::Params sched;
    bool tma_store_o;  // O through smem + TMA (batch form, TMA-aligned O); else direct stores
    // GQA packing: log2 of the query heads sharing a tile (0 = unpacked), and then the rank-5
    // Q map (d, G, rows, KV head, batch) with box (kSwizzleCols, G, kBlockM / G, 1, 1).
    int pack_shift;
    cute::TmaDescriptor tma_q_packed;
    bool early_rescale;  // FA_SM90_FWD_EARLY_RESCALE == 2: the run-time choice
    bool o_store_wide;   // kOStoreRounds > 0 and O aligned to its bytes: direct stores transposed
    TmaKVMc tma_k_mc;    // kCluster: the multicast K / V maps (used when sched.cluster_shift = 1)
    TmaKVMc tma_v_mc;
    // kPingPong instances: take turns (false: FA_SM90_FWD_PINGPONG=0 in a
    // FA_SM90_FWD_PINGPONG_RUNTIME=1 build; every warpgroup then issues its GEMMs when ready, as
    // the no_pingpong ablation does, at any head dim without an instance).
    bool pingpong = true;
#if FA_SM90_FWD_TIMELINE
    // rounds × kConsumerWGs × FwdStamp::kCount words per CTA (persistent launches), or none.
    unsigned long long* timeline = nullptr;
#endif
  };

  // One timeline stamp (FA_SM90_FWD_TIMELINE); tl is this tile's and warpgroup's row, or null.
  __device__ static void stamp(unsigned long long* tl, FwdStamp slot, unsigned long long value = 0) {
    if constexpr (FA_SM90_FWD_TIMELINE != 0) {
      if (tl == nullptr || threadIdx.x % 128 != 0) return;
      if (slot != FwdStamp::Info && int(slot) < int(FwdStamp::KWait)) value = clock64();
      tl[int(slot)] = value;
    } else {
      (void)tl, (void)slot, (void)value;
    }
  }

  // Whether this launch runs in clusters of two (a run-time choice of the launcher).
  __device__ static bool in_cluster(Params const& params) {
    if constexpr (kCluster) return params.sched.cluster_shift != 0;
    else return false;
  }
  // A K/V slot's release. In clusters one thread per consumer warpgroup arrives on the slot's
  // empty barrier in both CTAs (PipelineTma::consumer_release_in); otherwise every consumer
  // thread arrives on its own CTA's.
  __device__ static void release_kv(PipeKV& pipe, int it, Params const& params) {
    if constexpr (kCluster) {
      if (in_cluster(params)) {
        if (threadIdx.x % 128 == 0) {
          pipe.consumer_release_in(it, 0u);
          pipe.consumer_release_in(it, 1u);
        }
        return;
      }
    }
    pipe.consumer_release(it);
  }

  // A tile whose stores wait for the next tile's first Q·Kᵀ (kEpiOverlap): its O already
  // normalised and converted (rO, registers), its LSE, and where they go.
  template <class TensorRO>
  struct PendingEpilogue {
    bool valid = false;
    sched::TileCoord tc;
    TileWork w;
    TensorRO rO;
    float lse[2];
  };
  // False when the tile has no rows of its sequence (varlen grid: shorter than the longest).
  __device__ static bool tile_work(Params const& params, sched::TileCoord const& tc, TileWork& w) {
    core::AttnParams const& p = params.attn;
    w.seq = core::seq_info(p, tc.batch);
    const int rows = kBlockM >> pack_shift_of(params);
    w.m0 = tc.m_block * rows;
    if (w.m0 >= w.seq.q_len) return false;
    w.m_end = int(cute::min(int64_t(w.m0 + rows), w.seq.q_len));
    w.mask = core::Mask(w.seq.q_len, w.seq.k_len, kMasked ? p.window_left : -1,
                        kMasked ? p.window_right : -1);
    int64_t key_first = 0, key_last = 0;
    w.mask.key_range(w.m0, w.m_end, &key_first, &key_last);
    const int n_block_min = int(key_first / kBlockN);
    w.n_block_max = key_last > key_first ? int((key_last + kBlockN - 1) / kBlockN) : n_block_min;
    w.n_blocks = w.n_block_max - n_block_min;
    return true;
  }

  // ---- the kernel body --------------------------------------------------------------------
  __device__ static void run(Params const& params, char* smem_raw) {
    using namespace cute;
    SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem_raw);
    const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x) / 32, 0);  // warp-uniform
    const WarpRole role = warp < 4 ? WarpRole::Producer : WarpRole::Consumer;

    if (threadIdx.x == 0) {
      if constexpr (kTmaLoad) {
        const uint32_t kv_arrivals = in_cluster(params) ? 2 * kConsumerWGs : kConsumerThreads;
        ss.pipe_q.init(kConsumerThreads);
        ss.pipe_k.init(kv_arrivals);
        ss.pipe_v.init(kv_arrivals);
        if constexpr (kTileHandoff) ss.tiles.init(kConsumerThreads / 32);
      } else {
        ss.pipe_q.init(kProducerThreads, kConsumerThreads);
        ss.pipe_k.init(kProducerThreads, kConsumerThreads);
        ss.pipe_v.init(kProducerThreads, kConsumerThreads);
      }
      cutlass::arch::fence_barrier_init();
    }
    if (warp == 0 && elect_one_sync()) {
      prefetch_tma_descriptor(params.tma_q.get_tma_descriptor());
      prefetch_tma_descriptor(params.tma_k.get_tma_descriptor());
      prefetch_tma_descriptor(params.tma_v.get_tma_descriptor());
      if constexpr (kTmaStoreO) prefetch_tma_descriptor(params.tma_o.get_tma_descriptor());
      if (pack_shift_of(params) > 0) prefetch_tma_descriptor(&params.tma_q_packed);
      if constexpr (kCluster) {
        if (in_cluster(params)) {
          prefetch_tma_descriptor(params.tma_k_mc.get_tma_descriptor());
          prefetch_tma_descriptor(params.tma_v_mc.get_tma_descriptor());
        }
      }
    }
    __syncthreads();
    // The peer's barriers must be initialised before this CTA's producer multicasts into them or
    // its consumers arrive on them.
    if constexpr (kCluster) {
      if (in_cluster(params)) {
        cute::cluster_arrive_relaxed();
        cute::cluster_wait();
      }
    }

    if constexpr (!kWarpSpecialised) {
      consume(params, ss);  // all threads are consumers; registers as allocated (no setmaxnreg)
      return;
    }
    if (role == WarpRole::Producer) {
      cutlass::arch::warpgroup_reg_dealloc<kProducerRegs>();
      if constexpr (kTmaLoad) {
        if (warp == 0 && cute::elect_one_sync()) produce(params, ss);
      } else {
        produce_cp_async(params, ss);
      }
    } else {
      cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
      consume(params, ss);
    }
  }

  // log2 of the query heads per packed tile row group; 0 (a constant) where packing is compiled out.
  __device__ static int pack_shift_of(Params const& params) {
    if constexpr (kCanPack) return params.pack_shift;
    else return 0;
  }
  // The KV head of a tile: packed tiles are indexed by it directly.
  __device__ static int head_kv_of(Params const& params, sched::TileCoord const& tc) {
    return pack_shift_of(params) > 0 ? tc.head : tc.head / params.attn.group_size();
  }

  // fp8 Vᵀ's extents as its TMA map has them: (head dim, padded keys, KV heads, batch).
  CUTE_HOST_DEVICE static auto vt_shape(core::AttnParams const& p) {
    return cute::make_shape(int32_t(kHeadDim), int32_t(p.vt_keys), int32_t(p.heads_kv), int32_t(p.batch));
  }

  // Shared memory of Q ring position q_it.
  __device__ static Element* q_slot(SharedStorage& ss, int q_it) {
    return ss.q.data() + PipeQ::stage(q_it) * cute::cosize_v<SmemLayoutQ>;
  }

  // One tile's Q into slot `sq` (barrier `bar`, already expecting kBytesQ). Unpacked: the rank-4
  // map's kBlockM rows of one head. Packed: per column chunk of SmemLayoutQ, one rank-5 box
  // (kSwizzleCols, G, kBlockM / G) at query position m0 — TMA writes it as kBlockM dense,
  // swizzled rows in (g fastest, then i) order, exactly the rows r = i·G + g of a 2-D box.
  __device__ static void load_q(Params const& params, Element* sq, sched::TileCoord const& tc,
                                TileWork const& w, uint64_t& bar) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int tma_batch = p.varlen ? 0 : tc.batch;
    if (pack_shift_of(params) > 0) {
      const int32_t row0 = int32_t(w.seq.q_start + w.m0);
#pragma unroll
      for (int c = 0; c < kHeadDim / kSwizzleCols; ++c)
        SM90_TMA_LOAD_5D::copy(&params.tma_q_packed, &bar, uint64_t(TMA::CacheHintSm90::EVICT_NORMAL),
                               sq + c * kBlockM * kSwizzleCols, c * kSwizzleCols, 0, row0,
                               tc.head, tma_batch);
      return;
    }
    Tensor sQ = make_tensor(make_smem_ptr(sq), SmemLayoutQ{});
    Tensor mQ = params.tma_q.get_tma_tensor(params.shape_q)(_, _, tc.head, tma_batch);
    Tensor gQ = local_tile(domain_offset(make_coord(int32_t(w.seq.q_start), _0{}), mQ),
                           Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(tc.m_block, _0{}));
    auto [tQgQ, tQsQ] = tma_partition(params.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                      group_modes<0, 2>(gQ));
    copy(params.tma_q.with(bar), tQgQ, tQsQ);
  }

  // kQAhead: Q of the CTA's next tile with keys into Q ring position q_next, found by walking the
  // schedule on from the main walk's position (a copy: the main walk meets the same tiles, in the
  // same order, and skips that Q load). False when the CTA has no such tile.
  template <int kPairs>
  __device__ static bool load_q_ahead(Params const& params, SharedStorage& ss, Scheduler const& scheduler,
                                      int q_next) {
    Scheduler ahead = scheduler;
    sched::TileCoord tc;
    TileWork w;
    while (ahead.template next<kPairs>(tc)) {
      if (tile_work(params, tc, w) && w.n_blocks > 0) {
        load_q(params, q_slot(ss, q_next), tc, w, ss.pipe_q.producer_acquire(q_next, kBytesQ));
        return true;
      }
    }
    return false;
  }

  // ---- producer: TMA loads ----------------------------------------------------------------
  // One thread walks the CTA's tiles. The K/V ring position and the Q slot's round continue
  // across tiles, so the next tile's first K/V blocks and its Q are loaded as soon as the
  // consumers free their slots — while they still finish the previous tile's last P·V and its
  // epilogue. That overlap is what a persistent grid buys at short sequences.
  // In clusters (kMc) the K/V maps are the multicast ones and this CTA loads its half of every
  // block into both CTAs; Q stays per CTA.
  __device__ static void produce(Params const& params, SharedStorage& ss) {
    if constexpr (kCluster) {
      if (in_cluster(params)) return produce_impl<true>(params, ss);
    }
    produce_impl<false>(params, ss);
  }

  template <bool kMc>
  __device__ static void produce_impl(Params const& params, SharedStorage& ss) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    using Load = PairLoad<kMc>;
    auto const& tma_k = Load::pick(params.tma_k_mc, params.tma_k);
    auto const& tma_v = Load::pick(params.tma_v_mc, params.tma_v);
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), SmemLayoutKV{});
    Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), SmemLayoutV{});
    auto kv_tile = Shape<Int<kBlockN>, Int<kHeadDim>>{};

    Scheduler scheduler(params.sched);
    sched::TileCoord tc;
    int kv_it = 0;  // ring iteration of the tile's first key block
    int q_it = 0;   // Q slot round
    int tile_it = 0;  // handoff record (kTileHandoff)
    [[maybe_unused]] bool q_loaded = false;  // kQAhead: this tile's Q went out a tile early
    while (scheduler.template next<kMc ? 1 : 0>(tc)) {
      TileWork w;
      if (!tile_work(params, tc, w)) continue;  // the consumers skip it too
      if constexpr (kTileHandoff) ss.tiles.publish(tile_it++, TileRecord{tc, w});
      if (w.n_blocks == 0) continue;  // nothing to load: the consumers only write its output
      const int tma_batch = p.varlen ? 0 : tc.batch;
      const int head_kv = head_kv_of(params, tc);

      Tensor mK = tma_k.get_tma_tensor(params.shape_k)(_, _, head_kv, tma_batch);
      Tensor gK = local_tile(domain_offset(make_coord(int32_t(w.seq.k_start), _0{}), mK), kv_tile,
                             make_coord(_, _0{}));  // (N, D, n_block)
      Tensor gV = [&] {
        if constexpr (kFp8) {  // Vᵀ (d, vt_keys): (D, N, n_block); batch form only
          Tensor mVt = params.tma_v.get_tma_tensor(vt_shape(p))(_, _, head_kv, tma_batch);
          return local_tile(mVt, Shape<Int<kHeadDim>, Int<kBlockN>>{}, make_coord(_0{}, _));
        } else {
          Tensor mV = tma_v.get_tma_tensor(params.shape_k)(_, _, head_kv, tma_batch);
          return local_tile(domain_offset(make_coord(int32_t(w.seq.k_start), _0{}), mV), kv_tile,
                            make_coord(_, _0{}));
        }
      }();
      // (tuples, not structured bindings: the loaders below capture them)
      auto part_k = [&] { return Load::partition(tma_k, group_modes<0, 2>(sK), group_modes<0, 2>(gK)); };
      auto part_v = [&] { return Load::partition(tma_v, group_modes<0, 2>(sV), group_modes<0, 2>(gV)); };
      auto tK = part_k();
      auto tV = part_v();

      // Key blocks last to first: the consumers meet the masked (diagonal / tail) blocks first.
      // One Q slot: K₀ goes before Q, as its slot frees before Q's (Q is released after the
      // previous tile's last Q·Kᵀ), so it is not held up behind the Q wait. Two Q slots: Q first —
      // its slot was released by the tile before the previous one, so the load goes out as soon
      // as the previous tile's last V is issued, a few key blocks before that tile ends. Block 0
      // is peeled so the Q coordinates are dead in the loop (this thread runs on 24 registers).
      // (Multicast: each CTA's full barrier expects the whole block, both halves.)
      auto load_k = [&](int it) {
        auto const& t = [&] {
          if constexpr (kMc) return part_k();
          else return tK;
        }();
        copy(Load::with(tma_k, ss.pipe_k.producer_acquire(kv_it + it, kBytesKV)),
             get<0>(t)(_, w.n_block_max - 1 - it), get<1>(t)(_, PipelineTma<kStages>::stage(kv_it + it)));
      };
      auto load_v = [&](int it) {
        auto const& t = [&] {
          if constexpr (kMc) return part_v();
          else return tV;
        }();
        copy(Load::with(tma_v, ss.pipe_v.producer_acquire(kv_it + it, kBytesKV)),
             get<0>(t)(_, w.n_block_max - 1 - it), get<1>(t)(_, PipelineTma<kStages>::stage(kv_it + it)));
      };
      if constexpr (kQStages > 1) {
        if (!(kQAhead && q_loaded))
          load_q(params, q_slot(ss, q_it), tc, w, ss.pipe_q.producer_acquire(q_it, kBytesQ));
        load_k(0);
        // kQAhead: the next tile's Q before this tile's V₀. Its slot frees at the previous tile's
        // last Q·Kᵀ, which retires before that tile's next-to-last P·V frees V₀'s slot.
        if constexpr (kQAhead) q_loaded = load_q_ahead<kMc ? 1 : 0>(params, ss, scheduler, q_it + 1);
      } else {
        load_k(0);
        load_q(params, q_slot(ss, q_it), tc, w, ss.pipe_q.producer_acquire(q_it, kBytesQ));
      }
      load_v(0);
#pragma unroll 1  // unrolled, this loop no longer fits the producer's 24 registers
      for (int it = 1; it < w.n_blocks; ++it) {
        load_k(it);
        load_v(it);
      }
      kv_it += w.n_blocks;
      ++q_it;
    }
    if constexpr (kTileHandoff) {
      TileRecord end;
      end.tc.m_block = -1;
      ss.tiles.publish(tile_it, end);
    }
    if constexpr (kMc) {
#pragma unroll 1
      for (int it = kv_it; it < kv_it + kStages; ++it) {
        ss.pipe_k.producer_drain(it);
        ss.pipe_v.producer_drain(it);
      }
    }
  }

  // ---- producer, ablation (FA_SM90_FWD_ABLATE=no_tma_load): cp.async instead of TMA ----------
  // All 128 producer threads copy each tile in 16-byte chunks, rows beyond the tensor zero-filled
  // (what TMA does), and arrive on the slot's full barrier once their copies have landed. Same
  // tile walk and load order as produce().
  template <int kRows, class SmemTile>
  __device__ static void cp_async_rows(Element const* src, int64_t row_stride, int64_t rows_valid,
                                       SmemTile const& dst) {
    constexpr int kChunksPerRow = kHeadDim * int(sizeof(Element)) / 16;
    constexpr int kElemsPerChunk = 16 / int(sizeof(Element));
#pragma unroll 1
    for (int c = int(threadIdx.x); c < kRows * kChunksPerRow; c += kProducerThreads) {
      const int r = c / kChunksPerRow;
      const int col = (c - r * kChunksPerRow) * kElemsPerChunk;
      const bool in = r < rows_valid;
      Element const* g = src + (in ? int64_t(r) * row_stride + col : 0);
      const uint32_t s = cute::cast_smem_ptr_to_uint(&dst(r, col));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(in ? 16 : 0)
                   : "memory");
    }
  }

  __device__ static void produce_cp_async(Params const& params, SharedStorage& ss) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;  // the tensors' row extents
    const int64_t rows_k = p.varlen ? p.total_k : p.seqlen_k;
    Scheduler scheduler(params.sched);
    sched::TileCoord tc;
    int kv_it = 0, q_it = 0;
    while (scheduler.template next<kCluster ? -1 : 0>(tc)) {
      TileWork w;
      if (!tile_work(params, tc, w) || w.n_blocks == 0) continue;  // never packed (host rule)
      const int64_t b = p.varlen ? 0 : tc.batch;
      const int head_kv = tc.head / p.group_size();
      Element const* k_seq = static_cast<Element const*>(p.k) + p.k_str.offset(b, w.seq.k_start, head_kv);
      Element const* v_seq = static_cast<Element const*>(p.v) + p.v_str.offset(b, w.seq.k_start, head_kv);
      const int64_t kv_rows = rows_k - w.seq.k_start;
      auto load_kv = [&](PipeKV& pipe, Element* smem, Element const* seq_base, int64_t row_stride, int it) {
        const int64_t row0 = int64_t(w.n_block_max - 1 - it) * kBlockN;
        pipe.producer_acquire(kv_it + it);
        Tensor s = make_tensor(make_smem_ptr(smem), SmemLayoutKV{})(_, _, PipeKV::stage(kv_it + it));
        cp_async_rows<kBlockN>(seq_base + row0 * row_stride, row_stride, kv_rows - row0, s);
        pipe.producer_commit(kv_it + it);
      };
      load_kv(ss.pipe_k, ss.k.data(), k_seq, p.k_str.row, 0);
      ss.pipe_q.producer_acquire(q_it);
      cp_async_rows<kBlockM>(static_cast<Element const*>(p.q) + p.q_str.offset(b, w.seq.q_start + w.m0, tc.head),
                             p.q_str.row, rows_q - (w.seq.q_start + w.m0),
                             make_tensor(make_smem_ptr(q_slot(ss, q_it)), SmemLayoutQ{}));
      ss.pipe_q.producer_commit(q_it);
      load_kv(ss.pipe_v, ss.v.data(), v_seq, p.v_str.row, 0);
#pragma unroll 1
      for (int it = 1; it < w.n_blocks; ++it) {
        load_kv(ss.pipe_k, ss.k.data(), k_seq, p.k_str.row, it);
        load_kv(ss.pipe_v, ss.v.data(), v_seq, p.v_str.row, it);
      }
      kv_it += w.n_blocks;
      ++q_it;
    }
    cute::cp_async_wait<0>();  // no thread leaves with copies in flight
  }

  // ---- loads from a consumer thread (ablation FA_SM90_FWD_ABLATE=no_ws) ---------------------
  // One TMA load of tile `tc`: kind 0 = Q, 1 = K block it, 2 = V block it (ring position
  // kv_it + it). Rebuilds its partitions per call: only the non-specialised variant uses it.
  __device__ static void load_one(Params const& params, SharedStorage& ss, sched::TileCoord const& tc,
                                  TileWork const& w, int kind, int it, int kv_it, int q_it) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int tma_batch = p.varlen ? 0 : tc.batch;
    if (kind == 0) {
      load_q(params, q_slot(ss, q_it), tc, w, ss.pipe_q.producer_acquire(q_it, kBytesQ));
      return;
    }
    TmaKV const& tma = kind == 1 ? params.tma_k : params.tma_v;
    PipeKV& pipe = kind == 1 ? ss.pipe_k : ss.pipe_v;
    Tensor s = make_tensor(make_smem_ptr(kind == 1 ? ss.k.data() : ss.v.data()), SmemLayoutKV{});
    Tensor m = tma.get_tma_tensor(params.shape_k)(_, _, head_kv_of(params, tc), tma_batch);
    Tensor g = local_tile(domain_offset(make_coord(int32_t(w.seq.k_start), _0{}), m),
                          Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));
    auto [tg, ts] = tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(s), group_modes<0, 2>(g));
    copy(tma.with(pipe.producer_acquire(kv_it + it, kBytesKV)), tg(_, w.n_block_max - 1 - it),
         ts(_, PipeKV::stage(kv_it + it)));
  }

  // ---- consumers: GEMMs, softmax, epilogue --------------------------------------------------
  // Masks one block of scores (rowcol view) in place: keys outside [lo, hi) of each row → -inf.
  // Tile row r is query position m0 + (r >> pack_shift) (packed GQA: G rows per position).
  template <class TensorS, class TensorC>
  __device__ static void apply_mask(TensorS& s, TensorC const& coord, core::Mask const& mask,
                                    int m0, int n0, int pack_shift) {
    using namespace cute;
    if constexpr ((FA_SM90_FWD_MASK_R2P & head_dim_bit(kHeadDim)) != 0) {
      apply_mask_bits(s, coord, mask, m0, n0, pack_shift);
      return;
    }
    // No left bound (causal, right-only windows, the key-length tail of any instance): lo = 0,
    // so lo32 = -n0 <= 0 <= col and the lower test never fires. Dropping it (a uniform branch,
    // FA_SM90_FWD_MASK_SPLIT) leaves one compare and one select per score instead of two
    // compares and a select.
    constexpr bool kMaskSplit = (FA_SM90_FWD_MASK_SPLIT & head_dim_bit(kHeadDim)) != 0;
    if (kMaskSplit && (!kMasked || mask.left < 0)) {
#pragma unroll
      for (int r = 0; r < size<0>(s); ++r) {
        const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
        int64_t hi = mask.k_len;
        if (kMasked && mask.right >= 0) hi = cute::min(hi, mask.diag(row) + mask.right + 1);
        // Against the column's constant offset from the thread's first column: a compare with
        // an immediate, no per-column address arithmetic.
        const int col0 = get<1>(coord(0, 0));
        int lim = int(cute::max(hi, int64_t(0))) - n0 - col0;
        asm volatile("" : "+r"(lim));  // else the compiler folds col0 back into every compare
#pragma unroll
        for (int c = 0; c < size<1>(s); ++c)
          if (get<1>(coord(0, c)) - col0 >= lim) s(r, c) = -INFINITY;
      }
      return;
    }
#pragma unroll
    for (int r = 0; r < size<0>(s); ++r) {
      const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
      const int64_t diag = mask.diag(row);
      int64_t hi = mask.k_len, lo = 0;
      if (kMasked && mask.right >= 0) hi = cute::min(hi, diag + mask.right + 1);
      if (kMasked && mask.left >= 0) lo = cute::max(lo, diag - mask.left);
      // Clamp into [0, k_len] so the per-element test is 32-bit.
      const int hi32 = int(cute::max(hi, int64_t(0))) - n0;
      const int lo32 = int(cute::min(lo, mask.k_len)) - n0;
#pragma unroll
      for (int c = 0; c < size<1>(s); ++c) {
        const int col = get<1>(coord(0, c));
        if (col >= hi32 || col < lo32) s(r, c) = -INFINITY;
      }
    }
  }

  // apply_mask with the per-score test taken from bit masks (FA_SM90_FWD_MASK_R2P). A thread's
  // columns of a row are col0 + 8 (c / 2) + c % 2 for its c-th value (the wgmma accumulator's
  // column pairs; scripts/check_sm90_fwd_layout.cu checks it against CuTe), so "column offset
  // below x" is "c below cut(x)", and a row's allowed values [cut(lo), cut(hi)) are the set bits
  // of a mask. Testing consecutive bits of one register lets ptxas use R2P, which sets seven
  // predicates per instruction; the compare form spends one ISETP per score. The left bound costs
  // one more mask per 24 columns instead of a compare per score.
  template <class TensorS, class TensorC>
  __device__ static void apply_mask_bits(TensorS& s, TensorC const& coord, core::Mask const& mask,
                                         int m0, int n0, int pack_shift) {
    using namespace cute;
    constexpr int kCols = decltype(size<1>(s))::value;
    static_assert(kCols * 4 == kBlockN, "two values per 8 columns in each of a row's quads");
    // Values below column offset x (clamped into the block): 2 per whole 8 columns, plus the
    // pair's first, or both, within the last 8.
    auto cut = [](int x) {
      x = x < 0 ? 0 : (x > kCols * 4 ? kCols * 4 : x);
      return ((x >> 3) << 1) + ((x & 7) < 2 ? (x & 7) : 2);
    };
    const int col0 = get<1>(coord(0, 0));
#pragma unroll
    for (int r = 0; r < size<0>(s); ++r) {
      const int64_t row = m0 + (get<0>(coord(r, 0)) >> pack_shift);
      int64_t hi = mask.k_len, lo = 0;
      if (kMasked && mask.right >= 0) hi = cute::min(hi, mask.diag(row) + mask.right + 1);
      if (kMasked && mask.left >= 0) lo = cute::max(lo, mask.diag(row) - mask.left);
      // Offsets from the thread's first column, clamped into [0, kBlockN] by cut().
      const int hi_c = cut(int(cute::min(cute::max(hi - n0, int64_t(-8)), int64_t(kBlockN))) - col0);
      const int lo_c = cut(int(cute::min(cute::max(lo - n0, int64_t(-8)), int64_t(kBlockN))) - col0);
      // 24-value chunks: shifts stay below 32 (a shift by 32 is undefined), as in FA4's mask_r2p.
#pragma unroll
      for (int k = 0; k * 24 < kCols; ++k) {
        const uint32_t below_hi = (1u << cute::min(cute::max(hi_c - 24 * k, 0), 24)) - 1u;
        const uint32_t below_lo = (1u << cute::min(cute::max(lo_c - 24 * k, 0), 24)) - 1u;
        const uint32_t keep = below_hi & ~below_lo;
#pragma unroll
        for (int i = 0; i < 24 && k * 24 + i < kCols; ++i)
          if (!(keep & (1u << i))) s(r, k * 24 + i) = -INFINITY;
      }
    }
  }

  // Ping-pong: warpgroup w waits for its turn before issuing GEMMs and hands the turn to the
  // next warpgroup (w + 1 mod kConsumerWGs: the other one of two, a round robin of three) right
  // after issuing them. Every warpgroup takes the same number of turns per tile, so the rotation
  // simply continues from one tile to the next. Each barrier counts the 128 waiting threads and
  // the 128 of the warpgroup handing over the turn. Params::pingpong = false (run time) skips
  // every turn, the first arrival and the last wait alike.
  // FA_SM90_FWD_PINGPONG_RUNTIME=0 (build time) compiles the run-time switch out: the code before it.
  __device__ static bool pingpong_on(Params const& params) {
    return FA_SM90_FWD_PINGPONG_RUNTIME == 0 || params.pingpong;
  }
  __device__ static int pingpong_next(int consumer_wg) {
    return consumer_wg + 1 == kConsumerWGs ? 0 : consumer_wg + 1;
  }
  __device__ static void pingpong_wait(Params const& params, int consumer_wg) {
    if constexpr (kPingPong) {
      if (pingpong_on(params)) cutlass::arch::NamedBarrier::sync(2 * 128, kSchedulerBarrier0 + uint32_t(consumer_wg));
    }
  }
  __device__ static void pingpong_pass(Params const& params, int consumer_wg) {
    if constexpr (kPingPong) {
      if (pingpong_on(params))
        cutlass::arch::NamedBarrier::arrive(2 * 128, kSchedulerBarrier0 + uint32_t(pingpong_next(consumer_wg)));
    }
  }

  // Waits until a slot is loaded. cp.async (ablation) writes through the generic proxy, which
  // wgmma (async proxy) does not see without a proxy fence after the wait.
  template <class Pipe>
  __device__ static void wait_full(Pipe& pipe, int it) {
    pipe.consumer_wait(it);
    if constexpr (!kTmaLoad) cutlass::arch::fence_view_async_shared();
  }

  __device__ static void consume(Params const& params, SharedStorage& ss) {
    const int consumer_wg = (int(threadIdx.x) - kConsumerBase) / 128;  // 0 .. kConsumerWGs - 1
    // Warpgroup 0 goes first: the last warpgroup (the one that hands the turn to 0) opens its barrier.
    if (kPingPong && pingpong_on(params) && consumer_wg == kConsumerWGs - 1)
      cutlass::arch::NamedBarrier::arrive(2 * 128, kSchedulerBarrier0);
    Scheduler scheduler(params.sched);
    sched::TileCoord tc;
    int kv_it = 0, q_it = 0;  // same counters as the producer's
    // kEpiOverlap: a tile's converted O and LSE outlive consume_tile, whose next call stores them
    // once it has issued its own first Q·Kᵀ. Unused otherwise.
    using TensorRO = decltype(cute::make_tensor<OutElement>(
        cute::partition_fragment_C(TiledMmaPV{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{})
            .layout()));
    PendingEpilogue<TensorRO> pend;
#if FA_SM90_FWD_TIMELINE
    int tile_k = 0;  // tiles computed so far (the timeline's row)
#endif
#if FA_SM90_FWD_TIMELINE
    unsigned long long t_next_call = clock64();
#endif
    // kTileHandoff: the tiles come from the producer's records (iteration tile_it), the walk's
    // end is a record with m_block < 0. Otherwise every consumer walks the schedule itself.
    [[maybe_unused]] int tile_it = 0;
    [[maybe_unused]] NextTile next;  // kTilePrefetch: filled by the previous consume_tile
    [[maybe_unused]] Carry carry;    // kTileChain: the next tile's first block, computed already
    for (;;) {
      TileWork w;
      if constexpr (kTilePrefetch) {
        TileRecord rec;
        if (next.valid) rec = next.rec;
        else rec = ss.tiles.wait(tile_it);
        next.valid = false;
        tc = rec.tc;
        if (tc.m_block < 0) break;
        w = rec.w;
      } else if constexpr (kTileHandoff) {
        TileRecord const& rec = ss.tiles.wait(tile_it);
        tc = rec.tc;
        if (tc.m_block < 0) break;
        w = rec.w;
      } else {
        if (!scheduler.template next<kCluster ? -1 : 0>(tc)) break;
      }
#if FA_SM90_FWD_TIMELINE
      const unsigned long long t_next_done = clock64();
#endif
      if constexpr (!kTileHandoff) {
        if (!tile_work(params, tc, w)) continue;
      }
#if FA_SM90_FWD_TIMELINE
      const unsigned long long t_work_done = clock64();
      unsigned long long* tl = nullptr;
      if (params.timeline != nullptr && params.sched.persistent && tile_k < params.sched.rounds)
        tl = params.timeline + ((int64_t(blockIdx.x) * params.sched.rounds + tile_k) * kConsumerWGs + consumer_wg) *
                                   int(FwdStamp::kCount);
      ++tile_k;
      stamp(tl, FwdStamp::NextCall, t_next_call);
      stamp(tl, FwdStamp::NextDone, t_next_done);
      stamp(tl, FwdStamp::WorkDone, t_work_done);
#endif
      // The epilogue re-derives the tile from its round, or re-reads it from its handoff record
      // (released only after the epilogue).
      consume_tile(params, ss, tc, w, kv_it, q_it, kTileHandoff ? tile_it : scheduler.round - 1,
                   pend, next, carry FA_FWD_TL_ARG);
      if constexpr (kTileHandoff) ss.tiles.release(tile_it++);
      if (w.n_blocks > 0) {
        kv_it += w.n_blocks;
        ++q_it;
      }
#if FA_SM90_FWD_TIMELINE
      t_next_call = clock64();
#endif
    }
    if constexpr (kEpiOverlap) {
      int ctid = int(threadIdx.x) - kConsumerBase;
      asm volatile("" : "+r"(ctid));  // as in consume_tile: addresses derived here, not kept live
      if (pend.valid) {
        if constexpr (kEpiLate)
          finish_pending(params, ss, pend, ctid);  // O is staged already
        else
          epilogue_store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
      }
    }
    // The last pass left warpgroup 0's barrier opened by the last warpgroup without a matching
    // wait; consume it so no arrival is left pending when the CTA exits.
    if (kPingPong && pingpong_on(params) && consumer_wg == 0) pingpong_wait(params, consumer_wg);
    // The shared-memory source of the last TMA store must stay valid until the store has read it.
    if constexpr (kTmaStoreO) {
      if (threadIdx.x % 128 == 0) cute::tma_store_wait<0>();
    }
  }

  template <class Pending>
  __device__ static void consume_tile(Params const& params, SharedStorage& ss,
                                      sched::TileCoord const& tc_main, TileWork const& w, int kv_it,
                                      int q_it, int tile_round, Pending& pend,
                                      [[maybe_unused]] NextTile& next,
                                      [[maybe_unused]] Carry& carry FA_FWD_TL_PARAM) {
    FA_FWD_TL_NONE
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const core::SeqInfo& seq = w.seq;
    if constexpr (FA_SM90_FWD_TIMELINE != 0) {
      uint32_t smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      stamp(tl, FwdStamp::Info,
            uint64_t(uint32_t(w.n_blocks) & 0xffffu) | (uint64_t(uint32_t(tc_main.m_block)) << 16) |
                (uint64_t(smid) << 40));
      stamp(tl, FwdStamp::Start);
    }
    const int m0 = w.m0;
    const int n_block_max = w.n_block_max;
    const int n_blocks = w.n_blocks;
    int ctid = int(threadIdx.x) - kConsumerBase;  // thread index among the consumers
    // Opaque per tile: everything derived from the thread index (fragment coordinates, the
    // epilogue's addresses) is recomputed inside the tile loop instead of being hoisted out of it
    // and kept live (spilled) across the mainloop.
    asm volatile("" : "+r"(ctid));
    const int consumer_wg = ctid / 128;  // 0 .. kConsumerWGs - 1

    TiledMmaQK mma_qk;
    TiledMmaPV mma_pv;
    auto thr_qk = mma_qk.get_thread_slice(ctid);
    auto thr_pv = mma_pv.get_thread_slice(ctid);
    Tensor sQ = make_tensor(make_smem_ptr(q_slot(ss, q_it)), SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), SmemLayoutKV{});
    Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), SmemLayoutVt{});
    // Q's smem descriptors (one 64-bit descriptor per k-step, kHeadDim / 16 of them) depend on the
    // warpgroup only. Derived from the opaque ctid the compiler treats them as per-thread values and
    // keeps all of them live in vector registers across the mainloop (32 at d256: the masked d192 /
    // d256 instances spilled them). From a warpgroup index broadcast by shfl (warp-uniform to the
    // compiler, as in CUTLASS's canonical_warp_group_idx) they are uniform-datapath values instead.
    // Same descriptors: every thread of a warpgroup holds the same SS-wgmma A fragment.
#if FA_SM90_FWD_Q_DESC_UNIFORM
    const int wg_uniform = __shfl_sync(0xffffffffu, consumer_wg, 0);
    auto q_descs = [&](auto const& sQx) { return mma_qk.get_thread_slice(wg_uniform * 128).partition_fragment_A(sQx); };
#else
    auto q_descs = [&](auto const& sQx) { return thr_qk.partition_fragment_A(sQx); };
#endif
    Tensor tSrQ = q_descs(sQ);  // smem descriptors
    Tensor tSrK = thr_qk.partition_fragment_B(sK);   // (MMA, MMA_N, MMA_K, stage)
    Tensor tOrV = thr_pv.partition_fragment_B(sVt);  // (MMA, MMA_N, MMA_K, stage)
    Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});
    Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<kHeadDim>>{});
    // P for the P·V wgmma's A operand: 16-bit, the accumulator's own layout (same registers
    // order); fp8, packed 4 per register in the k32 fragment order (PFragFp8, convert_p).
    Tensor rP_own = [&] {
      if constexpr (kFp8) return make_tensor<Element>(PFragFp8{});
      else return make_tensor<Element>(tSrS.layout());
    }();
    // kTileChain: P lives in the carry, where the previous call may have left this tile's first.
    // Through a pointer: a lambda returning the reference draws EDG's #836-D, "returning
    // reference to local variable", about the captured rP_own.
    auto& rP = *[&] {
      if constexpr (kTileChain) return &carry.rP;
      else return &rP_own;
    }();
    // This tile's first Q·Kᵀ, softmax and P were done by the previous call (kTileChain).
    const bool chained_in = [&] {
      if constexpr (kTileChain) return carry.valid;
      else return false;
    }();
    Tensor tOrP = [&] {
      if constexpr (kFp8) return make_tensor(rP.data(), PFragFp8{});
      else return make_tensor(rP.data(), acc_as_a_operand_layout(tSrS.layout()));
    }();

    Tensor s_rc = make_tensor(tSrS.data(), acc_rowcol_layout(tSrS.layout()));
    Tensor o_rc = make_tensor(tOrO.data(), acc_rowcol_layout(tOrO.layout()));
    // Tile coordinates (row, col) of each accumulator element, for masking and stores.
    Tensor cS = thr_qk.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
    Tensor cS_rc = make_tensor(cS.data(), acc_rowcol_layout(cS.layout()));
    constexpr int kRows = decltype(size<0>(s_rc))::value;

    const float scale_log2 = params.score_scale_log2;
    static_assert(kRows == Softmax::kRowsC);
    Softmax softmax(scale_log2);
    float rescale_o[kRows];
    if constexpr (kTileChain) {
      if (chained_in) {
        softmax = carry.softmax;
        // Block 0's factor multiplies an O of zeros (FA_SM90_FWD_EARLY_RESCALE): any finite one.
#pragma unroll
        for (int r = 0; r < kRows; ++r) rescale_o[r] = 0.f;
      }
    }
    // fp8 scales (core/fp8.hpp): this warpgroup's 64 rows are one Q scale block (block
    // kConsumerWGs · m_block + warpgroup); K has one scale per kKBlock keys, kKScales per key block,
    // read from global one block ahead of their use (k_scale_next); V's one scale multiplies O in
    // the epilogue. Unused (and compiled out) in the 16-bit kernels.
    float c_q = 0.f, v_scale = 1.f, k_scale_next[kKScales] = {};
    const float* k_scale_row = nullptr;
    // K scales of key block n_block. With several per block, the last block's upper halves may lie
    // past Nk (k_blocks = Nk / kKBlock rounded up): they read the last scale (> 0), and their keys
    // are masked to -inf anyway.
    auto load_k_scales = [&](int n_block) {
#pragma unroll
      for (int h = 0; h < kKScales; ++h) {
        if constexpr (kKScales == 1) {
          k_scale_next[h] = __ldg(k_scale_row + n_block);
        } else {
          k_scale_next[h] =
              __ldg(k_scale_row + cute::min(int64_t(n_block) * kKScales + h, p.k_blocks - 1));
        }
      }
    };
    if constexpr (kFp8) {
      const int64_t bh_kv = int64_t(tc_main.batch) * p.heads_kv + tc_main.head / p.group_size();
      const int64_t q_block = cute::min(int64_t(tc_main.m_block) * (kBlockM / kWgRows) + consumer_wg,
                                        p.q_blocks - 1);
      c_q = scale_log2 * __ldg(p.q_scale + (int64_t(tc_main.batch) * p.heads_q + tc_main.head) * p.q_blocks + q_block);
      v_scale = __ldg(p.v_scale + bh_kv);
      k_scale_row = p.k_scale + bh_kv * p.k_blocks;
      if (n_blocks > 0) {
        // One scale: the address arithmetic of the one-scale kernels before the key-block
        // switches, which keeps their SASS byte-identical.
        if constexpr (kKScales == 1) k_scale_next[0] = __ldg(k_scale_row + n_block_max - 1);
        else load_k_scales(n_block_max - 1);
      }
    }
    // Folds key block n_block's scores into the softmax. fp8: its K scales (loaded the block
    // before) into the exponent's factors, then the next block's scales load under this softmax.
    auto softmax_block = [&](int n_block) {
      if constexpr (kFp8) {
        float c[kKScales];
#pragma unroll
        for (int h = 0; h < kKScales; ++h) c[h] = c_q * k_scale_next[h];
        load_k_scales(cute::max(n_block - 1, 0));
        softmax.update_scaled(s_rc, rescale_o, c);
      } else {
        softmax.update(s_rc, rescale_o);
      }
    };
    // kEpiOverlap: zeroed after the previous tile's stores (below), so O's registers are free
    // while they run. kEpiLate carries no O in registers.
    if (!kEpiOverlap || kEpiLate || n_blocks == 0) clear(tOrO);

    // Per-block score post-processing: softcap, then the mask where the block needs one.
    // (tw: the tile whose block it is; the chained tail masks the next tile's first block.)
    auto transform_and_mask_of = [&](TileWork const& tw, int n_block) {
      if constexpr (kSoftcap) {
        // softcap · tanh(qk · scale / softcap); the softcap factor itself is in scale_log2. A
        // kSoftcap instance also serves softcap = 0 calls (prescale 0): the branch is uniform.
        if (params.softcap_prescale > 0.f) {
#pragma unroll
          for (int i = 0; i < size(tSrS); ++i) tSrS(i) = softcap_tanh(tSrS(i) * params.softcap_prescale);
        }
      }
      const int n0 = n_block * kBlockN;
      if (!tw.mask.block_unmasked(tw.m0, tw.m_end, n0, n0 + kBlockN))
        apply_mask(s_rc, cS_rc, tw.mask, tw.m0, n0, pack_shift_of(params));
    };
    auto transform_and_mask = [&](int n_block) { transform_and_mask_of(w, n_block); };
    auto convert_p = [&]() {
      constexpr int kN = decltype(size(tSrS))::value;
      if constexpr (kFp8) {
        // In place: each register gathers 4 of the thread's own S values (p_fp8_source), no
        // shuffles. The converter puts element 0 in the low byte, as the fragment wants.
        cutlass::NumericArrayConverter<Element, float, 4> conv;
        uint32_t* p32 = reinterpret_cast<uint32_t*>(rP.data());
#pragma unroll
        for (int reg = 0; reg < kN / 4; ++reg) {
          cutlass::Array<float, 4> f;
#pragma unroll
          for (int b = 0; b < 4; ++b) f[b] = tSrS(p_fp8_source(reg, b));
          const cutlass::Array<Element, 4> e = conv(f);
          p32[reg] = reinterpret_cast<uint32_t const&>(e);
        }
      } else {
        cutlass::NumericArrayConverter<Element, float, kN> conv;
        *reinterpret_cast<cutlass::Array<Element, kN>*>(rP.data()) =
            conv(*reinterpret_cast<cutlass::Array<float, kN> const*>(tSrS.data()));
      }
    };
    // FA_SM90_FWD_EARLY_RESCALE (above): a compile-time constant unless the macro is 2.
    const bool early_rescale =
        FA_SM90_FWD_EARLY_RESCALE == 1 || (FA_SM90_FWD_EARLY_RESCALE == 2 && params.early_rescale);
    auto rescale = [&]() {
      if constexpr (FA_SM90_FWD_RESCALE_SKIP != 0) {  // fwd_softmax.hpp
        bool unchanged = true;
#pragma unroll
        for (int r = 0; r < kRows; ++r) unchanged = unchanged && rescale_o[r] == 1.f;
        if (__all_sync(0xffffffffu, unchanged)) return;
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int c = 0; c < size<1>(o_rc); ++c) o_rc(r, c) *= rescale_o[r];
    };

    if (n_blocks > 0) {
      auto& pipe_k = ss.pipe_k;
      auto& pipe_v = ss.pipe_v;
      using Ring = PipeKV;
      // Non-specialised ablation: consumer thread 0 issues the TMA loads between its own GEMMs,
      // only where every slot it waits for is freed by work that needs nothing more from its
      // warpgroup (so ping-pong cannot deadlock): Q and blocks 0, 1 at the tile start, K_{j+1}
      // once iteration j's GEMMs are issued, V_{j+1} once this warpgroup has released V_{j-1}.
      auto issue = [&](int kind, int it) {
        if constexpr (!kWarpSpecialised) {
          if (ctid == 0 && it < n_blocks) load_one(params, ss, tc_main, w, kind, it, kv_it, q_it);
        }
      };
      issue(1, 0);
      issue(0, 0);
      issue(2, 0);
      issue(1, 1);
      issue(2, 1);
      if (!chained_in) {
        wait_full(ss.pipe_q, q_it);
        stamp(tl, FwdStamp::QIn);
      }

      if constexpr (kIntraWgOverlap) {
        // Block 0: S = Q·K₀ᵀ, softmax → P₀ (a chained tile has P₀ from the previous call).
        if (!chained_in) {
          wait_full(pipe_k, kv_it);
          stamp(tl, FwdStamp::KIn);
          pingpong_wait(params, consumer_wg);
          stamp(tl, FwdStamp::Turn);
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, Ring::stage(kv_it)), tSrS);
          pingpong_pass(params, consumer_wg);
          if constexpr (kEpiOverlap && !kEpiLate) {
            // The previous tile's stores run while this tile's first Q·Kᵀ is in flight. (Its O was
            // converted before: reading accumulator registers here, with a wgmma in flight, makes
            // ptxas serialise the wgmma, C7517, even though that wgmma does not write them.)
            if (pend.valid)
              epilogue_store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
            pend.valid = false;
            clear(tOrO);
          }
          warpgroup_wait<0>();
          stamp(tl, FwdStamp::S0Done);
          release_kv(pipe_k, kv_it, params);
          if (kEarlyQRelease && n_blocks == 1) ss.pipe_q.consumer_release(q_it);  // its only Q·Kᵀ
          transform_and_mask(n_block_max - 1);
          softmax_block(n_block_max - 1);
          convert_p();
        } else {
          // Timeline: the block-0 phases are empty here; they ran in the previous tile's tail.
          stamp(tl, FwdStamp::QIn);
          stamp(tl, FwdStamp::KIn);
          stamp(tl, FwdStamp::Turn);
          stamp(tl, FwdStamp::S0Done);
        }
#if FA_SM90_FWD_TIMELINE
        unsigned long long waits[5] = {};  // FwdStamp::KWait.. (timeline builds)
#endif
        for (int it = 1; it < n_blocks; ++it) {
          const int n_block = n_block_max - 1 - it;
          const int sk = Ring::stage(kv_it + it);
          const int sv = Ring::stage(kv_it + it - 1);
          FA_FWD_TIMED(0, wait_full(pipe_k, kv_it + it));
          FA_FWD_TIMED(2, pingpong_wait(params, consumer_wg));
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, sk), tSrS);  // S_it in flight
          // O holds the blocks before it-1 at the max before block it-1's; block it-1's softmax
          // left the factor to block it-1's max in rescale_o (on it = 1: O = 0, factor 0).
          if (early_rescale) rescale();
          FA_FWD_TIMED(1, wait_full(pipe_v, kv_it + it - 1));
          wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, sv), tOrO);  // O += P_{it-1} V_{it-1}
          pingpong_pass(params, consumer_wg);
          issue(1, it + 1);
          if constexpr (kEpiLate) {
            // The previous tile's TMA store and LSE under this tile's first Q·Kᵀ / P·V pair,
            // after this warpgroup's first softmax instead of before it (FA_SM90_FWD_EPI_LATE).
            if (it == 1 && pend.valid) finish_pending(params, ss, pend, ctid);
          }
          FA_FWD_TIMED(3, warpgroup_wait<1>());  // S_it done (groups retire in order)
          release_kv(pipe_k, kv_it + it, params);
          // The tile's last Q·Kᵀ has retired: nothing reads this Q slot any more.
          if (kEarlyQRelease && it == n_blocks - 1) ss.pipe_q.consumer_release(q_it);
          transform_and_mask(n_block);
          softmax_block(n_block);  // P_it in tSrS; O's factor kept for after PV
          FA_FWD_TIMED(4, warpgroup_wait<0>());  // PV done: tOrO final for this step, tOrP free
          release_kv(pipe_v, kv_it + it - 1, params);
          issue(2, it + 1);
          if (!early_rescale) rescale();
          convert_p();
        }
        // Every Q·Kᵀ of the tile has retired: the producer may reload this Q slot (one slot: the
        // next tile's Q, under this tile's last P·V and epilogue; two: the tile after next's).
        // FA_SM90_FWD_EARLY_Q_RELEASE released it already, right after the last Q·Kᵀ's wait.
        if (!kEarlyQRelease) ss.pipe_q.consumer_release(q_it);
        const int last = kv_it + n_blocks - 1;
        // The last block's factor (FA_SM90_FWD_EARLY_RESCALE), before its P·V and outside the
        // ping-pong turn: every earlier P·V has retired, so O is not in flight here.
        if (early_rescale) rescale();
        wait_full(pipe_v, last);
        // kTileChain: the next tile's first Q·Kᵀ joins this turn, where it has a tile to go on
        // with (both warpgroups read the same record, so they take the same turns). It waits for
        // that tile's Q (the other slot) and K₀ first: ~500-950 cycles per tile, median, with
        // FA_SM90_FWD_Q_AHEAD (session 33's timeline), which is why the switch lost.
        // The record stays in shared memory (read where used, not copied: registers are short
        // at d64's three warpgroups); the next call's wait for it returns at once.
        [[maybe_unused]] bool chain_out = false;
        [[maybe_unused]] const int kv_next = kv_it + n_blocks;
        [[maybe_unused]] TileRecord const* next_rec = nullptr;
        if constexpr (kTileChain) {
          // Published once the producer had issued this tile's loads, this last V among them.
          [[maybe_unused]] unsigned long long t_tail = FA_SM90_FWD_TIMELINE ? clock64() : 0;
          // Timeline: cycles since t_tail into `slot`, then restart.
          auto tail_stamp = [&](FwdStamp slot) {
            if constexpr (FA_SM90_FWD_TIMELINE != 0) {
              const unsigned long long now = clock64();
              stamp(tl, slot, now - t_tail);
              t_tail = now;
            }
          };
          next_rec = &ss.tiles.wait(tile_round + 1);
          chain_out = next_rec->tc.m_block >= 0 && next_rec->w.n_blocks > 0;
          tail_stamp(FwdStamp::TailRec);
          if (chain_out) {
            wait_full(ss.pipe_q, q_it + 1);
            tail_stamp(FwdStamp::TailQ);
            wait_full(pipe_k, kv_next);
            tail_stamp(FwdStamp::TailK);
          }
        }
        // The last P·V's turn, and after it the previous tile's deferred stores.
        auto last_pv = [&]() {
          wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, Ring::stage(last)), tOrO);
          pingpong_pass(params, consumer_wg);
          if constexpr (kEpiLate) {
            if (pend.valid) finish_pending(params, ss, pend, ctid);  // a one-block tile: its only P·V
          }
        };
        {
          [[maybe_unused]] const unsigned long long t_turn = FA_SM90_FWD_TIMELINE ? clock64() : 0;
          pingpong_wait(params, consumer_wg);
          if constexpr (kTileChain && FA_SM90_FWD_TIMELINE != 0) stamp(tl, FwdStamp::TailTurn, clock64() - t_turn);
        }
        if (!chain_out) {
          last_pv();
          if constexpr (kTilePrefetch && !kTileChain) {
            // The producer published it once it had issued this tile's loads, all of which this
            // warpgroup has waited for by now; tile_round is the handoff iteration.
            next.rec = ss.tiles.wait(tile_round + 1);
            next.valid = true;
          }
          warpgroup_wait<0>();
        } else if constexpr (kTileChain) {
          // A path of its own, not a branch around the Q·Kᵀ alone: with the wgmma issued under
          // a condition ptxas serialises every wgmma of the kernel (C7514).
          Tensor tSrQn = q_descs(make_tensor(make_smem_ptr(q_slot(ss, q_it + 1)), SmemLayoutQ{}));
          wgmma_gemm<true, -1>(mma_qk, tSrQn, tSrK(_, _, _, Ring::stage(kv_next)), tSrS);
          last_pv();
          // The next tile's block 0 under this tile's last P·V, as a mainloop step does it: the
          // Q·Kᵀ went first, so it retires first. Its softmax state goes to the carry; this
          // tile's stays for its epilogue.
          warpgroup_wait<1>();
          release_kv(pipe_k, kv_next, params);
          TileWork const& nw = next_rec->w;
          if (kEarlyQRelease && nw.n_blocks == 1) ss.pipe_q.consumer_release(q_it + 1);
          transform_and_mask_of(nw, nw.n_block_max - 1);
          carry.softmax = Softmax(scale_log2);
          float unused_factor[kRows];
          carry.softmax.update(s_rc, unused_factor);
          warpgroup_wait<0>();
        }
        stamp(tl, FwdStamp::LoopEnd);
#if FA_SM90_FWD_TIMELINE
#pragma unroll
        for (int i = 0; i < 5; ++i) stamp(tl, FwdStamp(int(FwdStamp::KWait) + i), waits[i]);
#endif
        release_kv(pipe_v, last, params);
        if constexpr (kTileChain) {
          // This tile's P has been read: the next tile's first P takes its registers.
          if (chain_out) convert_p();
          carry.valid = chain_out;
        }
      } else {
        for (int it = 0; it < n_blocks; ++it) {
          const int n_block = n_block_max - 1 - it;
          const int stage = Ring::stage(kv_it + it);
          wait_full(pipe_k, kv_it + it);
          pingpong_wait(params, consumer_wg);
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, stage), tSrS);
          pingpong_pass(params, consumer_wg);
          warpgroup_wait<0>();
          release_kv(pipe_k, kv_it + it, params);
          if (it == n_blocks - 1) ss.pipe_q.consumer_release(q_it);  // last Q·Kᵀ retired
          transform_and_mask(n_block);
          softmax_block(n_block);
          rescale();
          convert_p();
          wait_full(pipe_v, kv_it + it);
          pingpong_wait(params, consumer_wg);
          wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, stage), tOrO);
          pingpong_pass(params, consumer_wg);
          warpgroup_wait<0>();
          release_kv(pipe_v, kv_it + it, params);
        }
      }
    }

    // ---- epilogue: O / l, LSE, stores -----------------------------------------------------
    if constexpr (kEpiLate) {
      // O goes to its shared-memory buffer now (its registers are free for the next tile); the
      // fence, the TMA store and the LSE stores wait in `pend`. Direct stores are not deferred.
      // A tile without keys issued no GEMMs: the previous tile's are still pending, and they
      // read the buffer this one's O is about to overwrite.
      if (pend.valid) finish_pending(params, ss, pend, ctid);
      Tensor rO = make_tensor<OutElement>(tOrO.layout());
      epilogue_convert(softmax, tOrO, rO, pend.lse);
      stamp(tl, FwdStamp::EpiConv);
      bool staged = false;
      if constexpr (kTmaStoreO) {
        if (params.tma_store_o) {
          Tensor cO =
              thr_pv.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
          stage_o_tma(ss, consumer_wg, cO, rO FA_FWD_TL_ARG);
          staged = true;
        }
      }
      if (staged) {
        pend.valid = true;
        pend.tc = tc_main;
      } else {
        epilogue_store(params, ss, tc_main, w, rO, pend.lse, ctid FA_FWD_TL_ARG);
      }
      stamp(tl, FwdStamp::End);
      return;
    }
    if constexpr (kEpiOverlap) {
      // A tile without keys issued no Q·Kᵀ, so the previous tile's stores are still pending.
      if (pend.valid)
        epilogue_store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
      epilogue_convert(softmax, tOrO, pend.rO, pend.lse);
      pend.valid = true;  // the next tile's call (or consume) stores it
      pend.tc = tc_main;
      pend.w = w;
      stamp(tl, FwdStamp::End);
      return;
    }
    // The tile's coordinates are re-derived from its round (a few integer ops; opaque, so not
    // merged with the copies computed before the mainloop) instead of being kept live across the
    // mainloop: at d256 the O accumulator leaves no register to spare.
    // FA_SM90_FWD_KEEP_TILE: head dims with registers to spare keep the copies made before the
    // mainloop instead (the re-derivation is ~100-200 instructions per warp and tile: three
    // integer divisions in the scheduler's walk and the mask's key range in 64-bit arithmetic).
    constexpr bool kKeepTile = (FA_SM90_FWD_KEEP_TILE & head_dim_bit(kHeadDim)) != 0;
    sched::TileCoord tc_re;
    TileWork w_re;
    if constexpr (!kKeepTile) {
      asm volatile("" : "+r"(tile_round));
      if constexpr (kTileHandoff) {
        TileRecord const& rec = ss.tiles.slot[TileRing::stage(tile_round)];
        tc_re = rec.tc;
        w_re = rec.w;
      } else {
        Scheduler::template tile_of_round<kCluster ? -1 : 0>(params.sched, tile_round, tc_re);
        tile_work(params, tc_re, w_re);
      }
    }
    const sched::TileCoord& tc = kKeepTile ? tc_main : tc_re;
    const TileWork& we = kKeepTile ? w : w_re;
    float lse[kRows];
    Tensor rO = make_tensor<OutElement>(tOrO.layout());
    epilogue_convert(softmax, tOrO, rO, lse, v_scale);
    stamp(tl, FwdStamp::EpiConv);
    epilogue_store(params, ss, tc, we, rO, lse, ctid FA_FWD_TL_ARG);
    stamp(tl, FwdStamp::End);
  }

  // Epilogue, first half: O / l → OutElement (rO) and the rows' LSE. fp8: O · (v_scale / l).
  template <class TensorO, class TensorRO>
  __device__ __forceinline__ static void epilogue_convert(Softmax& softmax, TensorO& tOrO, TensorRO& rO,
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
  __device__ __forceinline__ static void epilogue_store(Params const& params, SharedStorage& ss,
                                                        sched::TileCoord const& tc, TileWork const& we,
                                                        TensorRO const& rO, float const (&lse)[Softmax::kRowsC],
                                                        int ctid FA_FWD_TL_PARAM) {
    FA_FWD_TL_NONE
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int consumer_wg = ctid / 128;
    TiledMmaPV mma_pv;
    auto thr_pv = mma_pv.get_thread_slice(ctid);
    Tensor cO = thr_pv.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
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
      // One address per row, the row's column pairs at constant offsets from it (FA_SM90_FWD_O_ROW_PTR).
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
          const int q_pos = we.m0 + (row >> pack_shift_of(params));
          if (q_pos < we.seq.q_len) {
            const int col0 = get<1>(cO_rc(r, 0));
            OutElement* o_row = o_base +
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
        const int q_pos = we.m0 + (row >> pack_shift_of(params));
        if (q_pos < we.seq.q_len) {
          const int64_t off =
              p.o_str.offset(tc.batch, we.seq.q_start + q_pos, tile_row_head(params, tc, row)) + col;
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
        const int q_pos = we.m0 + (row >> pack_shift_of(params));
        if (get<1>(cO_rc(r, 0)) == 0 && q_pos < we.seq.q_len)
          p.lse[p.lse_offset(tc.batch, tile_row_head(params, tc, row), we.seq.q_start + q_pos)] = lse[r];
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
      Tensor cO = mma_pv.get_thread_slice(ctid).partition_C(
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
  __device__ __forceinline__ static void store_o_rows_wide(Params const& params, sched::TileCoord const& tc,
                                                           TileWork const& we, TensorCO const& cO,
                                                           TensorRO const& rO) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    Tensor cO_rc = make_tensor(cO.data(), acc_rowcol_layout(cO.layout()));
    Tensor rO_rc = make_tensor(rO.data(), acc_rowcol_layout(rO.layout()));
    constexpr int kWords = decltype(size<1>(rO_rc))::value / 2;
    static_assert(kWords * 8 == kHeadDim, "a row's words cover the head dim (one wgmma atom per row)");
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
      const int q_pos = we.m0 + (row >> pack_shift_of(params));
      if (q_pos < we.seq.q_len) {
        OutElement* o_row = static_cast<OutElement*>(p.o) +
                            p.o_str.offset(tc.batch, we.seq.q_start + q_pos, tile_row_head(params, tc, row)) +
                            quad_store_column(q, kOStoreRounds);
        quad_store_row<kOStoreRounds>(o_row, w);
      }
    }
  }

  // Query head of tile row `row`: the tile's head, or packed, head-in-group row & (G - 1) of the
  // tile's KV head (pack_shift = 0 makes both the same expression).
  __device__ static int tile_row_head(Params const& params, sched::TileCoord const& tc, int row) {
    const int shift = pack_shift_of(params);
    return (tc.head << shift) + (row & ((1 << shift) - 1));
  }

  // Byte offset in the (1024-byte aligned) SmemLayoutOHalf buffer of the row that `lane` addresses
  // for stmatrix number j (columns 16j..16j+15): row `row`, column half lane >> 4. The GMMA atoms'
  // swizzle acts on byte addresses (smem_ptr_flag), so it is applied to the unswizzled byte offset.
  CUTE_HOST_DEVICE static uint32_t o_stsm_offset(int row, int j, int lane) {
    constexpr SmemLayoutOHalf l{};
    return uint32_t(l.layout_a()(int(sizeof(OutElement)) * int(l.layout_b()(row, j * 16 + (lane >> 4) * 8))));
  }

  // TMA-store epilogue of one consumer warpgroup: its 64 rows go registers → its half of the O
  // buffer (same swizzle as Q, so the 32-bit pair stores of a warp hit distinct banks) → one
  // thread issues the store. Two halves, which FA_SM90_FWD_EPI_LATE runs a tile apart.
  template <class TensorCO, class TensorRO>
  __device__ __forceinline__ static void store_o_tma(Params const& params, SharedStorage& ss,
                                                     sched::TileCoord const& tc, int m0, int64_t q_len,
                                                     int consumer_wg, TensorCO const& cO,
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
    stamp(tl, FwdStamp::EpiBar);
    if constexpr (FA_SM90_FWD_O_STSM != 0) {
      // Registers 4j..4j+3 (values 8j..8j+7: rows r, r+8 of columns 16j..16j+15) are the four
      // 8×8 matrices of instruction j; lane L addresses row L & 15, column half L >> 4 of them.
      int tid = int(threadIdx.x);
      // kTileChain: recomputed per tile rather than hoisted out of the tile loop and kept live
      // (d64's three warpgroups spilled two of these offsets).
      if constexpr (kTileChain) asm volatile("" : "+r"(tid));
      const int lane = tid % 32;
      const int row = (tid % 128) / 32 * 16 + (lane & 15);
      const uint32_t base = cast_smem_ptr_to_uint(ss.o.data() + consumer_wg * cosize_v<SmemLayoutOHalf>);
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

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, Kernel::kCtasPerSm)
    sm90_fwd_kernel(__grid_constant__ const typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) char smem_raw[];
  Kernel::run(params, smem_raw);
#endif
}

// ---- host side --------------------------------------------------------------------------
// TMA needs 16-byte aligned base addresses and 16-byte multiple strides.
inline bool tma_ok(const void* ptr, const core::Strides& s, size_t elem) {
  auto a16 = [](int64_t bytes) { return bytes % 16 == 0; };
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && a16(s.row * int64_t(elem)) &&
         a16(s.head * int64_t(elem)) && a16(s.batch * int64_t(elem));
}
// The epilogue stores O as 32-bit column pairs.
inline bool pair_store_ok(const void* ptr, const core::Strides& s) {
  return reinterpret_cast<uintptr_t>(ptr) % 4 == 0 && s.row % 2 == 0 && s.head % 2 == 0 &&
         s.batch % 2 == 0;
}

// The packed-GQA Q map: Q seen as (d, G, rows, KV head, batch), so one box of
// (box_cols, G, block_m / G, 1, 1) holds block_m rows (query position, head in group) of one KV
// head. Same swizzle and zero fill as cute's maps. False when the driver rejects it.
template <class Element>
bool make_packed_q_map(const core::AttnParams& p, int group, int64_t rows, int batches,
                       int64_t batch_stride, int box_cols, int block_m, int swizzle_bytes,
                       cute::TmaDescriptor* map) {
  const uint64_t e = sizeof(Element);
  const cuuint64_t dims[5] = {cuuint64_t(p.head_dim), cuuint64_t(group), cuuint64_t(rows),
                              cuuint64_t(p.heads_kv), cuuint64_t(batches)};
  const cuuint64_t strides[4] = {cuuint64_t(p.q_str.head) * e, cuuint64_t(p.q_str.row) * e,
                                 cuuint64_t(p.q_str.head) * e * cuuint64_t(group),
                                 cuuint64_t(batch_stride) * e};
  const cuuint32_t box[5] = {cuuint32_t(box_cols), cuuint32_t(group), cuuint32_t(block_m / group), 1, 1};
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  const CUtensorMapSwizzle swizzle = swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                           : CU_TENSOR_MAP_SWIZZLE_32B;
  const CUtensorMapDataType type = std::is_same_v<Element, cutlass::bfloat16_t>
                                       ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      map, type, 5, const_cast<void*>(p.q), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// K/V bytes per L2 section of the persistent tile walk (sched::StaticLptScheduler) for equal-weight
// tiles (non-causal). Smaller sections put fewer (batch, head) pairs in one round, so more of a
// head's query blocks run at the same moment and read its K/V from L2 while it is there (N 512,
// d128, 32 MB: a round of 132 tiles holds query block 0 of 128 heads, each K/V read from DRAM by
// one CTA and kept in L2 for the next three rounds; 4 MB: 16 heads × 4 query blocks per section).
// Causal walks keep 32 MB (sm90_fwd_causal_l2_budget_bytes), capped at two rounds of tiles per
// section (FA_SM90_FWD_CAUSAL_SECTION_ROUNDS): their sections restart the snake, and a section of
// fewer tiles than CTAs would leave CTAs idle for a round.
// FA_SM90_FWD_L2_BUDGET_MB: 0 (default) = the rule below; 1..4096 = that budget for every shape
// (32 = the scheduler's own constant, the behaviour before the rule). The environment variable of
// the same name (1..4096, read once per process) overrides both, so one build compares budgets.
// The rule, from H200 session 5 round 1 (non-causal N 512..8k, 4 MB against 32 MB): 4 MB won at
// every d64 and d128 shape (d128 +2..+7%, d64 -1..+2%) and at d256 N <= 2k (+1..+4%), and lost at
// d256 N 4k / 8k (-2%, 4 / 8 MB of K/V per head): 32 MB where the head dim is above 128 and one
// head's K/V is over 2 MB, 4 MB elsewhere (d192, not measured, follows d256).
#ifndef FA_SM90_FWD_L2_BUDGET_MB
#define FA_SM90_FWD_L2_BUDGET_MB 0
#endif
inline int64_t sm90_fwd_l2_budget_bytes(int head_dim, int64_t kv_bytes_per_head) {
  static const int64_t fixed_mb = [] {
    int64_t mb = FA_SM90_FWD_L2_BUDGET_MB;
    if (const char* v = std::getenv("FA_SM90_FWD_L2_BUDGET_MB"); v && *v) {
      const long x = std::strtol(v, nullptr, 10);
      if (x >= 1 && x <= 4096) mb = x;
    }
    return mb;
  }();
  if (fixed_mb > 0) return fixed_mb << 20;
  return int64_t(head_dim > 128 && kv_bytes_per_head > (int64_t(2) << 20) ? 32 : 4) << 20;
}

// Causal walks' L2 section budget, a run-time experiment (FA_SM90_FWD_CAUSAL_L2_BUDGET_MB,
// 1..4096, read once per process; unset = sched::StaticLptScheduler::kL2BudgetBytes, 32 MB). A
// causal section's first round runs its heaviest query block of every head in the section, and so
// reads the whole section's K/V from DRAM in one round: at d128 N512 (256 KB of K/V per head) that
// is 32 MB in ~9 us of 4-block tiles, above the H100's ~3 TB/s, while its three later rounds read
// only Q and write O. Smaller sections spread those first reads over the rounds, at the price of
// fewer tiles per section to balance (a section of fewer tiles than CTAs leaves CTAs idle).
inline int64_t sm90_fwd_causal_l2_budget_bytes() {
  static const int64_t bytes = [] {
    const int mb = env_int("FA_SM90_FWD_CAUSAL_L2_BUDGET_MB", 0);
    return mb >= 1 && mb <= 4096 ? int64_t(mb) << 20 : sched::StaticLptScheduler::kL2BudgetBytes;
  }();
  return bytes;
}

// Causal walks: at most this many rounds of tiles per L2 section (StaticLptScheduler::set_grid's
// max_section_rounds; 0 = the K/V budget alone, the walk before session 36). The environment
// variable of the same name (0..64, read once per process) overrides it. H100, session 36
// (docs/perf/ab_session36.md), causal, against the budget alone (3.9 rounds at d128 N512), mean
// of three alternations, N 512 / 1k / 2k / 4k / 8k: d128 +12 / +3 / +0.5 / +3 / +1%, d64 +6 /
// +3.5 / +1 / +4 / +1%; N16k within the noise; d256 already had <= 2 rounds. An odd cap is worse
// (3, each section restarting the snake: its last round runs the first round's way, d128 N8k
// -9%; odd caps now alternate the snake across sections instead). 1 (an experiment, not
// measured yet): sections of one round with the snake alternating across sections
// (StaticLptScheduler::Params::section_alternate), which halves the K/V a round first touches
// again (d256 causal N512: 16.5 MB instead of 32; scripts/gpu/causal_one_round.sh).
#ifndef FA_SM90_FWD_CAUSAL_SECTION_ROUNDS
#define FA_SM90_FWD_CAUSAL_SECTION_ROUNDS 2
#endif
inline int sm90_fwd_causal_section_rounds() {
  static const int r = [] {
    const int v = env_int("FA_SM90_FWD_CAUSAL_SECTION_ROUNDS", FA_SM90_FWD_CAUSAL_SECTION_ROUNDS);
    return v <= 64 ? v : FA_SM90_FWD_CAUSAL_SECTION_ROUNDS;
  }();
  return r;
}

// FA_SM90_FWD_EARLY_RESCALE == 2: the environment variable of that name, 1 = early (read once).
inline bool sm90_fwd_early_rescale_env() {
  static const bool on = [] {
    const char* v = std::getenv("FA_SM90_FWD_EARLY_RESCALE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

// FA_SM90_FWD_SECTION_ROTATE=1 in the environment (read once per process): the causal tile walk
// rotates each L2 section's snake (StaticLptScheduler::Params::section_rotate), so the CTAs that
// one section's partial last round leaves idle differ from section to section. By key-block counts
// (scripts/sched_balance.py --rotate) the busiest CTA drops from 1.031x to 1.003x the mean at
// causal N1k and to 1.001x at N2k (d64-d256, 132 CTAs), and stays at 1.031x at N512. Off by
// default until measured on the GPU.
inline bool sm90_fwd_section_rotate_env() {
  static const bool on = env_int("FA_SM90_FWD_SECTION_ROTATE", 0) == 1;
  return on;
}

// FA_SM90_FWD_MAX_CTAS=n (testing; read once per process): at most n persistent CTAs. A case small
// enough for compute-sanitizer's racecheck then still gives each CTA several tiles (the Q-slot
// ring wraps, the d64 round robin turns, causal tiles come longest first), which on the H200's 132
// SMs takes ~400 tiles per case, too many for racecheck (session 8: one such case did not finish
// in 170 s). scripts/gpu/check.sh runs the RingSmall suite that way.
inline int sm90_fwd_max_ctas() {
  static const int n = [] {
    const char* v = std::getenv("FA_SM90_FWD_MAX_CTAS");
    const long x = v && *v ? std::strtol(v, nullptr, 10) : 0;
    return x >= 1 && x <= 1 << 20 ? int(x) : 0;
  }();
  return n;
}

// FA_SM90_FWD_CLUSTER=0 in the environment (read once per process): no clusters at run time.
// FA_SM90_FWD_TMA_STORE=0 in the environment (read once per process): O by the direct stores
// from registers (the path varlen and TMA-unaligned O take) instead of the TMA-store epilogue,
// in every instance, so one build A/Bs the two epilogues at every head dim. Default 1.
inline bool sm90_fwd_tma_store_env() {
  static const bool on = env_int("FA_SM90_FWD_TMA_STORE", 1) != 0;
  return on;
}

// FA_SM90_FWD_PINGPONG=0 in the environment (read once per process): in a build with
// FA_SM90_FWD_PINGPONG_RUNTIME=1, the consumer warpgroups of a ping-pong instance issue their
// GEMMs without taking turns (Params::pingpong). Ignored by default builds. Default 1.
inline bool sm90_fwd_pingpong_env() {
  static const bool on = env_int("FA_SM90_FWD_PINGPONG", 1) != 0;
  return on;
}

inline bool sm90_fwd_cluster_env() {
  static const bool on = [] {
    const char* v = std::getenv("FA_SM90_FWD_CLUSTER");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// Clusters of two that can be resident at once with this kernel's shared memory (the persistent
// grid of a clustered launch; SMs pair up only within a GPC). Queried once per device; 0 when the
// query fails (the launcher then runs without clusters).
template <class Kernel>
int sm90_fwd_max_clusters(int device) {
  static std::atomic<int> cache[64] = {};
  if (device < 0 || device >= 64) return 0;
  int n = cache[device].load(std::memory_order_relaxed);
  if (n != 0) return n < 0 ? 0 : n;
  const LaunchConfig lc(dim3(2), dim3(Kernel::kThreads), Kernel::kSmemBytes, nullptr, false, 2);
  if (cudaOccupancyMaxActiveClusters(&n, sm90_fwd_kernel<Kernel>, lc.get()) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    n = -1;
  }
  cache[device].store(n, std::memory_order_relaxed);
  return n < 0 ? 0 : n;
}


template <class Kernel, class Element>
core::Status launch_fwd(const core::AttnParams& p, cudaStream_t stream) {
  using namespace cute;
  using Params = typename Kernel::Params;
  if (!tma_ok(p.q, p.q_str, sizeof(Element)) || !tma_ok(p.k, p.k_str, sizeof(Element)) ||
      !tma_ok(p.v, p.v_str, sizeof(Element)) || !pair_store_ok(p.o, p.o_str))
    return core::unsupported(
        "the sm90 forward (TMA) needs 16-byte aligned q/k/v and row/head/batch strides that are "
        "multiples of 8 elements (and even O strides); use algo FA2 for this layout");

  const int batches = p.varlen ? 1 : p.batch;
  const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;
  const int64_t rows_k = p.varlen ? p.total_k : p.seqlen_k;
  // Size-1 batch mode (varlen): its stride is never used; give TMA a harmless valid value.
  auto batch_stride = [&](const core::Strides& s, int64_t rows) {
    return p.varlen ? s.row * (rows > 0 ? rows : 1) : s.batch;
  };
  auto shape_q = make_shape(int32_t(rows_q), int32_t(p.head_dim), int32_t(p.heads_q), int32_t(batches));
  Tensor mQ = make_tensor(make_gmem_ptr(static_cast<Element const*>(p.q)),
                          make_layout(shape_q, make_stride(p.q_str.row, _1{}, p.q_str.head,
                                                           batch_stride(p.q_str, rows_q))));
  // No keys anywhere (every tile is empty and never loads K/V): point the K/V maps at one valid
  // row of Q so the descriptors can still be built.
  const bool no_keys = rows_k == 0;
  auto shape_k = make_shape(int32_t(no_keys ? 1 : rows_k), int32_t(p.head_dim), int32_t(p.heads_kv),
                            int32_t(batches));
  auto kv_tensor = [&](const void* ptr, const core::Strides& s) {
    const core::Strides& st = no_keys ? p.q_str : s;
    return make_tensor(make_gmem_ptr(static_cast<Element const*>(no_keys ? p.q : ptr)),
                       make_layout(shape_k, make_stride(st.row, _1{}, st.head,
                                                        batch_stride(st, no_keys ? 1 : rows_k))));
  };
  // GQA packing (fwd_pack_gqa.hpp): kernels with the TMA producer warpgroup only (the cp.async
  // and non-specialised ablations keep one head per tile). A map the driver refuses leaves the
  // call unpacked, except when packing is forced (FA_SM90_PACK_GQA=1): then it is an error, so a
  // test or benchmark of the packed path cannot silently measure the unpacked one.
  const int group = p.group_size();
  int pack_shift = 0;
  cute::TmaDescriptor q_packed{};
  if constexpr (Kernel::kCanPack) {
    pack_shift = pack_gqa_shift(pack_gqa_mode(), group, p.seqlen_q, Kernel::kBlockM);
    if (pack_shift > 0 &&
        !make_packed_q_map<Element>(p, group, rows_q, batches, batch_stride(p.q_str, rows_q),
                                    Kernel::kSwizzleCols, Kernel::kBlockM, Kernel::kSwizzleBytes,
                                    &q_packed)) {
      if (pack_gqa_mode() == PackGqaMode::Always)
        return core::internal("sm90 forward: the driver refused the packed-GQA Q tensor map "
                              "(FA_SM90_PACK_GQA=1)");
      pack_shift = 0;
    }
  }
  const int tile_heads = pack_shift > 0 ? p.heads_kv : p.heads_q;
  // O through TMA: the batch form only (a varlen box could cover the next sequence's rows), only
  // where O is TMA-aligned, and unpacked (packed rows are not one head's contiguous block).
  // Otherwise the map is built over Q (valid, never used).
  using Out = typename Kernel::OutElementC;
  const bool tma_store_o = Kernel::kTmaStoreO && !p.varlen && pack_shift == 0 &&
                           tma_ok(p.o, p.o_str, sizeof(Out)) && sm90_fwd_tma_store_env();
  auto make_tma_o = [&]() -> typename Kernel::TmaO {
    if constexpr (Kernel::kTmaStoreO) {
      const core::Strides& st = tma_store_o ? p.o_str : p.q_str;
      Tensor mO = make_tensor(
          make_gmem_ptr(static_cast<Out*>(tma_store_o ? p.o : const_cast<void*>(p.q))),
          make_layout(shape_q, make_stride(st.row, _1{}, st.head, batch_stride(st, rows_q))));
      return memo_tma(mO, [](const auto& g) {
        return make_tma_copy(SM90_TMA_STORE{}, g, typename Kernel::SmemLayoutOHalf{},
                             Shape<Int<Kernel::kWgRows>, Int<Kernel::kHeadDimC>>{}, _1{});
      });
    } else {
      return {};
    }
  };

  // V's map. fp8: Vᵀ (d, vt_keys, Hk, B), v_str.row the stride between head-dim rows
  // (core/params.hpp); without keys, a one-block stand-in over Q (never loaded).
  auto make_tma_v = [&]() -> typename Kernel::TmaV {
    if constexpr (Kernel::kFp8) {
      constexpr int kN = Kernel::kBlockN;
      Tensor mVt = no_keys
          ? make_tensor(make_gmem_ptr(static_cast<Element const*>(p.q)),
                        make_layout(make_shape(int32_t(p.head_dim), int32_t(kN), 1, 1),
                                    make_stride(int64_t(kN), _1{}, int64_t(p.head_dim) * kN,
                                                int64_t(p.head_dim) * kN)))
          : make_tensor(make_gmem_ptr(static_cast<Element const*>(p.v)),
                        make_layout(Kernel::vt_shape(p),
                                    make_stride(p.v_str.row, _1{}, p.v_str.head, p.v_str.batch)));
      return memo_tma(mVt, [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutVtFp8{}),
                             Shape<Int<Kernel::kHeadDimC>, Int<Kernel::kBlockN>>{}, _1{});
      });
    } else {
      return memo_tma(kv_tensor(p.v, p.v_str), [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                             Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{});
      });
    }
  };

  // Persistent grid (Kernel::kCtasPerSm CTAs per SM, Kernel::Scheduler walks the tiles) for the
  // batch form; varlen keeps one CTA per (query block, head, sequence) with the longest
  // sequence's blocks.
  const int64_t rows_per_tile = Kernel::kBlockM >> pack_shift;  // query positions per tile
  const int64_t m_blocks = (p.seqlen_q + rows_per_tile - 1) / rows_per_tile;
  const int64_t tiles = m_blocks * tile_heads * p.batch;
  int sms = Kernel::kPersistent && !p.varlen && tiles <= INT32_MAX - 4096
                ? Kernel::kCtasPerSm * sched::sm_count(p.device_id)
                : 0;
  if (sms > 0 && sm90_fwd_max_ctas() > 0) sms = std::min(sms, sm90_fwd_max_ctas());
  const bool persistent = sms > 0;
  // Causal / right-bounded windows: the last query blocks see the most keys (bottom-right
  // alignment), so they are scheduled first. A left-only window is heaviest at the top: keep order.
  const bool reverse_m = Kernel::kMaskedC && p.window_right >= 0;
  const int64_t kv_bytes = 2 * p.seqlen_k * p.head_dim * int64_t(sizeof(Element));
  auto kernel = sm90_fwd_kernel<Kernel>;
  cudaError_t e = set_max_dynamic_smem(kernel, int(Kernel::kSmemBytes), p.device_id);
  if (e != cudaSuccess) return cuda_call_failed(e, "sm90 forward: cudaFuncSetAttribute(max dynamic shared memory)");
  // Clusters of two (Kernel::kCluster): pairs of query blocks of one (batch, head), so an even
  // number of them; the walk is then over pairs and clusters.
  int clusters = 0;
  if constexpr (Kernel::kCluster) {
    if (persistent && pack_shift == 0 && m_blocks % 2 == 0 && sms >= 2 && sm90_fwd_cluster_env()) {
      clusters = int(std::min<int64_t>({sm90_fwd_max_clusters<Kernel>(p.device_id), sms / 2, tiles / 2}));
    }
  }

  Params params{
      memo_tma(mQ, [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, typename Kernel::SmemLayoutQ{},
                             Shape<Int<Kernel::kBlockM>, Int<Kernel::kHeadDimC>>{}, _1{});
      }),
      memo_tma(kv_tensor(p.k, p.k_str), [](const auto& g) {
        return make_tma_copy(SM90_TMA_LOAD{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                             Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{});
      }),
      make_tma_v(),
      make_tma_o(),
      shape_q,
      shape_k,
      p,
      (p.softcap > 0.f ? p.softcap : p.scale) * core::kLog2e,
      p.softcap > 0.f ? p.scale / p.softcap : 0.f,
      Kernel::Scheduler::make_params(int(clusters > 0 ? m_blocks / 2 : m_blocks), tile_heads, p.batch,
                                     pack_shift > 0 ? 1 : group,
                                     kv_bytes, reverse_m, persistent,
                                     reverse_m ? sm90_fwd_causal_l2_budget_bytes()
                                               : sm90_fwd_l2_budget_bytes(p.head_dim, kv_bytes)),
      tma_store_o,
      pack_shift,
      q_packed,
      FA_SM90_FWD_EARLY_RESCALE == 2 && sm90_fwd_early_rescale_env(),
      Kernel::kOStoreRounds > 0 &&
          wide_store_ok(p.o, p.o_str, sizeof(Out), 4 << Kernel::kOStoreRounds),
      {},
      {},
  };
  if constexpr (Kernel::kCluster) {
    if (clusters > 0) {
      auto make_mc = [&](const void* ptr, const core::Strides& s) {
        return memo_tma(kv_tensor(ptr, s), [](const auto& g) {
          return make_tma_copy(SM90_TMA_LOAD_MULTICAST{}, g, take<0, 2>(typename Kernel::SmemLayoutKV{}),
                               Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _2{});
        });
      };
      params.tma_k_mc = make_mc(p.k, p.k_str);
      params.tma_v_mc = make_mc(p.v, p.v_str);
    }
  }

  if (!persistent && p.batch > 65535)
    return core::unsupported("the sm90 forward supports at most 65535 sequences");
  // Clusters: the walk is over clusters (set_grid's unit), two CTAs each.
  const dim3 grid = clusters > 0  ? dim3(unsigned(2 * clusters))
                    : persistent ? dim3(unsigned(std::min<int64_t>(tiles, sms)))
                                 : dim3(unsigned(m_blocks), unsigned(tile_heads), unsigned(p.batch));
  Kernel::Scheduler::set_grid(params.sched, clusters > 0 ? clusters : int(grid.x),
                              sm90_fwd_section_rotate_env(), sm90_fwd_causal_section_rounds());
  params.sched.cluster_shift = clusters > 0 ? 1 : 0;
  params.pingpong = sm90_fwd_pingpong_env();
#if FA_SM90_FWD_TIMELINE
  // With FA_SM90_FWD_TIMELINE_OUT set, a persistent launch's stamps go to that file after it has
  // run: int64 CTAs, rounds, warpgroups, stamps, then the stamps (CTA-major).
  const int64_t tl_ctas = persistent ? int64_t(grid.x) : 0;
  TimelineDump timeline("FA_SM90_FWD_TIMELINE_OUT",
                        {tl_ctas, params.sched.rounds, Kernel::kConsumerWGs, int64_t(FwdStamp::kCount)},
                        tl_ctas * params.sched.rounds * Kernel::kConsumerWGs * int64_t(FwdStamp::kCount), stream);
  params.timeline = timeline.buf;
#endif
  e = launch_ex(LaunchConfig(grid, dim3(Kernel::kThreads), Kernel::kSmemBytes, stream, false, clusters > 0 ? 2 : 1),
                kernel, params);
  if (e != cudaSuccess) return cuda_call_failed(e, "sm90 forward kernel launch");
  return check_launch("sm90 forward kernel launch");
}

// One kernel variant, launched. The default instances (src/cuda/instances/sm90_fwd_*.cu) use every
// feature; the ablation variants are explicitly instantiated for bf16 d128 only, in
// src/cuda/sm90/fwd_ablation_*.cu, so the instance files stay at one kernel each (compile budget).
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap, unsigned kFeatures>
core::Status launch_fwd_variant(const core::AttnParams& p, cudaStream_t stream) {
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap, kFeatures>, Element>(p, stream);
}
// (name for FA_SM90_FWD_ABLATE, features). Each runs as bf16 d128, unmasked and masked+softcap.
// A build with -DFA_BUILD_ABLATIONS=OFF (FA_NO_ABLATIONS) has none: the switch is then ignored.
#if defined(FA_NO_ABLATIONS)
#define FA_SM90_FWD_ABLATIONS(X)
#else
#define FA_SM90_FWD_ABLATIONS(X)                                                           \
  X(no_pingpong, fwd_feature::kAll & ~fwd_feature::kPingPong)                              \
  X(no_overlap, fwd_feature::kAll & ~fwd_feature::kIntraWgOverlap)                         \
  X(plain, fwd_feature::kAll & ~(fwd_feature::kPingPong | fwd_feature::kIntraWgOverlap))   \
  X(no_persistent, fwd_feature::kAll & ~fwd_feature::kPersistent)                          \
  X(no_tma_store, fwd_feature::kAll & ~fwd_feature::kTmaStore)                             \
  X(no_tma_load, fwd_feature::kAll & ~fwd_feature::kTmaLoad)                               \
  X(no_ws, fwd_feature::kAll & ~fwd_feature::kWarpSpecialised)
#endif
#define FA_SM90_FWD_EXTERN(NAME, F)                                                                   \
  extern template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, false, false, (F)>(      \
      const core::AttnParams&, cudaStream_t);                                                         \
  extern template core::Status launch_fwd_variant<cutlass::bfloat16_t, 128, true, true, (F)>(        \
      const core::AttnParams&, cudaStream_t);
FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_EXTERN)
#undef FA_SM90_FWD_EXTERN

// Ablations: FA_SM90_FWD_ABLATE = one of the names above (read once per process, as each ablation
// runs in its own; honoured for bf16 d128, other instances ignore it). Returns the feature set,
// or kAll when unset / unknown.
inline unsigned sm90_fwd_ablation() {
  static const unsigned features = [] {
    const char* v = std::getenv("FA_SM90_FWD_ABLATE");
    if (!v || !*v) return unsigned(fwd_feature::kAll);
#define FA_SM90_FWD_MATCH(NAME, F) \
  if (std::strcmp(v, #NAME) == 0) return unsigned(F);
    FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_MATCH)
#undef FA_SM90_FWD_MATCH
    return unsigned(fwd_feature::kAll);
  }();
  return features;
}

}  // namespace fa::cuda::sm90

namespace fa::cuda {

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_fwd(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  using namespace sm90;
  if (p.seqlen_q == 0) return core::Status::success();
  if constexpr (kHeadDim == 128 && std::is_same_v<Element, cutlass::bfloat16_t> && kMasked == kSoftcap) {
    const unsigned features = sm90_fwd_ablation();
#define FA_SM90_FWD_CASE(NAME, F) \
  if (features == (F)) return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, (F)>(p, stream);
    FA_SM90_FWD_ABLATIONS(FA_SM90_FWD_CASE)
#undef FA_SM90_FWD_CASE
  }
  // FA_SM90_FWD_D256_OVERLAP=0 / FA_SM90_FWD_D256_MASKED_OVERLAP=0 (fwd_tile_config.hpp): the
  // d256 instance without the intra-warpgroup overlap, whose S_{j+1} beside P_j does not fit
  // 128-key blocks' registers.
  constexpr bool kD256Overlap = kMasked ? FA_SM90_FWD_D256_MASKED_OVERLAP : FA_SM90_FWD_D256_OVERLAP;
  constexpr unsigned kFeatures = kHeadDim == 256 && !kD256Overlap
                                     ? fwd_feature::kAll & ~fwd_feature::kIntraWgOverlap
                                     : fwd_feature::kAll;
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap, kFeatures>, Element>(p, stream);
}

// The FP8 forward (fa::cuda::fp8_attention): p is the kernel's view of the quantised tensors
// (core/params.hpp, "p8"); OutElement is O's type. The registry's fp8 family instantiates this
// with kSoftcap = false (scripts/instances/sm90_fwd_fp8.py).
template <typename OutElement, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_fwd_fp8(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  static_assert(!kSoftcap, "the fp8 forward has no softcap");
  using namespace sm90;
  if (p.seqlen_q == 0) return core::Status::success();
  using E4M3 = cutlass::float_e4m3_t;
  return launch_fwd<FwdKernel<E4M3, kHeadDim, kMasked, false, fwd_feature::kAll, OutElement>, E4M3>(p, stream);
}

}  // namespace fa::cuda
