// sched::StaticLptScheduler: the persistent forward grid writes each output tile exactly once only
// if the walk of every CTA together covers every (query block, head, batch) tile once. Checked by
// brute force over grid sizes, L2 sections and odd shapes, plus the order the design promises
// (heaviest causal blocks first, GQA heads of one group adjacent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "cuda/scheduler/tile_scheduler.hpp"

namespace {

using fa::cuda::sched::StaticLptScheduler;
using fa::cuda::sched::TileCoord;

// Every tile each CTA gets, in order.
std::vector<std::vector<TileCoord>> walk(StaticLptScheduler::Params const& p, int ctas) {
  std::vector<std::vector<TileCoord>> out(static_cast<size_t>(ctas));
  const int rounds = StaticLptScheduler::walk_rounds(p, ctas);
  for (int c = 0; c < ctas; ++c) {
    TileCoord t;
    for (int r = 0; r < rounds; ++r)
      if (StaticLptScheduler::tile_at(p, c, ctas, r, t)) out[size_t(c)].push_back(t);
  }
  return out;
}

// Key blocks each CTA walks under a causal mask (query block m sees m + 1 of them).
std::vector<int64_t> causal_key_blocks(StaticLptScheduler::Params const& p, int ctas) {
  std::vector<int64_t> out;
  for (const auto& cta : walk(p, ctas)) {
    int64_t sum = 0;
    for (const TileCoord& t : cta) sum += t.m_block + 1;
    out.push_back(sum);
  }
  return out;
}

// set_grid's max_section_rounds per walk mode of the brute-force tests (modes 3-5).
constexpr int kCapOfMode[6] = {0, 0, 0, 2, 1, 3};

TEST(TileScheduler, EveryTileExactlyOnce) {
  const int shapes[][3] = {{1, 1, 1}, {4, 16, 16}, {5, 3, 7}, {64, 16, 2}, {1, 40, 3}, {33, 1, 1}};
  for (const auto& s : shapes) {
    for (int ctas : {1, 2, 7, 132, 1000}) {
      for (int64_t kv_bytes : {int64_t(1) << 10, int64_t(4) << 20, int64_t(1) << 30}) {
        for (int group : {1, s[1] % 4 == 0 ? 4 : 1}) {
          // in order, causal, causal with rotated sections, causal with sections of at most
          // 2 / 1 / 3 rounds (1 and 3 alternate the snake's direction across sections)
          for (int mode = 0; mode < 6; ++mode) {
            const bool reverse = mode > 0;
            auto p =
                StaticLptScheduler::make_params(s[0], s[1], s[2], group, kv_bytes, reverse, true);
            StaticLptScheduler::set_grid(p, ctas, /*rotate=*/mode == 2, kCapOfMode[mode]);
            ASSERT_EQ(p.total_tiles, s[0] * s[1] * s[2]);
            std::vector<int> seen(size_t(p.total_tiles), 0);
            for (const auto& cta : walk(p, ctas))
              for (const TileCoord& t : cta) {
                ASSERT_TRUE(t.m_block >= 0 && t.m_block < s[0] && t.head >= 0 && t.head < s[1] &&
                            t.batch >= 0 && t.batch < s[2]);
                ++seen[size_t((t.batch * s[1] + t.head) * s[0] + t.m_block)];
              }
            for (int n : seen) ASSERT_EQ(n, 1) << s[0] << "x" << s[1] << "x" << s[2] << " ctas " << ctas;
          }
        }
      }
    }
  }
}

TEST(TileScheduler, CausalHeaviestBlocksFirstAndGroupHeadsTogether) {
  // 8 query blocks, 8 heads (GQA groups of 4), batch 2; K/V small enough for one L2 section.
  const auto p = StaticLptScheduler::make_params(8, 8, 2, 4, 1 << 20, /*reverse_m=*/true, true);
  ASSERT_EQ(p.section_pairs, 16);
  const auto w = walk(p, 16);
  // Round 0: the last query block (most keys under a causal mask) of every (batch, head).
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(w[size_t(c)][0].m_block, 7);
    EXPECT_EQ(w[size_t(c)][0].batch * 8 + w[size_t(c)][0].head, c);
  }
  // Snake: the CTA that took round 0's first tile takes round 1's last.
  EXPECT_EQ(w[0][1].m_block, 6);
  EXPECT_EQ(w[0][1].batch * 8 + w[0][1].head, 15);
  // Each CTA's work in units of keys seen (m_block + 1) stays within one block of the others.
  const auto blocks = causal_key_blocks(p, 16);
  const auto [lo, hi] = std::minmax_element(blocks.begin(), blocks.end());
  EXPECT_LE(*hi - *lo, 1);
}

// Causal makespan: each tile costs m_block + 1 key blocks. The benchmark's d128 N8k shape (B 2,
// H 16, 64 query blocks, 4 MB of K/V per head: sections of 8 heads) on 132 SMs: a continuous snake
// over the per-section sawtooth gave the slowest CTA ~25% more than the mean (measured -20%).
TEST(TileScheduler, CausalSectionsStayBalanced) {
  for (int n_blocks : {4, 8, 16, 64, 128}) {
    for (int ctas : {132, 114}) {
      const int64_t kv_bytes = int64_t(2) * n_blocks * 128 * 128 * 2;
      const auto p = StaticLptScheduler::make_params(n_blocks, 16, 16384 / (n_blocks * 128) > 0 ? 16384 / (n_blocks * 128) : 1,
                                                     1, kv_bytes, /*reverse_m=*/true, true);
      const auto blocks = causal_key_blocks(p, ctas);
      const int64_t worst = *std::max_element(blocks.begin(), blocks.end());
      const double mean = double(std::accumulate(blocks.begin(), blocks.end(), int64_t(0))) / ctas;
      // Lower bound of any schedule: the mean, or the single heaviest tile.
      const double bound = std::max(mean, double(n_blocks));
      EXPECT_LE(double(worst), 1.06 * bound + 1) << "N " << n_blocks * 128 << " ctas " << ctas;
    }
  }
}

// Rotated sections (set_grid's rotate, FA_SM90_FWD_SECTION_ROTATE): at the FA3-paper grid's causal
// N1k / N2k shapes every L2 section ends in a partial round, and without the rotation the same CTAs
// miss each one (the busiest CTA 1.031x the mean on 132 CTAs; scripts/sched_balance.py).
TEST(TileScheduler, RotatedSectionsSpreadThePartialRounds) {
  struct Shape {
    int n, d;
    // busiest CTA / mean with the rotation (sched_balance.py --rotate 1 --max-rounds 0)
    double rotated_max;
  };
  for (const Shape& sh : {Shape{1024, 64, 1.003}, Shape{2048, 64, 1.001}, Shape{1024, 256, 1.003},
                          Shape{2048, 128, 1.001}}) {
    const int m_blocks = sh.n / 128, heads = 2048 / sh.d, batch = 16384 / sh.n;
    const int64_t kv_bytes = int64_t(2) * sh.n * sh.d * 2;
    double ratio[2] = {0, 0};
    for (int rotate = 0; rotate < 2; ++rotate) {
      auto p = StaticLptScheduler::make_params(m_blocks, heads, batch, 1, kv_bytes,
                                               /*reverse_m=*/true, true);
      StaticLptScheduler::set_grid(p, 132, rotate == 1);
      if (rotate) {
        EXPECT_EQ(p.section_rotate, p.rounds_per_section * 132 - p.section_pairs * m_blocks);
      }
      const auto blocks = causal_key_blocks(p, 132);
      const double mean = double(std::accumulate(blocks.begin(), blocks.end(), int64_t(0))) / 132;
      ratio[rotate] = double(*std::max_element(blocks.begin(), blocks.end())) / mean;
    }
    EXPECT_GT(ratio[0], 1.02) << "N " << sh.n << " d " << sh.d;  // the imbalance being fixed
    EXPECT_LE(ratio[1], sh.rotated_max + 0.0005) << "N " << sh.n << " d " << sh.d;
  }
}

// Causal sections of at most two rounds (set_grid's max_section_rounds, the forward's default):
// the FA3-paper grid's causal N512 on 132 SMs. d128 (256 KB of K/V per head): 32 MB held 128
// heads = 3.9 rounds, capped to 66 heads = 264 tiles; d256 (512 KB) stays at the budget's 64.
// Whole GQA groups per section, never fewer than one group, and the walk stays balanced.
TEST(TileScheduler, CausalSectionsOfAtMostTwoRounds) {
  struct Case {
    int m_blocks, heads, batch, group;
    int64_t kv_bytes;
    int want_pairs;
  };
  for (const Case& c : {Case{4, 16, 32, 1, 256 << 10, 66}, Case{4, 8, 32, 1, 512 << 10, 64},
                        Case{4, 32, 32, 1, 128 << 10, 66}, Case{4, 16, 32, 4, 256 << 10, 64},
                        Case{8, 16, 16, 1, 512 << 10, 33}, Case{512, 4, 1, 4, 64 << 20, 4},
                        Case{1024, 8, 1, 2, 1 << 20, 2}}) {
    auto p = StaticLptScheduler::make_params(c.m_blocks, c.heads, c.batch, c.group, c.kv_bytes,
                                             /*reverse_m=*/true, true);
    const int budget_pairs = p.section_pairs;
    StaticLptScheduler::set_grid(p, 132, false, 2);
    EXPECT_EQ(p.section_pairs, c.want_pairs) << c.m_blocks << " blocks, " << c.heads << " heads";
    EXPECT_LE(p.section_pairs, std::max(budget_pairs, c.group));
    EXPECT_EQ(p.section_pairs % c.group, 0);
    if (c.want_pairs > c.group) {  // else a single group's rounds
      EXPECT_LE(p.rounds_per_section, 2);
    }
    if (c.want_pairs * c.m_blocks >= 132) {
      const auto blocks = causal_key_blocks(p, 132);
      const double mean = double(std::accumulate(blocks.begin(), blocks.end(), int64_t(0))) / 132;
      const double bound = std::max(mean, double(c.m_blocks));
      EXPECT_LE(double(*std::max_element(blocks.begin(), blocks.end())), 1.06 * bound + 1);
    }
    // Off (0) and equal-weight walks keep the budget's sections.
    auto q = StaticLptScheduler::make_params(c.m_blocks, c.heads, c.batch, c.group, c.kv_bytes,
                                             true, true);
    StaticLptScheduler::set_grid(q, 132, false, 0);
    EXPECT_EQ(q.section_pairs, budget_pairs);
    auto r = StaticLptScheduler::make_params(c.m_blocks, c.heads, c.batch, c.group, c.kv_bytes,
                                             false, true);
    const int r_pairs = r.section_pairs;
    StaticLptScheduler::set_grid(r, 132, false, 2);
    EXPECT_EQ(r.section_pairs, r_pairs);
  }
}

// One round per causal section (max_section_rounds 1, FA_SM90_FWD_CAUSAL_SECTION_ROUNDS=1): at d128
// causal N512 (4 query blocks, 256 KB of K/V per head) on 132 SMs a section is 33 heads = one
// round, so a round starts 33 heads' K/V instead of the two-round cap's 66. The snake alternates
// across sections: a CTA's tile of an even round and its tile of the next round are mirror
// images (query blocks summing to 3, i.e. 5 key blocks), where restarting each section would give
// it the same query block in every section.
TEST(TileScheduler, OneRoundSectionsAlternate) {
  auto p = StaticLptScheduler::make_params(4, 16, 32, 1, 256 << 10, /*reverse_m=*/true, true);
  StaticLptScheduler::set_grid(p, 132, false, 1);
  ASSERT_EQ(p.section_pairs, 33);
  ASSERT_EQ(p.rounds_per_section, 1);
  ASSERT_EQ(p.section_alternate, 1);
  const int full_rounds = 512 / 33;  // the 16th section holds 17 pairs
  for (int c = 0; c < 132; ++c)
    for (int r = 0; r + 1 < full_rounds; r += 2) {
      TileCoord a, b;
      ASSERT_TRUE(StaticLptScheduler::tile_at(p, c, 132, r, a));
      ASSERT_TRUE(StaticLptScheduler::tile_at(p, c, 132, r + 1, b));
      EXPECT_EQ(a.m_block + b.m_block, 3) << "cta " << c << " round " << r;
    }
  // Heads whose last query block (all of their K/V) runs in one round: 33, not 66.
  for (int cap : {1, 2}) {
    auto q = StaticLptScheduler::make_params(4, 16, 32, 1, 256 << 10, true, true);
    StaticLptScheduler::set_grid(q, 132, false, cap);
    int peak = 0;
    for (int r = 0; r < q.rounds; ++r) {
      int starts = 0;
      TileCoord t;
      for (int c = 0; c < 132; ++c)
        starts += StaticLptScheduler::tile_at(q, c, 132, r, t) && t.m_block == 3;
      peak = std::max(peak, starts);
    }
    EXPECT_EQ(peak, cap == 1 ? 33 : 66);
  }
}

TEST(TileScheduler, SectionsFollowTheL2Budget) {
  // 4 MB of K/V per KV head, group 2: 32 MB holds 8 KV heads = 16 query heads.
  const auto p = StaticLptScheduler::make_params(4, 32, 2, 2, 4 << 20, false, true);
  EXPECT_EQ(p.section_pairs, 16);
  // The first section's tiles (pairs 0..15) all come before any tile of the second.
  TileCoord t;
  for (int i = 0; i < 16 * 4; ++i) {
    ASSERT_TRUE(StaticLptScheduler::tile_at(p, i, 1 << 20, 0, t));
    EXPECT_LT(t.batch * 32 + t.head, 16) << i;
  }
}

// The device's walk (tile_at_fast: precomputed divisors for the grid set_grid fixed) hands out the
// same tiles in the same order as the reference arithmetic, for every CTA and round.
TEST(TileScheduler, FastWalkMatchesReference) {
  const int shapes[][3] = {{1, 1, 1}, {4, 16, 16}, {5, 3, 7}, {64, 16, 2}, {1, 40, 3}, {33, 1, 1}, {4, 32, 32}, {7, 24, 5}};
  for (const auto& s : shapes) {
    for (int ctas : {1, 2, 7, 132, 1000}) {
      for (int64_t kv_bytes : {int64_t(1) << 10, int64_t(3) << 20, int64_t(1) << 30}) {
        for (int group : {1, s[1] % 4 == 0 ? 4 : 1}) {
          for (int mode = 0; mode < 6; ++mode) {  // as in EveryTileExactlyOnce
            auto p =
                StaticLptScheduler::make_params(s[0], s[1], s[2], group, kv_bytes, mode > 0, true);
            StaticLptScheduler::set_grid(p, ctas, /*rotate=*/mode == 2, kCapOfMode[mode]);
            ASSERT_EQ(p.ctas, ctas);
            ASSERT_TRUE(p.section_rotate >= 0 && p.section_rotate < ctas);
            for (int c = 0; c < ctas; ++c)
              for (int r = 0; r < p.rounds; ++r) {
                TileCoord a, b;
                const bool ha = StaticLptScheduler::tile_at(p, c, ctas, r, a);
                const bool hb = StaticLptScheduler::tile_at_fast(p, c, r, b);
                ASSERT_EQ(ha, hb) << "cta " << c << " round " << r;
                if (ha) {
                  ASSERT_EQ(a.m_block, b.m_block);
                  ASSERT_EQ(a.head, b.head);
                  ASSERT_EQ(a.batch, b.batch);
                }
              }
          }
        }
      }
    }
  }
}

}  // namespace
