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
// Also the host-callable pieces of the first-adder store (FA_SM80_BWD_DQ_STORE): the walk start
// that keeps each query block's first visit with one key block, and the conversion's row ->
// sequence lookup that finds a row's claim.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cuda/sm80/flash_bwd.cuh"

namespace {

using namespace cute;
using fa::cuda::sm80::dq_acc_offset;
using fa::cuda::sm80::bwd::BwdTraits;
using fa::cuda::sm80::bwd::DqPermDst;
using fa::cuda::sm80::bwd::walk_start;
using fa::cuda::sm80::bwd::ws_row_to_seq;

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

// Key blocks walk their query blocks in lockstep (step i: block (start + i) mod n_m, every key
// block seeing all n_m, as without a mask). With the first-adder store a key block waits at a step
// whose query block another key block claimed and has not yet stored; that is harmless once per
// key block, but a key block that is first at many steps makes its neighbour wait at each of them
// (a convoy: ROTATE_M 1 at d 128, where n_m = 2 nb, measured -3% at N 8k). Mode 2's property:
// after its first ceil(n_m / nb) steps, every block a key block reaches was reached earlier.
int late_first_visits(int mode, int n_m, int nb) {
  std::vector<int> first(size_t(n_m), 1 << 30);
  for (int n = 0; n < nb; ++n)
    for (int i = 0; i < n_m; ++i) {
      const int m = (walk_start(mode, n, n_m, nb) + i) % n_m;
      first[size_t(m)] = std::min(first[size_t(m)], i);
    }
  const int k = (n_m + nb - 1) / nb;
  int late = 0;
  for (int n = 0; n < nb; ++n)
    for (int i = k; i < n_m; ++i)
      if (first[size_t((walk_start(mode, n, n_m, nb) + i) % n_m)] >= i) ++late;
  return late;
}

TEST(Sm80BwdWalk, FirstVisitsComeEarly) {
  const int shapes[][2] = {{128, 64}, {64, 64}, {8, 4}, {4, 4}, {7, 3}, {9, 4}, {5, 5}, {3, 5}, {1, 8}, {16, 128}, {256, 128}};
  for (const auto& s : shapes) {
    EXPECT_EQ(late_first_visits(2, s[0], s[1]), 0) << "n_m " << s[0] << " nb " << s[1];
    for (int n = 0; n < s[1]; ++n) {
      const int st = walk_start(2, n, s[0], s[1]);
      EXPECT_TRUE(st >= 0 && st < s[0]) << "start " << st << " of " << s[0];
    }
  }
  // The old start (mode 1) has the convoy wherever there are more query blocks than key blocks:
  // the property is not vacuous.
  EXPECT_GT(late_first_visits(1, 128, 64), 0);
  EXPECT_GT(late_first_visits(1, 9, 4), 0);
  EXPECT_EQ(walk_start(0, 5, 8, 4), 0);
}

// The conversion's row -> (sequence, row in it): varlen with empty sequences (first, inside and
// last), and the batch form.
TEST(Sm80BwdPrepost, RowToSequence) {
  const int32_t cu[] = {0, 0, 5, 5, 5, 12, 13, 13};
  fa::core::AttnParams p;
  p.varlen = true;
  p.batch = 7;
  p.cu_seqlens_q = cu;
  for (int64_t row = 0; row < 13; ++row) {
    int b = -1;
    int64_t r = -1;
    ws_row_to_seq(p, row, &b, &r);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, p.batch);
    EXPECT_LT(cu[b], cu[b + 1]) << "row " << row << " mapped to an empty sequence " << b;
    EXPECT_EQ(cu[b] + r, row) << "row " << row;
    EXPECT_TRUE(row >= cu[b] && row < cu[b + 1]) << "row " << row << " sequence " << b;
  }
  fa::core::AttnParams q;
  q.batch = 3;
  q.seqlen_q = 17;
  for (int64_t row = 0; row < 51; ++row) {
    int b = -1;
    int64_t r = -1;
    ws_row_to_seq(q, row, &b, &r);
    EXPECT_EQ(b, row / 17);
    EXPECT_EQ(r, row % 17);
  }
  // Lanes per (row, head): 16 bytes each, a power of two, covering the head dim.
  static_assert(fa::cuda::sm80::bwd::prepost_lanes<64>() == 8);
  static_assert(fa::cuda::sm80::bwd::prepost_lanes<96>() == 16);
  static_assert(fa::cuda::sm80::bwd::prepost_lanes<192>() == 32);
  static_assert(fa::cuda::sm80::bwd::prepost_lanes<256>() * 8 == 256);
}

}  // namespace
