// The FA3 backward's tail split (src/cuda/sm90/bwd_workspace.hpp) checked on the host: the index
// arithmetic bwd_main and bwd_convert_dq_follow run (tail_cta, tail_piece_range, tail_pair_ctas)
// and the ways model. No GPU needed (runs in CI). The GPU side is the TailSplit suite of
// test_attention.cpp.
//   CoverEveryBlockOnce  over a split grid, every (tile, query block) is walked by exactly one CTA,
//                        pieces have slots [0, tail), and the CTAs that report per (sequence,
//                        KV head) pair are the count the conversion waits for;
//   WaysModel            no split without a partial wave, at most 8 ways and 4 steps a piece,
//                        and the d128 grid's shapes (132 SMs) as measured in session 17.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "cuda/sm90/bwd_workspace.hpp"

namespace {

using namespace fa::cuda::sm90_bwd;

struct Grid {
  int n_blocks, pairs, sms, q_blocks, ways;
};

void check_cover(const Grid& g) {
  SCOPED_TRACE(::testing::Message() << "n_blocks " << g.n_blocks << ", pairs " << g.pairs << ", sms " << g.sms
                                    << ", q_blocks " << g.q_blocks << ", ways " << g.ways);
  const int64_t tiles = int64_t(g.n_blocks) * g.pairs;
  const int64_t tail = tail_tiles(tiles, g.sms);
  const int first = int(tiles - tail);
  const int ctas = first + int(tail) * g.ways;
  std::vector<int> visits(size_t(tiles) * g.q_blocks, 0);
  std::vector<int64_t> per_pair(g.pairs, 0);
  std::map<int, int> pieces_per_slot;
  for (int lin = 0; lin < ctas; ++lin) {
    const TailCta t = tail_cta(lin, first, g.ways);
    ASSERT_GE(t.tile, 0);
    ASSERT_LT(t.tile, tiles);
    int lo = 0, hi = g.q_blocks;
    if (t.piece >= 0) {
      ASSERT_GE(t.tile, first) << "a piece of a whole tile";
      ASSERT_LT(t.piece, g.ways);
      ++pieces_per_slot[t.tile - first];
      tail_piece_range(t.piece, g.ways, g.q_blocks, &lo, &hi);
    } else {
      ASSERT_LT(t.tile, first) << "a whole CTA on a split tile";
    }
    ASSERT_LE(0, lo);
    ASSERT_LE(lo, hi);
    ASSERT_LE(hi, g.q_blocks);
    for (int m = lo; m < hi; ++m) ++visits[size_t(t.tile) * g.q_blocks + m];
    ++per_pair[t.tile / g.n_blocks];
  }
  for (size_t i = 0; i < visits.size(); ++i)
    ASSERT_EQ(visits[i], 1) << "tile " << i / g.q_blocks << ", query block " << i % g.q_blocks;
  EXPECT_EQ(int64_t(pieces_per_slot.size()), tail);
  for (auto [slot, n] : pieces_per_slot) EXPECT_EQ(n, g.ways) << "slot " << slot;
  for (int pair = 0; pair < g.pairs; ++pair)
    EXPECT_EQ(per_pair[pair], tail_pair_ctas(int64_t(pair) * g.n_blocks, g.n_blocks, first, g.ways)) << "pair " << pair;
}

TEST(Sm90BwdTailSplit, CoverEveryBlockOnce) {
  const Grid grids[] = {
      {64, 32, 132, 103, 5},  // d128 N8k: 2048 tiles, 68 in the tail (5 ways: the model's pick)
      {128, 16, 132, 205, 5},  // N16k
      {9, 24, 132, 13, 3},     // the TailSplit suite's 216 tiles
      {6, 2, 132, 9, 4},       // 12 tiles, all split (the sanitizer case)
      {3, 160, 132, 4, 8},     // more ways than query blocks: some pieces walk none
      {7, 19, 31, 11, 2},      // a tail that splits one pair's key blocks across two pairs
      {1, 1, 132, 1, 2},
  };
  for (const Grid& g : grids) check_cover(g);
}

TEST(Sm90BwdTailSplit, PairCountsWithoutSplit) {
  // ways 0: no split launch, every pair waits for its key blocks only.
  EXPECT_EQ(tail_pair_ctas(0, 64, 0, 0), 64);
  EXPECT_EQ(tail_pair_ctas(1920, 64, 1980, 5), 64 + 4 * 4);  // key blocks 1980..1983 of pair 30 split
  EXPECT_EQ(tail_pair_ctas(1984, 64, 1980, 5), 64 * 5);
}

TEST(Sm90BwdTailSplit, WaysModel) {
  if (tail_split_mode() != 1) GTEST_SKIP() << "FA_SM90_BWD_TAIL_SPLIT is set in the environment";
  // Session 17's shapes on the H200 (d128 non-causal, 80-query steps).
  EXPECT_EQ(tail_split_ways(2048, 132, 103), 5);  // N8k: 340 pieces in 3 rounds
  EXPECT_EQ(tail_split_ways(2048, 132, 7), 1);    // N512: pieces would be shorter than 4 steps
  EXPECT_EQ(tail_split_ways(12, 132, 18), 4);     // a grid under one wave: 48 pieces, one round
  for (int sms : {78, 114, 132})
    for (int64_t tiles = 1; tiles <= 700; tiles += 7)
      for (int steps : {1, 3, 8, 13, 52, 103, 205}) {
        const int w = tail_split_ways(tiles, sms, steps);
        EXPECT_GE(w, 1);
        EXPECT_LE(w, 8);
        if (tiles % sms == 0) EXPECT_EQ(w, 1) << tiles << " tiles, " << sms << " SMs: no partial wave";
        if (w > 1) EXPECT_GE(steps / w, 4) << "a piece of fewer than 4 steps";
      }
}

}  // namespace
