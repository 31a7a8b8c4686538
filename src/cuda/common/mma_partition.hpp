// Precomputed CuTe MMA partition types (compile memory only), shared by the sm90 forward
// (sm90/fwd_partition_table.hpp) and backward (sm90/flash_bwd_kernel.cuh) tables.
//
// ThrMMA::partition_fragment_A/B(s) is make_fragment_A/B of the smem tensor's thrfrg_A/B layout
// sliced at the thread, partition_C likewise with thrfrg_C, and partition_fragment_C a register
// tensor of partition_shape_C's shape. Those layouts and shapes are pure functions of the
// TiledMMA and the tensor's layout (or shape) types, and CuTe's algebra for them runs to tens of
// thousands of template instantiations per unit in cicc's front end, whose time and memory grow
// with instantiations (house limit 30 s and 2 GB per unit). A table holds the types as printed by
// its generator from CuTe's own derivation; mma_frag_a/b, mma_part_c and mma_frag_c then run
// exactly CuTe's lines with the tabled type (the slice at the thread and make_fragment_A/B stay
// CuTe's), so the generated code is the same. Static layouts only; anything not tabled takes
// CuTe's call (costs memory, never correctness).
#pragma once

#include <type_traits>

#include <cute/atom/mma_atom.hpp>
#include <cute/tensor.hpp>

#include "cuda/common/type_table.hpp"

namespace fa::cuda {

template <class Mma, class Layout>
struct MmaThrfrgA : TableMiss {};
template <class Mma, class Layout>
struct MmaThrfrgB : TableMiss {};
template <class Mma, class Layout>
struct MmaThrfrgC : TableMiss {};
template <class Mma, class Shape>
struct MmaShapeC : TableMiss {};
template <class X>
using MmaKnown = TableHit<X>;
template <class L>
using PlainT = std::remove_cv_t<std::remove_reference_t<L>>;

template <class Mma, class V, class ATensor>
CUTE_DEVICE auto mma_frag_a(cute::ThrMMA<Mma, V> const& thr, ATensor&& atensor) {
  using namespace cute;
  using E = MmaThrfrgA<Mma, PlainT<decltype(atensor.layout())>>;
  if constexpr (E::kKnown) {
    auto thr_tensor = make_tensor(static_cast<ATensor&&>(atensor).data(), typename E::type{});
    auto thr_vmk =
        make_coord(get<0>(thr.thr_vmnk_), make_coord(get<1>(thr.thr_vmnk_), get<3>(thr.thr_vmnk_)));
    return Mma::make_fragment_A(
        thr_tensor(thr_vmk, make_coord(_, repeat<rank<1, 1>(thr_tensor)>(_))));
  } else {
    return thr.partition_fragment_A(static_cast<ATensor&&>(atensor));
  }
}
template <class Mma, class V, class BTensor>
CUTE_DEVICE auto mma_frag_b(cute::ThrMMA<Mma, V> const& thr, BTensor&& btensor) {
  using namespace cute;
  using E = MmaThrfrgB<Mma, PlainT<decltype(btensor.layout())>>;
  if constexpr (E::kKnown) {
    auto thr_tensor = make_tensor(static_cast<BTensor&&>(btensor).data(), typename E::type{});
    auto thr_vnk =
        make_coord(get<0>(thr.thr_vmnk_), make_coord(get<2>(thr.thr_vmnk_), get<3>(thr.thr_vmnk_)));
    return Mma::make_fragment_B(
        thr_tensor(thr_vnk, make_coord(_, repeat<rank<1, 1>(thr_tensor)>(_))));
  } else {
    return thr.partition_fragment_B(static_cast<BTensor&&>(btensor));
  }
}
template <class Mma, class V, class CTensor>
CUTE_DEVICE auto mma_part_c(cute::ThrMMA<Mma, V> const& thr, CTensor&& ctensor) {
  using namespace cute;
  using E = MmaThrfrgC<Mma, PlainT<decltype(ctensor.layout())>>;
  if constexpr (E::kKnown) {
    auto thr_tensor = make_tensor(static_cast<CTensor&&>(ctensor).data(), typename E::type{});
    auto thr_vmn =
        make_coord(get<0>(thr.thr_vmnk_), make_coord(get<1>(thr.thr_vmnk_), get<2>(thr.thr_vmnk_)));
    return thr_tensor(thr_vmn, make_coord(_, repeat<rank<1, 1>(thr_tensor)>(_)));
  } else {
    return thr.partition_C(static_cast<CTensor&&>(ctensor));
  }
}
// The register accumulator's layout (no tensor: class-level types use it too).
template <class Mma, class Shape>
CUTE_HOST_DEVICE constexpr auto mma_frag_c_layout(Mma const& mma, Shape const& shape) {
  using E = MmaShapeC<Mma, Shape>;
  if constexpr (E::kKnown) {
    return cute::make_layout(typename E::type{});
  } else {
    return cute::make_layout(cute::partition_shape_C(mma, shape));
  }
}
template <class Mma, class Shape>
CUTE_DEVICE auto mma_frag_c(Mma const& mma, Shape const& shape) {
  return cute::make_tensor<typename Mma::FrgTypeC>(mma_frag_c_layout(mma, shape));
}

}  // namespace fa::cuda

#if defined(FA_SM90_BWD_PARTITION_GEN) || defined(FA_SM90_FWD_PARTITION_GEN)
// The generators' printing (host programs): one table line per derivation, for static results.
#include <cstdio>
#include <string>

namespace fa::cuda::mma_partition_gen {
template <class O>
void emit(const char* table, std::string const& mma, std::string const& key) {
  if constexpr (cute::is_static<O>::value)
    printf("template <> struct %s<%s, %s> : MmaKnown<%s> {};\n", table, mma.c_str(), key.c_str(),
           table_type_name<O>().c_str());
}
template <class Mma, class L>
void emit_a() {
  emit<decltype(Mma{}.thrfrg_A(L{}))>("MmaThrfrgA", table_type_name<Mma>(), table_type_name<L>());
}
template <class Mma, class L>
void emit_b() {
  emit<decltype(Mma{}.thrfrg_B(L{}))>("MmaThrfrgB", table_type_name<Mma>(), table_type_name<L>());
}
template <class Mma, class L>
void emit_c() {
  emit<decltype(Mma{}.thrfrg_C(L{}))>("MmaThrfrgC", table_type_name<Mma>(), table_type_name<L>());
}
template <class Mma, class S>
void emit_shape_c() {
  emit<decltype(cute::partition_shape_C(Mma{}, S{}))>("MmaShapeC", table_type_name<Mma>(),
                                                      table_type_name<S>());
}
// The layout of an identity (coordinate) tensor of shape S, as partition_C sees it.
template <class S>
using Id = PlainT<decltype(cute::make_identity_tensor(S{}).layout())>;
// The layout of an smem tensor of element T over layout L (CuTe moves a swizzle into the pointer).
template <class T, class L>
using Smem = PlainT<
    decltype(cute::make_tensor(cute::make_smem_ptr(static_cast<T*>(nullptr)), L{}).layout())>;
}  // namespace fa::cuda::mma_partition_gen
#endif
