// Tile sizes of the Hopper forward, one row per head dim (the only place they are chosen).
// kBlockM = 128: 2 consumer warpgroups × 64 rows (one m64nNk16 wgmma row-block each).
// kBlockN is bounded by shared memory (Q + kStages × (K + V) ≤ 227 KB) and by registers
// (O accumulator = kHeadDim/2 fp32 per thread, S = kBlockN/2 fp32 per thread, ≤ 240 regs).
//   d64 : Q 16 KB + 2 × (16 + 16) KB =  80 KB
//   d96 : Q 24 KB + 2 × (24 + 24) KB = 120 KB
//   d128: Q 32 KB + 2 × (32 + 32) KB = 160 KB
//   d192: Q 48 KB + 2 × (42 + 42) KB = 216 KB  (kBlockN 112)
//   d256: Q 64 KB + 2 × (40 + 40) KB = 224 KB  (kBlockN 80)
#pragma once

namespace fa::cuda::sm90 {

template <int kHeadDim>
struct FwdTile;

template <> struct FwdTile<64>  { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2; };
template <> struct FwdTile<96>  { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2; };
template <> struct FwdTile<128> { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2; };
template <> struct FwdTile<192> { static constexpr int kBlockM = 128, kBlockN = 112, kStages = 2; };
template <> struct FwdTile<256> { static constexpr int kBlockM = 128, kBlockN = 80,  kStages = 2; };

}  // namespace fa::cuda::sm90
