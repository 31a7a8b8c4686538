// Tile schedulers: which (query block, head, batch) output tiles a CTA computes, and in what order.
//
// StaticLptScheduler serves two grids with one device interface (`next`):
//   - persistent: grid = number of SMs (one CTA per SM); CTA i walks the tile list i, then
//     2G-1-i, then 2G+i, ... (a "snake" over rounds of G = gridDim.x tiles). The assignment is
//     static, so results and timing are deterministic and no global counter has to be reset
//     between calls.
//   - one tile per CTA: grid = (m_blocks, heads, batch), the pre-persistent form; varlen uses it
//     (the number of query blocks differs per sequence, so a flat tile index would need the
//     cumulative block counts on the device).
// Tile order (persistent): the (batch, head) pairs are cut into L2 sections whose K/V fit in about
// l2_budget_bytes (default kL2BudgetBytes, 32 MB); a section's tiles run before the next section's.
// Inside a section the query block index is the outer loop and the head the inner one, so the CTAs
// running at one moment share a few K/V heads (query heads of one GQA group are adjacent) and read
// them from L2. With a causal / right-bounded window the last query blocks see the most keys: they
// go first (longest-processing-time first), each section starts a fresh snake (see tile_at), and
// the snake hands the round after a heavy round's heaviest tile to the CTA that got that round's
// lightest. Optionally (Params::section_rotate, set_grid's `rotate`) each section's snake starts
// at a different CTA, so that the CTAs left idle by one section's partial last round are not the
// same in every section (scripts/sched_balance.py --rotate).
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include "cuda/common/device_attr.hpp"
#endif

#include <algorithm>
#include <cstdint>

#include "core/fast_div.hpp"
#include "core/hd.hpp"

// FA_SCHED_FAST_DIV (default 1): the persistent walk's tile arithmetic with precomputed divisors
// (tile_at_fast); 0 = the plain integer divisions of tile_at, for an A/B.
#ifndef FA_SCHED_FAST_DIV
#define FA_SCHED_FAST_DIV 1
#endif

namespace fa::cuda::sched {

struct TileCoord {
  int m_block = 0;
  int head = 0;
  int batch = 0;
};

struct StaticLptScheduler {
  struct Params {
    int m_blocks = 0;
    int heads = 0;
    int batch = 0;
    int total_tiles = 0;    // m_blocks × heads × batch (persistent grid only)
    int section_pairs = 1;  // (batch, head) pairs per L2 section
    int group = 1;          // query heads per K/V head (host: sections hold whole groups)
    bool reverse_m = false; // heavy query blocks last in the sequence: walk them first
    bool persistent = false;
    int rounds = 1;         // walk length in rounds (set by the launcher once the grid is known)
    // Divisors of the persistent walk, fixed by set_grid for its grid size (`ctas`), so the
    // device maps (CTA, round) to a tile without integer divisions (tile_at_fast; tile_at is the
    // reference the host tests check it against).
    int ctas = 0;
    int rounds_per_section = 1;           // section_rounds(*this, ctas)
    core::FastDiv div_section_tiles;      // section_pairs * m_blocks
    core::FastDiv div_section_pairs;      // section_pairs
    core::FastDiv div_heads;              // heads
    core::FastDiv div_rounds_per_section; // rounds_per_section
    // Cluster pairs (log2 of the CTAs per cluster, 0 or 1; the FA3 forward's K/V multicast): the
    // walk above is over clusters and pair tiles (m_blocks counts pairs of query blocks), and
    // CTA c of a cluster takes query block 2m + c of the pair, so both CTAs see the same
    // (batch, head) and key range in every round. Read only by next<-1> / tile_of_round<-1>.
    int cluster_shift = 0;
    // Causal walk only: section s's snake is rotated by s · section_rotate CTAs (mod ctas);
    // 0 = every section starts at CTA 0. set_grid sets it to the idle slots of a full section's
    // last round. Without it the same CTAs miss every section's partial round: the busiest CTA
    // gets 1.031x the mean at d64 causal N1k on 132 CTAs, 1.003x with it.
    int section_rotate = 0;
    core::FastDiv div_ctas;  // ctas, for the rotation (device walk)
    // Causal walk only: 1 = the snake's direction follows the walk's round, not the section's, so
    // sections of an odd number of rounds alternate their first direction (set_grid with an odd
    // max_section_rounds). A section of one round then pairs each CTA's tile of one section with
    // the mirror tile of the next, instead of giving it the same query block in every section.
    int section_alternate = 0;
  };

  // Under the H100/H200 L2 (50 MB): the rest holds the streamed Q/O tiles and the previous
  // section's tail while sections change. Causal walks (reverse_m) keep this budget; the forward's
  // non-causal walk passes a smaller one (FA_SM90_FWD_L2_BUDGET_MB, flash_fwd.cuh: 4 MB unless
  // d > 128 with > 2 MB of K/V per head; session-5 A/B, H200), because a section's K/V is streamed
  // front to back by every CTA of a round and then again by the next round, so a section larger
  // than what L2 keeps turns every round's K/V into DRAM reads (ncu, d64 N8k, 2 MB of K/V per head,
  // 16-head sections: L2 hit rate 79% and ~4x the minimum DRAM bytes; cuDNN 94%).
  static constexpr int64_t kL2BudgetBytes = int64_t(32) << 20;

  // Tile of CTA `cta` (of `ctas`) in round `round` of the persistent walk; false when the CTA has
  // no tile in that round. Pure arithmetic (host and device) so tests/core can check the walk.
  // 32-bit throughout: the host keeps total_tiles + ctas below 2^31.
  //  - equal tile weights (!reverse_m): one continuous snake over the whole list.
  //  - causal (reverse_m): every L2 section starts a fresh snake at round 0. A section's list runs
  //    heavy → light, and a continuous snake over the concatenated sawtooth hands the next
  //    section's heaviest tiles to whichever CTAs the previous section's tail ended on (measured:
  //    -20% at causal N8k, ~25% makespan excess). Restarting puts each section's heaviest round on
  //    all CTAs at once; the partial last round skips CTAs, but its tiles are the lightest.
  FA_HD static int section_rounds(Params const& sp, int ctas) {
    return (sp.section_pairs * sp.m_blocks + ctas - 1) / ctas;
  }
  FA_HD static int walk_rounds(Params const& sp, int ctas) {
    if (!sp.reverse_m) return (sp.total_tiles + ctas - 1) / ctas;
    const int pairs = sp.heads * sp.batch;
    return (pairs + sp.section_pairs - 1) / sp.section_pairs * section_rounds(sp, ctas);
  }
  FA_HD static bool tile_at(Params const& sp, int cta, int ctas, int round, TileCoord& tile) {
    const int total_pairs = sp.heads * sp.batch;
    int section, local;
    if (!sp.reverse_m) {
      const int t = round * ctas + ((round & 1) ? ctas - 1 - cta : cta);
      if (t >= sp.total_tiles) return false;
      const int per_section = sp.section_pairs * sp.m_blocks;
      section = t / per_section;
      local = t - section * per_section;
    } else {
      const int rounds = section_rounds(sp, ctas);
      section = round / rounds;
      const int r = round - section * rounds;
      // Both factors below ctas, so the product stays far from 2^31.
      const int rot =
          sp.section_rotate > 0 ? (section % ctas) * (sp.section_rotate % ctas) % ctas : 0;
      const int u = (cta + rot) % ctas;
      local = r * ctas + (((sp.section_alternate ? round : r) & 1) ? ctas - 1 - u : u);
    }
    const int pair0 = section * sp.section_pairs;
    const int rest = total_pairs - pair0;
    const int pairs = sp.section_pairs < rest ? sp.section_pairs : rest;  // the last may be short
    if (pairs <= 0 || local >= pairs * sp.m_blocks) return false;
    const int m_rank = local / pairs;
    const int pair = pair0 + (local - m_rank * pairs);
    tile.m_block = sp.reverse_m ? sp.m_blocks - 1 - m_rank : m_rank;
    tile.batch = pair / sp.heads;
    tile.head = pair - tile.batch * sp.heads;
    return true;
  }

  // tile_at for the grid set_grid fixed (cta in [0, sp.ctas)), with the divisions by
  // precomputed divisors. The last L2 section may hold fewer pairs than section_pairs: only there
  // the pair index takes a plain division.
  FA_HD static bool tile_at_fast(Params const& sp, int cta, int round, TileCoord& tile) {
    const int ctas = sp.ctas;
    const int total_pairs = sp.heads * sp.batch;
    int section, local;
    if (!sp.reverse_m) {
      const int t = round * ctas + ((round & 1) ? ctas - 1 - cta : cta);
      if (t >= sp.total_tiles) return false;
      section = sp.div_section_tiles.divmod(t, local);
    } else {
      int r;
      section = sp.div_rounds_per_section.divmod(round, r);
      int u = cta;
      if (sp.section_rotate > 0) {  // uniform: a launch-time switch
        int s_mod, rot;
        sp.div_ctas.divmod(section, s_mod);
        sp.div_ctas.divmod(s_mod * sp.section_rotate, rot);  // section_rotate < ctas (set_grid)
        u += rot;
        if (u >= ctas) u -= ctas;
      }
      local = r * ctas + (((sp.section_alternate ? round : r) & 1) ? ctas - 1 - u : u);
    }
    const int pair0 = section * sp.section_pairs;
    const int rest = total_pairs - pair0;
    if (rest <= 0) return false;
    int m_rank, pair_in;
    if (rest >= sp.section_pairs) {
      if (local >= sp.section_pairs * sp.m_blocks) return false;
      m_rank = sp.div_section_pairs.divmod(local, pair_in);
    } else {
      if (local >= rest * sp.m_blocks) return false;
      m_rank = local / rest;
      pair_in = local - m_rank * rest;
    }
    const int pair = pair0 + pair_in;
    tile.m_block = sp.reverse_m ? sp.m_blocks - 1 - m_rank : m_rank;
    int head;
    tile.batch = sp.div_heads.divmod(pair, head);
    tile.head = head;
    return true;
  }

#if defined(__CUDACC__)
  Params const& p;
  int round = 0;

  __device__ explicit StaticLptScheduler(Params const& params) : p(params) {}

  // The CTA's next tile; false when it has none left. Every role of the CTA calls it in the same
  // sequence, so they agree on the tiles without communicating. The tile's round is round - 1.
  // kPairs: 0 = no clusters; 1 = clusters of two (the caller knows it runs in clusters);
  // -1 = Params::cluster_shift decides at run time.
  template <int kPairs = 0>
  __device__ bool next(TileCoord& tile) {
    while (round < p.rounds)
      if (tile_of_round<kPairs>(p, round++, tile)) return true;
    return false;
  }

  // This CTA's tile of round `r` (also to re-derive a tile later instead of keeping it live).
  template <int kPairs = 0>
  __device__ static bool tile_of_round(Params const& sp, int r, TileCoord& tile) {
    if (!sp.persistent) {
      if (r > 0) return false;
      tile.m_block = sp.reverse_m ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
      tile.head = int(blockIdx.y);
      tile.batch = int(blockIdx.z);
      return true;
    }
    const int shift = kPairs < 0 ? sp.cluster_shift : kPairs;
    const int unit = int(blockIdx.x) >> shift;  // CTA, or cluster
    bool found;
#if FA_SCHED_FAST_DIV
    if (sp.ctas == (int(gridDim.x) >> shift)) found = tile_at_fast(sp, unit, r, tile);
    else
#endif
      found = tile_at(sp, unit, int(gridDim.x) >> shift, r, tile);
    if (kPairs != 0 && found) tile.m_block = (tile.m_block << shift) | (int(blockIdx.x) & ((1 << shift) - 1));
    return found;
  }
#endif

  // ---- host side ----
  // kv_bytes_per_kv_head: K + V bytes one KV head of one sequence occupies.
  static Params make_params(int m_blocks, int heads, int batch, int group_size,
                            int64_t kv_bytes_per_kv_head, bool reverse_m, bool persistent,
                            int64_t l2_budget_bytes = kL2BudgetBytes) {
    Params s;
    s.m_blocks = m_blocks;
    s.heads = heads;
    s.batch = batch;
    s.reverse_m = reverse_m;
    s.persistent = persistent;
    const int64_t pairs = int64_t(heads) * batch;
    s.total_tiles = int(std::min<int64_t>(pairs * m_blocks, INT32_MAX - 4096));  // caller checks
    const int64_t kv_heads = std::max<int64_t>(1, l2_budget_bytes / std::max<int64_t>(1, kv_bytes_per_kv_head));
    s.section_pairs = int(std::clamp<int64_t>(kv_heads * group_size, 1, std::max<int64_t>(1, pairs)));
    s.group = std::max(1, group_size);
    s.rounds = 1;  // one tile per CTA until set_grid
    return s;
  }
  // The persistent grid's size fixes the walk's length. rotate: rotate the causal walk's sections
  // (Params::section_rotate). max_section_rounds (causal walks, 0 = off): at most that many rounds
  // of tiles per L2 section (whole GQA groups, at least one group). A causal section's first round
  // holds the heaviest query block of each of its heads, so it reads most of the section's K/V
  // from DRAM at once; a section of ~2 rounds spreads those reads over the walk instead of
  // bunching them into every ~4th round (H100, session 36: d128 causal N512 +12%, d64 +6%).
  // Below one round a section leaves CTAs idle and gives each CTA the same query block in every
  // section (d128 causal at 8 MB: -30%); with each section restarting the snake, an odd number
  // of rounds ends it on the first round's direction (3 rounds, measured before section_alternate
  // existed: d128 N8k -9%). Hence two. An odd max_section_rounds now sets section_alternate (an
  // experiment, FA_SM90_FWD_CAUSAL_SECTION_ROUNDS=1 or 3 at build or run time; one round per
  // section halves the K/V a round first touches again; not measured yet).
  static void set_grid(Params& s, int ctas, bool rotate = false, int max_section_rounds = 0) {
    if (!s.persistent) return;
    s.section_alternate = 0;
    if (s.reverse_m && max_section_rounds > 0 && ctas > 0 && s.m_blocks > 0) {
      const int64_t cap = int64_t(max_section_rounds) * ctas / s.m_blocks;
      const int64_t whole = std::max<int64_t>(s.group, cap / s.group * s.group);
      s.section_pairs = int(std::min<int64_t>(s.section_pairs, whole));
      s.section_alternate = max_section_rounds & 1;
    }
    s.rounds = walk_rounds(s, ctas);
    s.ctas = ctas;
    s.rounds_per_section = section_rounds(s, ctas);
    s.section_rotate = rotate && s.reverse_m
                           ? s.rounds_per_section * ctas - s.section_pairs * s.m_blocks  // in [0, ctas)
                           : 0;
    s.div_ctas = core::FastDiv(ctas);
    s.div_section_tiles = core::FastDiv(s.section_pairs * s.m_blocks);
    s.div_section_pairs = core::FastDiv(s.section_pairs);
    s.div_heads = core::FastDiv(s.heads);
    s.div_rounds_per_section = core::FastDiv(s.rounds_per_section);
  }
};

#if defined(__CUDACC__)
// Streaming multiprocessors of a device, queried once per device per process (the persistent
// grid size). Returns 0 when the query fails (the caller then keeps the one-tile-per-CTA grid).
inline int sm_count(int device) { return device_attr<cudaDevAttrMultiProcessorCount>(device); }
#endif

}  // namespace fa::cuda::sched
