// The sm90 forward's size-based kernel choice (src/cuda/sm90/fwd_route.hpp): which masked d192 /
// d256 calls take the 128-key wide tile, which unmasked ones the short-range tile. On the GPU the
// routing is exercised by the fa3 forward tests under FA_SM90_FWD_D256_WIDE_MAX_N=0 / large
// (scripts/gpu/d256_wide_check.sh), FA_SM90_FWD_D256_SHORT_MAX_N=0 / large
// (scripts/gpu/d256_short_ab.sh) and the D192 pair (scripts/gpu/d192_short_ab.sh); here its
// boundary.
#include <gtest/gtest.h>

#include "core/params.hpp"
#include "cuda/sm90/fwd_route.hpp"

namespace {

using fa::core::AttnParams;
using fa::cuda::sm90::takes_short_tile;
using fa::cuda::sm90::fwd_tile_key_span;

AttnParams sizes(int64_t nq, int64_t nk, int64_t wl = -1, int64_t wr = -1) {
  AttnParams p;
  p.seqlen_q = nq;
  p.seqlen_k = nk;
  p.window_left = wl;
  p.window_right = wr;
  return p;
}

TEST(FwdRoute, SpanIsTheKeyLengthUnlessBothWindowSidesAreBounded) {
  EXPECT_EQ(fwd_tile_key_span(sizes(4096, 4096), 128), 4096);
  EXPECT_EQ(fwd_tile_key_span(sizes(4096, 4096, -1, 0), 128), 4096);   // causal: last tile sees all
  EXPECT_EQ(fwd_tile_key_span(sizes(4096, 4096, 256, -1), 128), 4096); // left bound only
  EXPECT_EQ(fwd_tile_key_span(sizes(4096, 4096, 256, 0), 128), 384);   // rows i..i+127, keys i-256..i+127
  EXPECT_EQ(fwd_tile_key_span(sizes(4096, 4096, 0, 0), 128), 128);     // diagonal only
  EXPECT_EQ(fwd_tile_key_span(sizes(100, 300, 1000, 1000), 128), 300); // window wider than the keys
}

TEST(FwdRoute, WideTileUpToMaxNKeys) {
  EXPECT_TRUE(takes_short_tile(sizes(2048, 2048, -1, 0), 128, 2048));
  EXPECT_FALSE(takes_short_tile(sizes(2048, 2049, -1, 0), 128, 2048));
  EXPECT_FALSE(takes_short_tile(sizes(1000, 2500, -1, 0), 128, 2048));  // the Grid case past it
  EXPECT_TRUE(takes_short_tile(sizes(16384, 16384, 64, 64), 128, 2048)); // short window, long N
  EXPECT_FALSE(takes_short_tile(sizes(16384, 16384, 2000, 0), 128, 2048));
}

// The unmasked short-range tiles use the same rule with their own max_n (d256 512 by default; d192
// 1024 where built): no window, so the span is the key length.
TEST(FwdRoute, UnmaskedShortTileUpToMaxNKeys) {
  EXPECT_TRUE(takes_short_tile(sizes(4096, 512), 128, 512));
  EXPECT_TRUE(takes_short_tile(sizes(300, 500), 128, 512));
  EXPECT_FALSE(takes_short_tile(sizes(512, 513), 128, 512));
  EXPECT_TRUE(takes_short_tile(sizes(1024, 1024), 128, 1024));
  EXPECT_FALSE(takes_short_tile(sizes(1024, 1025), 128, 1024));
}

TEST(FwdRoute, MaxNZeroMeansNever) {
  EXPECT_FALSE(takes_short_tile(sizes(512, 512, -1, 0), 128, 0));
  EXPECT_FALSE(takes_short_tile(sizes(128, 0), 128, 0));  // no keys: still never
  EXPECT_TRUE(takes_short_tile(sizes(128, 0), 128, 2048));
}

}  // namespace
