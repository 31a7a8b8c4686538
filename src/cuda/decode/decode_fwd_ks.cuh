// KV-cache decode, the key-split tile (decode_plan.hpp: why and when it is chosen): its traits,
// kernel and launch function. Kept out of decode_fwd.cuh so that each generated unit compiles one
// attention kernel (the compile budget: a unit holding both tiles took 29-32 s / 2.8-3.2 GB here,
// 41-46 s on the 16-job device build). Included only by the generated units
// src/cuda/instances/sm80_decode_*_ks.cu, which explicitly instantiate launch_decode_ks for their
// (dtype, head dim); run_sm80_decode (decode_fwd.cuh) calls it through the declaration there.
#pragma once

#include "cuda/decode/decode_fwd.cuh"

namespace fa::cuda {

namespace decode {

using namespace cute;

// ---- the key-split tile (decode_plan.hpp: why and when) -----------------------------------------
// One CTA per (split, KV head, batch) as above, kKsBlockM = 16 packed rows shared by all 4 warps.
// Warp w computes on keys [w·kWarpN, (w+1)·kWarpN) of every key block: S_w = Q·K_w^T (16 x kWarpN),
// its own online softmax, O_w += P_w·V_w (16 x d). Loads, stages and barriers are those of
// decode_fwd_kernel (all 128 threads load whole blocks). Q stays in registers for the whole loop
// (one warp's 16 x d slab: 32 registers at d128): re-reading it per block would double the
// ldmatrix traffic, since a warp's K slice is as large as Q. Epilogue: the warps' (m, l, O) merge
// through shared memory as the split combine does (max, rescale, sum; fixed warp order, so the
// result is deterministic), then O/LSE (or the split's partials) are written with 16-byte loads
// from that buffer.
template <typename Element_, int kHeadDim_>
struct KeySplitTraits {
  // Layouts, copies and the MMA atom of the 64-row tile with this tile's key block; its 64-row Q
  // layout and 4-warp MMA are not used.
  using Base = sm80::FwdTraits<Element_, kHeadDim_, 64, ks_block_n(kHeadDim_), 4>;
  using Element = Element_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBlockM = kKsBlockM;
  static constexpr int kBlockN = Base::kBlockN;
  static constexpr int kNWarps = 4;
  static constexpr int kNThreads = 128;
  static constexpr int kWarpN = kBlockN / kNWarps;
  static_assert(kWarpN % 16 == 0, "a warp's keys are whole k16 slices of P·V");
  using SmemLayoutQ = decltype(tile_to_shape(typename Base::SmemLayoutAtom{}, Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  using SmemLayoutKV = typename Base::SmemLayoutKV;
  using SmemLayoutVt = typename Base::SmemLayoutVt;
  using SmemLayoutVtPlain = typename Base::SmemLayoutVtPlain;
  static constexpr int kSmemQBytes = int(cosize_v<SmemLayoutQ>) * int(sizeof(Element));
  static constexpr int kSmemKVBytes = Base::kSmemKVBytes;
  static constexpr int kSmemBytes = kSmemQBytes + 2 * kStages * kSmemKVBytes;
  // The merge buffer (after the loop, over the K/V stages): O of every warp in fp32, then the
  // warps' row max and row sum.
  static constexpr int kMergeBytes = (kNWarps * kBlockM * kHeadDim + 2 * kNWarps * kBlockM) * 4;
  static_assert(kMergeBytes <= 2 * kStages * kSmemKVBytes);
  using TiledMma = TiledMMA<MMA_Atom<typename Base::MmaAtomArch>, Layout<Shape<_1, _1, _1>>, Tile<_16, _16, _16>>;
  using SmemCopyAtom = typename Base::SmemCopyAtom;
  using SmemCopyAtomTransposed = typename Base::SmemCopyAtomTransposed;
  using GmemCopyQKV = typename Base::GmemCopyQKV;
};

template <typename Traits>
__global__ void __launch_bounds__(Traits::kNThreads, kKsCtasPerSm)
    decode_fwd_ks_kernel(const core::AttnParams p, const DecodeArgs a) {
  using Element = typename Traits::Element;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kHeadDim = Traits::kHeadDim;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kWarpN = Traits::kWarpN;

  const DecodeCta<Element> cta = locate_cta<Element, kBlockM, kBlockN>(p, a);
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;

  extern __shared__ __align__(128) char smem_raw[];
  Tensor sQ = make_tensor(make_smem_ptr(reinterpret_cast<Element*>(smem_raw)), typename Traits::SmemLayoutQ{});
  const KvStages<Traits> kv{reinterpret_cast<Element*>(smem_raw + Traits::kSmemQBytes)};

  // Q: 16 rows x d in 16-byte vectors (the swizzle moves whole 8-element vectors, so a vector's
  // smem address is that of its first element). Padding rows are zero-filled.
  for (int idx = tid; idx < kBlockM * kHeadDim / 8; idx += Traits::kNThreads) {
    const int row = idx / (kHeadDim / 8), col = idx % (kHeadDim / 8) * 8;
    auto* dst = reinterpret_cast<cute::uint128_t*>(raw_pointer_cast(&sQ(row, col)));
    if (row < cta.rows_here) {
      const int g = cta.row0 + row;
      const Element* src = static_cast<const Element*>(p.q) +
                           p.q_str.offset(cta.batch, g / cta.group, cta.kv_head * cta.group + g % cta.group) + col;
      SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>::copy(*reinterpret_cast<const cute::uint128_t*>(src), *dst);
    } else {
      *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  cp_async_fence();

  typename Traits::GmemCopyQKV gmem_copy;
  auto gmem_thr = gmem_copy.get_thread_slice(tid);
  // K and V of key block n into a stage (load_kv_rows, shared with decode_fwd_kernel).
  auto load_kv = [&](int stage, int n) {
    Tensor coord = gmem_thr.partition_S(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
    load_kv_rows<kBlockN>(p, cta, n, gmem_thr.partition_D(kv.k(stage)), gmem_thr.partition_D(kv.v(stage)),
                          coord);
  };

  // ---- one warp's MMA partitions over its key slice -------------------------------------------
  typename Traits::TiledMma tiled_mma;
  auto thr_mma = tiled_mma.get_thread_slice(lane);
  auto sK_warp = [&](int stage) {
    return local_tile(kv.k(stage), Shape<Int<kWarpN>, Int<kHeadDim>>{}, make_coord(warp, 0));
  };
  Tensor tSrQ = sm80::make_fragment_a<Element>(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  Tensor tSrK = sm80::make_fragment_b<Element>(tiled_mma, Shape<Int<kWarpN>, Int<kHeadDim>>{});
  Tensor acc_o = sm80::make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  clear(acc_o);
  auto smem_copy_q = sm80::tiled_copy_a(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_k = sm80::tiled_copy_b(typename Traits::SmemCopyAtom{}, tiled_mma);
  auto smem_copy_v = sm80::tiled_copy_b(typename Traits::SmemCopyAtomTransposed{}, tiled_mma);
  auto smem_thr_q = smem_copy_q.get_thread_slice(lane);
  auto smem_thr_k = smem_copy_k.get_thread_slice(lane);
  auto smem_thr_v = smem_copy_v.get_thread_slice(lane);
  constexpr int kPvChunk = kHeadDim % 64 == 0 ? 64 : kHeadDim;
  constexpr int kPvChunks = kHeadDim / kPvChunk;
  Tensor tOrVt_chunk = sm80::make_fragment_b<Element>(tiled_mma, Shape<Int<kPvChunk>, Int<kWarpN>>{});
  Tensor acc_o_by_chunk = logical_divide(acc_o, Shape<Underscore, Underscore, Int<kPvChunk / 8>>{});

  Tensor cS = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kWarpN>>{}));
  Tensor cS_rc = make_tensor(cS.data(), sm80::acc_rowcol(cS.layout()));
  Tensor acc_o_rc = make_tensor(acc_o.data(), sm80::acc_rowcol(acc_o.layout()));
  constexpr int kRows = decltype(size<0>(acc_o_rc))::value;
  sm80::FragmentSoftmax<kRows> softmax;
  const sm80::ScoreScale score_scale = sm80::make_score_scale<true>(p.scale, p.softcap);

  // ---- main loop (decode_fwd_kernel's pipeline; Q has its own, first, group) -------------------
  CUTE_UNROLL
  for (int s = 0; s < kStages - 1; ++s) {
    if (cta.n_begin + s < cta.n_end) load_kv(s, cta.n_begin + s);
    cp_async_fence();
  }
  // Q's group is the oldest of kStages pending: waiting until kStages - 1 remain lands it.
  cp_async_wait<kStages - 1>();
  __syncthreads();
  {
    Tensor tSsQ = smem_thr_q.partition_S(sQ);
    copy(smem_copy_q, tSsQ, smem_thr_q.retile_D(tSrQ));
  }
  int stage = 0;
  int refill = kStages - 1;
  for (int n = cta.n_begin; n < cta.n_end; ++n) {
    if (n + kStages - 1 < cta.n_end) load_kv(refill, n + kStages - 1);
    cp_async_fence();
    cp_async_wait<kStages - 1>();
    __syncthreads();
    Tensor acc_s = sm80::make_fragment_c(tiled_mma, Shape<Int<kBlockM>, Int<kWarpN>>{});
    clear(acc_s);
    sm80::gemm_rs(acc_s, tSrQ, tSrK, smem_thr_k.partition_S(sK_warp(stage)), tiled_mma, smem_copy_k,
                  smem_thr_k);
    Tensor s_rc = make_tensor(acc_s.data(), sm80::acc_rowcol(acc_s.layout()));
    if (score_scale.capped) sm80::apply_softcap(acc_s, score_scale.tanh_arg);
    const int64_t col0 = int64_t(n) * kBlockN + warp * kWarpN;  // the warp's first key
    const bool needs_mask =
        col0 + kWarpN > cta.k_len ||
        !cta.mask.block_unmasked(cta.i_first, cta.i_last + 1, col0, col0 + kWarpN);
    if (needs_mask) mask_packed<kWarpN>(s_rc, cS_rc, cta.mask, cta.row0, cta.group, col0);
    // The exact "skip unchanged" form: over a long sequence most blocks leave every row's max
    // where it was, and then the warp skips the d/2 multiplies of its O rescale.
    softmax.template update_lazy<0>(s_rc, acc_o_rc, score_scale.log2);

    Tensor p_frag = sm80::convert_fragment<Element>(acc_s);
    Tensor tOrP = make_tensor(p_frag.data(), sm80::acc_as_operand_a(p_frag.layout()));
    Tensor sVt = make_tensor(kv.v(stage).data(), typename Traits::SmemLayoutVt{});
    CUTE_UNROLL
    for (int c = 0; c < kPvChunks; ++c) {
      Tensor acc_o_chunk = acc_o_by_chunk(_, _, make_coord(_, c));
      Tensor tOsVt_chunk =
          smem_thr_v.partition_S(local_tile(sVt, Shape<Int<kPvChunk>, Int<kWarpN>>{}, make_coord(c, warp)));
      sm80::gemm_rs(acc_o_chunk, tOrP, tOrVt_chunk, tOsVt_chunk, tiled_mma, smem_copy_v, smem_thr_v);
    }
    __syncthreads();
    refill = stage;
    stage = stage + 1 == kStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // the merge buffer overlays the stages (an empty range never passed a barrier)

  // ---- merge the 4 warps: m = max_w m_w, O = sum_w f_w O_w, l = sum_w f_w l_w,
  // f_w = exp(m_w - m) (0 for a warp whose keys were all masked: m_w = -inf) ---------------------
  float* s_o = reinterpret_cast<float*>(kv.base);                // [warp][row][d]
  float* s_m = s_o + Traits::kNWarps * kBlockM * kHeadDim;        // [warp][row]
  float* s_l = s_m + Traits::kNWarps * kBlockM;                   // [warp][row]
  Tensor cO = thr_mma.partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  Tensor cO_rc = make_tensor(cO.data(), sm80::acc_rowcol(cO.layout()));
  float l_own[kRows];
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    l_own[r] = sm80::quad_sum(softmax.row_sum[r]);
    if (get<1>(cO_rc(0, 0)) == 0) {  // lane 0 of the row's quad
      const int row = get<0>(cO_rc(r, 0));
      s_m[warp * kBlockM + row] = softmax.row_max[r];
      s_l[warp * kBlockM + row] = l_own[r];
    }
  }
  __syncthreads();
  auto merged_max = [&](int row) {
    float m = s_m[row];
    CUTE_UNROLL
    for (int w = 1; w < Traits::kNWarps; ++w) m = fmaxf(m, s_m[w * kBlockM + row]);
    return m;
  };
  // In exp2 units; -inf (no warp saw a key) -> 0 so that f_w = exp2(-inf - 0) = 0, not NaN.
  auto scaled = [&](float m) { return m == -INFINITY ? 0.f : core::log2_ref(m, score_scale.log2); };
  CUTE_UNROLL
  for (int r = 0; r < kRows; ++r) {
    const int row = get<0>(cO_rc(r, 0));
    // Explicit 0 for a warp without a visible key: -inf · log2 is NaN if the scale is 0.
    const float f = softmax.row_max[r] == -INFINITY
                        ? 0.f
                        : exp2f(core::ref_delta(scaled(softmax.row_max[r]), scaled(merged_max(row))));
    float* o_row = s_o + (warp * kBlockM + row) * kHeadDim;
    CUTE_UNROLL
    for (int c = 0; c < size<1>(acc_o_rc); c += 2) {  // columns c, c+1 are adjacent
      const int col = get<1>(cO_rc(r, c));
      *reinterpret_cast<float2*>(o_row + col) = make_float2(acc_o_rc(r, c) * f, acc_o_rc(r, c + 1) * f);
    }
  }
  __syncthreads();
  const bool direct = a.num_splits == 1;
  constexpr int kVecsPerRow = kHeadDim / 4;
  for (int idx = tid; idx < kBlockM * kVecsPerRow; idx += Traits::kNThreads) {
    const int row = idx / kVecsPerRow, col = idx % kVecsPerRow * 4;
    if (row >= cta.rows_here) continue;
    const float m = merged_max(row), m_scaled = scaled(m);
    float l = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    CUTE_UNROLL
    for (int w = 0; w < Traits::kNWarps; ++w) {
      const float m_w = s_m[w * kBlockM + row];
      if (m_w != -INFINITY) l += s_l[w * kBlockM + row] * exp2f(core::ref_delta(scaled(m_w), m_scaled));
      const float4 v = *reinterpret_cast<const float4*>(s_o + (w * kBlockM + row) * kHeadDim + col);
      o.x += v.x, o.y += v.y, o.z += v.z, o.w += v.w;
    }
    // finalize()'s rule: an empty row (l = 0) gets O = 0 and lse = -inf.
    const bool empty = !(l > 0.f);
    const float inv_l = empty ? 0.f : 1.f / l;
    const float lse = empty ? -INFINITY : m * score_scale.natural + logf(l);
    const int g = cta.row0 + row;
    const int64_t i = g / cta.group;
    const int h = cta.kv_head * cta.group + g % cta.group;
    if (direct) {
      Element* o_row = static_cast<Element*>(p.o) + p.o_str.offset(cta.batch, i, h) + col;
      cutlass::Array<Element, 2> lo, hi;
      lo[0] = Element(o.x * inv_l);
      lo[1] = Element(o.y * inv_l);
      hi[0] = Element(o.z * inv_l);
      hi[1] = Element(o.w * inv_l);
      *reinterpret_cast<cutlass::Array<Element, 2>*>(o_row) = lo;
      *reinterpret_cast<cutlass::Array<Element, 2>*>(o_row + 2) = hi;
      if (p.lse != nullptr && col == 0) p.lse[p.lse_offset(cta.batch, h, i)] = lse;
    } else {
      const int64_t prow = int64_t(cta.split) * a.rows_total + partial_row(p, cta.batch, h, i);
      *reinterpret_cast<float4*>(a.ws_o + prow * kHeadDim + col) =
          make_float4(o.x * inv_l, o.y * inv_l, o.z * inv_l, o.w * inv_l);
      if (col == 0) a.ws_lse[prow] = lse;
    }
  }
}

template <typename Element, int kHeadDim>
core::Status launch_decode_ks(const core::AttnParams& p, const DecodeArgs& a, dim3 grid, cudaStream_t stream) {
  // -DFA_DECODE_KEY_SPLIT=0 leaves the kernel out of the generated units too (run_sm80_decode
  // never calls this then).
  if constexpr (has_key_split_tile(kHeadDim)) {
    using KsTraits = KeySplitTraits<Element, kHeadDim>;
    auto kernel = &decode_fwd_ks_kernel<KsTraits>;
    constexpr int kSmem = KsTraits::kSmemBytes;
    if (kSmem > 48 * 1024) {
      cudaError_t e = set_max_dynamic_smem(kernel, kSmem, p.device_id);
      if (e != cudaSuccess) return cuda_call_failed(e, "kvcache decode: cudaFuncSetAttribute(max dynamic shared memory)");
    }
    kernel<<<grid, KsTraits::kNThreads, kSmem, stream>>>(p, a);
    return core::Status::success();
  } else {
    return core::unsupported("CUDA KV-cache decode: key-split tile not built (FA_DECODE_KEY_SPLIT=0 or d > 128)");
  }
}

}  // namespace decode

}  // namespace fa::cuda
