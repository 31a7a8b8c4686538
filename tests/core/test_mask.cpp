// core::Mask: the one definition of "which keys does query row i see". Kernels skip key blocks by
// key_range and per-element masking by block_unmasked; both are only safe if they agree with
// allowed(), which is checked here by brute force over small sizes and random windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "core/mask.hpp"

namespace {

using fa::core::Mask;

// The documented rule (flashattn.h): row i sees key j iff
//   j <= i + (Nk - Nq) + window_right  and  j >= i + (Nk - Nq) - window_left,  0 <= j < Nk.
bool documented_rule(int64_t nq, int64_t nk, int64_t left, int64_t right, int64_t i, int64_t j) {
  if (j < 0 || j >= nk) return false;
  const int64_t d = i + (nk - nq);
  if (right >= 0 && j > d + right) return false;
  if (left >= 0 && j < d - left) return false;
  return true;
}

TEST(Mask, CausalIsBottomRightAlignedWhenKeysOutnumberQueries) {
  const Mask m(3, 5, -1, 0);  // Nq = 3, Nk = 5, causal
  // Row 0 sits at key 2: it sees keys 0..2; the last row sees everything.
  for (int64_t j = 0; j < 5; ++j) {
    EXPECT_EQ(m.allowed(0, j), j <= 2) << j;
    EXPECT_EQ(m.allowed(2, j), true) << j;
  }
}

TEST(Mask, CausalIsBottomRightAlignedWhenQueriesOutnumberKeys) {
  const Mask m(5, 3, -1, 0);  // Nq = 5, Nk = 3, causal: rows 0 and 1 see no key at all
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_FALSE(m.allowed(0, j));
    EXPECT_FALSE(m.allowed(1, j));
    EXPECT_EQ(m.allowed(2, j), j == 0);
    EXPECT_TRUE(m.allowed(4, j));
  }
  int64_t first, last;
  m.key_range(0, 2, &first, &last);
  EXPECT_GE(first, last) << "rows 0..1 see no key: the key range must be empty";
}

TEST(Mask, SlidingWindow) {
  const Mask m(8, 8, 2, 1);  // square: row i sees i-2 .. i+1
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) EXPECT_EQ(m.allowed(i, j), j >= i - 2 && j <= i + 1) << i << "," << j;
}

TEST(Mask, UnboundedSeesAllKeysAndNothingOutside) {
  const Mask m(4, 6, -1, -1);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(m.allowed(i, -1));
    EXPECT_FALSE(m.allowed(i, 6));
    for (int64_t j = 0; j < 6; ++j) EXPECT_TRUE(m.allowed(i, j));
  }
}

TEST(Mask, EmptyKeys) {
  const Mask m(4, 0, -1, -1);
  int64_t first, last;
  m.key_range(0, 4, &first, &last);
  EXPECT_GE(first, last);
  EXPECT_FALSE(m.allowed(0, 0));
}

// Brute force over small shapes, random windows and random row/key blocks.
TEST(Mask, RangesAgreeWithAllowedByBruteForce) {
  std::mt19937 rng(1234);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked_blocks = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const int64_t nq = pick(1, 20), nk = pick(0, 20);
    const int64_t left = pick(-1, 8), right = pick(-1, 8);
    const Mask m(nq, nk, left, right);

    for (int64_t i = 0; i < nq; ++i)
      for (int64_t j = -1; j <= nk; ++j)
        ASSERT_EQ(m.allowed(i, j), documented_rule(nq, nk, left, right, i, j))
            << "nq=" << nq << " nk=" << nk << " left=" << left << " right=" << right << " i=" << i
            << " j=" << j;

    // A row block [ib, ie).
    const int64_t ib = pick(0, int(nq - 1)), ie = pick(int(ib + 1), int(nq));
    int64_t first, last;
    m.key_range(ib, ie, &first, &last);
    ASSERT_GE(first, 0);
    ASSERT_LE(last, nk);
    // Sound: every visible key of the block is inside [first, last) ...
    bool any = false;
    int64_t lo_seen = nk, hi_seen = -1;
    for (int64_t i = ib; i < ie; ++i)
      for (int64_t j = 0; j < nk; ++j)
        if (m.allowed(i, j)) {
          any = true;
          lo_seen = std::min(lo_seen, j);
          hi_seen = std::max(hi_seen, j);
          ASSERT_TRUE(j >= first && j < last)
              << "key " << j << " of row " << i << " is outside key_range [" << first << ", "
              << last << ") for rows [" << ib << ", " << ie << "), nq=" << nq << " nk=" << nk
              << " left=" << left << " right=" << right;
        }
    // ... and tight: the range is exactly the span of visible keys (so no block is loaded for
    // nothing), and empty when the block sees no key.
    if (any) {
      EXPECT_EQ(first, lo_seen) << "nq=" << nq << " nk=" << nk << " left=" << left << " right=" << right;
      EXPECT_EQ(last, hi_seen + 1) << "nq=" << nq << " nk=" << nk << " left=" << left << " right=" << right;
    } else {
      EXPECT_GE(first, last) << "rows [" << ib << ", " << ie << ") see no key but key_range is ["
                             << first << ", " << last << ")";
    }

    // block_unmasked must be true exactly when every (i, j) of an in-bounds block is allowed;
    // false for blocks that reach past the keys (those need the bounds mask).
    for (int rep = 0; rep < 4 && nk > 0; ++rep) {
      const int64_t jb = pick(0, int(nk - 1)), je = pick(int(jb + 1), int(nk + 3));
      bool all = true;
      for (int64_t i = ib; i < ie; ++i)
        for (int64_t j = jb; j < je; ++j) all = all && m.allowed(i, j);
      const bool unmasked = m.block_unmasked(ib, ie, jb, je);
      if (unmasked) {
        ASSERT_TRUE(all) << "block_unmasked says rows [" << ib << ", " << ie << ") x keys [" << jb
                         << ", " << je << ") need no mask but some pair is masked; nq=" << nq
                         << " nk=" << nk << " left=" << left << " right=" << right;
      }
      if (je <= nk) {
        EXPECT_EQ(unmasked, all) << "a fully visible block should skip masking";
      }
      ++checked_blocks;
    }
  }
  EXPECT_GT(checked_blocks, 10000);
}

// unmasked_blocks is block_unmasked for every block index of a row block, in one range: small
// shapes with every window and block width, and lengths near and past 2^31 (64-bit diagonals,
// clamped indices).
TEST(Mask, UnmaskedBlockRangeIsBlockUnmaskedForEveryBlock) {
  std::mt19937 rng(99);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto check = [&](Mask const& m, int64_t ib, int64_t ie, int64_t bn, int64_t nb_first, int64_t nb_last) {
    int lo = 0, hi = 0;
    m.unmasked_blocks(ib, ie, bn, &lo, &hi);
    ASSERT_GE(lo, 0);
    ASSERT_GE(hi, -1);
    for (int64_t nb = nb_first; nb <= nb_last; ++nb) {
      const bool ranged = nb >= lo && nb <= hi;
      ASSERT_EQ(ranged, m.block_unmasked(ib, ie, nb * bn, nb * bn + bn))
          << "block " << nb << " (width " << bn << ") of rows [" << ib << ", " << ie << "), range ["
          << lo << ", " << hi << "], nq=" << m.q_len << " nk=" << m.k_len << " left=" << m.left
          << " right=" << m.right;
    }
  };
  for (int trial = 0; trial < 20000; ++trial) {
    const int64_t nq = pick(1, 300), nk = pick(0, 300);
    const Mask m(nq, nk, pick(-1, 40) * (trial % 3 == 0 ? 5 : 1), pick(-1, 40));
    const int64_t ib = pick(0, nq - 1), ie = pick(ib + 1, nq);
    const int64_t bn = int64_t(1) << pick(0, 7);
    check(m, ib, ie, bn, 0, nk / bn + 2);
  }
  // Long sequences: the blocks around the diagonals and the ends, where the arithmetic could
  // overflow or round the wrong way.
  for (int trial = 0; trial < 2000; ++trial) {
    const int64_t nq = pick(1, int64_t(3) << 31), nk = pick(1, int64_t(3) << 31);
    const Mask m(nq, nk, trial % 2 ? -1 : pick(0, 1 << 20), trial % 4 < 2 ? pick(0, 1 << 20) : -1);
    const int64_t ib = pick(0, nq - 1), ie = std::min(nq, ib + pick(1, 256));
    const int64_t bn = int64_t(16) << pick(0, 4);
    int lo = 0, hi = 0;
    m.unmasked_blocks(ib, ie, bn, &lo, &hi);
    for (int64_t around : {int64_t(0), int64_t(lo), int64_t(hi), (nk - 1) / bn, m.diag(ib) / bn, m.diag(ie - 1) / bn}) {
      const int64_t a = std::max<int64_t>(0, std::min<int64_t>(around, 0x7fffffff));
      check(m, ib, ie, bn, std::max<int64_t>(0, a - 3), std::min<int64_t>(a + 3, 0x7fffffff));
    }
  }
}

}  // namespace
