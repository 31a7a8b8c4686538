// FlashAttention-3 forward for Hopper (sm90a): TMA + WGMMA + warp specialisation, persistent.
// This file is the kernel (FwdKernel: roles, mainloop, epilogue; sm90_fwd_kernel); the host side
// (tensor maps, grid, L2 sections, the instances' entry points) is flash_fwd.cuh.
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
#include <algorithm>
#include <type_traits>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "cuda/common/quad_store.cuh"
#include "cuda/common/sm90_pair_load.cuh"
#include "cuda/common/sm90_pipeline.hpp"
#include "cuda/common/sm90_stmatrix.cuh"
#include "cuda/scheduler/tile_scheduler.hpp"
#include "cuda/sm90/fwd_epilogue.hpp"
#include "cuda/sm90/fwd_mask.hpp"
#include "cuda/sm90/fwd_pack_gqa.hpp"
#include "cuda/sm90/fwd_softmax.hpp"
#include "cuda/sm90/fwd_timeline.hpp"
#if FA_SM90_FWD_OWN_EXT_MMA
#include "cuda/sm90/fwd_wgmma_ext.hpp"
#endif
#include "cuda/sm90/fwd_partition_table.hpp"

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
// Not an ablation and not in kAll: the head dim's tile for short key ranges (FwdTile's kWideKeys;
// d256 only: the masked wide-key tile and the unmasked short-range tile, run_sm90_fwd).
constexpr unsigned kWideKeys = 1u << 6;
}  // namespace fwd_feature

struct NoTmaO {};  // the O tensor map of an instance without the TMA-store epilogue

// Q descriptors from a warp-uniform warpgroup index (see consume_tile); 0 = from the thread index.
#ifndef FA_SM90_FWD_Q_DESC_UNIFORM
#define FA_SM90_FWD_Q_DESC_UNIFORM 1
#endif

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

  using Tile = std::conditional_t<kFp8, FwdTileFp8<kHeadDim, kMasked>,
                                  FwdTile<kHeadDim, kMasked, (kFeatures & fwd_feature::kWideKeys) != 0>>;
  static constexpr int kHeadDimC = kHeadDim;
  static constexpr bool kMaskedC = kMasked;
  using ElementC = Element;
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
  // kMaskRange (FA_SM90_FWD_MASK_RANGE): the key blocks [unmasked_lo, unmasked_hi] that need no
  // score mask; without it the record keeps its size.
  static constexpr bool kMaskRange = (FA_SM90_FWD_MASK_RANGE & head_dim_bit(kHeadDim)) != 0;
  struct UnmaskedBlocks {
    int unmasked_lo = 0;
    int unmasked_hi = -1;
  };
  struct NoUnmaskedBlocks {};
  struct TileWork : std::conditional_t<kMaskRange, UnmaskedBlocks, NoUnmaskedBlocks> {
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
  using ScoreMask = FwdScoreMask<kHeadDim, kMasked, kBlockN>;
  using Epilogue = FwdEpilogue<FwdKernel>;
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
  // FA_SM90_FWD_L2_PREFETCH_Q / _KV (fwd_tile_config.hpp): the next tile's Q / first K and V
  // blocks prefetched into L2 a tile ahead of their loads.
  static constexpr bool kL2PrefetchQ =
      kTmaLoad && kWarpSpecialised && (FA_SM90_FWD_L2_PREFETCH_Q & head_dim_bit(kHeadDim)) != 0;
  static constexpr bool kL2PrefetchKV =
      kTmaLoad && kWarpSpecialised && !kFp8 && (FA_SM90_FWD_L2_PREFETCH_KV & head_dim_bit(kHeadDim)) != 0;
  static constexpr bool kTileChain = kEpiLate && kTileHandoff && kQStages > 1 &&
                                     (FA_SM90_FWD_TILE_CHAIN & head_dim_bit(kHeadDim)) != 0;
  // What a chained tile inherits from the previous call: its first block's P (the P·V operand)
  // and the softmax state after that block. (Not O's factor for it: O starts at zero.)
  using TensorP = decltype(cute::make_tensor<Element>(
      mma_frag_c_layout(TiledMmaQK{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{})));
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
    if constexpr (kMaskRange) w.mask.unmasked_blocks(w.m0, w.m_end, kBlockN, &w.unmasked_lo, &w.unmasked_hi);
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
    auto [tQgQ, tQsQ] = tma_partition(params.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                      group_modes<0, 2>(gmem_q_tile(params, tc, w)));
    copy(params.tma_q.with(bar), tQgQ, tQsQ);
  }

  // The batch-form Q tile of `tc` in global memory, (kBlockM, kHeadDim): load_q, prefetch_next_l2.
  __device__ static auto gmem_q_tile(Params const& params, sched::TileCoord const& tc, TileWork const& w) {
    using namespace cute;
    Tensor mQ = params.tma_q.get_tma_tensor(params.shape_q)(_, _, tc.head, params.attn.varlen ? 0 : tc.batch);
    return local_tile(domain_offset(make_coord(int32_t(w.seq.q_start), _0{}), mQ),
                      Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(tc.m_block, _0{}));
  }

  // The CTA's next tile with keys after the walk's current position, found on a copy of the walk
  // (the walk itself meets the same tiles later): load_q_ahead, prefetch_next_l2.
  template <int kPairs>
  __device__ static bool next_tile_with_keys(Params const& params, Scheduler const& scheduler,
                                             sched::TileCoord& tc, TileWork& w) {
    Scheduler ahead = scheduler;
    while (ahead.template next<kPairs>(tc))
      if (tile_work(params, tc, w) && w.n_blocks > 0) return true;
    return false;
  }

  // kQAhead: Q of the CTA's next tile with keys into Q ring position q_next, found by walking the
  // schedule on from the main walk's position (a copy: the main walk meets the same tiles, in the
  // same order, and skips that Q load). False when the CTA has no such tile.
  template <int kPairs>
  __device__ static bool load_q_ahead(Params const& params, SharedStorage& ss, Scheduler const& scheduler,
                                      int q_next) {
    sched::TileCoord tc;
    TileWork w;
    if (!next_tile_with_keys<kPairs>(params, scheduler, tc, w)) return false;
    load_q(params, q_slot(ss, q_next), tc, w, ss.pipe_q.producer_acquire(q_next, kBytesQ));
    return true;
  }

  // kL2PrefetchQ / kL2PrefetchKV: the CTA's next tile with keys (a copy of the walk, as
  // load_q_ahead) gets its Q and its first K and V blocks (the last key block: the walk runs
  // last to first) prefetched into L2. Batch-form Q only (packed GQA has its own map).
  template <int kPairs>
  __device__ static void prefetch_next_l2(Params const& params, Scheduler const& scheduler) {
    using namespace cute;
    sched::TileCoord tc;
    TileWork w;
    if (!next_tile_with_keys<kPairs>(params, scheduler, tc, w)) return;
    // The gmem side of a load's TMA partition; the shared-memory side only shapes it (a prefetch
    // writes none): null base.
    auto gmem_part = [&](auto const& tma, auto smem_layout, auto const& g) {
      Tensor s_null = make_tensor(make_smem_ptr(static_cast<Element*>(nullptr)), smem_layout);
      return get<0>(tma_partition(tma, _0{}, Layout<_1>{}, group_modes<0, 2>(s_null), group_modes<0, 2>(g)));
    };
    if constexpr (kL2PrefetchQ) {
      if (pack_shift_of(params) == 0)
        cute::prefetch(params.tma_q, gmem_part(params.tma_q, SmemLayoutQ{}, gmem_q_tile(params, tc, w)));
    }
    if constexpr (kL2PrefetchKV) {
      const int head_kv = head_kv_of(params, tc), tma_batch = params.attn.varlen ? 0 : tc.batch;
      auto first_block = [&](auto const& tma, auto smem_layout) {  // the walk runs last to first
        Tensor m = tma.get_tma_tensor(params.shape_k)(_, _, head_kv, tma_batch);
        Tensor g = local_tile(domain_offset(make_coord(int32_t(w.seq.k_start), _0{}), m),
                              Shape<Int<kBlockN>, Int<kHeadDim>>{}, make_coord(_, _0{}));  // (N, D, n_block)
        cute::prefetch(tma, gmem_part(tma, smem_layout, g)(_, w.n_block_max - 1));
      };
      first_block(params.tma_k, SmemLayoutKV{});
      first_block(params.tma_v, SmemLayoutV{});
    }
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
      // After this tile's first loads, so the prefetch never delays them; a tile ahead of use.
      if constexpr ((kL2PrefetchQ || kL2PrefetchKV) && !kMc) prefetch_next_l2<0>(params, scheduler);
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
        mma_frag_c_layout(TiledMmaPV{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{})));
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
      timeline_stamp(tl, FwdStamp::NextCall, t_next_call);
      timeline_stamp(tl, FwdStamp::NextDone, t_next_done);
      timeline_stamp(tl, FwdStamp::WorkDone, t_work_done);
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
          Epilogue::finish_pending(params, ss, pend, ctid);  // O is staged already
        else
          Epilogue::store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
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
      timeline_stamp(tl, FwdStamp::Info,
            uint64_t(uint32_t(w.n_blocks) & 0xffffu) | (uint64_t(uint32_t(tc_main.m_block)) << 16) |
                (uint64_t(smid) << 40));
      timeline_stamp(tl, FwdStamp::Start);
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
    auto q_descs = [&](auto const& sQx) {
      return mma_frag_a(mma_qk.get_thread_slice(wg_uniform * 128), sQx);
    };
#else
    auto q_descs = [&](auto const& sQx) { return mma_frag_a(thr_qk, sQx); };
#endif
    // The partitions through fwd_partition_table.hpp's precomputed types (compile memory only).
    Tensor tSrQ = q_descs(sQ);  // smem descriptors
    Tensor tSrK = mma_frag_b(thr_qk, sK);   // (MMA, MMA_N, MMA_K, stage)
    Tensor tOrV = mma_frag_b(thr_pv, sVt);  // (MMA, MMA_N, MMA_K, stage)
    Tensor tSrS = mma_frag_c(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});
    Tensor tOrO = mma_frag_c(mma_pv, Shape<Int<kBlockM>, Int<kHeadDim>>{});
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
    Tensor cS = mma_part_c(thr_qk, make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
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
      bool unmasked;
      if constexpr (kMaskRange) unmasked = n_block >= tw.unmasked_lo && n_block <= tw.unmasked_hi;
      else unmasked = tw.mask.block_unmasked(tw.m0, tw.m_end, n0, n0 + kBlockN);
      if (!unmasked) ScoreMask::apply(s_rc, cS_rc, tw.mask, tw.m0, n0, pack_shift_of(params));
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
        timeline_stamp(tl, FwdStamp::QIn);
      }

      if constexpr (kIntraWgOverlap) {
        // Block 0: S = Q·K₀ᵀ, softmax → P₀ (a chained tile has P₀ from the previous call).
        if (!chained_in) {
          wait_full(pipe_k, kv_it);
          timeline_stamp(tl, FwdStamp::KIn);
          pingpong_wait(params, consumer_wg);
          timeline_stamp(tl, FwdStamp::Turn);
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, Ring::stage(kv_it)), tSrS);
          pingpong_pass(params, consumer_wg);
          if constexpr (kEpiOverlap && !kEpiLate) {
            // The previous tile's stores run while this tile's first Q·Kᵀ is in flight. (Its O was
            // converted before: reading accumulator registers here, with a wgmma in flight, makes
            // ptxas serialise the wgmma, C7517, even though that wgmma does not write them.)
            if (pend.valid)
              Epilogue::store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
            pend.valid = false;
            clear(tOrO);
          }
          warpgroup_wait<0>();
          timeline_stamp(tl, FwdStamp::S0Done);
          release_kv(pipe_k, kv_it, params);
          if (kEarlyQRelease && n_blocks == 1) ss.pipe_q.consumer_release(q_it);  // its only Q·Kᵀ
          transform_and_mask(n_block_max - 1);
          softmax_block(n_block_max - 1);
          convert_p();
        } else {
          // Timeline: the block-0 phases are empty here; they ran in the previous tile's tail.
          timeline_stamp(tl, FwdStamp::QIn);
          timeline_stamp(tl, FwdStamp::KIn);
          timeline_stamp(tl, FwdStamp::Turn);
          timeline_stamp(tl, FwdStamp::S0Done);
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
            if (it == 1 && pend.valid) Epilogue::finish_pending(params, ss, pend, ctid);
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
              timeline_stamp(tl, slot, now - t_tail);
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
            if (pend.valid) Epilogue::finish_pending(params, ss, pend, ctid);  // a one-block tile: its only P·V
          }
        };
        {
          [[maybe_unused]] const unsigned long long t_turn = FA_SM90_FWD_TIMELINE ? clock64() : 0;
          pingpong_wait(params, consumer_wg);
          if constexpr (kTileChain && FA_SM90_FWD_TIMELINE != 0) timeline_stamp(tl, FwdStamp::TailTurn, clock64() - t_turn);
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
        timeline_stamp(tl, FwdStamp::LoopEnd);
#if FA_SM90_FWD_TIMELINE
#pragma unroll
        for (int i = 0; i < 5; ++i) timeline_stamp(tl, FwdStamp(int(FwdStamp::KWait) + i), waits[i]);
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
      if (pend.valid) Epilogue::finish_pending(params, ss, pend, ctid);
      Tensor rO = make_tensor<OutElement>(tOrO.layout());
      Epilogue::convert(softmax, tOrO, rO, pend.lse);
      timeline_stamp(tl, FwdStamp::EpiConv);
      bool staged = false;
      if constexpr (kTmaStoreO) {
        if (params.tma_store_o) {
          Tensor cO = mma_part_c(thr_pv, make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
          Epilogue::stage_o_tma(ss, consumer_wg, cO, rO FA_FWD_TL_ARG);
          staged = true;
        }
      }
      if (staged) {
        pend.valid = true;
        pend.tc = tc_main;
      } else {
        Epilogue::store(params, ss, tc_main, w, rO, pend.lse, ctid FA_FWD_TL_ARG);
      }
      timeline_stamp(tl, FwdStamp::End);
      return;
    }
    if constexpr (kEpiOverlap) {
      // A tile without keys issued no Q·Kᵀ, so the previous tile's stores are still pending.
      if (pend.valid)
        Epilogue::store(params, ss, pend.tc, pend.w, pend.rO, pend.lse, ctid FA_FWD_TL_NOARG);
      Epilogue::convert(softmax, tOrO, pend.rO, pend.lse);
      pend.valid = true;  // the next tile's call (or consume) stores it
      pend.tc = tc_main;
      pend.w = w;
      timeline_stamp(tl, FwdStamp::End);
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
    Epilogue::convert(softmax, tOrO, rO, lse, v_scale);
    timeline_stamp(tl, FwdStamp::EpiConv);
    Epilogue::store(params, ss, tc, we, rO, lse, ctid FA_FWD_TL_ARG);
    timeline_stamp(tl, FwdStamp::End);
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

}  // namespace fa::cuda::sm90
