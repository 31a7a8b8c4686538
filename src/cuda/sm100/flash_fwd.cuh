// FlashAttention-4-style forward for Blackwell (sm100a): TMA + tcgen05 UMMA + tensor memory.
//
// COMPILE-ONLY. This kernel has never run on hardware (the project has no Blackwell GPU). It is
// built for sm_100a, checked for spills and for the tcgen05 instructions in its SASS, and the
// dispatcher refuses it unless FA_SM100_UNVERIFIED=1 (src/cuda/sm100/gate.hpp). Treat any result
// it produces as unverified.
//
// One CTA per (query block of 128 rows, query head, batch) — not persistent: the LPT scheduler of
// src/cuda/scheduler/ is written around sm90's named roles and Q ring, so this path keeps a plain
// grid and only reverses the query-block order for right-bounded masks (heaviest tiles first).
// Head dim 128, bf16/fp16, key blocks of 128. Roles (192 threads, 6 warps):
//   WarpRole::Softmax  (warps 0-3, thread t owns query row t = TMEM lane t): per key block j,
//                      tcgen05.ld of S_j's row from TMEM, masking, online softmax with FA4's two
//                      ideas (below), P_j (bf16/fp16) written to shared memory in the UMMA's
//                      K-major 128-byte-swizzled layout; then the epilogue (O from TMEM, / l,
//                      direct stores; LSE).
//   WarpRole::Producer (warp 4, one elected lane): TMA loads of Q once and K_j, V_j into a 2-slot
//                      ring (separate full barriers for K and V: S_j needs only K_j).
//   WarpRole::Mma      (warp 5; tcgen05.mma is issued by one elected lane): allocates 256 TMEM
//                      columns (S: 0-127, O: 128-255, fp32, row i in lane i), then per block
//                      S_j = Q·K_jᵀ (SS, both K-major) and O += P_{j-1}·V_{j-1} (SS, V read
//                      MN-major straight from its row-major tile).
// Synchronisation (mbarriers; tcgen05.commit arrives when the MMAs issued before it completed):
//   q_full, k_full[s], v_full[s]  TMA transaction barriers          producer -> MMA
//   kv_empty[s]                   commit after P·V_j                MMA -> producer
//   s_full                        commit after Q·K_jᵀ               MMA -> softmax
//   p_full                        128 arrivals: S_j read, P_j in    softmax -> MMA
//                                 shared memory, O rescaled
//   o_done                        commit after P·V_j                MMA -> softmax
// Order in the MMA warp: S_j is issued once P_{j-1} is in (S has one TMEM buffer, so the softmax
// must have read S_{j-1}), then P_{j-1}·V_{j-1}; the softmax of block j therefore computes its row
// max while P_{j-1}·V_{j-1} runs, and waits o_done(j-1) only before it touches O or overwrites P.
// FA4 ideas held here:
//   (a) software exp2: kPolyPer8 of every 8 columns take core::exp2_poly (FMA pipe), the rest
//       MUFU.EX2, so the two pipes share the exponentials (degree 3: 8.6e-5 relative error, far
//       below the 16-bit rounding of P that follows).
//   (b) conditional rescaling: a row's reference max moves (and O, l are rescaled) only when the
//       block max exceeds it by more than kRescaleThreshold (log2 units); otherwise P is computed
//       against the stale max (P <= 2^8, safe in bf16/fp16 and fp32 sums). The final O / l and LSE
//       use the max actually applied, so the result is exact, not approximated. The TMEM
//       read-modify-write of O is skipped for a whole warp when none of its rows moved.
// Not here (FA4 has them): two Q tiles ping-ponging two softmax warpgroups, a correction
// warpgroup, P kept in TMEM (TS MMA), 2-CTA MMA, persistent LPT scheduling, TMA-store epilogue.
#pragma once

#include <cuda_runtime.h>

#include <cute/tensor.hpp>  // first, in a block of its own: the rest assume it

#include <cutlass/arch/barrier.h>
#include <cutlass/numeric_types.h>
#include <cute/arch/copy_sm100.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/arch/tmem_allocator_sm100.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/mma_traits_sm100.hpp>

#include "core/exp2_poly.hpp"
#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "core/status.hpp"
#include "cuda/dispatch.hpp"

namespace fa::cuda::sm100 {

enum class WarpRole { Softmax, Producer, Mma };

template <typename Element_, int kHeadDim_, bool kMasked_>
struct FwdKernel {
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kMasked = kMasked_;
  static_assert(kHeadDim == 128, "the sm100 forward is written for head dim 128");
  static constexpr int kBlockM = 128;  // UMMA M: one TMEM lane per query row, one thread per row
  static constexpr int kBlockN = 128;  // key block: S uses 128 TMEM columns, P 32 KB of smem
  static constexpr int kStages = 2;    // K/V ring: the next block loads while this one computes
  static constexpr int kSoftmaxThreads = 128;
  static constexpr int kThreads = kSoftmaxThreads + 64;  // + producer warp + MMA warp
  static constexpr int kTmemCols = 256;                  // S (128) + O (128), a power of two
  static constexpr uint32_t kTmemS = 0, kTmemO = 128;    // column offsets
  static constexpr int kPolyPer8 = 2;                    // FA4 (a): exp2_poly on 2 of every 8
  static constexpr float kRescaleThreshold = 8.f;        // FA4 (b): log2 units, P <= 256

  // K-major (Q, K, P) and MN-major (V as the B operand of P·V: d contiguous) 128-byte swizzles,
  // the layouts the UMMA smem descriptors encode.
  using SmemLayoutQ =
      decltype(cute::tile_to_shape(cute::UMMA::Layout_K_SW128_Atom<Element>{},
                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(
      cute::UMMA::Layout_K_SW128_Atom<Element>{},
      cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>, cute::Int<kStages>>{}));
  using SmemLayoutV = decltype(cute::tile_to_shape(
      cute::UMMA::Layout_MN_SW128_Atom<Element>{},
      cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{}));
  using SmemLayoutP =
      decltype(cute::tile_to_shape(cute::UMMA::Layout_K_SW128_Atom<Element>{},
                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{}));

  using MmaQK = decltype(cute::make_tiled_mma(
      cute::SM100_MMA_F16BF16_SS<Element, Element, float, kBlockM, kBlockN, cute::UMMA::Major::K,
                                 cute::UMMA::Major::K>{}));
  using MmaPV = decltype(cute::make_tiled_mma(
      cute::SM100_MMA_F16BF16_SS<Element, Element, float, kBlockM, kHeadDim, cute::UMMA::Major::K,
                                 cute::UMMA::Major::MN>{}));

  // Global tensors as TMA sees them: Q, K (row, dim, head, batch); V transposed, (dim, row, head,
  // batch), so its box lands in the MN-major layout P·V reads.
  using GmemLayoutRow = cute::Layout<cute::Shape<int32_t, int32_t, int32_t, int32_t>,
                                     cute::Stride<int64_t, cute::_1, int64_t, int64_t>>;
  using GmemLayoutCol = cute::Layout<cute::Shape<int32_t, int32_t, int32_t, int32_t>,
                                     cute::Stride<cute::_1, int64_t, int64_t, int64_t>>;
  using TmaQ = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayoutRow{}),
      SmemLayoutQ{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}, cute::_1{}));
  using TmaK = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayoutRow{}),
      cute::take<0, 2>(SmemLayoutK{}), cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>>{},
      cute::_1{}));
  using TmaV = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayoutCol{}),
      cute::take<0, 2>(SmemLayoutV{}), cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>>{},
      cute::_1{}));

  struct SharedStorage {
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutK>> k;
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutV>> v;
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutP>> p;
    alignas(8) uint64_t q_full, k_full[kStages], v_full[kStages], kv_empty[kStages];
    alignas(8) uint64_t s_full, p_full, o_done;
    uint32_t tmem_base;
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");

  struct Params {
    TmaQ tma_q;
    TmaK tma_k;
    TmaV tma_v;
    cute::Shape<int32_t, int32_t, int32_t, int32_t> shape_q, shape_k, shape_vt;
    core::AttnParams p;
    float scale_log2;  // softmax scale · log2(e): scores go straight to exp2
    bool reverse_m;
  };
};

namespace detail {

__device__ __forceinline__ void tcgen05_before_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tcgen05_after_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// 32 consecutive fp32 columns of this thread's TMEM lane (the 32x32b shape: warp w of a
// warpgroup reaches lanes 32w..32w+31).
__device__ __forceinline__ void tmem_load32(uint32_t addr, float (&v)[32]) {
  uint32_t(&r)[32] = reinterpret_cast<uint32_t(&)[32]>(v);
  cute::SM100_TMEM_LOAD_32dp32b32x::copy(addr, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                                         r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16],
                                         r[17], r[18], r[19], r[20], r[21], r[22], r[23], r[24],
                                         r[25], r[26], r[27], r[28], r[29], r[30], r[31]);
}
__device__ __forceinline__ void tmem_store32(uint32_t addr, const float (&v)[32]) {
  const uint32_t(&r)[32] = reinterpret_cast<const uint32_t(&)[32]>(v);
  cute::SM100_TMEM_STORE_32dp32b32x::copy(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                                          r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16],
                                          r[17], r[18], r[19], r[20], r[21], r[22], r[23], r[24],
                                          r[25], r[26], r[27], r[28], r[29], r[30], r[31], addr);
}

template <typename Element>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (std::is_same_v<Element, cutlass::bfloat16_t>) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return reinterpret_cast<uint32_t&>(h);
  } else {
    __half2 h = __floats2half2_rn(a, b);
    return reinterpret_cast<uint32_t&>(h);
  }
}

}  // namespace detail

template <typename K>
__global__ void __launch_bounds__(K::kThreads, 1)
    sm100_fwd_kernel(const __grid_constant__ typename K::Params params) {
#if defined(__CUDA_ARCH__) && defined(CUTE_ARCH_TCGEN05_F16F32_MMA_ENABLED)
  using namespace cute;
  using Element = typename K::Element;
  using Barrier = cutlass::arch::ClusterBarrier;
  using TxBarrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(1024) char smem_raw[];
  auto& ss = *reinterpret_cast<typename K::SharedStorage*>(smem_raw);
  const core::AttnParams& p = params.p;

  const int warp = threadIdx.x / 32;
  const WarpRole role = warp < 4    ? WarpRole::Softmax
                        : warp == 4 ? WarpRole::Producer
                                    : WarpRole::Mma;
  const int m_block = params.reverse_m ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
  const int head = blockIdx.y, batch = blockIdx.z;
  const int head_kv = head / p.group_size();
  const int64_t m0 = int64_t(m_block) * K::kBlockM;

  // Key blocks this tile visits; every role derives the same range.
  const core::Mask mask(p.seqlen_q, p.seqlen_k, K::kMasked ? p.window_left : -1,
                        K::kMasked ? p.window_right : -1);
  int64_t key_first = 0, key_last = p.seqlen_k;
  if constexpr (K::kMasked)
    mask.key_range(m0, std::min<int64_t>(m0 + K::kBlockM, p.seqlen_q), &key_first, &key_last);
  const int n_first = int(key_first / K::kBlockN);
  const int n_blocks =
      key_last > key_first ? int((key_last + K::kBlockN - 1) / K::kBlockN) - n_first : 0;

  Tensor sQ = make_tensor(make_smem_ptr(ss.q.begin()), typename K::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(ss.k.begin()), typename K::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(ss.v.begin()), typename K::SmemLayoutV{});
  Tensor sP = make_tensor(make_smem_ptr(ss.p.begin()), typename K::SmemLayoutP{});

  if (threadIdx.x == 0) {
    TxBarrier::init(&ss.q_full, 1);
    for (int s = 0; s < K::kStages; ++s) {
      TxBarrier::init(&ss.k_full[s], 1);
      TxBarrier::init(&ss.v_full[s], 1);
      Barrier::init(&ss.kv_empty[s], 1);
    }
    Barrier::init(&ss.s_full, 1);
    Barrier::init(&ss.p_full, K::kSoftmaxThreads);
    Barrier::init(&ss.o_done, 1);
    cutlass::arch::fence_barrier_init();
  }
  // The MMA warp owns the TMEM allocation (allocate and free must be the same warp).
  cute::TMEM::Allocator1Sm tmem_alloc{};
  if (role == WarpRole::Mma) {
    tmem_alloc.allocate(K::kTmemCols, &ss.tmem_base);
    tmem_alloc.release_allocation_lock();
  }
  // Publishes the barrier inits and the TMEM address (written through the tcgen05 proxy).
  detail::tcgen05_before_sync();
  __syncthreads();
  detail::tcgen05_after_sync();
  const uint32_t tmem = ss.tmem_base;

  if (role == WarpRole::Producer) {
    if (n_blocks > 0 && cute::elect_one_sync()) {
      Tensor mQ = params.tma_q.get_tma_tensor(params.shape_q)(_, _, head, batch);
      Tensor mK = params.tma_k.get_tma_tensor(params.shape_k)(_, _, head_kv, batch);
      Tensor mV = params.tma_v.get_tma_tensor(params.shape_vt)(_, _, head_kv, batch);
      Tensor gQ =
          local_tile(mQ, Shape<Int<K::kBlockM>, Int<K::kHeadDim>>{}, make_coord(m_block, _0{}));
      Tensor gK = local_tile(mK, Shape<Int<K::kBlockN>, Int<K::kHeadDim>>{}, make_coord(_, _0{}));
      Tensor gV = local_tile(mV, Shape<Int<K::kHeadDim>, Int<K::kBlockN>>{}, make_coord(_0{}, _));
      auto [tQg, tQs] = tma_partition(params.tma_q, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                      group_modes<0, 2>(gQ));
      auto [tKg, tKs] = tma_partition(params.tma_k, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sK),
                                      group_modes<0, 2>(gK));
      auto [tVg, tVs] = tma_partition(params.tma_v, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sV),
                                      group_modes<0, 2>(gV));
      constexpr uint32_t kTileBytes = K::kBlockN * K::kHeadDim * sizeof(Element);
      TxBarrier::arrive_and_expect_tx(&ss.q_full, K::kBlockM * K::kHeadDim * sizeof(Element));
      copy(params.tma_q.with(ss.q_full), tQg, tQs);
      for (int i = 0; i < n_blocks; ++i) {
        const int s = i % K::kStages;
        // Round r of a slot waits for the r-th release; round 0 passes (parity 1 is "done").
        Barrier::wait(&ss.kv_empty[s], ((i / K::kStages) & 1) ^ 1);
        TxBarrier::arrive_and_expect_tx(&ss.k_full[s], kTileBytes);
        copy(params.tma_k.with(ss.k_full[s]), tKg(_, n_first + i), tKs(_, s));
        TxBarrier::arrive_and_expect_tx(&ss.v_full[s], kTileBytes);
        copy(params.tma_v.with(ss.v_full[s]), tVg(_, n_first + i), tVs(_, s));
      }
    }
  } else if (role == WarpRole::Mma) {
    // The whole warp runs this loop; the UMMA atoms and tcgen05.commit elect one lane inside.
    typename K::MmaQK mma_qk;
    typename K::MmaPV mma_pv;
    auto thr_qk = mma_qk.get_slice(0);
    auto thr_pv = mma_pv.get_slice(0);
    Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ));  // (1, 1, kHeadDim/16)
    Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));  // (1, 1, kHeadDim/16, stage)
    Tensor tOrP = thr_pv.make_fragment_A(thr_pv.partition_A(sP));  // (1, 1, kBlockN/16)
    Tensor tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sV));  // (1, 1, kBlockN/16, stage)
    Tensor tStS = partition_fragment_C(mma_qk, Shape<Int<K::kBlockM>, Int<K::kBlockN>>{});
    Tensor tOtO = partition_fragment_C(mma_pv, Shape<Int<K::kBlockM>, Int<K::kHeadDim>>{});
    tStS.data() = tmem + K::kTmemS;
    tOtO.data() = tmem + K::kTmemO;

    // O += P_i·V_i; the caller has waited p_full(i).
    auto issue_pv = [&](int i) {
      const int s = i % K::kStages;
      TxBarrier::wait(&ss.v_full[s], (i / K::kStages) & 1);
      detail::tcgen05_after_sync();
      mma_pv.accumulate_ = i == 0 ? UMMA::ScaleOut::Zero : UMMA::ScaleOut::One;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tOrP); ++k) {
        gemm(mma_pv, tOrP(_, _, k), tOrV(_, _, k, s), tOtO);
        mma_pv.accumulate_ = UMMA::ScaleOut::One;
      }
      cutlass::arch::umma_arrive(&ss.o_done);
      cutlass::arch::umma_arrive(&ss.kv_empty[s]);  // K_i and V_i both read by now
    };

    if (n_blocks > 0) TxBarrier::wait(&ss.q_full, 0);
    for (int i = 0; i < n_blocks; ++i) {
      const int s = i % K::kStages;
      TxBarrier::wait(&ss.k_full[s], (i / K::kStages) & 1);
      // S has one TMEM buffer: S_i overwrites S_{i-1}, which p_full(i-1) says was read.
      if (i > 0) Barrier::wait(&ss.p_full, (i - 1) & 1);
      detail::tcgen05_after_sync();
      mma_qk.accumulate_ = UMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tSrQ); ++k) {
        gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k, s), tStS);
        mma_qk.accumulate_ = UMMA::ScaleOut::One;
      }
      cutlass::arch::umma_arrive(&ss.s_full);
      if (i > 0) issue_pv(i - 1);
    }
    if (n_blocks > 0) {
      Barrier::wait(&ss.p_full, (n_blocks - 1) & 1);
      issue_pv(n_blocks - 1);
    }
  } else {
    // ---- softmax warpgroup: thread t owns query row m0 + t, TMEM lane t ----
    const int row_in_tile = threadIdx.x;
    const int64_t row = m0 + row_in_tile;
    const uint32_t lane_addr = tmem + (uint32_t(warp * 32) << 16);
    float m_applied = -INFINITY;  // the reference max P and O are relative to (scaled, log2)
    float row_sum = 0.f;
    for (int i = 0; i < n_blocks; ++i) {
      const int64_t col0 = int64_t(n_first + i) * K::kBlockN;
      Barrier::wait(&ss.s_full, i & 1);
      detail::tcgen05_after_sync();
      float s[K::kBlockN];
      CUTE_UNROLL
      for (int c = 0; c < K::kBlockN / 32; ++c)
        detail::tmem_load32(lane_addr + K::kTmemS + 32 * c,
                            reinterpret_cast<float(&)[32]>(s[32 * c]));
      cutlass::arch::fence_view_async_tmem_load();  // tcgen05.wait::ld: s[] is valid after this

      // Masking: keys past the end always; the window only in the masked instance, and only in
      // blocks the window cuts.
      const bool full_block =
          col0 + K::kBlockN <= p.seqlen_k &&
          (!K::kMasked || mask.block_unmasked(m0, m0 + K::kBlockM, col0, col0 + K::kBlockN));
      if (!full_block) {
        // core::Mask's rule as three 32-bit column limits relative to this block (the 64-bit
        // per-column form costs registers the 128 live scores do not leave).
        const int64_t diag = mask.diag(row) - col0;
        auto clamp32 = [](int64_t v) { return int(v < -1 ? -1 : v > K::kBlockN ? K::kBlockN : v); };
        const int c_end = clamp32(p.seqlen_k - col0);  // c <  c_end
        const int c_lo =
            K::kMasked && mask.left >= 0 ? clamp32(diag - mask.left) : -1;  // c >= c_lo
        const int c_hi =
            K::kMasked && mask.right >= 0 ? clamp32(diag + mask.right) : K::kBlockN;  // c <= c_hi
        CUTE_UNROLL
        for (int c = 0; c < K::kBlockN; ++c)
          if (c >= c_end || c < c_lo || c > c_hi) s[c] = -INFINITY;
      }
      float block_max = -INFINITY;
      CUTE_UNROLL
      for (int c = 0; c < K::kBlockN; ++c) block_max = fmaxf(block_max, s[c]);
      block_max *= params.scale_log2;

      // FA4 (b): move the reference only when the new max is far above it.
      const bool rescale = block_max > m_applied + K::kRescaleThreshold ||
                           (m_applied == -INFINITY && block_max > -INFINITY);
      float factor = 1.f;
      if (rescale) {
        factor = exp2f(m_applied - block_max);  // 0 on the first live block: O, l start clean
        m_applied = block_max;
        row_sum *= factor;
      }
      // P_{i-1}·V_{i-1} must be done before P's buffer is rewritten and O rescaled.
      if (i > 0) {
        Barrier::wait(&ss.o_done, (i - 1) & 1);
        detail::tcgen05_after_sync();
      }
      // P = exp2(s·scale_log2 − m_applied), FA4 (a): a fixed subset of columns on the FMA pipe.
      const float m_off = m_applied == -INFINITY ? 0.f : m_applied;
      CUTE_UNROLL
      for (int c = 0; c < K::kBlockN; c += 8) {
        float e[8];
        CUTE_UNROLL
        for (int u = 0; u < 8; ++u) {
          const float x = fmaf(s[c + u], params.scale_log2, -m_off);
          e[u] = u < K::kPolyPer8 ? core::exp2_poly<3>(x) : exp2f(x);
          row_sum += e[u];
        }
        const uint4 packed{detail::pack2<Element>(e[0], e[1]), detail::pack2<Element>(e[2], e[3]),
                           detail::pack2<Element>(e[4], e[5]), detail::pack2<Element>(e[6], e[7])};
        // 8 consecutive keys are one 16-byte chunk in the swizzled layout (the swizzle permutes
        // chunks within a 128-byte row segment).
        *reinterpret_cast<uint4*>(&sP(row_in_tile, c)) = packed;
      }
      // O is rescaled after P is written, when s[] is dead: 32 more live floats next to s[] would
      // spill. tcgen05.ld/st are warp-collective: a warp rescales when any of its rows moved,
      // with factor 1 for the others; skipped entirely in the common late-sequence case.
      if (i > 0 && __any_sync(0xffffffffu, rescale)) {
        CUTE_UNROLL
        for (int c = 0; c < K::kHeadDim / 32; ++c) {
          float o[32];
          detail::tmem_load32(lane_addr + K::kTmemO + 32 * c, o);
          cutlass::arch::fence_view_async_tmem_load();
          CUTE_UNROLL
          for (int e = 0; e < 32; ++e) o[e] *= factor;
          detail::tmem_store32(lane_addr + K::kTmemO + 32 * c, o);
        }
        cutlass::arch::fence_view_async_tmem_store();  // tcgen05.wait::st before the arrive
      }
      cutlass::arch::fence_view_async_shared();  // P visible to the UMMA (async proxy)
      detail::tcgen05_before_sync();             // S reads ordered before the arrive
      Barrier::arrive(&ss.p_full);
    }

    // ---- epilogue: O / l from TMEM, direct 16-byte stores; LSE ----
    if (n_blocks > 0) {
      Barrier::wait(&ss.o_done, (n_blocks - 1) & 1);
      detail::tcgen05_after_sync();
    }
    const bool empty = !(row_sum > 0.f);
    const float inv_sum = empty ? 0.f : 1.f / row_sum;
    const bool live = row < p.seqlen_q;
    Element* o_row = static_cast<Element*>(p.o) + p.o_str.offset(batch, row, head);
    CUTE_UNROLL
    for (int c = 0; c < K::kHeadDim / 32; ++c) {
      float o[32];
      if (n_blocks > 0) {
        detail::tmem_load32(lane_addr + K::kTmemO + 32 * c, o);  // warp-collective: all lanes
        cutlass::arch::fence_view_async_tmem_load();
      }
      CUTE_UNROLL
      for (int e = 0; e < 32; e += 8) {
        const uint4 packed{detail::pack2<Element>(n_blocks > 0 ? o[e] * inv_sum : 0.f,
                                                  n_blocks > 0 ? o[e + 1] * inv_sum : 0.f),
                           detail::pack2<Element>(n_blocks > 0 ? o[e + 2] * inv_sum : 0.f,
                                                  n_blocks > 0 ? o[e + 3] * inv_sum : 0.f),
                           detail::pack2<Element>(n_blocks > 0 ? o[e + 4] * inv_sum : 0.f,
                                                  n_blocks > 0 ? o[e + 5] * inv_sum : 0.f),
                           detail::pack2<Element>(n_blocks > 0 ? o[e + 6] * inv_sum : 0.f,
                                                  n_blocks > 0 ? o[e + 7] * inv_sum : 0.f)};
        if (live) *reinterpret_cast<uint4*>(o_row + 32 * c + e) = packed;
      }
    }
    if (live && p.lse)
      p.lse[batch * p.lse_batch_stride + head * p.lse_head_stride + row] =
          empty ? -INFINITY : (m_applied + log2f(row_sum)) * 0.6931471805599453f;
  }

  // TMEM is freed by the warp that allocated it, after every role is done with it.
  detail::tcgen05_before_sync();
  __syncthreads();
  if (role == WarpRole::Mma) {
    detail::tcgen05_after_sync();
    tmem_alloc.free(tmem, K::kTmemCols);
  }
#elif defined(__CUDA_ARCH__)
  __trap();  // built for a target without tcgen05: never silently produce nothing
#endif
}

}  // namespace fa::cuda::sm100

namespace fa::cuda {

// Launcher with the gen_instances.py signature. Batch form only (no varlen, KV cache, softcap);
// declines layouts TMA cannot address with "unsupported".
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm100_fwd(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  using namespace cute;
  using Kernel = sm100::FwdKernel<Element, kHeadDim, kMasked>;
  static_assert(!kSoftcap, "the sm100 forward has no softcap instance");
  if (p.varlen || p.kvcache || p.softcap > 0.f)
    return core::unsupported(
        "the sm100 forward (compile-only) takes the batch form without softcap");
  if (!kMasked && (p.window_left >= 0 || p.window_right >= 0))
    return core::unsupported("the unmasked sm100 forward got a masked call");
  auto aligned = [](const void* ptr, const core::Strides& s) {
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && s.row % 8 == 0 && s.head % 8 == 0 &&
           s.batch % 8 == 0;
  };
  if (!aligned(p.q, p.q_str) || !aligned(p.k, p.k_str) || !aligned(p.v, p.v_str) ||
      !aligned(p.o, p.o_str))
    return core::unsupported(
        "the sm100 forward needs 16-byte aligned tensors and strides in multiples of 8 elements");
  if (p.batch > 65535 || p.heads_q > 65535)
    return core::unsupported("the sm100 forward supports at most 65535 sequences and heads");
  if (p.batch == 0 || p.seqlen_q == 0) return core::Status::success();

  // No keys: every tile is empty and loads nothing; point the K/V maps at Q so they still build.
  const bool no_keys = p.seqlen_k == 0;
  const int32_t rows_k = int32_t(no_keys ? 1 : p.seqlen_k);
  const core::Strides& ks = no_keys ? p.q_str : p.k_str;
  const core::Strides& vs = no_keys ? p.q_str : p.v_str;
  auto shape_q =
      make_shape(int32_t(p.seqlen_q), int32_t(kHeadDim), int32_t(p.heads_q), int32_t(p.batch));
  auto shape_k = make_shape(rows_k, int32_t(kHeadDim), int32_t(p.heads_kv), int32_t(p.batch));
  auto shape_vt = make_shape(int32_t(kHeadDim), rows_k, int32_t(p.heads_kv), int32_t(p.batch));
  Tensor mQ = make_tensor(
      make_gmem_ptr(static_cast<Element const*>(p.q)),
      make_layout(shape_q, make_stride(p.q_str.row, _1{}, p.q_str.head, p.q_str.batch)));
  Tensor mK = make_tensor(make_gmem_ptr(static_cast<Element const*>(no_keys ? p.q : p.k)),
                          make_layout(shape_k, make_stride(ks.row, _1{}, ks.head, ks.batch)));
  Tensor mVt = make_tensor(make_gmem_ptr(static_cast<Element const*>(no_keys ? p.q : p.v)),
                           make_layout(shape_vt, make_stride(_1{}, vs.row, vs.head, vs.batch)));
  const int64_t m_blocks = (p.seqlen_q + Kernel::kBlockM - 1) / Kernel::kBlockM;
  typename Kernel::Params params{
      make_tma_copy(SM90_TMA_LOAD{}, mQ, typename Kernel::SmemLayoutQ{},
                    Shape<Int<Kernel::kBlockM>, Int<kHeadDim>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, mK, take<0, 2>(typename Kernel::SmemLayoutK{}),
                    Shape<Int<Kernel::kBlockN>, Int<kHeadDim>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, mVt, take<0, 2>(typename Kernel::SmemLayoutV{}),
                    Shape<Int<kHeadDim>, Int<Kernel::kBlockN>>{}, _1{}),
      shape_q,
      shape_k,
      shape_vt,
      p,
      p.scale * core::kLog2e,
      // Right-bounded windows (causal): the last query blocks see the most keys; launch them first.
      kMasked && p.window_right >= 0,
  };
  auto kernel = sm100::sm100_fwd_kernel<Kernel>;
  cudaError_t e = set_max_dynamic_smem(kernel, Kernel::kSmemBytes, p.device_id);
  if (e != cudaSuccess)
    return cuda_call_failed(e, "sm100 forward: cudaFuncSetAttribute(max dynamic shared memory)");
  const dim3 grid(unsigned(m_blocks), unsigned(p.heads_q), unsigned(p.batch));
  kernel<<<grid, Kernel::kThreads, Kernel::kSmemBytes, stream>>>(params);
  return check_launch("sm100 forward kernel launch");
}

}  // namespace fa::cuda
