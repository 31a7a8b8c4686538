// The quad transpose of the sm90 epilogues' wide stores (src/cuda/common/quad_store.cuh), run on
// the host: quad_transpose is the kernels' own code, instantiated on a lane vector that holds all
// four lanes of a quad, so its shuffles and selects act on the whole quad at once. The check: with
// the wgmma accumulator's row layout (lane q's word g = columns 8g + 2q, 8g + 2q + 1; checked
// against CuTe's partitions by scripts/check_sm90_fwd_layout.cu and check_sm90_bwd_layout.cu),
// every word lands, through quad_store_column and quad_store_row's offsets, on its own columns,
// and every column pair of the row is written once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/common/quad_store.cuh"

namespace {

// One 32-bit register (or predicate) of each of the quad's lanes.
struct QuadWord {
  uint32_t v[4];
};
struct QuadBit {
  bool v[4];
};

// Found by argument-dependent lookup from fa::cuda::quad_transpose.
QuadWord quad_select(QuadBit const& p, QuadWord const& a, QuadWord const& b) {
  QuadWord r{};
  for (int l = 0; l < 4; ++l) r.v[l] = p.v[l] ? a.v[l] : b.v[l];
  return r;
}
QuadWord quad_shfl_xor(QuadWord const& x, int lane_mask) {
  QuadWord r{};
  for (int l = 0; l < 4; ++l) r.v[l] = x.v[l ^ lane_mask];
  return r;
}

// A word's content: the row column of its first element.
template <int kRounds, int N>
void check_row() {
  constexpr int kW = 1 << kRounds;
  QuadWord w[N];
  for (int g = 0; g < N; ++g)
    for (int q = 0; q < 4; ++q) w[g].v[q] = uint32_t(8 * g + 2 * q);
  QuadBit lane_bit[kRounds];
  for (int b = 0; b < kRounds; ++b)
    for (int q = 0; q < 4; ++q) lane_bit[b].v[q] = ((q >> b) & 1) != 0;
  fa::cuda::quad_transpose<kRounds>(w, lane_bit);
  std::vector<int> written(4 * N, 0);  // per column pair
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < N; ++k) {
      // quad_store_row: set s = k / kW at byte 16 kW s, word i = k % kW at byte 4 i of it.
      const int col = fa::cuda::quad_store_column(q, kRounds) + 8 * kW * (k / kW) + 2 * (k % kW);
      ASSERT_EQ(int(w[k].v[q]), col)
          << "rounds " << kRounds << ", " << N << " words, lane " << q << ", word " << k;
      ++written[col / 2];
    }
  for (int c = 0; c < 4 * N; ++c) EXPECT_EQ(written[c], 1) << "column pair " << c;
}

TEST(QuadStore, SixteenByteStoresCoverEveryHeadDim) {
  check_row<2, 8>();   // d64
  check_row<2, 12>();  // d96
  check_row<2, 16>();  // d128
  check_row<2, 24>();  // d192
  check_row<2, 32>();  // d256
}

TEST(QuadStore, EightByteStoresCoverEveryHeadDim) {
  check_row<1, 8>();
  check_row<1, 12>();
  check_row<1, 16>();
  check_row<1, 24>();
  check_row<1, 32>();
}

TEST(QuadStore, StoreColumnsAreAlignedAndDistinct) {
  for (int rounds = 1; rounds <= 2; ++rounds) {
    const int bytes = 4 << rounds;
    for (int q = 0; q < 4; ++q) {
      EXPECT_EQ(2 * fa::cuda::quad_store_column(q, rounds) % bytes, 0) << rounds << " " << q;
      for (int p = 0; p < q; ++p)
        EXPECT_NE(fa::cuda::quad_store_column(q, rounds), fa::cuda::quad_store_column(p, rounds));
    }
  }
}

}  // namespace
