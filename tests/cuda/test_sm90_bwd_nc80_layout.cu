// The sm90 backward's 80-query d128 tile (BwdConfig with kBlockM = 80: FA_SM90_BWD_D128_NC_BLOCK_M,
// src/cuda/sm90/flash_bwd_kernel.cuh) checked on the host against CuTe's own partitions and
// layouts, for both element types. No GPU needed (runs in CI, whatever the switch).
//   DsStores      the transposing stmatrix.x4 of dS^T (ds_stsm_t_lane_offset + 1024 j + buffer)
//                 puts every S^T accumulator element where CuTe's dS tensor (the dQ^T wgmma's B
//                 operand) has that (query, key), in both buffers;
//   RegisterA     the S^T / dP^T accumulator viewed as the A operand of dV / dK (acc_as_a_operand,
//                 K = 80 queries: 5 k-blocks) holds the (key, query) CuTe's RS partition expects;
//   DqFragments   the dQ^T accumulator (rows = head dim) covers the 80 x 128 block once, each WG
//                 one half of the head dim, and the fragment order (dq_frag_offset) is a
//                 bijection of the block's 80 * 128 floats (the conversion maps it back with
//                 dq_row / dq_col);
//   RowPadding    with rows padded to kNc80RowPad, every 80-row block, 64-row preprocess chunk and
//                 turn counter of a sequence stays inside its padded rows (batch and varlen), the
//                 blocks' counters are distinct, and the workspace holds the padding.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "cuda/sm90/flash_bwd_kernel.cuh"

namespace {

using namespace cute;
using namespace fa::cuda::sm90_bwd;

template <class T>
using Nc80 = BwdConfig<T, 128, 0, true, false, true, true, false, 80>;

template <class T>
void ds_stores() {
  using Cfg = Nc80<T>;
  static_assert(Cfg::kBlockM == 80 && Cfg::kDqSwapAB && Cfg::kSdPValues == 40);
  constexpr int kBM = Cfg::kBlockM, kBN = Cfg::kBlockN;
  T* mem = static_cast<T*>(std::aligned_alloc(1024, cosize_v<typename Cfg::SmemLayoutdS> * sizeof(T)));
  ASSERT_NE(mem, nullptr);
  Tensor sdS = make_tensor(make_smem_ptr(mem), typename Cfg::SmemLayoutdS{});
  ASSERT_EQ(int(size<0>(sdS)), kBM);
  ASSERT_EQ(int(size<1>(sdS)), kBN);
  typename Cfg::MmaSdP mma_sdp;
  int bad = 0;
  std::set<uint32_t> written;
  for (int tid = 0; tid < Cfg::kConsumerThreads; ++tid) {
    Tensor c = mma_sdp.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<kBN>, Int<kBM>>{}));
    ASSERT_EQ(int(size(c)), Cfg::kSdPValues);
    const int lane = tid % 32;
    for (int buf = 0; buf < 2; ++buf)
      for (int i = 0; i < Cfg::kSdPValues; ++i) {
        const int kj = get<0>(c(i)), qi = get<1>(c(i));
        // Packed register k = i / 2 is operand m = k % 4 of the stmatrix for column pair j; with
        // .trans, fragment element (row lane / 4, column 2 (lane % 4) + e) of matrix m goes to the
        // row addressed by lane 8m + column, at position row.
        const int k = i / 2, e = i % 2, m = k % 4, j = 2 * (k / 4);
        const int src_lane = 8 * m + 2 * (lane % 4) + e;
        const uint32_t addr = ds_stsm_t_lane_offset<kBM>((tid & ~31) | src_lane) +
                              uint32_t(buf * kBN * kBM * sizeof(T)) + uint32_t(j * 1024) +
                              uint32_t(2 * (lane / 4));
        const uint32_t want = uint32_t(reinterpret_cast<char*>(&sdS(qi, kj, buf)) - reinterpret_cast<char*>(mem));
        written.insert(addr);
        if (addr != want && ++bad <= 5)
          ADD_FAILURE() << "tid " << tid << " value " << i << " (key " << kj << ", query " << qi << ", buffer " << buf
                        << ") stored at " << addr << ", CuTe's dS has it at " << want;
      }
  }
  EXPECT_EQ(int(written.size()), 2 * kBM * kBN) << "every dS element of both buffers written once";
  std::free(mem);
}

TEST(Sm90BwdNc80Layout, DsStoresBf16) { ds_stores<cutlass::bfloat16_t>(); }
TEST(Sm90BwdNc80Layout, DsStoresFp16) { ds_stores<cutlass::half_t>(); }

template <class T>
void register_a() {
  using Cfg = Nc80<T>;
  constexpr int kBM = Cfg::kBlockM, kBN = Cfg::kBlockN;
  typename Cfg::MmaSdP mma_sdp;
  typename Cfg::MmadKV mma_dkv;
  const auto acc = partition_fragment_C(mma_sdp, Shape<Int<kBN>, Int<kBM>>{}).layout();
  const auto la = acc_as_a_operand(acc);
  int bad = 0;
  for (int tid = 0; tid < Cfg::kConsumerThreads; ++tid) {
    Tensor cs = mma_sdp.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<kBN>, Int<kBM>>{}));
    std::map<int, std::pair<int, int>> at;  // register offset -> (key, query) of S^T held there
    for (int i = 0; i < int(size(cs)); ++i) at[int(acc(i))] = {int(get<0>(cs(i))), int(get<1>(cs(i)))};
    Tensor ca = mma_dkv.get_thread_slice(tid).partition_A(make_identity_tensor(Shape<Int<kBN>, Int<kBM>>{}));
    ASSERT_EQ(int(size<0>(ca)), int(size<0>(la)));
    ASSERT_EQ(int(size<1>(ca)), int(size<1>(la)));
    ASSERT_EQ(int(size<2>(ca)), int(size<2>(la)));
    ASSERT_EQ(int(size<2>(ca)), kBM / 16) << "K = 80 queries: 5 k-blocks";
    for (int v = 0; v < int(size<0>(ca)); ++v)
      for (int mm = 0; mm < int(size<1>(ca)); ++mm)
        for (int kb = 0; kb < int(size<2>(ca)); ++kb) {
          const std::pair<int, int> want{int(get<0>(ca(v, mm, kb))), int(get<1>(ca(v, mm, kb)))};
          const auto it = at.find(int(la(v, mm, kb)));
          if ((it == at.end() || it->second != want) && ++bad <= 5)
            ADD_FAILURE() << "tid " << tid << " A (" << v << ", " << mm << ", " << kb << "): register "
                          << int(la(v, mm, kb)) << " does not hold (key " << want.first << ", query "
                          << want.second << ")";
        }
  }
}

TEST(Sm90BwdNc80Layout, RegisterABf16) { register_a<cutlass::bfloat16_t>(); }
TEST(Sm90BwdNc80Layout, RegisterAFp16) { register_a<cutlass::half_t>(); }

template <class T>
void dq_fragments() {
  using Cfg = Nc80<T>;
  constexpr int kBM = Cfg::kBlockM, kD = Cfg::kHeadDim;
  static_assert(Cfg::kDqFragValues == 40 && Cfg::kDqHalf == kBM * kD / 2);
  typename Cfg::MmadQ mma_dq;
  std::vector<int> seen(kBM * kD, 0), seen_off(kBM * kD, 0);
  int bad = 0;
  for (int tid = 0; tid < Cfg::kConsumerThreads; ++tid) {
    Tensor c = mma_dq.get_thread_slice(tid).partition_C(make_identity_tensor(typename Cfg::DqShape{}));
    ASSERT_EQ(int(size(c)), Cfg::kDqFragValues);
    for (int i = 0; i < int(size(c)); ++i) {
      const int r = Cfg::dq_row(c(i)), col = Cfg::dq_col(c(i));
      ASSERT_TRUE(r >= 0 && r < kBM && col >= 0 && col < kD) << "tid " << tid << " value " << i;
      ++seen[r * kD + col];
      if ((col / (kD / 2)) != tid / 128 && ++bad <= 5)
        ADD_FAILURE() << "tid " << tid << " (WG " << tid / 128 << ") holds dQ column " << col;
      const int off = Cfg::dq_frag_offset(tid, i);
      ASSERT_TRUE(off >= 0 && off < kBM * kD);
      ++seen_off[off];
      if (off / Cfg::kDqHalf != tid / 128 && ++bad <= 5)
        ADD_FAILURE() << "tid " << tid << " value " << i << " outside its WG's half of the fragment order";
    }
  }
  for (int x = 0; x < kBM * kD; ++x) {
    if (seen[x] != 1 && ++bad <= 5)
      ADD_FAILURE() << "dQ (" << x / kD << ", " << x % kD << ") held " << seen[x] << " times";
    if (seen_off[x] != 1 && ++bad <= 5) ADD_FAILURE() << "fragment offset " << x << " used " << seen_off[x] << " times";
  }
}

TEST(Sm90BwdNc80Layout, DqFragmentsBf16) { dq_fragments<cutlass::bfloat16_t>(); }
TEST(Sm90BwdNc80Layout, DqFragmentsFp16) { dq_fragments<cutlass::half_t>(); }

// Every block / chunk / counter of each sequence inside [start_b, start_{b+1}) (the last: the
// head's rows_pad), for one call's lengths.
void check_rows(const fa::core::AttnParams& p, const std::vector<int64_t>& q_lens) {
  constexpr int kPad = kNc80RowPad, kBM = 80;
  const int64_t rows = padded_rows<kPad>(p);
  EXPECT_EQ(rows % kPad, 0);
  int64_t q_start = 0;
  std::set<int64_t> counters;
  for (int b = 0; b < int(q_lens.size()); ++b) {
    const int64_t len = q_lens[b];
    const int64_t start = padded_row_start<kPad>(p, b, p.varlen ? q_start : 0);
    const int64_t next = b + 1 < int(q_lens.size())
                             ? padded_row_start<kPad>(p, b + 1, p.varlen ? q_start + len : 0)
                             : rows;
    EXPECT_EQ(start % kPad, 0) << "sequence " << b;
    // The main kernel's blocks and the conversion's (ceil(len / 80) of them) ...
    EXPECT_LE(start + (len + kBM - 1) / kBM * kBM, next) << "sequence " << b << " of " << len << " rows";
    // ... and the preprocess's 64-row chunks over round_up(len, kPad), which set LSE = +inf, D = 0
    // on padding rows and zero the counters.
    EXPECT_LE(start + round_up(len, kPad), next) << "sequence " << b;
    for (int64_t m = 0; m * kBM < len; ++m) {
      const int64_t prow = start + m * kBM;
      EXPECT_EQ(prow % 4, 0) << "16-byte aligned LSE / D slices";
      EXPECT_TRUE(counters.insert(prow / kTurnRows).second) << "block " << m << " of sequence " << b
                                                             << " shares a turn counter";
    }
    q_start += len;
  }
}

TEST(Sm90BwdNc80Layout, RowPadding) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const int batch = 1 + int(rng() % 6);
    std::vector<int64_t> lens(batch);
    int64_t total = 0, max_len = 0;
    for (auto& l : lens) {
      const int kind = int(rng() % 4);
      l = kind == 0 ? int64_t(rng() % 3) : kind == 1 ? 80 * int64_t(rng() % 6) + int64_t(rng() % 3) - 1
                                                     : int64_t(rng() % 5000);
      if (l < 0) l = 0;
      total += l;
      max_len = std::max(max_len, l);
    }
    fa::core::AttnParams p;
    p.batch = batch, p.head_dim = 128, p.heads_q = 2, p.heads_kv = 1;
    p.varlen = true, p.total_q = total, p.seqlen_q = max_len;
    check_rows(p, lens);
    // The batch form: every sequence as long as the longest.
    p.varlen = false, p.total_q = int64_t(batch) * max_len;
    check_rows(p, std::vector<int64_t>(batch, max_len));
    // With the 80-row tile built in, the workspace holds either padding (workspace_rows).
    if (FA_SM90_BWD_D128_NC_BLOCK_M == 80) {
      for (bool vl : {true, false}) {
        p.varlen = vl, p.total_q = vl ? total : int64_t(batch) * max_len;
        std::vector<char> ws(workspace_bytes(p));
        const BwdWorkspace w = carve_workspace<kNc80RowPad>(p, ws.data());
        EXPECT_LE(size_t(reinterpret_cast<char*>(w.kv_done) - ws.data()) + size_t(p.batch * p.heads_kv * 4),
                  ws.size());
      }
    }
  }
}

}  // namespace
