// Tile sizes of the Hopper forward, one row per head dim (the only place they are chosen).
// kBlockM = 128: 2 consumer warpgroups × 64 rows (one m64nNk16 wgmma row-block each); unmasked
// d64 takes 192 by default (3 warpgroups, FA_SM90_FWD_D64_BLOCK_M below).
// kBlockN is bounded by shared memory (Q + kStages × (K + V) ≤ 227 KB) and by registers
// (O accumulator = kHeadDim/2 fp32 per thread, S = kBlockN/2 fp32 per thread, ≤ 240 regs).
//   d64 : Q 16 KB + 2 × (16 + 16) KB =  80 KB
//   d96 : Q 24 KB + 2 × (24 + 24) KB = 120 KB
//   d128: Q 32 KB + 2 × (32 + 32) KB = 160 KB
//   d192: Q 48 KB + 2 × (42 + 42) KB = 216 KB  (kBlockN 112; FA_SM90_FWD_D192_BLOCK_N below)
//   d256: Q 64 KB + 2 × (40 + 40) KB = 224 KB  (kBlockN 80; FA_SM90_FWD_D256_BLOCK_N below)
// d64-d128 add the TMA-store epilogue's O buffer (= Q) and a second Q slot (FA_SM90_FWD_Q_STAGES):
// d128 Q 2 × 32 + 128 + O 32 = 224 KB; d192/d256 have room for neither at their default kBlockN.
#pragma once

#include "core/fp8.hpp"

// FA_SM90_FWD_SHORT_N=1: the short-sequence switches of session 6 in one flag (a build passes one
// -D through scripts/gpu/check.sh's EXTRA_CMAKE), the build timed as "shortn" in session 6
// round 2: FA_SM90_FWD_MASK_SPLIT 62 (fwd_mask.hpp; d64-d256, every head dim with an sm90
// forward instance, as its earlier value 1 meant), FA_SM90_FWD_EPI_OVERLAP 8 and
// FA_SM90_FWD_EPI_OVERLAP_MASKED 2 (below: the instances where the overlap compiles without
// spills). A switch set on its own wins. It differs from the defaults in MASK_SPLIT at
// d96/d192/d256 and in the two overlap switches.
#if defined(FA_SM90_FWD_SHORT_N) && FA_SM90_FWD_SHORT_N
#ifndef FA_SM90_FWD_MASK_SPLIT
#define FA_SM90_FWD_MASK_SPLIT 62
#endif
#ifndef FA_SM90_FWD_EPI_OVERLAP
#define FA_SM90_FWD_EPI_OVERLAP 8
#endif
#ifndef FA_SM90_FWD_EPI_OVERLAP_MASKED
#define FA_SM90_FWD_EPI_OVERLAP_MASKED 2
#endif
#endif

namespace fa::cuda::sm90 {

// Wider key blocks for the unmasked (non-causal, no window) instances, a build-time experiment:
// fewer row-max/row-sum reductions, barriers and pipeline turns per key, at the cost of S
// registers (kBlockN/2 per thread) and shared memory. d128 with the TMA-store epilogue's 32 KB
// fits kBlockN ≤ 160 (Q 32 + 2 × (40 + 40) + O 32 = 224 KB); d64 fits 192 (128 KB). Masked
// instances keep 128: their diagonal blocks waste more of a wide block.
#ifndef FA_SM90_FWD_D64_BLOCK_N
#define FA_SM90_FWD_D64_BLOCK_N 128
#endif
// The masked d64 instance's key block, a build-time experiment: 96 or 64 keys shrink S and P
// enough for 192-row masked tiles (three consumer warpgroups) to compile without spills, which
// 128 does not (FA_SM90_FWD_D64_MASKED_BLOCK_M below). H200, session 30
// (docs/perf/ab_session30.md), causal N512..16k against 128 x 128: 192 x 96 −10.5, −12, 0, 0,
// +4, +4%; 192 x 64 −14 to −6% everywhere. Off: short tiles lose to the first warpgroup's masked
// diagonal keys (1.33 blocks of 96 against 0.5 of 128) and to per-block fixed work.
#ifndef FA_SM90_FWD_D64_MASKED_BLOCK_N
#define FA_SM90_FWD_D64_MASKED_BLOCK_N 128
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
// L2 prefetch of the next tile's loads (head_dim_bit mask: d64 2, d96 4, d128 8, d192 16, d256 32;
// 0 = none), a build-time experiment. Where one Q slot is all shared memory allows (d192, d256),
// the next tile's Q load can only go out once this tile's last Q·Kᵀ has retired, and it comes
// from HBM (each Q tile is read once) while the consumers have only the last softmax, P·V and
// epilogue left to cover it. With the switch the producer, right after issuing this tile's first
// loads, walks on to its next tile with keys and asks TMA to bring that tile's Q
// (FA_SM90_FWD_L2_PREFETCH_Q) and its first K and V blocks (FA_SM90_FWD_L2_PREFETCH_KV) into L2
// (cp.async.bulk.prefetch.tensor: no shared memory, no barrier), so the real loads a tile later
// hit L2. Packed-GQA Q and clusters are not prefetched. H100, session 41 (docs/perf/ab_session41.md),
// bf16, two alternations: d256 non-causal N512/1k −1.3/−0.1% with Q (no gain: the Q load between
// tiles is not what those shapes wait for), d256 causal N512 −6.8% with Q and −17.8% with Q + K/V,
// N1k −0.6/−7.1%; d128 within ±1.5% but for an unexplained +5-6% at non-causal N8k. Off.
#ifndef FA_SM90_FWD_L2_PREFETCH_Q
#define FA_SM90_FWD_L2_PREFETCH_Q 0
#endif
#ifndef FA_SM90_FWD_L2_PREFETCH_KV
#define FA_SM90_FWD_L2_PREFETCH_KV 0
#endif
// K/V ring depth at d64 (shared memory is plentiful there: 2 stages use 96 KB of 227): a build-time
// experiment, default 2 like every head dim.
#ifndef FA_SM90_FWD_D64_STAGES
#define FA_SM90_FWD_D64_STAGES 2
#endif

// d64 query tile: 128 = 2 consumer warpgroups (240 registers each), 192 = 3 consumer warpgroups
// (160 registers each: O 32 + S 64 + P 32 fp32-equivalents fit), against the per-tile fixed cost
// at d64, where a 128-row tile's GEMMs are short (64·128·64 per wgmma): the
// prologue (first Q·Kᵀ + softmax with nothing to overlap), the last P·V and the epilogue are paid
// once per 192 rows instead of 128, and three warpgroups take turns issuing GEMMs (the ping-pong
// becomes a round robin), so two softmaxes overlap each GEMM turn. Shared memory at 192:
// Q 2 × 24 + 2 × (16 + 16) + O 24 = 136 KB. Costs: N not a multiple of 192 leaves a partial last
// tile (N 512: 3 tiles = 576 rows; 1024: 6 = 1152), and 1.5x fewer, longer tiles per wave.
// The masked (causal / window, + softcap) instance separately: at 192 it spills (ptxas: 156 B
// stores / 160 B loads at 160 registers; unmasked: none, 151 registers used), so it stays at 128.
// (With 96- or 64-key blocks, FA_SM90_FWD_D64_MASKED_BLOCK_N, it fits and is slower below N 8k.)
// H200, session 5 round 1, non-causal d64 N 512..8k, TFLOP/s: 128 rows with the tree reductions
// 316/378/411/429/417, 192 rows with the tree reductions and the rescale skip (both of which cost
// elsewhere) 345/395/466/475/483, 128 rows plain 328/388/430/451/443. Default 192 (round 2, 192
// rows without either: 364/423/500/534/530).
// 64 (either switch): one consumer warpgroup per CTA and two CTAs per SM (FwdKernel::kCtasPerSm),
// a build-time experiment against the per-tile fixed cost at short sequences: Q 2 × 8 + 2 × (16 +
// 16) + O 8 = 88 KB per CTA. H200, session 29 (docs/perf/ab_session29.md), three alternations:
// causal N512..16k −9, −7, −6, −6, −5, −5% against 128 rows, non-causal −8 to −17% against 192.
// The per-tile timeline counts the same SM cycles for both layouts at causal N512 / 2k, but the
// board held 1770 MHz for 64-row tiles against 1860-1875 at the same power (twice the K/V bytes
// from L2 per FLOP). Off.
#ifndef FA_SM90_FWD_D64_BLOCK_M
#define FA_SM90_FWD_D64_BLOCK_M 192
#endif
#ifndef FA_SM90_FWD_D64_MASKED_BLOCK_M
#define FA_SM90_FWD_D64_MASKED_BLOCK_M 128
#endif

// d192 / d256 key blocks (masked instances too), a build-time experiment for short sequences,
// where a tile has only 4-7 key blocks and the single Q slot is reloaded in the gap between tiles
// (the next tile's first Q·Kᵀ waits for a 48/64 KB load from HBM, issued by every SM at about the
// same moment since the tiles are equally long). Narrower blocks buy a second Q slot (the kernel
// gives d192/d256 two Q slots before an O buffer; FwdKernel::kQStages):
//   d256 48: Q 2 × 64 + 2 × (24 + 24) = 224 KB, 2 Q slots; N=512 → 11 blocks (528 keys computed)
//   d256 64: Q 64 + 2 × (32 + 32)     = 192 KB, 1 slot;    N=512 → 8 blocks, none ragged
//   d256 80: Q 64 + 2 × (40 + 40)     = 224 KB, 1 slot;    N=512 → 7 blocks (560 keys computed)
//   d192 64: Q 2 × 48 + 2 × (24 + 24) = 192 KB, 2 Q slots; N=512 → 8 blocks
//   d192 80: Q 2 × 48 + 2 × (30 + 30) = 216 KB, 2 Q slots; N=512 → 7 blocks (560)
//   d192 112: Q 48 + 2 × (42 + 42)    = 216 KB, 1 slot;    N=512 → 5 blocks (560)
// Costs of a narrow block: the per-block fixed work (softmax reductions, barriers, pipeline turns)
// is amortised over fewer keys, and an SS Q·Kᵀ wgmma m64nNk16 reads (64 + N) × 32 bytes of shared
// memory per 64·N·32 FLOP: at N = 48 that is ~28 cycles of shared-memory bandwidth (128 B/clk)
// per ~24 tensor-core cycles, so Q·Kᵀ becomes shared-memory bound (N = 80: 36 vs 40).
#ifndef FA_SM90_FWD_D192_BLOCK_N
#define FA_SM90_FWD_D192_BLOCK_N 112
#endif
#ifndef FA_SM90_FWD_D256_BLOCK_N
#define FA_SM90_FWD_D256_BLOCK_N 80
#endif
// K/V ring depth of the unmasked d256 instance, a build-time experiment with
// FA_SM90_FWD_D256_BLOCK_N=128 (cuDNN's d256 kernel, `64x128x256`, uses 128-key blocks):
// Q 64 + 1 × (64 + 64) = 192 KB. One stage: K_{j+1} loads once both warpgroups' Q·K_jᵀ have
// retired, under the second warpgroup's P·V, and V_{j+1} under the next Q·Kᵀ.
// H200, session 35 (LOG), 128 x 1 stage without the overlap (below) against the defaults, bf16
// d256 non-causal, two alternations, TFLOP/s at N 512/1k/2k/4k/16k: 467/465, 562/557, 609/604,
// 632/632, 676/676 against 461/451, 556/551, 610/603, 626/633, 686/685 (+2.3% at N512, −1.4% at
// 16k, the rest within ±1%); 3 s back to back (bench/clock_probe.py) at N512: 481 against 453-455.
// The defaults without the overlap: 425-437 ... 644 (−6%), so the wider block buys back the
// overlap and little more. Only 3 fa3 forward tests ran for it (d256 unmasked bf16). Off.
#ifndef FA_SM90_FWD_D256_STAGES
#define FA_SM90_FWD_D256_STAGES 2
#endif
// The unmasked d256 instance's intra-warpgroup overlap (fwd_feature::kIntraWgOverlap; 1 = on, as
// every other instance). With 128-key blocks O (128) + S_{j+1} (64) + P_j (32) registers per
// thread do not fit 240: local ptxas spills 412 B and serialises the wgmmas (C7512).
#ifndef FA_SM90_FWD_D256_OVERLAP
#define FA_SM90_FWD_D256_OVERLAP 1
#endif
// The masked (causal / window, + softcap) d256 instances separately. Two tiles since session 39,
// chosen per call by run_sm90_fwd (flash_fwd.cuh): this one (default 80 keys × 2 stages with the
// intra-warpgroup overlap, as the unmasked instance) for long key ranges, and the wide-key tile
// below (FwdTile<256, true, true>: 128 keys × 1 stage, no overlap, in its own units) for short ones.
// H100, session 39 (LOG; scripts/gpu/d256_masked_ab.sh), bf16 d256 causal, TFLOP/s at
// N 512/1k/2k/4k/8k/16k, two alternations each, cuDNN 303-309 ... 578-589 in the same call:
//   64 × 2 + overlap (the default until session 39) 282/288 404/400 487/491 527/574 601/599 616/617
//   80 × 2 + overlap                                270/269 395/396 510/512 606/604 657/657 694/701
//   128 × 1, no overlap                             292/285 415/418 523/508 568/566 621/619 664/645
// 128 keys: with Nq = Nk a 128-row tile's diagonal is exactly one key block, so causal N512 runs
// 10 key blocks per head instead of 20 of 64 (half the per-block softmax reductions, barriers and
// pipeline turns); with one K/V stage and no overlap it falls behind 80 × 2 once a tile has many
// full blocks. 80 keys: the diagonal is two or three ragged blocks (12% of N512's keys computed in
// vain), which costs at N <= 1k. Session 4 (H200, an older kernel): 64 beat 80 at N <= 2k
// (causal 0.71/0.84/0.96 against 0.64/0.76/0.91 × cuDNN) and the masked instance spilled 52 B at 80;
// today's kernel compiles 80 without spills (session 37).
#ifndef FA_SM90_FWD_D256_MASKED_BLOCK_N
#define FA_SM90_FWD_D256_MASKED_BLOCK_N 80
#endif
// The masked d256 instance's K/V ring depth and intra-warpgroup overlap (build-time experiments;
// FA_SM90_FWD_D256_MASKED_BLOCK_N=128 needs 1 stage, and without the overlap O 128 + S 64 + P 32
// registers per thread fit beside the mask's state: the wide-key tile's form).
#ifndef FA_SM90_FWD_D256_MASKED_STAGES
#define FA_SM90_FWD_D256_MASKED_STAGES 2
#endif
#ifndef FA_SM90_FWD_D256_MASKED_OVERLAP
#define FA_SM90_FWD_D256_MASKED_OVERLAP 1
#endif
// The masked d256 wide-key tile (1 = built: companion units sm90_fwd_<dtype>_hd256_mask_softcap_wide.cu,
// scripts/instances/sm90_fwd.py; 0 = not built, every masked d256 call takes the tile above).
// Which calls take it: run_sm90_fwd, by the key range a query tile can see, at most
// FA_SM90_FWD_D256_WIDE_MAX_N keys (environment, read once; default 2048, the session-39
// crossover; 0 = never, so one build measures both).
#ifndef FA_SM90_FWD_D256_MASKED_WIDE
#define FA_SM90_FWD_D256_MASKED_WIDE 1
#endif

// The unmasked d256 instance's short-range tile (1 = built: companion units
// sm90_fwd_<dtype>_hd256_short.cu; 0 = not built, every unmasked d256 call takes the 80-key tile).
// Which calls take it: run_sm90_fwd, by the key length, at most FA_SM90_FWD_D256_SHORT_MAX_N
// (environment, read once; default 512; 0 = never, so one build measures both). Why: the 80-key
// tile computes ceil(N / 80) · 80 keys, 560 at N = 512 (8.6% of its GEMM work past the end) in 7
// blocks; 128-key blocks (one stage, no overlap: the masked wide tile's form) make it exactly 4,
// 64-key blocks (2 stages with the overlap) exactly 8.
// FA_SM90_FWD_D256_SHORT_BLOCK_N: 128 (Q 64 + 1 × (64 + 64) = 192 KB) or 64 (Q 64 + 2 × (32 + 32)).
// H100, session 42 (docs/perf/ab_session42.md), bf16 d256 non-causal, two alternations, against
// the 80-key tile: 128 keys +5.8 / −0.7 / +1.0% at N 512 / 1k / 2k, 64 keys +0.2 / −4.2 / −4.2%
// (twice the blocks of 128: the per-block work eats the removed waste). Default 128, up to 512 keys.
#ifndef FA_SM90_FWD_D256_SHORT
#define FA_SM90_FWD_D256_SHORT 1
#endif
#ifndef FA_SM90_FWD_D256_SHORT_BLOCK_N
#define FA_SM90_FWD_D256_SHORT_BLOCK_N 128
#endif
// d192's short-range tiles, built like d256's (companion units sm90_fwd_<dtype>_hd192_short.cu and
// _hd192_mask_softcap_wide.cu; 0 = not built, the units compile to nothing). Why: d192's 112-key
// blocks (shared memory: Q 48 + 2 × (42 + 42) KB) cover 512 keys in 5 blocks of 560 and 1024 in 10
// of 1120 (8.6% of the GEMM work past the end), and a causal 128-row tile's diagonal straddles two
// of them. 128 keys × 1 stage: Q 48 + 1 × (48 + 48) = 144 KB, room for a second Q slot (192 KB).
// Routing as d256's, by the key range a query tile can see: FA_SM90_FWD_D192_SHORT_MAX_N
// (unmasked, default 1024) and FA_SM90_FWD_D192_WIDE_MAX_N (masked, default 512), environment,
// read once; 0 = never.
// H100, session 43 (docs/perf/ab_session43.md; scripts/gpu/d192_short_ab.sh), bf16 d192, two
// alternations, TFLOP/s against the 112-key tile at N 512 / 1k / 2k / 4k:
//   masked (causal) wide tile:  289, 291 / 399, 395 / 483, 498 / 550, 529 against
//                               271, 269 / 396, 399 / 500, 507 / 585, 588: +7.4 / 0 / −2.6 / −8%
//   unmasked short tile:        449, 447 / 528, 531 / 571, 572 / 577, 589 against
//                               452, 442 / 534, 528 / 601, 607 / 637, 672: 0 / 0 / −5.4 / −10.9%
//   unmasked with the overlap:  377, 377 / 438, 437 / 471, 484 / 475, 478: −16 / −18 / −21 / −27%
// Unmasked, the 8.6% of removed work and a fifth fewer blocks are eaten by the lost overlap (at
// d192 the softmax weighs more against a block's GEMMs than at d256, where the same tile gained
// +5.8% at N512); with the overlap but one stage, K_{j+1} loads only once both warpgroups' Q·K_jᵀ
// have retired, and the overlapped Q·K_{j+1}ᵀ waits for it. Causal N512 gains from the diagonal
// (one 128-key block per 128-row tile instead of two ragged ones). So the masked tile is built and
// taken up to 512 keys; the unmasked one is not built (FA_SM90_FWD_D192_SHORT=1 builds it).
// FA_SM90_FWD_D192_SHORT_OVERLAP: that unmasked tile with the intra-warpgroup overlap (O 96 +
// S_{j+1} 64 + P_j 32 registers per thread fit, without spills), measured above.
#ifndef FA_SM90_FWD_D192_SHORT
#define FA_SM90_FWD_D192_SHORT 0
#endif
#ifndef FA_SM90_FWD_D192_MASKED_WIDE
#define FA_SM90_FWD_D192_MASKED_WIDE 1
#endif
#ifndef FA_SM90_FWD_D192_SHORT_OVERLAP
#define FA_SM90_FWD_D192_SHORT_OVERLAP 0
#endif
// Whether (head dim, masked) has a short-range tile built (preprocessor-only: the companion units'
// and flash_fwd.cuh's #if). Its intra-warpgroup overlap: the unmasked d256 tile's with 64-key blocks
// and d192's switch; every 128-key masked tile runs without it.
#define FA_SM90_FWD_SHORT_TILE_BUILT(hd, masked)                                                  \
  ((hd) == 256   ? ((masked) ? FA_SM90_FWD_D256_MASKED_WIDE : FA_SM90_FWD_D256_SHORT)             \
   : (hd) == 192 ? ((masked) ? FA_SM90_FWD_D192_MASKED_WIDE : FA_SM90_FWD_D192_SHORT)             \
                 : 0)
#define FA_SM90_FWD_SHORT_TILE_OVERLAP(hd, masked)                                                \
  (!(masked) && ((hd) == 256 ? FA_SM90_FWD_D256_SHORT_BLOCK_N == 64                               \
                 : (hd) == 192 ? FA_SM90_FWD_D192_SHORT_OVERLAP : 0))
// Q slot release point: 1 = as soon as the tile's last Q·Kᵀ wgmma has retired (inside the last
// mainloop step, before its softmax and the last two P·V), 0 = after the mainloop (before the last
// P·V). Earlier release lets the producer start the next tile's Q load (one slot) a softmax and a
// P·V sooner; nothing reads Q after its last Q·Kᵀ, so the point only moves the load.
#ifndef FA_SM90_FWD_EARLY_Q_RELEASE
#define FA_SM90_FWD_EARLY_Q_RELEASE 1
#endif
// Tile handoff (1 = on): the producer thread, which walks the CTA's tile schedule for its loads
// anyway, writes each tile's coordinates and key range into a 2-record shared-memory ring
// (HandoffRing) and the consumer warpgroups read them there, instead of each walking the schedule
// and re-deriving the tile in its epilogue. Why: the per-tile timeline (session 31,
// fwd_timeline.sh with the NextCall/NextDone/WorkDone stamps) put 500-690 SM cycles per tile in the
// consumers' scheduler call and 100-220 in tile_work (divisions, 64-bit key-range arithmetic,
// parameter loads), ~950-1070 cycles from one tile's end to the next one's start, on each
// warpgroup's own serial path: ~10% of a d64 causal N512 tile, ~6% of a d128 N512 one.
// Warp-specialised TMA instances only (the others keep their own walk). H200, session 31, bf16,
// d64/d128/d256 x N 512..8k x causal/not, two alternations in one call against a build with it
// off: +1.3% geomean, +2..+4% at d64 N <= 1k, +1..+2% at d128 N <= 2k, within +-1% at N8k.
// racecheck cannot check the records (it does not model mbarrier ordering of ordinary shared-memory
// accesses: scripts/gpu/racecheck_probe.sh); check.sh sorts those reports apart (race_classify.py).
#ifndef FA_SM90_FWD_TILE_HANDOFF
#define FA_SM90_FWD_TILE_HANDOFF 1
#endif
// With the handoff: the next tile's record waited for and read under this tile's last P·V, where
// the warpgroup would otherwise only wait for the wgmma, instead of at the next tile's start
// (head_dim_bit mask: d64 2, d96 4, d128 8, d192 16, d256 32; 0 = none). Why: the session-31
// timeline with the handoff still spends 257-273 cycles per tile from the scheduler call to
// holding the record (mbarrier try_wait and the loads), on the warpgroup's serial path. Costs the
// record's ~23 registers from the last P·V to the next tile's start. Measured only together with
// FA_SM90_FWD_EPI_LATE (session 33, docs/perf/ab_session33.md): -0.7% geomean against the
// defaults, within the spread at every shape. Off.
#ifndef FA_SM90_FWD_TILE_PREFETCH
#define FA_SM90_FWD_TILE_PREFETCH 0
#endif
// Thread-block clusters of two with TMA multicast of K/V (head_dim_bit mask: d64 2, d96 4, d128 8,
// d192 16, d256 32; 0 = none), unmasked 16-bit persistent instances only. The two CTAs of a
// cluster take the two query blocks 2p, 2p + 1 of one (batch, head) in the same round, so they
// read the same K/V blocks at the same moment: each loads half of every K and V block and the TMA
// multicast writes it into both CTAs' shared memory. Why: a 128-row tile reads 128 FLOP per K/V
// byte, so at ~650 TFLOP/s the SMs pull ~5 TB/s of K/V out of L2; pairs halve that traffic (FA3
// enables clusters for d >= 128 non-causal). Costs: a slot is reloaded only when both CTAs'
// consumers have released it (one cross-CTA arrival per warpgroup), and a pair runs in lockstep.
// The launcher uses it where the query blocks per (batch, head) are even, the batch form and no
// GQA packing; FA_SM90_FWD_CLUSTER=0 in the environment (read once) turns it off at run time, so
// one build measures both. H200, session 11, one build, bf16 non-causal N 512..16k, on/off/on/off
// in one call (TFLOP/s, mean of the two runs each): d128 +0.5..+3% (N512 492 vs 482, N4k 655 vs
// 637, N16k 620 vs 615), d256 +1.5..+4% (N512 488 vs 470, N8k 710 vs 691), d64 -1..+1%
// (neutral). Second call, three alternations: d192 N512/1k/2k/4k/8k 473 566 656 710 687 vs 453 539
// 643 692 693 (+2..+5% to 4k, -1% at 8k), d96 -1..+2% (neutral). Default d128, d192, d256 (56).
#ifndef FA_SM90_FWD_CLUSTER
#define FA_SM90_FWD_CLUSTER 56
#endif
// Q·Kᵀ atoms of our own (fwd_wgmma_ext.hpp) for the key blocks N = 80 and 112, instead of CUTLASS's
// extended wgmma shapes (two headers of 76k lines that cost each unit using them ~10 s of CPU to
// parse: session 7). 0 = CUTLASS's extended shapes, as before session 7, for comparison (the same
// wgmma instruction: identical SASS for the six d192 / d256 units, session 7, cuobjdump).
#ifndef FA_SM90_FWD_OWN_EXT_MMA
#define FA_SM90_FWD_OWN_EXT_MMA 1
#endif
// Key blocks (Q·Kᵀ N) with an atom in fwd_wgmma_ext.hpp, taken when FA_SM90_FWD_OWN_EXT_MMA is 1.
#define FA_SM90_FWD_OWN_N(n) (FA_SM90_FWD_OWN_EXT_MMA && ((n) == 80 || (n) == 112))
// Whether the (head dim, masked) tile below needs one of CUTLASS's extended wgmma shapes: a key
// block (Q·Kᵀ N) other than 64, 96, 128, 192, 256, the base shapes' N >= 64 (P·V's N is the head
// dim, always a base shape), and not one of ours above: with the defaults none does; the other
// values the tile switches allow (d256 48, d128 144 / 160, ...) still get CUTLASS's.
// Preprocessor-only so that flash_fwd_kernel.cuh can decide before including CuTe; FwdKernel
// static_asserts that the atoms it gets have N = kBlockN, so a tile table and this predicate that
// disagree fail to compile instead of silently taking a narrower atom.
#define FA_SM90_FWD_EXT_N(n)                                                                      \
  ((n) != 64 && (n) != 96 && (n) != 128 && (n) != 192 && (n) != 256 && !FA_SM90_FWD_OWN_N(n))
#define FA_SM90_FWD_NEEDS_EXT_MMA(hd, masked)                                                     \
  ((hd) == 64 ? FA_SM90_FWD_EXT_N((masked) ? FA_SM90_FWD_D64_MASKED_BLOCK_N : FA_SM90_FWD_D64_BLOCK_N) \
   : (hd) == 96  ? 0                                                                              \
   : (hd) == 128 ? FA_SM90_FWD_EXT_N((masked) ? 128 : FA_SM90_FWD_D128_BLOCK_N)                  \
   : (hd) == 192 ? FA_SM90_FWD_EXT_N(FA_SM90_FWD_D192_BLOCK_N)                                    \
   : (hd) == 256 ? FA_SM90_FWD_EXT_N((masked) ? FA_SM90_FWD_D256_MASKED_BLOCK_N : FA_SM90_FWD_D256_BLOCK_N) \
                 : 1)
// Any head dim's tile (an includer that names none, e.g. scripts/check_sm90_fwd_layout.cu).
#define FA_SM90_FWD_ANY_NEEDS_EXT_MMA                                                             \
  (FA_SM90_FWD_NEEDS_EXT_MMA(64, 0) || FA_SM90_FWD_NEEDS_EXT_MMA(128, 0) ||                      \
   FA_SM90_FWD_NEEDS_EXT_MMA(192, 0) || FA_SM90_FWD_NEEDS_EXT_MMA(256, 0) ||                     \
   FA_SM90_FWD_NEEDS_EXT_MMA(256, 1))

// Epilogue overlap (head_dim_bit mask: d64 2, d96 4, d128 8, d192 16, d256 32; 0 = none): a
// consumer warpgroup defers a tile's epilogue (O / l, conversion, O and LSE stores) until it has
// issued the next tile's first Q·Kᵀ, so the epilogue runs under that wgmma instead of in front
// of it. At N <= 2k a tile has only 2-16 key blocks (causal: 1 at the diagonal), and the
// epilogue plus the next tile's set-up is a gap in the tensor pipe of the order of one key
// block's GEMMs per tile. The ping-pong turn sequence is unchanged (the same turns, the
// epilogue only moves behind one of them). Costs: O and the softmax state stay live through the
// next tile's set-up and first Q·Kᵀ (registers), and the last tile's epilogue runs after the loop.
// FA_SM90_FWD_EPI_OVERLAP for the unmasked instances, FA_SM90_FWD_EPI_OVERLAP_MASKED for the
// masked (causal / window) ones. Local ptxas (bf16, session 6): no spills for unmasked d128 and
// masked d64; spills for unmasked d64 (3 warpgroups at 160 registers: 32 B), masked d128 (112 B)
// and d256 (480 B), where the converted O of the previous tile no longer fits beside the next
// tile's set-up. Default 0. H200, session 6 round 2 (bf16, TFLOP/s at N 512/1k/8k, default
// build → FA_SM90_FWD_SHORT_N=1, i.e. this at d128 plus MASK_SPLIT, whose masking loop these
// unmasked shapes do not run: N is a multiple of kBlockN): d128 non-causal 495 593 683 →
// 499 586 639 (N8k -6%; same-code spread up to ~5%, d128 N8k has a known slow mode). _MASKED=2
// was timed only together with MASK_SPLIT, at d64 causal: 195 280 434 → 195 287 454. Tests
// passed with SHORT_N=1 (508, +275 with FA_SM90_PACK_GQA=1); a racecheck of the Quick and Ring
// fa3 suites timed out at 100 s without a report, so the overlap path is not race-checked.
#ifndef FA_SM90_FWD_EPI_OVERLAP
#define FA_SM90_FWD_EPI_OVERLAP 0
#endif
#ifndef FA_SM90_FWD_EPI_OVERLAP_MASKED
#define FA_SM90_FWD_EPI_OVERLAP_MASKED 0
#endif
// The deferred epilogue, later and in two halves (head_dim_bit mask; acts only where the overlap
// above defers the epilogue). At the end of a tile a warpgroup converts O and writes it to its
// shared-memory buffer (stmatrix) as before; the proxy fence, the barrier, the TMA store and the
// LSE stores wait until the next tile's first Q·Kᵀ / P·V pair is issued (or its only P·V). O's
// registers are free at once, which the overlap's converted O in registers was not (it spilled
// at masked d128, and a later store spilled unmasked d128 too: 108 B). Direct stores (varlen,
// packed GQA, unaligned O) are not deferred.
// Why the overlap alone measured neutral (session 30), by the session 31 timeline's costs: after
// its last P·V a warpgroup runs convert, stores, the next tile's set-up and Q wait before its
// first Q·Kᵀ, then its first softmax before its next GEMMs. Deferring the stores behind the first
// Q·Kᵀ moves them from before that Q·Kᵀ to before the first softmax: both on the warpgroup's path
// to its next GEMM pair, and the tensor pipe idles about as long (~1700 cycles per tile at d128
// N512 by that reading, either way). Behind the first GEMM pair they overlap this warpgroup's
// own GEMMs, which leaves ~800 idle cycles. H200, session 33 (docs/perf/ab_session33.md), with
// FA_SM90_FWD_TILE_PREFETCH, bf16 d64/d128 x N 512-8k x causal/not, two alternations against the
// defaults: -0.7% geomean, every shape within the run-to-run spread. Off.
#ifndef FA_SM90_FWD_EPI_LATE
#define FA_SM90_FWD_EPI_LATE 0
#endif
// Tiles chained through the ping-pong turn (head_dim_bit mask; acts where FA_SM90_FWD_EPI_LATE
// does, with the tile handoff and two Q slots: d64-d128). A tile's last P·V and the
// next tile's first Q·Kᵀ go out in one turn, as the mainloop's pairs do, and the next tile's
// first softmax runs under that last P·V; the tile's epilogue (convert, stage O) follows, then
// the next tile goes on at its second pair. Without it, between a warpgroup's last P·V and its
// next GEMM pair lie the epilogue, the Q·Kᵀ alone (its whole latency: 365 cycles at d64, 640 at
// d128 by the session 28 timeline) and the first softmax with no GEMM of its own under it.
// The next tile's record is waited for before the last P·V's turn and read in shared memory,
// so FA_SM90_FWD_TILE_PREFETCH does nothing where this is on. Costs: a second softmax state
// across the last P·V (registers).
// H200, session 33 (docs/perf/ab_session33.md), with FA_SM90_FWD_Q_AHEAD and the late epilogue,
// bf16 d64/d128 x N 512-8k x causal/not, two alternations against the defaults: -3.8% geomean,
// -11.5% at d64 causal N512; tests and RingSmall sanitizers pass. Its timeline: the chained turn
// waits for the next record, Q and K0 (~500-950 cycles median) before the last P·V goes out, and
// the other warpgroup with it; the next tile's first Q·Kᵀ and softmax are no shorter in the tail
// than they were under the other warpgroup's GEMMs. Off.
#ifndef FA_SM90_FWD_TILE_CHAIN
#define FA_SM90_FWD_TILE_CHAIN 0
#endif
// Q one tile ahead (head_dim_bit mask; instances with two Q slots: d64-d128). The producer loads
// a tile's K/V blocks in order and, today, the next tile's Q only after this tile's last V: about
// one key block before this tile ends. The session 28 timeline still measured ~270 cycles of Q
// wait at a d128 N512 tile's start, and FA_SM90_FWD_TILE_CHAIN needs the next Q a last P·V and
// an epilogue sooner. With this on, the producer walks the schedule ahead (a copy of its walker)
// after a tile's first K block and loads the next tile's Q into the other slot then: its slot
// frees at the previous tile's last Q·Kᵀ, before the slot of this tile's V₀ frees, so no K/V
// load waits longer for it. H200, session 33 (ab_session33.md): alone -1.0% geomean, within the
// spread at every shape; with the chain it cut the next Q's wait there from 800-1283 cycles
// (median) to ~110. Off.
#ifndef FA_SM90_FWD_Q_AHEAD
#define FA_SM90_FWD_Q_AHEAD 0
#endif

// kWideKeys: the head dim's tile for short key ranges (fwd_feature::kWideKeys), where it has one:
// the masked wide-key tiles and the unmasked short-range tiles of d192 and d256.
template <int kHeadDim, bool kMasked = false, bool kWideKeys = false>
struct FwdTile;

template <bool kMasked> struct FwdTile<64, kMasked, false> {
  static constexpr int kBlockM = kMasked ? FA_SM90_FWD_D64_MASKED_BLOCK_M : FA_SM90_FWD_D64_BLOCK_M,
                       kBlockN = kMasked ? FA_SM90_FWD_D64_MASKED_BLOCK_N : FA_SM90_FWD_D64_BLOCK_N,
                       kStages = FA_SM90_FWD_D64_STAGES;
};
template <bool kMasked> struct FwdTile<96, kMasked, false>  { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 2; };
template <bool kMasked> struct FwdTile<128, kMasked, false> {
  static constexpr int kBlockM = 128, kBlockN = kMasked ? 128 : FA_SM90_FWD_D128_BLOCK_N, kStages = 2;
};
template <bool kMasked> struct FwdTile<192, kMasked, false> {
  static constexpr int kBlockM = 128, kBlockN = FA_SM90_FWD_D192_BLOCK_N, kStages = 2;
};
template <bool kMasked> struct FwdTile<256, kMasked, false> {
  static constexpr int kBlockM = 128,
                       kBlockN = kMasked ? FA_SM90_FWD_D256_MASKED_BLOCK_N : FA_SM90_FWD_D256_BLOCK_N,
                       kStages = kMasked ? FA_SM90_FWD_D256_MASKED_STAGES : FA_SM90_FWD_D256_STAGES;
};
// Q 64 + 1 × (64 + 64) = 192 KB; its kernel runs without the intra-warpgroup overlap (registers).
template <> struct FwdTile<256, true, true> { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 1; };
// The unmasked short-range tile (FA_SM90_FWD_D256_SHORT_BLOCK_N above): 128 keys only with one stage.
template <> struct FwdTile<256, false, true> {
  static constexpr int kBlockM = 128, kBlockN = FA_SM90_FWD_D256_SHORT_BLOCK_N,
                       kStages = FA_SM90_FWD_D256_SHORT_BLOCK_N == 128 ? 1 : 2;
};
// d192's two short-range tiles: Q 48 + 1 × (48 + 48) = 144 KB (two Q slots fit: 192 KB).
template <bool kMasked> struct FwdTile<192, kMasked, true> { static constexpr int kBlockM = 128, kBlockN = 128, kStages = 1; };

// FP8 (e4m3) tiles. Default kBlockN = core::fp8::kKBlock = 128, so every key block has one K scale
// (FA3's block quantisation), and kBlockM = 128 (2 consumer warpgroups; each one's 64 rows are one Q
// scale block, core::fp8::kQBlock). Operands are 1 byte, so the ring is half the 16-bit one per
// stage and there is room for more stages; O is staged in the 2-byte output type:
//   d64 : Q 2 × 8 + 4 × (8 + 8) KB + O 16 KB          =  96 KB
//   d128: Q 2 × 16 + 4 × (16 + 16) KB + O 32 KB       = 192 KB
//   d256: Q 2 × 32 + 2 × (32 + 32) KB                  = 192 KB (the O buffer, 64 KB, does not fit
//         beside two Q slots: direct stores, as the 16-bit d256)
// Build-time experiments against the per-key-block fixed work, which at fp8 weighs twice as much
// per FLOP as at 16 bits (the GEMMs take half the time; H200, session 9: fp8 d64 below bf16 d64,
// fp8 d128 far below fp8 d256; SASS of fp8 d64's key-block loop ~8.8 instructions per score,
// issue-bound rather than MUFU-bound):
// FA_SM90_FWD_FP8_D64_BLOCK_M 192: 3 consumer warpgroups at d64 (160 registers each, as the 16-bit
// d64 default), Q scale block kConsumerWGs · m_block + warpgroup. Unmasked instances; the masked
// one has its own switch, FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M, which spills at 192 (local ptxas,
// session 9: 32 B stores / 40 B loads).
//   d64 M192: Q 2 × 12 + 4 × (8 + 8) + O 24 = 112 KB
// FA_SM90_FWD_FP8_D64_BLOCK_N / _D128_BLOCK_N 256, unmasked instances: a key block of two K-scale
// blocks; the softmax takes one factor per 128-key half (OnlineSoftmax::update_scaled). FA3's fp8
// tiles are 192 × 160 (d64) and 128 × 224 (d128), but a key block that is not a multiple of 128
// would straddle K-scale blocks at run-time positions. Fewer stages where 4 do not fit:
//   d64 N256: Q 2 × 8 + 4 × (16 + 16) + O 16 = 160 KB;  d128 N256: Q 2 × 16 + 2 × (32 + 32) + O 32 = 192 KB
// Registers per consumer thread (fp32 S + fp32 O + e4m3 P, all live while the next block's Q·Kᵀ
// overlaps P·V): d64 N256 128 + 32 + 32 at 240, no spills; d128 N256 128 + 64 + 32, spills (144 B
// stores / loads); the masked d64 instance at 256 spilled too (232 B), so masked instances keep 128;
// 3 warpgroups (160 registers) with N256 do not compile (ptxas C7602: S alone is 128).
// Default 192 (unmasked): H200, session 9, same call, alternating processes, fp8 d64 non-causal
// TFLOP/s at N 1k/4k/8k/16k: 128 → 410 472 454 477 / 411 444 444 486, 192 → 468 585 583 633 / 470
// 547 564 627 (geomean +24%); N256 (128 rows) was −3% (454 → 439). Masked stays 128 (spills).
#ifndef FA_SM90_FWD_FP8_D64_BLOCK_M
#define FA_SM90_FWD_FP8_D64_BLOCK_M 192
#endif
#ifndef FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M
#define FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M 128
#endif
#ifndef FA_SM90_FWD_FP8_D64_BLOCK_N
#define FA_SM90_FWD_FP8_D64_BLOCK_N 128
#endif
#ifndef FA_SM90_FWD_FP8_D128_BLOCK_N
#define FA_SM90_FWD_FP8_D128_BLOCK_N 128
#endif
template <int kHeadDim, bool kMasked = false>
struct FwdTileFp8 {
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "fp8 forward head dims");
  static constexpr int kBlockM =
      kHeadDim == 64 ? (kMasked ? FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M : FA_SM90_FWD_FP8_D64_BLOCK_M)
                     : 2 * core::fp8::kQBlock;
  static constexpr int kBlockN = kMasked             ? core::fp8::kKBlock
                                 : kHeadDim == 64    ? FA_SM90_FWD_FP8_D64_BLOCK_N
                                 : kHeadDim == 128   ? FA_SM90_FWD_FP8_D128_BLOCK_N
                                                     : core::fp8::kKBlock;
  // d64/d128: as many K/V stages as fit beside two Q slots and the O buffer (2-byte O), at most 4.
  static constexpr int kStageFit =
      (227 * 1024 - 1024 - 2 * kBlockM * kHeadDim - 2 * kBlockM * kHeadDim) / (2 * kBlockN * kHeadDim);
  static constexpr int kStages = kHeadDim <= 128 ? (kStageFit < 4 ? kStageFit : 4) : 2;
};
static_assert((FA_SM90_FWD_FP8_D64_BLOCK_M == 128 || FA_SM90_FWD_FP8_D64_BLOCK_M == 192) &&
                  (FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M == 128 || FA_SM90_FWD_FP8_D64_MASKED_BLOCK_M == 192),
              "fp8 d64 query tile: 2 or 3 consumer warpgroups of one Q scale block each");
static_assert((FA_SM90_FWD_FP8_D64_BLOCK_N == 128 || FA_SM90_FWD_FP8_D64_BLOCK_N == 256) &&
                  (FA_SM90_FWD_FP8_D128_BLOCK_N == 128 || FA_SM90_FWD_FP8_D128_BLOCK_N == 256),
              "fp8 key block: whole K-scale blocks (core::fp8::kKBlock), at most the 256-key TMA box");
static_assert(FA_SM90_FWD_FP8_D64_BLOCK_M == 128 || FA_SM90_FWD_FP8_D64_BLOCK_N == 128,
              "fp8 d64: 3 consumer warpgroups (160 registers) cannot hold a 256-key S (128 registers)");

static_assert(FA_SM90_FWD_D64_BLOCK_N % 16 == 0 && FA_SM90_FWD_D64_BLOCK_N <= 192, "P·V needs K % 16 == 0");
static_assert(FA_SM90_FWD_D64_MASKED_BLOCK_N % 16 == 0 && FA_SM90_FWD_D64_MASKED_BLOCK_N <= 192, "P·V needs K % 16 == 0");
static_assert((FA_SM90_FWD_D64_BLOCK_M == 64 || FA_SM90_FWD_D64_BLOCK_M == 128 || FA_SM90_FWD_D64_BLOCK_M == 192) &&
                  (FA_SM90_FWD_D64_MASKED_BLOCK_M == 64 || FA_SM90_FWD_D64_MASKED_BLOCK_M == 128 ||
                   FA_SM90_FWD_D64_MASKED_BLOCK_M == 192),
              "d64 query tile: 1 (two CTAs per SM), 2 or 3 consumer warpgroups");
static_assert(FA_SM90_FWD_Q_STAGES == 1 || FA_SM90_FWD_Q_STAGES == 2, "Q: one or two slots");
static_assert(FA_SM90_FWD_D64_STAGES >= 2 && FA_SM90_FWD_D64_STAGES <= 4, "d64 K/V ring depth");
static_assert(FA_SM90_FWD_D128_BLOCK_N % 16 == 0 && FA_SM90_FWD_D128_BLOCK_N <= 160, "smem: see above");
static_assert(FA_SM90_FWD_D192_BLOCK_N == 64 || FA_SM90_FWD_D192_BLOCK_N == 80 || FA_SM90_FWD_D192_BLOCK_N == 112,
              "d192 key block: see above");
static_assert(FA_SM90_FWD_D256_BLOCK_N == 48 || FA_SM90_FWD_D256_BLOCK_N == 64 || FA_SM90_FWD_D256_BLOCK_N == 80 ||
                  (FA_SM90_FWD_D256_BLOCK_N == 128 && FA_SM90_FWD_D256_STAGES == 1),
              "d256 key block: see above (128 fits shared memory only with one K/V stage)");
static_assert(FA_SM90_FWD_D256_STAGES == 1 || FA_SM90_FWD_D256_STAGES == 2, "d256 K/V ring depth");
static_assert(FA_SM90_FWD_D256_MASKED_BLOCK_N == 48 || FA_SM90_FWD_D256_MASKED_BLOCK_N == 64 ||
                  FA_SM90_FWD_D256_MASKED_BLOCK_N == 80 ||
                  (FA_SM90_FWD_D256_MASKED_BLOCK_N == 128 && FA_SM90_FWD_D256_MASKED_STAGES == 1),
              "d256 masked key block: see above (128 fits shared memory only with one K/V stage)");
static_assert(FA_SM90_FWD_D256_MASKED_STAGES == 1 || FA_SM90_FWD_D256_MASKED_STAGES == 2,
              "d256 masked K/V ring depth");
static_assert(FA_SM90_FWD_D256_MASKED_WIDE == 0 || FA_SM90_FWD_D256_MASKED_WIDE == 1, "0 or 1");
static_assert(FA_SM90_FWD_D256_SHORT == 0 || FA_SM90_FWD_D256_SHORT == 1, "0 or 1");
static_assert(FA_SM90_FWD_D256_SHORT_BLOCK_N == 64 || FA_SM90_FWD_D256_SHORT_BLOCK_N == 128,
              "d256 short-range key block: 64 (2 stages) or 128 (1 stage)");
static_assert((FA_SM90_FWD_D192_SHORT == 0 || FA_SM90_FWD_D192_SHORT == 1) &&
                  (FA_SM90_FWD_D192_MASKED_WIDE == 0 || FA_SM90_FWD_D192_MASKED_WIDE == 1) &&
                  (FA_SM90_FWD_D192_SHORT_OVERLAP == 0 || FA_SM90_FWD_D192_SHORT_OVERLAP == 1),
              "0 or 1");
static_assert(FA_SM90_FWD_EARLY_Q_RELEASE == 0 || FA_SM90_FWD_EARLY_Q_RELEASE == 1, "0 or 1");
static_assert(FA_SM90_FWD_OWN_EXT_MMA == 0 || FA_SM90_FWD_OWN_EXT_MMA == 1, "0 or 1");

}  // namespace fa::cuda::sm90
