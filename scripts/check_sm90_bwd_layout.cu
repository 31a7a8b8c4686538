// Host-side check of the register/smem layout assumptions that the sm90 backward's hand-written
// paths make (src/cuda/sm90/flash_bwd_kernel.cuh), against CuTe's own partitions. No GPU needed:
//   nvcc -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -I src -I include \
//        -isystem .deps/cutlass/include -x cu scripts/check_sm90_bwd_layout.cu -o /tmp/layout_check
//   /tmp/layout_check      (exit status 0 and "ok" per head dim)
//   (and once more with -DFA_SM90_BWD_D64_BLOCK_M=128: d64's 128-query tile)
// 1. kDsStsm: a thread's packed dS^T register k (elements 2k, 2k+1 of the S^T accumulator), stored
//    by stmatrix.x4 at ds_stsm_lane_base ^ 16*j as bwd_main does, lands where CuTe's swizzled
//    dS^T smem tensor (the one the dQ wgmma reads) puts that (key, query) element, in both buffers.
//    (The 80-query tile's transposed dS stores and dQ^T fragments: tests/cuda/test_sm90_bwd_nc80_layout.cu.)
// 2. kEpilogueRows: accumulator value i = e + 2h + 4j of dK/dV is (key kj0 + 8h, column c0 + 8j + e),
//    with c0 = 8n + 2 (lane % 4) and kj0, n the same in the 4 lanes of a quad (the quad-transposed
//    stores).
#include <cstdio>
#include <cstdlib>

#include "cuda/sm90/flash_bwd_kernel.cuh"

using namespace cute;
using namespace fa::cuda::sm90_bwd;

template <int D, int BlockM = 0>
int check() {
  using Cfg = BwdConfig<cutlass::bfloat16_t, D, 0, true, false, true, true, false, BlockM>;
  constexpr int kVals = Cfg::kSdPValues;  // S^T values per thread (64 keys x kBlockM (split-D: /2) queries per WG)
  using T = cutlass::bfloat16_t;
  int bad = 0;
  // 1. dS^T (and split-D P^T, same layout) stores
  if constexpr (Cfg::kDsStsm) {
  T* mem = static_cast<T*>(std::aligned_alloc(1024, 2 * cosize_v<typename Cfg::SmemLayoutdSt> * sizeof(T)));
  Tensor sdSt = make_tensor(make_smem_ptr(mem), typename Cfg::SmemLayoutdSt{});
  typename Cfg::MmaSdP mma_sdp;
  for (int tid = 0; tid < Cfg::kConsumerThreads; ++tid) {
    Tensor c = mma_sdp.get_thread_slice(tid).partition_C(
        make_identity_tensor(Shape<Int<Cfg::kBlockN>, Int<Cfg::kBlockM>>{}));
    if (size(c) != kVals) return printf("d%d: S^T fragment has %d values, expected %d\n", D, int(size(c)), kVals), 1;
    const int lane = tid % 32;
    for (int buf = 0; buf < 2; ++buf)
      for (int i = 0; i < kVals; ++i) {
        const int kj = get<0>(c(i)), qi = get<1>(c(i));
        const int k = i / 2, e = i % 2;             // packed register, element in it
        const int j = (k / 4) * 2, q = k % 4;       // stmatrix instruction (column pair), matrix
        const int src_lane = 8 * q + lane / 4;      // the lane giving the address of our row
        // ds_stsm_lane_base without the smem base, of the lane giving the address
        const uint32_t lane_base = ds_stsm_lane_offset<Cfg::kSplitD>((tid & ~31) | src_lane);
        const uint32_t base = lane_base + uint32_t(buf * Cfg::kBlockN * Cfg::kBlockM * sizeof(T));
        const uint32_t col_base = base + uint32_t((j / 8) * Cfg::kBlockN * 64 * sizeof(T));  // 2nd atom column
        const uint32_t addr = (col_base ^ uint32_t(16 * (j % 8))) + uint32_t(2 * (2 * (lane % 4) + e));
        const uint32_t want = uint32_t(reinterpret_cast<char*>(&sdSt(kj, qi, buf)) - reinterpret_cast<char*>(mem));
        if (addr != want && bad++ < 5)
          printf("d%d dS^T: tid %d value %d (key %d, query %d, buffer %d) at %u, CuTe %u\n", D, tid, i, kj, qi,
                 buf, addr, want);
      }
    Tensor acc = partition_fragment_C(mma_sdp, Shape<Int<Cfg::kBlockN>, Int<Cfg::kBlockM>>{});
    Tensor r = make_tensor<T>(acc.layout());
    Tensor r32 = recast<uint32_t>(r);
    for (int k = 0; k < kVals / 2; ++k)
      if (reinterpret_cast<const char*>(&r32(k)) != reinterpret_cast<const char*>(&r(2 * k)) && bad++ < 5)
        printf("d%d: packed register %d is not elements %d, %d\n", D, k, 2 * k, 2 * k + 1);
  }
  std::free(mem);
  }
  // 2. dK/dV epilogue
  typename Cfg::MmadKV mma_dkv;
  for (int tid = 0; tid < Cfg::kConsumerThreads; ++tid) {
    Tensor c = mma_dkv.get_thread_slice(tid).partition_C(
        make_identity_tensor(Shape<Int<Cfg::kBlockN>, Int<Cfg::kHeadDim>>{}));
    const int kj0 = get<0>(c(0)), c0 = get<1>(c(0));
    // The quad-transposed stores (Cfg::kEpiStoreRounds, tests/core/test_quad_store.cpp) also take
    // the 4 lanes of a quad to share their key rows and lane q's columns to start at 2q past the
    // quad's first column, a multiple of 8 (split-D: the WG's half of the head dim).
    const auto c_lane0 = mma_dkv.get_thread_slice(tid & ~3).partition_C(
        make_identity_tensor(Shape<Int<Cfg::kBlockN>, Int<Cfg::kHeadDim>>{}))(0);
    const int kj0_lane0 = get<0>(c_lane0), c0_lane0 = get<1>(c_lane0);
    if ((c0 != c0_lane0 + 2 * (tid % 4) || c0_lane0 % 8 != 0 || kj0 != kj0_lane0) && bad++ < 10)
      printf("d%d dK/dV: tid %d starts at (%d, %d), its quad's lane 0 at (%d, %d)\n", D, tid, kj0, c0, kj0_lane0,
             c0_lane0);
    for (int i = 0; i < size(c); ++i) {
      const int want_k = kj0 + 8 * ((i / 2) % 2), want_c = c0 + 8 * (i / 4) + i % 2;
      if ((get<0>(c(i)) != want_k || get<1>(c(i)) != want_c) && bad++ < 10)
        printf("d%d dK/dV: tid %d value %d is (%d, %d), assumed (%d, %d)\n", D, tid, i, int(get<0>(c(i))),
               int(get<1>(c(i))), want_k, want_c);
    }
  }
  printf("d%d kBlockM %d: %s\n", D, Cfg::kBlockM, bad ? "MISMATCH" : "ok");
  return bad;
}

int main() {
  // check<64> follows FA_SM90_BWD_D64_BLOCK_M; build with -DFA_SM90_BWD_D64_BLOCK_M=128 for the 128-query tile.
  return (check<64>() + check<96>() + check<128>() + check<128, 80>() + check<192>() + check<256>()) ? 1 : 0;
}
