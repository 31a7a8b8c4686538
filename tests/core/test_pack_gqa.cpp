// The GQA packing rule of the Hopper forward (src/cuda/sm90/fwd_pack_gqa.hpp): which groups can
// pack (G a power of two dividing the tile) and when auto packs (short queries, not long ones).
// Host arithmetic only; the kernel side runs in tests/cuda/test_pack_gqa.cpp.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/sm90/fwd_pack_gqa.hpp"

namespace {

using fa::cuda::sm90::pack_gqa_log2;
using fa::cuda::sm90::pack_gqa_shift;
using fa::cuda::sm90::PackGqaMode;

TEST(PackGqa, GroupMustDivideTheTile) {
  EXPECT_EQ(pack_gqa_log2(1, 128), -1);  // MHA: nothing to pack
  EXPECT_EQ(pack_gqa_log2(2, 128), 1);
  EXPECT_EQ(pack_gqa_log2(8, 128), 3);
  EXPECT_EQ(pack_gqa_log2(128, 128), 7);
  EXPECT_EQ(pack_gqa_log2(7, 128), -1);  // 7 ∤ 128
  EXPECT_EQ(pack_gqa_log2(6, 128), -1);
  EXPECT_EQ(pack_gqa_log2(256, 128), -1);
  EXPECT_EQ(pack_gqa_log2(0, 128), -1);
}

TEST(PackGqa, AutoPacksShortQueriesOnly) {
  const auto A = PackGqaMode::Auto;
  for (int64_t nq : {1, 3, 17, 64}) {
    EXPECT_EQ(pack_gqa_shift(A, 8, nq, 128), 3) << nq;
    EXPECT_EQ(pack_gqa_shift(A, 2, nq, 128), 1) << nq;
    EXPECT_EQ(pack_gqa_shift(A, 7, nq, 128), 0) << nq;  // falls back
    EXPECT_EQ(pack_gqa_shift(A, 1, nq, 128), 0) << nq;
  }
  // Full tiles either way: nothing to gain.
  EXPECT_EQ(pack_gqa_shift(A, 8, 128, 128), 0);
  EXPECT_EQ(pack_gqa_shift(A, 2, 4096, 128), 0);
  EXPECT_EQ(pack_gqa_shift(A, 2, 1000, 128), 0);  // fill 0.977 either way
  EXPECT_EQ(pack_gqa_shift(A, 8, 4097, 128), 0);
  // A mostly empty second tile: packing fills 0.96 instead of 0.78.
  EXPECT_EQ(pack_gqa_shift(A, 8, 200, 128), 3);
  // G·Nq = 128 exactly fills one tile; Nq = 96 with G = 2 fills 0.75 of two tiles: no gain.
  EXPECT_EQ(pack_gqa_shift(A, 2, 64, 128), 1);
  EXPECT_EQ(pack_gqa_shift(A, 2, 96, 128), 0);
  EXPECT_EQ(pack_gqa_shift(A, 8, 0, 128), 0);
}

TEST(PackGqa, ForcedModes) {
  EXPECT_EQ(pack_gqa_shift(PackGqaMode::Never, 8, 1, 128), 0);
  EXPECT_EQ(pack_gqa_shift(PackGqaMode::Always, 8, 4096, 128), 3);  // even where auto would not
  EXPECT_EQ(pack_gqa_shift(PackGqaMode::Always, 7, 1, 128), 0);     // never where it cannot
}

}  // namespace
