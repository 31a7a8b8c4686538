// FlashAttention-3 forward for Hopper (sm90a): TMA + WGMMA + warp specialisation.
//
// One CTA computes one kBlockM × kHeadDim output tile of one (batch, query head). Roles:
//   WarpRole::Producer  (warpgroup 0, one elected thread): TMA-loads Q once, then K_j and V_j for
//                       every key block j (last block first) into a kStages ring (PipelineTma).
//   WarpRole::Consumer  (warpgroups 1..2, 64 query rows each): S = Q·Kᵀ with both operands in
//                       shared memory (wgmma SS), masking and online softmax in registers,
//                       O += P·V with P from registers (wgmma RS, V read through an MN-major view),
//                       then the epilogue (O / l → bf16/fp16, predicated stores; LSE).
// Synchronisation: mbarriers only between roles — Q has its own transaction barrier; each ring slot
// has full (TMA transaction) and empty (256 consumer arrivals) barriers. `setmaxnreg` hands the
// producer's registers to the consumers. Optional (template switches, see FwdFeatures):
//   kIntraWgOverlap: S_{j+1} = Q·K_{j+1}ᵀ is issued before O += P_j·V_j and the softmax of j+1
//                    runs while that PV wgmma is in flight (FA3 §3.2).
//   kPingPong:       the two consumer warpgroups take turns issuing their GEMMs through named
//                    barriers, so one warpgroup's softmax overlaps the other's GEMMs (FA3 §3.1).
// Tails: TMA zero-fills rows beyond the tensor; rows of another varlen sequence that TMA does load
// are masked as keys (col >= k_len) and never stored as queries.
#pragma once

#ifndef CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED  // wgmma N = 80, 112, 176 for the tile table
#endif

#include <cuda_runtime.h>

#include <cute/tensor.hpp>  // first: the atom headers below assume it
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_atom.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_conversion.h>
#include <cutlass/numeric_types.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/mask.hpp"
#include "core/params.hpp"
#include "core/softmax.hpp"
#include "core/status.hpp"
#include "cuda/common/sm90_pipeline.hpp"
#include "cuda/dispatch.hpp"
#include "cuda/sm90/fwd_softmax.hpp"
#include "cuda/sm90/fwd_tile_config.hpp"

namespace fa::cuda::sm90 {

enum class WarpRole { Producer, Consumer };

// One wgmma batch: C (+)= A·B over the K mode, committed as one group. kWait >= 0 waits until at
// most kWait groups are pending; -1 leaves it in flight (the caller waits later).
template <bool kZeroInit, int kWait, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void wgmma_gemm(TiledMma& mma, TA const& a, TB const& b, TC& c) {
  using namespace cute;
  constexpr bool kRegA = !is_base_of<GMMA::DescriptorIterator, typename TiledMma::FrgTypeA>::value;
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
#pragma unroll
  for (int k = 0; k < size<2>(a); ++k) {
    cute::gemm(mma, a(_, _, k), b(_, _, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  if constexpr (kWait >= 0) warpgroup_wait<kWait>();
  warpgroup_fence_operand(c);
  if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
}

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap, bool kIntraWgOverlap = true,
          bool kPingPong = true>
struct FwdKernel {
  using Tile = FwdTile<kHeadDim>;
  static constexpr int kHeadDimC = kHeadDim;
  static constexpr int kBlockM = Tile::kBlockM;
  static constexpr int kBlockN = Tile::kBlockN;
  static constexpr int kStages = Tile::kStages;
  static constexpr int kConsumerWGs = kBlockM / 64;  // one m64 wgmma row-block per warpgroup
  static constexpr int kConsumerThreads = kConsumerWGs * 128;
  static constexpr int kThreads = kConsumerThreads + 128;  // + the producer warpgroup
  static_assert(kConsumerWGs == 2, "register split and ping-pong assume 2 consumer warpgroups");
  // setmaxnreg: 128 × 24 + 256 × 240 = 64512 ≤ 65536 registers per SM.
  static constexpr uint32_t kProducerRegs = 24;
  static constexpr uint32_t kConsumerRegs = 240;

  using TileShapeQK = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::Int<kHeadDim>>;
  using TileShapePV = cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>, cute::Int<kBlockN>>;
  using AtomLayout = cute::Layout<cute::Shape<cute::Int<kConsumerWGs>, cute::_1, cute::_1>>;
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<Element, Element, float, TileShapeQK>(), AtomLayout{}));
  // P·V: A = P (registers, K-major by construction), B = V whose K mode (the key index) is not
  // the contiguous one in shared memory: MN-major.
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<Element, Element, float, TileShapePV, cute::GMMA::Major::K,
                                 cute::GMMA::Major::MN>(),
      AtomLayout{}));

  // K-major swizzle atom: the widest swizzle whose row (64/32/16 elements) divides the head dim.
  using SmemAtom = std::conditional_t<
      kHeadDim % 64 == 0, cute::GMMA::Layout_K_SW128_Atom<Element>,
      std::conditional_t<kHeadDim % 32 == 0, cute::GMMA::Layout_K_SW64_Atom<Element>,
                         cute::GMMA::Layout_K_SW32_Atom<Element>>>;
  using SmemLayoutQ =
      decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}));
  using SmemLayoutKV = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>, cute::Int<kStages>>{}));
  // V seen as (head dim, key, stage): the B operand of P·V. Same bytes, transposed view.
  using SmemLayoutVt = decltype(cute::composition(
      SmemLayoutKV{},
      cute::make_ordered_layout(cute::Shape<cute::Int<kHeadDim>, cute::Int<kBlockN>, cute::Int<kStages>>{},
                                cute::Step<cute::_2, cute::_1, cute::_3>{})));

  // Global tensors as TMA sees them: (row, dim, head, batch); varlen uses batch 1 and global rows.
  using GmemLayout = cute::Layout<cute::Shape<int32_t, int32_t, int32_t, int32_t>,
                                  cute::Stride<int64_t, cute::_1, int64_t, int64_t>>;
  using TmaQ = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      SmemLayoutQ{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDim>>{}, cute::_1{}));
  using TmaKV = decltype(cute::make_tma_copy(
      cute::SM90_TMA_LOAD{}, cute::make_tensor(cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}),
      cute::take<0, 2>(SmemLayoutKV{}), cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDim>>{}, cute::_1{}));

  static constexpr uint32_t kBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesKV = kBlockN * kHeadDim * sizeof(Element);

  struct SharedStorage {
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>, 1024> q;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> v;
    alignas(8) uint64_t bar_q;
    PipelineTma<kStages> pipe_k;
    PipelineTma<kStages> pipe_v;
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  static_assert(kSmemBytes <= 227 * 1024, "tile does not fit in shared memory");

  struct Params {
    TmaQ tma_q;
    TmaKV tma_k;
    TmaKV tma_v;
    cute::Shape<int32_t, int32_t, int32_t, int32_t> shape_q, shape_k;
    core::AttnParams attn;
    float score_scale_log2;  // multiplies raw scores inside exp2
    float softcap_prescale;  // scale / softcap (softcap only)
  };

  // ---- the kernel body --------------------------------------------------------------------
  __device__ static void run(Params const& params, char* smem_raw) {
    using namespace cute;
    SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem_raw);
    const core::AttnParams& p = params.attn;
    const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x) / 32, 0);  // warp-uniform
    const WarpRole role = warp < 4 ? WarpRole::Producer : WarpRole::Consumer;

    if (threadIdx.x == 0) {
      cutlass::arch::ClusterBarrier::init(&ss.bar_q, 1);
      ss.pipe_k.init(kConsumerThreads);
      ss.pipe_v.init(kConsumerThreads);
      cutlass::arch::fence_barrier_init();
    }
    if (warp == 0 && elect_one_sync()) {
      prefetch_tma_descriptor(params.tma_q.get_tma_descriptor());
      prefetch_tma_descriptor(params.tma_k.get_tma_descriptor());
      prefetch_tma_descriptor(params.tma_v.get_tma_descriptor());
    }
    __syncthreads();

    // Causal/local tiles further down see more keys: launch them first (a cheap LPT order for the
    // plain grid).
    const int m_block = kMasked ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x);
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    const core::SeqInfo seq = core::seq_info(p, batch);
    const int m0 = m_block * kBlockM;
    if (m0 >= seq.q_len) return;  // varlen: this sequence is shorter than the grid's max

    const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1,
                          kMasked ? p.window_right : -1);
    int64_t key_first = 0, key_last = 0;
    mask.key_range(m0, cute::min(int64_t(m0 + kBlockM), seq.q_len), &key_first, &key_last);
    const int n_block_min = int(key_first / kBlockN);
    const int n_block_max = key_last > key_first ? int((key_last + kBlockN - 1) / kBlockN) : n_block_min;
    const int n_blocks = n_block_max - n_block_min;

    if (role == WarpRole::Producer) {
      cutlass::arch::warpgroup_reg_dealloc<kProducerRegs>();
      if (warp == 0 && n_blocks > 0 && cute::elect_one_sync())
        produce(params, ss, seq, batch, head, m_block, n_block_max, n_blocks);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
      consume(params, ss, seq, mask, batch, head, m0, n_block_max, n_blocks);
    }
  }

  // ---- producer: TMA loads ----------------------------------------------------------------
  __device__ static void produce(Params const& params, SharedStorage& ss, core::SeqInfo const& seq,
                                 int batch, int head, int m_block, int n_block_max, int n_blocks) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int tma_batch = p.varlen ? 0 : batch;
    const int head_kv = head / p.group_size();

    Tensor mQ = params.tma_q.get_tma_tensor(params.shape_q)(_, _, head, tma_batch);
    Tensor gQ = local_tile(domain_offset(make_coord(int32_t(seq.q_start), _0{}), mQ),
                           Shape<Int<kBlockM>, Int<kHeadDim>>{}, make_coord(m_block, _0{}));
    Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), SmemLayoutQ{});
    auto [tQgQ, tQsQ] = tma_partition(params.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                      group_modes<0, 2>(gQ));

    Tensor mK = params.tma_k.get_tma_tensor(params.shape_k)(_, _, head_kv, tma_batch);
    Tensor mV = params.tma_v.get_tma_tensor(params.shape_k)(_, _, head_kv, tma_batch);
    auto kv_tile = Shape<Int<kBlockN>, Int<kHeadDim>>{};
    Tensor gK = local_tile(domain_offset(make_coord(int32_t(seq.k_start), _0{}), mK), kv_tile,
                           make_coord(_, _0{}));  // (N, D, n_block)
    Tensor gV = local_tile(domain_offset(make_coord(int32_t(seq.k_start), _0{}), mV), kv_tile,
                           make_coord(_, _0{}));
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), SmemLayoutKV{});
    Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), SmemLayoutKV{});
    auto [tKgK, tKsK] = tma_partition(params.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK),
                                      group_modes<0, 2>(gK));
    auto [tVgV, tVsV] = tma_partition(params.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV),
                                      group_modes<0, 2>(gV));

    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_q, kBytesQ);
    copy(params.tma_q.with(ss.bar_q), tQgQ, tQsQ);
    // Key blocks last to first: the consumers meet the masked (diagonal / tail) blocks first.
    for (int it = 0; it < n_blocks; ++it) {
      const int n_block = n_block_max - 1 - it;
      const int stage = PipelineTma<kStages>::stage(it);
      copy(params.tma_k.with(ss.pipe_k.producer_acquire(it, kBytesKV)), tKgK(_, n_block), tKsK(_, stage));
      copy(params.tma_v.with(ss.pipe_v.producer_acquire(it, kBytesKV)), tVgV(_, n_block), tVsV(_, stage));
    }
  }

  // ---- consumers: GEMMs, softmax, epilogue --------------------------------------------------
  // Masks one block of scores (rowcol view) in place: keys outside [lo, hi) of each row → -inf.
  template <class TensorS, class TensorC>
  __device__ static void apply_mask(TensorS& s, TensorC const& coord, core::Mask const& mask,
                                    int m0, int n0) {
    using namespace cute;
#pragma unroll
    for (int r = 0; r < size<0>(s); ++r) {
      const int64_t row = m0 + get<0>(coord(r, 0));
      const int64_t diag = mask.diag(row);
      int64_t hi = mask.k_len, lo = 0;
      if (kMasked && mask.right >= 0) hi = cute::min(hi, diag + mask.right + 1);
      if (kMasked && mask.left >= 0) lo = cute::max(lo, diag - mask.left);
      // Clamp into [0, k_len] so the per-element test is 32-bit.
      const int hi32 = int(cute::max(hi, int64_t(0))) - n0;
      const int lo32 = int(cute::min(lo, mask.k_len)) - n0;
#pragma unroll
      for (int c = 0; c < size<1>(s); ++c) {
        const int col = get<1>(coord(0, c));
        if (col >= hi32 || col < lo32) s(r, c) = -INFINITY;
      }
    }
  }

  __device__ static void consume(Params const& params, SharedStorage& ss, core::SeqInfo const& seq,
                                 core::Mask const& mask, int batch, int head, int m0,
                                 int n_block_max, int n_blocks) {
    using namespace cute;
    const core::AttnParams& p = params.attn;
    const int ctid = int(threadIdx.x) - 128;  // thread index among the consumers
    const int consumer_wg = ctid / 128;       // 0 or 1

    TiledMmaQK mma_qk;
    TiledMmaPV mma_pv;
    auto thr_qk = mma_qk.get_thread_slice(ctid);
    auto thr_pv = mma_pv.get_thread_slice(ctid);
    Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), SmemLayoutKV{});
    Tensor sVt = make_tensor(make_smem_ptr(ss.v.data()), SmemLayoutVt{});
    Tensor tSrQ = thr_qk.partition_fragment_A(sQ);   // smem descriptors
    Tensor tSrK = thr_qk.partition_fragment_B(sK);   // (MMA, MMA_N, MMA_K, stage)
    Tensor tOrV = thr_pv.partition_fragment_B(sVt);  // (MMA, MMA_N, MMA_K, stage)
    Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});
    Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<kHeadDim>>{});
    Tensor rP = make_tensor<Element>(tSrS.layout());
    Tensor tOrP = make_tensor(rP.data(), acc_as_a_operand_layout(tSrS.layout()));

    Tensor s_rc = make_tensor(tSrS.data(), acc_rowcol_layout(tSrS.layout()));
    Tensor o_rc = make_tensor(tOrO.data(), acc_rowcol_layout(tOrO.layout()));
    // Tile coordinates (row, col) of each accumulator element, for masking and stores.
    Tensor cS = thr_qk.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kBlockN>>{}));
    Tensor cS_rc = make_tensor(cS.data(), acc_rowcol_layout(cS.layout()));
    constexpr int kRows = decltype(size<0>(s_rc))::value;

    const float scale_log2 = params.score_scale_log2;
    OnlineSoftmax<kRows> softmax(scale_log2);
    float rescale_o[kRows];
    clear(tOrO);

    // Per-block score post-processing: softcap, then the mask where the block needs one.
    const int64_t m_end = cute::min(int64_t(m0 + kBlockM), seq.q_len);
    auto transform_and_mask = [&](int n_block) {
      if constexpr (kSoftcap) {
        // softcap · tanh(qk · scale / softcap); the softcap factor itself is in scale_log2. A
        // kSoftcap instance also serves softcap = 0 calls (prescale 0): the branch is uniform.
        if (params.softcap_prescale > 0.f) {
#pragma unroll
          for (int i = 0; i < size(tSrS); ++i) tSrS(i) = softcap_tanh(tSrS(i) * params.softcap_prescale);
        }
      }
      const int n0 = n_block * kBlockN;
      if (!mask.block_unmasked(m0, m_end, n0, n0 + kBlockN)) apply_mask(s_rc, cS_rc, mask, m0, n0);
    };
    auto convert_p = [&]() {
      constexpr int kN = decltype(size(tSrS))::value;
      cutlass::NumericArrayConverter<Element, float, kN> conv;
      *reinterpret_cast<cutlass::Array<Element, kN>*>(rP.data()) =
          conv(*reinterpret_cast<cutlass::Array<float, kN> const*>(tSrS.data()));
    };
    auto rescale = [&]() {
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int c = 0; c < size<1>(o_rc); ++c) o_rc(r, c) *= rescale_o[r];
    };
    // Ping-pong: warpgroup w waits for its turn before issuing GEMMs and hands the turn to the
    // other warpgroup right after issuing them.
    auto scheduler_wait = [&]() {
      if constexpr (kPingPong)
        cutlass::arch::NamedBarrier::sync(kConsumerThreads,
                                          uint32_t(FwdNamedBarrier::WarpSchedulerWG1) + consumer_wg);
    };
    auto scheduler_pass = [&]() {
      if constexpr (kPingPong)
        cutlass::arch::NamedBarrier::arrive(kConsumerThreads,
                                            uint32_t(FwdNamedBarrier::WarpSchedulerWG1) + (1 - consumer_wg));
    };

    if (n_blocks > 0) {
      auto& pipe_k = ss.pipe_k;
      auto& pipe_v = ss.pipe_v;
      // Warpgroup 0 goes first: warpgroup 1 opens its barrier.
      if (kPingPong && consumer_wg == 1)
        cutlass::arch::NamedBarrier::arrive(kConsumerThreads, uint32_t(FwdNamedBarrier::WarpSchedulerWG1));
      cutlass::arch::ClusterBarrier::wait(&ss.bar_q, 0);

      if constexpr (kIntraWgOverlap) {
        // Block 0: S = Q·K₀ᵀ, softmax → P₀.
        pipe_k.consumer_wait(0);
        scheduler_wait();
        wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, 0), tSrS);
        scheduler_pass();
        warpgroup_wait<0>();
        pipe_k.consumer_release(0);
        transform_and_mask(n_block_max - 1);
        softmax.update(s_rc, rescale_o);
        convert_p();
        for (int it = 1; it < n_blocks; ++it) {
          const int n_block = n_block_max - 1 - it;
          const int sk = PipelineTma<kStages>::stage(it);
          const int sv = PipelineTma<kStages>::stage(it - 1);
          pipe_k.consumer_wait(it);
          scheduler_wait();
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, sk), tSrS);  // S_it in flight
          pipe_v.consumer_wait(it - 1);
          wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, sv), tOrO);  // O += P_{it-1} V_{it-1}
          scheduler_pass();
          warpgroup_wait<1>();  // S_it done (groups retire in order)
          pipe_k.consumer_release(it);
          transform_and_mask(n_block);
          softmax.update(s_rc, rescale_o);  // P_it in tSrS; O's factor kept for after PV
          warpgroup_wait<0>();  // PV done: tOrO final for this step, tOrP free
          pipe_v.consumer_release(it - 1);
          rescale();
          convert_p();
        }
        const int last = n_blocks - 1;
        pipe_v.consumer_wait(last);
        scheduler_wait();
        wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, PipelineTma<kStages>::stage(last)), tOrO);
        scheduler_pass();
        warpgroup_wait<0>();
        pipe_v.consumer_release(last);
      } else {
        for (int it = 0; it < n_blocks; ++it) {
          const int n_block = n_block_max - 1 - it;
          const int stage = PipelineTma<kStages>::stage(it);
          pipe_k.consumer_wait(it);
          scheduler_wait();
          wgmma_gemm<true, -1>(mma_qk, tSrQ, tSrK(_, _, _, stage), tSrS);
          scheduler_pass();
          warpgroup_wait<0>();
          pipe_k.consumer_release(it);
          transform_and_mask(n_block);
          softmax.update(s_rc, rescale_o);
          rescale();
          convert_p();
          pipe_v.consumer_wait(it);
          scheduler_wait();
          wgmma_gemm<false, -1>(mma_pv, tOrP, tOrV(_, _, _, stage), tOrO);
          scheduler_pass();
          warpgroup_wait<0>();
          pipe_v.consumer_release(it);
        }
      }
      // The last pass left warpgroup 0's barrier opened by warpgroup 1 (or vice versa) without a
      // matching wait; consume it so no arrival is left pending when the CTA exits.
      if (kPingPong && consumer_wg == 0) scheduler_wait();
    }

    // ---- epilogue: O / l, LSE, predicated stores ------------------------------------------
    float inv_sum[kRows], lse[kRows];
    softmax.finalize(inv_sum, lse);
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int c = 0; c < size<1>(o_rc); ++c) o_rc(r, c) *= inv_sum[r];

    Tensor cO = thr_pv.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
    Element* o_base = static_cast<Element*>(p.o);
    // Each thread holds column pairs (2j, 2j+1): one 32-bit store per pair.
    static_assert(decltype(size<0, 0>(tOrO))::value == 2);
#pragma unroll
    for (int i = 0; i < size(tOrO); i += 2) {
      const int row = get<0>(cO(i));
      const int col = get<1>(cO(i));
      if (m0 + row < seq.q_len) {
        const int64_t off = p.o_str.offset(batch, seq.q_start + m0 + row, head) + col;
        cutlass::Array<float, 2> pair;
        pair[0] = tOrO(i);
        pair[1] = tOrO(i + 1);
        cutlass::NumericArrayConverter<Element, float, 2> conv;
        *reinterpret_cast<cutlass::Array<Element, 2>*>(o_base + off) = conv(pair);
      }
    }
    if (p.lse != nullptr) {
      Tensor cO_rc = make_tensor(cO.data(), acc_rowcol_layout(cO.layout()));
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int row = get<0>(cO_rc(r, 0));
        if (get<1>(cO_rc(r, 0)) == 0 && m0 + row < seq.q_len)
          p.lse[p.lse_offset(batch, head, seq.q_start + m0 + row)] = lse[r];
      }
    }
  }
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1)
    sm90_fwd_kernel(__grid_constant__ const typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) char smem_raw[];
  Kernel::run(params, smem_raw);
#endif
}

// ---- host side --------------------------------------------------------------------------
// TMA needs 16-byte aligned base addresses and 16-byte multiple strides.
inline bool tma_ok(const void* ptr, const core::Strides& s, size_t elem) {
  auto a16 = [](int64_t bytes) { return bytes % 16 == 0; };
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && a16(s.row * int64_t(elem)) &&
         a16(s.head * int64_t(elem)) && a16(s.batch * int64_t(elem));
}
// The epilogue stores O as 32-bit column pairs.
inline bool pair_store_ok(const void* ptr, const core::Strides& s) {
  return reinterpret_cast<uintptr_t>(ptr) % 4 == 0 && s.row % 2 == 0 && s.head % 2 == 0 &&
         s.batch % 2 == 0;
}

template <class Kernel, class Element>
core::Status launch_fwd(const core::AttnParams& p, cudaStream_t stream) {
  using namespace cute;
  using Params = typename Kernel::Params;
  if (!tma_ok(p.q, p.q_str, sizeof(Element)) || !tma_ok(p.k, p.k_str, sizeof(Element)) ||
      !tma_ok(p.v, p.v_str, sizeof(Element)) || !pair_store_ok(p.o, p.o_str))
    return core::unsupported(
        "the sm90 forward (TMA) needs 16-byte aligned q/k/v and row/head/batch strides that are "
        "multiples of 8 elements (and even O strides); use algo FA2 for this layout");

  const int batches = p.varlen ? 1 : p.batch;
  const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;
  const int64_t rows_k = p.varlen ? p.total_k : p.seqlen_k;
  // Size-1 batch mode (varlen): its stride is never used; give TMA a harmless valid value.
  auto batch_stride = [&](const core::Strides& s, int64_t rows) {
    return p.varlen ? s.row * (rows > 0 ? rows : 1) : s.batch;
  };
  auto shape_q = make_shape(int32_t(rows_q), int32_t(p.head_dim), int32_t(p.heads_q), int32_t(batches));
  Tensor mQ = make_tensor(make_gmem_ptr(static_cast<Element const*>(p.q)),
                          make_layout(shape_q, make_stride(p.q_str.row, _1{}, p.q_str.head,
                                                           batch_stride(p.q_str, rows_q))));
  // No keys anywhere (every tile is empty and never loads K/V): point the K/V maps at one valid
  // row of Q so the descriptors can still be built.
  const bool no_keys = rows_k == 0;
  auto shape_k = make_shape(int32_t(no_keys ? 1 : rows_k), int32_t(p.head_dim), int32_t(p.heads_kv),
                            int32_t(batches));
  auto kv_tensor = [&](const void* ptr, const core::Strides& s) {
    const core::Strides& st = no_keys ? p.q_str : s;
    return make_tensor(make_gmem_ptr(static_cast<Element const*>(no_keys ? p.q : ptr)),
                       make_layout(shape_k, make_stride(st.row, _1{}, st.head,
                                                        batch_stride(st, no_keys ? 1 : rows_k))));
  };
  Params params{
      make_tma_copy(SM90_TMA_LOAD{}, mQ, typename Kernel::SmemLayoutQ{},
                    Shape<Int<Kernel::kBlockM>, Int<Kernel::kHeadDimC>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, kv_tensor(p.k, p.k_str), take<0, 2>(typename Kernel::SmemLayoutKV{}),
                    Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, kv_tensor(p.v, p.v_str), take<0, 2>(typename Kernel::SmemLayoutKV{}),
                    Shape<Int<Kernel::kBlockN>, Int<Kernel::kHeadDimC>>{}, _1{}),
      shape_q,
      shape_k,
      p,
      (p.softcap > 0.f ? p.softcap : p.scale) * core::kLog2e,
      p.softcap > 0.f ? p.scale / p.softcap : 0.f,
  };

  auto kernel = sm90_fwd_kernel<Kernel>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       Kernel::kSmemBytes);
  if (e != cudaSuccess) return check_launch("sm90 forward: cudaFuncSetAttribute");
  const int64_t m_blocks = (p.seqlen_q + Kernel::kBlockM - 1) / Kernel::kBlockM;
  if (p.batch > 65535) return core::unsupported("the sm90 forward supports at most 65535 sequences");
  dim3 grid(unsigned(m_blocks), unsigned(p.heads_q), unsigned(p.batch));
  kernel<<<grid, Kernel::kThreads, Kernel::kSmemBytes, stream>>>(params);
  return check_launch("sm90 forward kernel launch");
}

// One kernel variant, launched. The default instances (src/cuda/instances/sm90_fwd_*.cu) use
// overlap + ping-pong; the ablation variants are explicitly instantiated for bf16 d128 only, in
// src/cuda/sm90/fwd_ablation_*.cu, so the instance files stay at one kernel each (compile budget).
template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap, bool kIntraWgOverlap, bool kPingPong>
core::Status launch_fwd_variant(const core::AttnParams& p, cudaStream_t stream) {
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap, kIntraWgOverlap, kPingPong>, Element>(
      p, stream);
}
#define FA_SM90_FWD_ABLATION_VARIANTS(X)                                 \
  X(cutlass::bfloat16_t, 128, false, false, true, false) /* no_pingpong */ \
  X(cutlass::bfloat16_t, 128, true, true, true, false)                   \
  X(cutlass::bfloat16_t, 128, false, false, false, true) /* no_overlap */ \
  X(cutlass::bfloat16_t, 128, true, true, false, true)                   \
  X(cutlass::bfloat16_t, 128, false, false, false, false) /* plain */    \
  X(cutlass::bfloat16_t, 128, true, true, false, false)
#define FA_SM90_FWD_EXTERN(E, D, M, S, O, P) \
  extern template core::Status launch_fwd_variant<E, D, M, S, O, P>(const core::AttnParams&, cudaStream_t);
FA_SM90_FWD_ABLATION_VARIANTS(FA_SM90_FWD_EXTERN)
#undef FA_SM90_FWD_EXTERN

// Ablations: FA_SM90_FWD_ABLATE = "no_pingpong" | "no_overlap" | "plain" (neither), read per call;
// honoured for bf16 d128 (other instances ignore it).
inline int sm90_fwd_ablation() {
  const char* v = std::getenv("FA_SM90_FWD_ABLATE");
  if (!v || !*v) return 0;
  const std::string s(v);
  if (s == "no_pingpong") return 1;
  if (s == "no_overlap") return 2;
  if (s == "plain") return 3;
  return 0;
}

}  // namespace fa::cuda::sm90

namespace fa::cuda {

template <typename Element, int kHeadDim, bool kMasked, bool kSoftcap>
core::Status run_sm90_fwd(const core::AttnParams& p, cudaStream_t stream, void* /*ws*/) {
  using namespace sm90;
  if (p.seqlen_q == 0) return core::Status::success();
  if constexpr (kHeadDim == 128 && std::is_same_v<Element, cutlass::bfloat16_t> && kMasked == kSoftcap) {
    switch (sm90_fwd_ablation()) {
      case 1: return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, true, false>(p, stream);
      case 2: return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, false, true>(p, stream);
      case 3: return launch_fwd_variant<Element, kHeadDim, kMasked, kSoftcap, false, false>(p, stream);
      default: break;
    }
  }
  return launch_fwd<FwdKernel<Element, kHeadDim, kMasked, kSoftcap>, Element>(p, stream);
}

}  // namespace fa::cuda
