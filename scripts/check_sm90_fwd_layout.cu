// Host-side check of the O staging layout that the sm90 forward's stmatrix epilogue assumes
// (FwdEpilogue::stage_o_tma with FA_SM90_FWD_O_STSM, src/cuda/sm90/fwd_epilogue.hpp), against
// CuTe's own partitions.
// No GPU needed:
//   nvcc -std=c++17 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -I src -I include \
//        -isystem .deps/cutlass/include -x cu scripts/check_sm90_fwd_layout.cu -o /tmp/fwd_layout_check
//   /tmp/fwd_layout_check      (exit status 0 and "ok" per head dim)
// For every consumer thread and every value i of its O accumulator (CuTe's partition_C of the P·V
// TiledMma gives its (row, col) in the tile): the kernel packs values (2k, 2k+1) into 32-bit
// register k, stores registers 4j..4j+3 with stmatrix.x4 number j, lane L giving the byte address
// o_stsm_offset(L's row, j) (bytes); matrix q = k % 4 of that instruction is addressed by lanes 8q..8q+7
// (row r of the matrix by lane 8q + r), and thread t's register goes to row t / 4, elements
// 2 (t % 4), +1. The check recomputes where that puts each value and compares with the address of
// (row - 64 · warpgroup, col) in CuTe's swizzled SmemLayoutOHalf. The same for the FP8 kernels'
// O staging (e4m3 inputs, bf16/fp16 O: the layout is built from the output type).
//
// FP8 P fragment (check_p_fp8): the fp8 kernel converts its S accumulator in place into the e4m3
// A fragment of the k32 P·V wgmma, register reg byte b <- accumulator value p_fp8_source(reg, b),
// relying on Vᵀ's keys being permuted within each 32-key chunk (core::fp8::vt_key). For every
// consumer thread and every A value (CuTe's partition_A of the P·V TiledMma gives its (row, k)),
// the accumulator value it is taken from (CuTe's partition_C of the Q·Kᵀ TiledMma gives its
// (row, column)) must be the same row and the S column of the key that Vᵀ stores at k:
// 32 (k / 32) + vt_key(k % 32); every accumulator value must be used exactly once.
#include <cstdio>
#include <cstdlib>

#include "cuda/sm90/flash_fwd.cuh"

using namespace cute;
using namespace fa::cuda::sm90;

template <int D, bool kMasked, class K = FwdKernel<cutlass::bfloat16_t, D, kMasked, kMasked>>
int check(const char* what = "") {
  using T = typename K::OutElementC;
  static_assert(K::kTmaStoreO, "only instances with the TMA-store epilogue stage O in shared memory");
  using L = typename K::SmemLayoutOHalf;
  T* mem = static_cast<T*>(std::aligned_alloc(1024, cosize_v<L> * sizeof(T)));
  Tensor sO = make_tensor(make_smem_ptr(mem), L{});
  typename K::TiledMmaPV mma;
  int bad = 0;
  for (int tid = 0; tid < K::kConsumerThreads; ++tid) {
    Tensor c = mma.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<K::kBlockM>, Int<D>>{}));
    const int vals = int(size(c));
    if (vals != D / 2) return printf("d%d: O fragment has %d values, expected %d\n", D, vals, D / 2), 1;
    const int lane = tid % 32, wg = tid / 128, warp = (tid % 128) / 32;
    for (int i = 0; i < vals; ++i) {
      const int row = get<0>(c(i)) - wg * K::kWgRows, col = get<1>(c(i));
      const int k = i / 2, e = i % 2;      // register (values 2k, 2k+1), element in it
      const int j = k / 4, q = k % 4;      // stmatrix instruction, matrix
      const int src = 8 * q + lane / 4;    // the lane giving the address of this thread's matrix row
      const uint32_t addr = K::Epilogue::o_stsm_offset(warp * 16 + (src & 15), j, src) +
                            uint32_t(sizeof(T)) * uint32_t(2 * (lane % 4) + e);
      const uint32_t want = uint32_t(reinterpret_cast<char*>(&sO(row, col)) - reinterpret_cast<char*>(mem));
      if (addr != want && bad++ < 5)
        printf("d%d: tid %d value %d (row %d, col %d) at %u, CuTe %u\n", D, tid, i, row, col, addr, want);
    }
  }
  // Register k of the kernel is &rO(2k) read as 32 bits: (2k, 2k+1) must be adjacent in memory.
  Tensor acc = partition_fragment_C(mma, Shape<Int<K::kBlockM>, Int<D>>{});
  Tensor r = make_tensor<T>(acc.layout());
  for (int k = 0; k < D / 4; ++k)
    if (&r(2 * k + 1) != &r(2 * k) + 1 && bad++ < 5) printf("d%d: values %d, %d not adjacent\n", D, 2 * k, 2 * k + 1);
  std::free(mem);
  printf("d%d%s%s: %s\n", D, kMasked ? " masked" : "", what, bad ? "MISMATCH" : "ok");
  return bad ? 1 : 0;
}

// The accumulator layout two code paths assume, for a TiledMma's C partition of an M × N tile:
// every thread holds two rows, the same two in each of a quad's 4 lanes, and its value v of a
// row sits at column 8 (v / 2) + 2 (lane % 4) + v % 2.
template <int M, int N, class Mma>
int check_rowcol(Mma const& mma, int threads, const char* what) {
  int bad = 0;
  int quad_row[2] = {};
  for (int tid = 0; tid < threads; ++tid) {
    Tensor c = mma.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<M>, Int<N>>{}));
    Tensor c_rc = make_tensor(c.data(), acc_rowcol_layout(c.layout()));
    static_assert(decltype(size<0>(c_rc))::value == 2, "two rows per thread");
    if (int(size<1>(c_rc)) != N / 4) return printf("%s: %d values per row, expected %d\n", what, int(size<1>(c_rc)), N / 4), 1;
    const int q = tid % 4;
    for (int r = 0; r < 2; ++r) {
      const int row = get<0>(c_rc(r, 0));
      if (q == 0) quad_row[r] = row;
      if (row != quad_row[r] && bad++ < 5) printf("%s: tid %d row %d is %d, lane 0 of its quad %d\n", what, tid, r, row, quad_row[r]);
      for (int v = 0; v < N / 4; ++v) {
        const int want_col = 8 * (v / 2) + 2 * q + v % 2;
        if ((get<0>(c_rc(r, v)) != row || get<1>(c_rc(r, v)) != want_col) && bad++ < 5)
          printf("%s: tid %d value (%d, %d) is (%d, %d), assumed (%d, %d)\n", what, tid, r, v,
                 int(get<0>(c_rc(r, v))), int(get<1>(c_rc(r, v))), row, want_col);
      }
    }
  }
  return bad;
}

// Direct O stores through the quad transpose (FwdEpilogue::store_o_rows_wide, kOStoreRounds): the
// kernel takes row r's word g of a thread from values (r, 2g), (r, 2g + 1) of the row-column
// view and stores it as columns 8g + 2 (lane % 4), +1 of the row of value (r, 0), the same row in
// the quad's 4 lanes. tests/core/test_quad_store.cpp checks the transpose against that layout;
// here the layout is checked against CuTe's partition, for every head dim (any instance can take
// this path: varlen, packed GQA, O without TMA alignment).
// The score mask by bit masks (FwdScoreMask::apply_bits, fwd_mask.hpp; FA_SM90_FWD_MASK_R2P)
// assumes the same layout for the Q·Kᵀ accumulator (kBlockM × kBlockN): checked here for the S
// tile too.
template <class K>
int check_quad_rows(const char* what) {
  constexpr int D = K::kHeadDimC;
  const int bad_o = check_rowcol<K::kBlockM, D>(typename K::TiledMmaPV{}, K::kConsumerThreads, what);
  printf("%s quad-store rows: %s\n", what, bad_o ? "MISMATCH" : "ok");
  const int bad_s = check_rowcol<K::kBlockM, K::kBlockN>(typename K::TiledMmaQK{}, K::kConsumerThreads, what);
  printf("%s score columns (kBlockN %d): %s\n", what, K::kBlockN, bad_s ? "MISMATCH" : "ok");
  return bad_o + bad_s ? 1 : 0;
}

template <int D, bool kMasked, class Out>
using Fp8Kernel = FwdKernel<cutlass::float_e4m3_t, D, kMasked, false, fwd_feature::kAll, Out>;

template <int D, bool kMasked>
int check_p_fp8() {
  using K = Fp8Kernel<D, kMasked, cutlass::bfloat16_t>;
  constexpr int M = K::kBlockM, N = K::kBlockN;
  typename K::TiledMmaQK mma_qk;
  typename K::TiledMmaPV mma_pv;
  int bad = 0;
  for (int tid = 0; tid < K::kConsumerThreads; ++tid) {
    Tensor cS = mma_qk.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<M>, Int<N>>{}));
    Tensor cA = mma_pv.get_thread_slice(tid).partition_A(make_identity_tensor(Shape<Int<M>, Int<N>>{}));
    // The kernel's register tensor must have CuTe's A-fragment shape, so that index a of both is
    // the same (value, m, k-block) coordinate.
    static_assert(std::is_same_v<decltype(shape(cA)), decltype(shape(typename K::PFragFp8{}))>,
                  "P fragment shape differs from the P·V wgmma's A partition");
    static_assert(size(decltype(cS){}) == size(decltype(cA){}), "S and P value counts differ");
    bool used[N] = {};
    for (int a = 0; a < int(size(cA)); ++a) {
      const int src = K::p_fp8_source(a / 4, a % 4);
      if (src < 0 || src >= int(size(cS)) || used[src]) {
        if (bad++ < 5) printf("fp8 d%d: tid %d value %d: source %d out of range or reused\n", D, tid, a, src);
        continue;
      }
      used[src] = true;
      const int m = get<0>(cA(a)), k = get<1>(cA(a));
      const int row = get<0>(cS(src)), col = get<1>(cS(src));
      const int key = 32 * (k / 32) + fa::core::fp8::vt_key(k % 32);
      if ((row != m || col != key) && bad++ < 5)
        printf("fp8 d%d: tid %d A value %d (row %d, k %d -> key %d) takes S (row %d, col %d)\n", D, tid, a,
               m, k, key, row, col);
    }
  }
  printf("fp8 d%d%s P fragment: %s\n", D, kMasked ? " masked" : "", bad ? "MISMATCH" : "ok");
  return bad ? 1 : 0;
}

int main() {
  int bad = 0;
  bad += check<64, false>();
  bad += check<64, true>();
  bad += check<96, false>();
  bad += check<128, false>();
  bad += check<128, true>();
  // fp8: d64 and d128 stage O (bf16 / fp16) for the TMA store; d256 stores directly.
  bad += check<64, false, Fp8Kernel<64, false, cutlass::bfloat16_t>>(" fp8->bf16");
  bad += check<128, true, Fp8Kernel<128, true, cutlass::half_t>>(" fp8->fp16");
  static_assert(!Fp8Kernel<256, false, cutlass::bfloat16_t>::kTmaStoreO, "fp8 d256: see fwd_tile_config.hpp");
  using bf16 = cutlass::bfloat16_t;
  using fp16 = cutlass::half_t;
  bad += check_quad_rows<FwdKernel<bf16, 64, false, false>>("d64");
  bad += check_quad_rows<FwdKernel<fp16, 64, true, true>>("d64 masked fp16");
  bad += check_quad_rows<FwdKernel<bf16, 96, false, false>>("d96");
  bad += check_quad_rows<FwdKernel<bf16, 96, true, true>>("d96 masked");
  bad += check_quad_rows<FwdKernel<bf16, 128, false, false>>("d128");
  bad += check_quad_rows<FwdKernel<fp16, 128, true, true>>("d128 masked fp16");
  bad += check_quad_rows<FwdKernel<bf16, 192, false, false>>("d192");
  bad += check_quad_rows<FwdKernel<bf16, 192, true, true>>("d192 masked");
  bad += check_quad_rows<FwdKernel<bf16, 256, false, false>>("d256");
  bad += check_quad_rows<FwdKernel<fp16, 256, true, true>>("d256 masked fp16");
  bad += check_quad_rows<Fp8Kernel<64, false, bf16>>("fp8 d64");
  bad += check_quad_rows<Fp8Kernel<128, true, fp16>>("fp8 d128 masked");
  bad += check_quad_rows<Fp8Kernel<256, false, bf16>>("fp8 d256");
  bad += check_quad_rows<Fp8Kernel<256, true, fp16>>("fp8 d256 masked");
  bad += check_p_fp8<64, false>();
  bad += check_p_fp8<128, true>();
  bad += check_p_fp8<256, false>();
  return bad ? 1 : 0;
}
