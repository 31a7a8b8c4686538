// Generator of src/cuda/sm90/fwd_partition_table.hpp (host program, no GPU): prints, from CuTe's
// own derivation, the MMA partition types (cuda/common/mma_partition.hpp) of every sm90 forward
// kernel that the instances and ablations build, one table line each.
//   nvcc -std=c++17 --expt-relaxed-constexpr -I src -I include -isystem .deps/cutlass/include \
//        -DFA_SM90_FWD_PARTITION_GEN -x cu scripts/gen_sm90_fwd_partition_table.cu -o /tmp/gen_fwd
//   /tmp/gen_fwd | sort -u   -> the lines between the table's markers
// `bash scripts/gen_partition_tables.sh` does both and rewrites the table in place (with
// --check, only compares). Regenerate after changing a forward tile (fwd_tile_config.hpp), the
// kernel's partitions or the CUTLASS version: a tile left out of the table compiles through
// CuTe's call (more compile memory, the same code).
#include "cuda/sm90/flash_fwd.cuh"

namespace fa::cuda::sm90::gen {
using namespace fa::cuda::mma_partition_gen;
using cute::Int;
using cute::Shape;

// The partitions consume_tile and the epilogue take (flash_fwd_kernel.cuh, fwd_epilogue.hpp).
template <class K>
void per_kernel() {
  using QK = typename K::TiledMmaQK;
  using PV = typename K::TiledMmaPV;
  using T = typename K::ElementC;
  using BM = Int<K::kBlockM>;
  using BN = Int<K::kBlockN>;
  using D = Int<K::kHeadDimC>;
  emit_a<QK, Smem<T, typename K::SmemLayoutQ>>();
  emit_b<QK, Smem<T, typename K::SmemLayoutKV>>();
  emit_b<PV, Smem<T, typename K::SmemLayoutVt>>();
  emit_shape_c<QK, Shape<BM, BN>>();
  emit_shape_c<PV, Shape<BM, D>>();
  emit_c<QK, Id<Shape<BM, BN>>>();
  emit_c<PV, Id<Shape<BM, D>>>();
}

// Every variant run_sm90_fwd can launch for (E, hd, masked): the default features, the d256
// instance without the overlap, the short-range tile, and (bf16 d128) the ablations.
template <class E, int kHeadDim, bool kMasked>
void per_instance() {
  using namespace fwd_feature;
  per_kernel<FwdKernel<E, kHeadDim, kMasked, kMasked, kAll>>();
  if constexpr (kHeadDim == 256)
    per_kernel<FwdKernel<E, kHeadDim, kMasked, kMasked, kAll & ~kIntraWgOverlap>>();
  if constexpr (kHeadDim == 192 || kHeadDim == 256)
    per_kernel<FwdKernel<E, kHeadDim, kMasked, kMasked, kShortTileFeatures<kHeadDim, kMasked>>>();
#if !defined(FA_NO_ABLATIONS)
  if constexpr (kHeadDim == 128 && std::is_same_v<E, cutlass::bfloat16_t>) {
#define FA_GEN_ABLATION(NAME, F) per_kernel<FwdKernel<E, kHeadDim, kMasked, kMasked, (F)>>();
    FA_SM90_FWD_ABLATIONS(FA_GEN_ABLATION)
#undef FA_GEN_ABLATION
  }
#endif
}

template <class E>
void per_type() {
  per_instance<E, 64, false>();
  per_instance<E, 64, true>();
  per_instance<E, 96, false>();
  per_instance<E, 96, true>();
  per_instance<E, 128, false>();
  per_instance<E, 128, true>();
  per_instance<E, 192, false>();
  per_instance<E, 192, true>();
  per_instance<E, 256, false>();
  per_instance<E, 256, true>();
}

// The FP8 forward (run_sm90_fwd_fp8): e4m3 inputs, O in Out.
template <class Out>
void per_fp8_out() {
  using E4M3 = cutlass::float_e4m3_t;
  per_kernel<FwdKernel<E4M3, 64, false, false, fwd_feature::kAll, Out>>();
  per_kernel<FwdKernel<E4M3, 64, true, false, fwd_feature::kAll, Out>>();
  per_kernel<FwdKernel<E4M3, 128, false, false, fwd_feature::kAll, Out>>();
  per_kernel<FwdKernel<E4M3, 128, true, false, fwd_feature::kAll, Out>>();
  per_kernel<FwdKernel<E4M3, 256, false, false, fwd_feature::kAll, Out>>();
  per_kernel<FwdKernel<E4M3, 256, true, false, fwd_feature::kAll, Out>>();
}
}  // namespace fa::cuda::sm90::gen

int main() {
  using namespace fa::cuda::sm90::gen;
  per_type<cutlass::bfloat16_t>();
  per_type<cutlass::half_t>();
  per_fp8_out<cutlass::bfloat16_t>();
  per_fp8_out<cutlass::half_t>();
  return 0;
}
