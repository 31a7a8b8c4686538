// Tile sizes of the Hopper forward, one row per head dim (the only place they are chosen).
// kBlockM = 128: 2 consumer warpgroups × 64 rows (one m64nNk16 wgmma row-block each).
// kBlockN is bounded by shared memory (Q + kStages × (K + V) ≤ 227 KB) and by registers
// (O accumulator = kHeadDim/2 fp32 per thread, S = kBlockN/2 fp32 per thread, ≤ 240 regs).
//   d64 : Q 16 KB + 2 × (16 + 16) KB =  80 KB
//   d96 : Q 24 KB + 2 × (24 + 24) KB = 120 KB
//   d128: Q 32 KB + 2 × (32 + 32) KB = 160 KB
//   d192: Q 48 KB + 2 × (42 + 42) KB = 216 KB  (kBlockN 112)
//   d256: Q 64 KB + 2 × (40 + 40) KB = 224 KB  (kBlockN 80)
// d64-d128 add the TMA-store epilogue's O buffer (= Q) and a second Q slot (FA_SM90_FWD_Q_STAGES):
// d128 Q 2 × 32 + 128 + O 32 = 224 KB; d192/d256 have room for neither.
#pragma once

namespace fa::cuda::sm90 {

// Wider key blocks for the unmasked (non-causal, no window) instances, a build-time experiment:
// fewer row-max/row-sum reductions, barriers and pipeline turns per key, at the cost of S
// registers (kBlockN/2 per thread) and shared memory. d128 with the TMA-store epilogue's 32 KB
// fits kBlockN ≤ 160 (Q 32 + 2 × (40 + 40) + O 32 = 224 KB); d64 fits 192 (128 KB). Masked
// instances keep 128: their diagonal blocks waste more of a wide block.
#ifndef FA_SM90_FWD_D64_BLOCK_N
#define FA_SM90_FWD_D64_BLOCK_N 128
#endif
#ifndef FA_SM90_FWD_D128_BLOCK_N
#define FA_SM90_FWD_D128_BLOCK_N 128
#endif

// Q slots of the persistent forward (2 = double-buffered Q where shared memory allows, see
// FwdKernel::kQStages; 1 = the single slot reloaded after the previous tile's last Q·Kᵀ). With two
// slots the producer loads the next tile's Q while the current tile's mainloop still runs, instead
// of in the gap between its last Q·Kᵀ and the next tile's first: that gap (last P·V + epilogue) is
// shorter than a Q load from HBM, and short sequences pay it once per 4-8 key blocks.
#ifndef FA_SM90_FWD_Q_STAGES
#define FA_SM90_FWD_Q_STAGES 2
#endif
// K/V ring depth at d64 (shared memory is plentiful there: 2 stages use 96 KB of 227): a build-time
// experiment, default 2 like every head dim.
#ifndef FA_SM90_FWD_D64_STAGES
#define FA_SM90_FWD_D64_STAGES 2
#endif

template <int kHeadDim, bool kMasked = false>
struct FwdTile;

template <bool kMasked> struct FwdTile<64, kMasked> {
  static constexpr int kBlockM = 128, kBlockN = kMasked ? 128 : FA_SM90_FWD_D64_BLOCK_N,
                       kStages = FA_SM90_FWD_D64_STAGES;
};
template <bool kMasked> struct FwdTile<96, kMasked>  { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2; };
template <bool kMasked> struct FwdTile<128, kMasked> {
  static constexpr int kBlockM = 128, kBlockN = kMasked ? 128 : FA_SM90_FWD_D128_BLOCK_N, kStages = 2;
};
template <bool kMasked> struct FwdTile<192, kMasked> { static constexpr int kBlockM = 128, kBlockN = 112, kStages = 2; };
template <bool kMasked> struct FwdTile<256, kMasked> { static constexpr int kBlockM = 128, kBlockN = 80,  kStages = 2; };

static_assert(FA_SM90_FWD_D64_BLOCK_N % 16 == 0 && FA_SM90_FWD_D64_BLOCK_N <= 192, "P·V needs K % 16 == 0");
static_assert(FA_SM90_FWD_Q_STAGES == 1 || FA_SM90_FWD_Q_STAGES == 2, "Q: one or two slots");
static_assert(FA_SM90_FWD_D64_STAGES >= 2 && FA_SM90_FWD_D64_STAGES <= 4, "d64 K/V ring depth");
static_assert(FA_SM90_FWD_D128_BLOCK_N % 16 == 0 && FA_SM90_FWD_D128_BLOCK_N <= 160, "smem: see above");

}  // namespace fa::cuda::sm90
