// The FA2 backward's banded dQ accumulator (FA_SM80_BWD_DQ_PERM, src/cuda/sm80/bwd_workspace.cuh)
// checked on the host against CuTe's own partition of the dQ product, for every tile the sm80
// backward instantiates. No GPU needed (runs in CI).
//
// bwd_main adds accumulator value i of a thread at its first entry's banded offset plus
// DqPermDst<T>::Layout()(i), a compile-time distance. That holds only if every entry of a thread
// is a whole number of 8-row bands and 8-column blocks away from its first entry, whatever the
// tile's row alignment (varlen sequences start at any dense row). Checked here for each thread,
// value, dQ chunk and row alignment 0..15; plus: the banded order is a bijection of a head's
// [dq_rows, D], the pre-pass / conversion's 8 columns per lane are contiguous, and on an 8-aligned
// tile one warp's red.v2 of value pair i covers 256 contiguous bytes (the point of the order).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "cuda/sm80/flash_bwd.cuh"

namespace {

using namespace cute;
using fa::cuda::sm80::dq_acc_offset;
using fa::cuda::sm80::bwd::BwdTraits;
using fa::cuda::sm80::bwd::DqPermDst;

// Every failure message names the tile, thread, value and alignment; returns the number of them.
template <class T>
int check_tile(const std::string& name) {
  constexpr int kM = T::kBlockM, kD = T::kHeadDim, kDc = T::kHeadDimc;
  using Dst = typename DqPermDst<T>::Layout;
  typename T::TiledMmadQ mma;
  int bad = 0;
  for (int t = 0; t < T::kNThreads; ++t) {
    auto thr = mma.get_thread_slice(t);
    Tensor c = thr.partition_C(make_identity_tensor(Shape<Int<kM>, Int<kDc>>{}));
    EXPECT_EQ(int(size(c)), int(size(Dst{}))) << name;
    const fa::cuda::sm80::bwd::MmaCBase<T::kWarpsMdQ> base(t);
    EXPECT_EQ(int(get<0>(c(0))), base.row) << name << " thread " << t;
    EXPECT_EQ(int(get<1>(c(0))), base.col) << name << " thread " << t;
    for (int chunk = 0; chunk < T::kDQChunks; ++chunk) {
      for (int x0 = 0; x0 < 16; ++x0) {
        const int64_t first = dq_acc_offset<kD>(x0 + base.row, chunk * kDc + base.col);
        for (int i = 0; i < int(size(c)); ++i) {
          const int64_t want = dq_acc_offset<kD>(x0 + get<0>(c(i)), chunk * kDc + get<1>(c(i)));
          if (want != first + Dst{}(i) && ++bad <= 5)
            ADD_FAILURE() << name << " thread " << t << " value " << i << " chunk " << chunk << " row0 " << x0
                          << ": offset " << first + Dst{}(i) << ", CuTe's entry is at " << want;
        }
      }
    }
  }
  // One warp's red.v2 of values (i, i + 1), tile at dense row 0: 32 lanes x 8 bytes, contiguous
  // and 256-byte aligned.
  for (int w = 0; w < T::kNThreads / 32; ++w) {
    for (int i = 0; i < int(size(Dst{})); i += 2) {
      std::set<int64_t> offs;
      for (int lane = 0; lane < 32; ++lane) {
        auto c = mma.get_thread_slice(32 * w + lane).partition_C(make_identity_tensor(Shape<Int<kM>, Int<kDc>>{}));
        offs.insert(dq_acc_offset<kD>(get<0>(c(i)), get<1>(c(i))));
        offs.insert(dq_acc_offset<kD>(get<0>(c(i + 1)), get<1>(c(i + 1))));
      }
      const bool run = offs.size() == 64 && *offs.begin() % 64 == 0 && *offs.rbegin() == *offs.begin() + 63;
      if (!run && ++bad <= 5) ADD_FAILURE() << name << " warp " << w << " value pair " << i << " is not one 256-byte run";
    }
  }
  return bad;
}

template <int kD>
void check_order(int64_t rows) {
  // Bijection of [rows, D] (rows a multiple of 8, as ws.dq_rows is) and contiguous 8-column runs.
  std::vector<char> seen(size_t(rows) * kD, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < kD; ++c) {
      const int64_t o = dq_acc_offset<kD>(r, c);
      ASSERT_GE(o, 0);
      ASSERT_LT(o, rows * kD) << "row " << r << " col " << c;
      ASSERT_FALSE(seen[size_t(o)]) << "row " << r << " col " << c << " collides";
      seen[size_t(o)] = 1;
      if (c % 8 != 0) EXPECT_EQ(o, dq_acc_offset<kD>(r, c - 1) + 1) << "row " << r << " col " << c;
    }
  }
}

TEST(Sm80DqOrder, TilesMatchCutePartitions) {
#if !FA_SM80_BWD_DQ_PERM
  GTEST_SKIP() << "built with FA_SM80_BWD_DQ_PERM=0 (row-major accumulator)";
#endif
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 32>>("d32")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 64>>("d64")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 64, true>>("d64 softcap")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 96>>("d96")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 128>>("d128")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 128, true>>("d128 softcap")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 192>>("d192")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 256>>("d256")), 0);
  EXPECT_EQ((check_tile<BwdTraits<cutlass::bfloat16_t, 256, false, true>>("d256 big smem")), 0);
}

TEST(Sm80DqOrder, BijectionAndRuns) {
#if !FA_SM80_BWD_DQ_PERM
  GTEST_SKIP() << "built with FA_SM80_BWD_DQ_PERM=0 (row-major accumulator)";
#endif
  check_order<64>(40);
  check_order<96>(24);
  check_order<128>(16);
  check_order<256>(16);
}

}  // namespace
