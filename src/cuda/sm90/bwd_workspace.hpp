// Scratch memory of the sm90 (FA3) backward, shared by its three kernels and the host.
//
// Per query head, rows are stored in a "padded" row space: sequence b's rows start at a multiple
// of kRowPad (a whole number of query blocks) and own round_up(q_len, kRowPad) rows. Padding keeps every query
// block's LSE/D slice 256-byte aligned (the main kernel fetches them with cp.async.bulk, which
// needs 16-byte aligned, whole-block transfers) and gives rows past a sequence's end defined
// values (LSE = +inf, D = 0, so P = 0 there) without per-element bounds checks in the main loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/params.hpp"
#include "cuda/common/env.hpp"
#include "cuda/scheduler/tile_scheduler.hpp"

namespace fa::cuda::sm90_bwd {

// Query rows per step of the main kernel at d64 (BwdConfig::kBlockM): 128 (the default: 128 keys x
// 128 queries per CTA step, wgmmas of N = 128 for S^T/dP^T) or 64 (-DFA_SM90_BWD_D64_BLOCK_M=64).
// Every other head dim uses 64. H200, session 4, bf16 d64 against cuDNN in the same run: 0.99-1.09x
// (geomean 1.04) with 128, 0.88-0.99x with 64 in the session-3 grid.
#ifndef FA_SM90_BWD_D64_BLOCK_M
#define FA_SM90_BWD_D64_BLOCK_M 128
#endif
static_assert(FA_SM90_BWD_D64_BLOCK_M == 64 || FA_SM90_BWD_D64_BLOCK_M == 128, "d64 query block: 64 or 128");
// Padding granularity of the row space: a multiple of every instance's kBlockM, so a query block
// never reaches into the next sequence's or head's rows.
constexpr int kRowPad = FA_SM90_BWD_D64_BLOCK_M;
// Rows per bwd_preprocess CTA and per deterministic-mode turn counter: the smallest kBlockM (a
// query block of kBlockM rows uses the counter of its first 64 rows).
constexpr int kTurnRows = 64;
static_assert(kRowPad % kTurnRows == 0);

// Query rows per step of the non-causal d128 tile, FA_SM90_BWD_D128_NC_BLOCK_M: 80 (default;
// FA3's hdim-128 non-causal tile: d128 calls without a window or softcap go to the 80-row kernel
// of the companion units sm90_bwd_<dtype>_hd128_mask_nc80.cu; flash_bwd.cuh, nc80_enabled; the
// environment variable of the same name set to 64 turns it off at run time) or 64 (the d128
// instances' one tile for every call). H200, bf16 non-causal, same build, two alternations
// (session 15): N1k/4k/8k/16k 480-481 / 537-549 / 557-567 / 572-577 TFLOP/s vs 467-476 /
// 533-536 / 546-551 / 553 at 64: 25% more work per step for the same per-step barriers, waits
// and dQ bulk add. An 80-row block does not divide kRowPad, so that kernel and its pre/post
// passes pad each sequence's rows to a multiple of kNc80RowPad = lcm(80, kTurnRows) instead: its
// blocks then never reach another sequence's rows, and every 64-row preprocess CTA and turn
// counter stays inside the sequence. The workspace is sized for both paddings when the switch is
// on (workspace_bytes).
#ifndef FA_SM90_BWD_D128_NC_BLOCK_M
#define FA_SM90_BWD_D128_NC_BLOCK_M 80
#endif
static_assert(FA_SM90_BWD_D128_NC_BLOCK_M == 64 || FA_SM90_BWD_D128_NC_BLOCK_M == 80,
              "d128 non-causal query block: 64 or 80");
constexpr int kNc80RowPad = 320;
// Row padding of a kernel whose query blocks have block_m rows.
constexpr int row_pad_for(int block_m) { return block_m == 80 ? kNc80RowPad : kRowPad; }
static_assert(kNc80RowPad % 80 == 0 && kNc80RowPad % kTurnRows == 0);

// Fused dQ conversion (build-time experiment, default off): the main kernel's CTA that adds the
// last contribution to a (query head, query block) of dQ converts it (fp32 accumulator * scale ->
// dQ) at the end of its work, and bwd_convert_dq is not launched. Each block has an arrival
// counter (dq_arrive) that bwd_preprocess sets to the number of key blocks that visit it and that
// each visiting CTA decrements once its bulk reduce-add of the block is complete; the CTA that
// takes it to 0 owns the conversion. Only where dQ goes through the TMA staging buffer (kDqTma:
// d <= 128), and only for calls where a CTA walks at most kFuseMaxSteps (query head, query block)
// steps (short N, where the convert kernel's fixed cost shows): the CTA keeps one bit per step.
#ifndef FA_SM90_BWD_FUSED_CONVERT
#define FA_SM90_BWD_FUSED_CONVERT 0
#endif
constexpr bool kFusedConvert = FA_SM90_BWD_FUSED_CONVERT != 0;
constexpr int kFuseMaxSteps = 256;
constexpr int kFuseWords = kFuseMaxSteps / 32;

// First-adder store (d <= 128, where dQ goes through the TMA staging buffer): bwd_preprocess does
// not zero the fp32 dQ accumulator, the first CTA to add a (query head, query block) stores it
// with a bulk copy instead of a reduce-add and the others add after it (dq_writer: the turn
// counter says who is first), and bwd_convert_dq writes 0 for a block nobody visited. Saves the
// zeroing's writes (a quarter of the two passes' bytes: at 16k tokens x 2048 = H*d, 134 MB of
// the ~470 MB they move, ~30 us of a ~550 us d128 N512 backward) and the first add's read of
// those zeros. FA_SM90_BWD_DQ_STORE: 1 (default) = on for calls with at most
// FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS key blocks per sequence, 0 = off (the previous behaviour); the
// run-time environment variables of the same names override both (flash_bwd.cuh).
// The threshold: H200, session 5 round 1, bf16, store always on vs off (ours, TFLOP/s):
//   d64  N512 +1.5%, 1k +0.3%, 8k +0.2%;  causal N512 +5.9%, 1k +3.1%, 8k -3.3%
//   d128 N512 +3.2%, 1k +1.4%, 8k -2.4%;  causal N512 +7.0%, 1k +5.0%, 8k +1.0%
// The zeroing saved is a fixed share of dQ's bytes, so its gain shrinks as 1/N while the wait
// for each block's first store (up to n_blocks key blocks reach query block 0 together,
// non-causal) grows with N. Round 2 (16 / never / always): the store gains 0-8% at N <= 2k and
// is within the spread of off at 4k-8k (d128 causal 4k: 471 / 481 / 474), so 16 blocks of 128
// keys (N <= 2048) stays; the env variable A/Bs it.
// Rotated query order (session 7; non-causal): the key blocks of a pair start at different query
// blocks, so two of them rarely reach a fresh block together and the first store's wait is rare.
// Session 12, kernel durations under ncu at locked base clocks, limit 16 vs always, non-causal
// (preprocess / main / conversion): d64 N4k 72 / 3640 / 56 vs 38 / 3610 / 59 us, N8k 72 / 7120 / 56
// vs 38 / 7040 / 57, N16k 71 / 14060 / 56 vs 39 / 13890 / 58 (-1.4..-1.6% in all); d128 N4k
// 69 / 2935 / 54 vs 39 / 2945 / 58 (-0.9%), N8k 69 / 5745 / 55 vs 39 / 5770 / 58 (0), N16k
// 68 / 11370 / 58 vs 38 / 11420 / 57 (+0.2%). So from session 12 to 17, with the rotated order:
// every call at d64, up to 32 key blocks above d64; 16 otherwise (causal was not re-measured,
// and masked calls keep 16). Sessions 16-18 (sustained clocks, with the 80-query d128 tile; session
// 18 also with the tail split), d128 non-causal N8k, store at every length vs the 32-block limit:
// 573 vs 571 (session 16 ablation), 558 568 vs 568 563 and N16k 578 578 vs 572 577 (session 17),
// 564 564 564 vs 560 563 558 (session 18, alternated pairs): never slower beyond the spread, and
// it skips the zeroing pass, so the rotated order takes the store at every length and head dim.
#ifndef FA_SM90_BWD_DQ_STORE
#define FA_SM90_BWD_DQ_STORE 1
#endif
#ifndef FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS
#define FA_SM90_BWD_DQ_STORE_MAX_NBLOCKS 16
#endif

FA_HD int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// First padded row of sequence b (its q_start is the global row in the varlen form), rows padded
// to multiples of kPad. Varlen: consecutive starts differ by a multiple of kPad greater than the
// sequence's q_len, i.e. by at least round_up(q_len, kPad).
template <int kPad = kRowPad>
FA_HD int64_t padded_row_start(const core::AttnParams& p, int b, int64_t q_start) {
  if (p.varlen) return (q_start + int64_t(b) * kPad) / kPad * kPad;
  return int64_t(b) * round_up(p.seqlen_q, kPad);
}

// Rows of the padded space per head: an upper bound that needs no device data (varlen).
template <int kPad = kRowPad>
inline int64_t padded_rows(const core::AttnParams& p) {
  if (p.varlen) return (p.total_q + int64_t(p.batch) * kPad) / kPad * kPad + kPad;
  return int64_t(p.batch) * round_up(p.seqlen_q, kPad);
}

// The rows workspace_bytes provides for: with the 80-row d128 tile built in, a d128 call may take
// either padding (the choice also depends on the environment, nc80_enabled), so the larger one.
inline int64_t workspace_rows(const core::AttnParams& p) {
  const int64_t rows = padded_rows<kRowPad>(p);
  if (FA_SM90_BWD_D128_NC_BLOCK_M == 80 && p.head_dim == 128) return std::max(rows, padded_rows<kNc80RowPad>(p));
  return rows;
}

// Tail split (FA_SM90_BWD_TAIL_SPLIT): the main grid is waves of equal CTAs, one per key block,
// and its last wave is partial (the d128 grid: 2048 CTAs on 132 SMs, 15.5 waves, so 64 SMs idle
// for a whole CTA at the end). The per-CTA timeline (session 17, d128 non-causal, scripts/
// bwd_timeline.py) had the SMs busy 96.8-96.9% of the main kernel's span at N 4k/8k/16k: the idle
// share is that half wave (the per-CTA fixed cost is ~2%, the gap between CTAs 0.26 us). Split,
// each key block of the last partial wave is walked by `ways` CTAs, each over its share of the
// query blocks (in every query head of the group); every piece adds its fp32 dK/dV to the tile's
// zeroed slot in the workspace (red.global.add) and the last piece to arrive (a counter per slot)
// reads the sums back and stores dK/dV. Busy share with it: 99.1% (N8k, 5 ways), 99.3% (N16k).
// End to end the gain is smaller (H200, session 17, d128 non-causal, on vs off alternated in one
// build: N4k +0.6%, N8k +0.5%, N16k +1.3%, d64 N8k +0.7%; against the previous commit's build,
// N8k +1.1%, N16k +1.3%): the dQ conversion (bwd_convert_dq_follow) used to run on the SMs the
// half wave left idle and now mostly runs after the pieces. Only non-deterministic calls without
// a mask or varlen, on tiles of kTailBlockN keys (d <= 128). FA_SM90_BWD_TAIL_SPLIT (build macro
// or environment, read once): 0 = off, 1 = on (ways from tail_split_ways' model, default), N >= 2
// = always N ways when there is a partial wave (a test hook).
#ifndef FA_SM90_BWD_TAIL_SPLIT
#define FA_SM90_BWD_TAIL_SPLIT 1
#endif
constexpr int kTailBlockN = 128;
inline int tail_split_mode() {
  static const int m = env_int("FA_SM90_BWD_TAIL_SPLIT", FA_SM90_BWD_TAIL_SPLIT);
  return m;
}

// The calls the split may serve (the workspace reserves its slots for them).
inline bool tail_split_eligible(const core::AttnParams& p) {
  return tail_split_mode() != 0 && !p.deterministic && !p.varlen && p.window_left < 0 && p.window_right < 0 &&
         p.head_dim <= 128 && p.seqlen_k > 0 && p.seqlen_q > 0;
}

// Key blocks (tiles) in the partial last wave of a grid of `tiles` one-wave-per-SM CTAs, or 0.
inline int64_t tail_tiles(int64_t tiles, int sms) { return sms > 0 ? tiles % sms : 0; }

// How many pieces each tail tile is split into: the fewest rounds of pieces times a piece's
// length, a piece costing `fixed_steps` steps more than its share of the tile's `steps` (its
// K/V load, pipeline fill and dK/dV reduction: ~5.6 us measured ~ 2 steps, plus the slot's adds).
// 1 = no split. Rounds: ceil(tail * ways / sms).
inline int tail_split_ways(int64_t tiles, int sms, int steps) {
  const int64_t tail = tail_tiles(tiles, sms);
  const int mode = tail_split_mode();
  if (tail == 0 || steps < 2 || mode == 0) return 1;
  if (mode >= 2) return std::min(mode, steps);
  constexpr double fixed_steps = 3.0;
  int best = 1;
  double best_cost = double(steps);
  for (int w = 2; w <= 8 && w <= steps / 4; ++w) {
    const int64_t rounds = (tail * w + sms - 1) / sms;
    const double cost = double(rounds) * (double(steps) / w + fixed_steps);
    if (cost < 0.95 * best_cost) {
      best = w;
      best_cost = cost;
    }
  }
  return best;
}

// The split's index arithmetic, shared by bwd_main (cta_coord, the piece's query blocks),
// bwd_convert_dq_follow (how many CTAs report per (sequence, KV head)) and the host tests
// (tests/cuda/test_sm90_bwd_tail_split.cu). A split launch is a 1-D grid: CTA `lin` below `first`
// is whole tile `lin` (the 3-D grid's order: key block fastest, then KV head, then sequence);
// above, it is piece (lin - first) % ways of tile first + (lin - first) / ways.
struct TailCta {
  int tile;
  int piece;  // -1: the whole tile
};
FA_HD TailCta tail_cta(int lin, int first, int ways) {
  const int t = lin - first;
  if (t < 0) return {lin, -1};
  return {first + t / ways, t - (t / ways) * ways};
}
// The query blocks [*lo, *hi) of the tile's `count` that piece `piece` of `ways` walks.
FA_HD void tail_piece_range(int piece, int ways, int count, int* lo, int* hi) {
  *lo = piece * count / ways;
  *hi = (piece + 1) * count / ways;
}
// CTAs of a (sequence, KV head) pair whose tiles are [t0, t0 + n): one per whole tile, `ways` per
// split tile (ways 0: no split).
FA_HD int64_t tail_pair_ctas(int64_t t0, int64_t n, int64_t first, int ways) {
  if (ways <= 0) return n;
  const int64_t from = t0 > first ? t0 : first;
  const int64_t split = t0 + n > from ? t0 + n - from : 0;
  return n + split * (ways - 1);
}

struct BwdWorkspace {
  int64_t rows_pad = 0;
  float* dq_acc = nullptr;    // [Hq][rows_pad][head_dim] fp32 dQ accumulator (softmax scale not applied)
  float* lse_log2 = nullptr;  // [Hq][rows_pad] LSE * log2(e); +inf for empty rows and padding
  float* dpsum = nullptr;     // [Hq][rows_pad] D = rowsum(dO * O); 0 on padding
  int* dq_turn = nullptr;     // [Hq][rows_pad / kTurnRows] deterministic mode: next key block to add
  int* dq_arrive = nullptr;   // [Hq][rows_pad / kTurnRows] kFusedConvert: key blocks still to add
  int* kv_done = nullptr;     // [batch][Hkv] key blocks whose dQ adds are complete (convert_follows)
  // Tail split: tail_cta's `first` and `ways` of the launch; split_ways = 0: the 3-D grid, no split.
  float* dkv_part = nullptr;  // [tail tiles][2][kTailBlockN * head_dim] fp32 dK, dV sums (zeroed)
  int* dkv_count = nullptr;   // [tail tiles] pieces arrived (zeroed with dkv_part)
  int split_first = 0;
  int split_ways = 0;
};

// The tail tiles the workspace holds slots for (0 when the call cannot split): tiles of
// kTailBlockN keys, one wave per SM.
inline int64_t tail_split_reserved(const core::AttnParams& p) {
  if (!tail_split_eligible(p)) return 0;
  const int64_t tiles = (p.seqlen_k + kTailBlockN - 1) / kTailBlockN * p.heads_kv * p.batch;
  return tail_tiles(tiles, sched::sm_count(p.device_id));
}
inline int64_t tail_slot_floats(const core::AttnParams& p) { return 2 * int64_t(kTailBlockN) * p.head_dim; }
inline int64_t tail_split_bytes(const core::AttnParams& p) {
  const int64_t tail = tail_split_reserved(p);
  return tail > 0 ? round_up(tail * tail_slot_floats(p) * 4, 256) + round_up(tail * 4, 256) : 0;
}

inline size_t workspace_bytes(const core::AttnParams& p) {
  const int64_t rows = workspace_rows(p);
  const int64_t hq = p.heads_q;
  // Every part is a multiple of 256 bytes (rows is a multiple of 64), so each stays aligned.
  const int64_t counters = round_up(hq * (rows / kTurnRows) * 4, 256);
  const int64_t done = round_up(int64_t(p.batch) * p.heads_kv * 4, 256);
  return size_t(hq * rows * (p.head_dim + 2) * 4 + (kFusedConvert ? 2 : 1) * counters + done +
                tail_split_bytes(p));
}

// Each part grows with rows_pad, so a carve with kPad's rows fits workspace_bytes when
// workspace_rows >= padded_rows<kPad>.
template <int kPad = kRowPad>
inline BwdWorkspace carve_workspace(const core::AttnParams& p, void* base) {
  BwdWorkspace w;
  w.rows_pad = padded_rows<kPad>(p);
  const int64_t hq = p.heads_q;
  char* c = static_cast<char*>(base);
  w.dq_acc = reinterpret_cast<float*>(c);
  c += hq * w.rows_pad * p.head_dim * 4;
  w.lse_log2 = reinterpret_cast<float*>(c);
  c += hq * w.rows_pad * 4;
  w.dpsum = reinterpret_cast<float*>(c);
  c += hq * w.rows_pad * 4;
  w.dq_turn = reinterpret_cast<int*>(c);
  const int64_t counters = round_up(hq * (w.rows_pad / kTurnRows) * 4, 256);
  c += counters;
  if (kFusedConvert) {
    w.dq_arrive = reinterpret_cast<int*>(c);
    c += counters;
  }
  w.kv_done = reinterpret_cast<int*>(c);
  c += round_up(int64_t(p.batch) * p.heads_kv * 4, 256);
  const int64_t tail = tail_split_reserved(p);
  if (tail > 0) {
    w.dkv_part = reinterpret_cast<float*>(c);
    w.dkv_count = reinterpret_cast<int*>(c + round_up(tail * tail_slot_floats(p) * 4, 256));
  }
  return w;
}

}  // namespace fa::cuda::sm90_bwd
