// TMA loads shared by the two CTAs of a cluster (the FA3 forward's K/V with FA_SM90_FWD_CLUSTER,
// the backward's Q/dO with FA_SM90_BWD_CLUSTER): each CTA loads its half of a tile, and the
// multicast writes it into both CTAs' shared memory and signals the same-offset barrier in both.
// PairLoad<false> is the single-CTA load with the same interface, so one producer loop serves
// both (instantiated once per kMc: the producer runs on 24 registers, a run-time branch per load
// would cost live values).
#pragma once

#include <cute/tensor.hpp>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>

#include <cstdint>

namespace fa::cuda {

template <bool kMc>
struct PairLoad {
  // The CTAs a tile is split over (tma_partition's CTA layout).
  using CtaLayout = cute::Layout<cute::Int<kMc ? 2 : 1>>;

  // This CTA's rank in the pair, read at each use (a special register) rather than kept live.
  __device__ static auto rank() {
    if constexpr (kMc) return int(cute::block_rank_in_cluster());
    else return cute::_0{};
  }
  // (source, destination) of this CTA's part of a tile.
  template <class Tma, class STensor, class GTensor>
  __device__ static auto partition(Tma const& tma, STensor const& s, GTensor const& g) {
    return cute::tma_partition(tma, rank(), CtaLayout{}, s, g);
  }
  // The map a loop uses: the multicast one in a pair (the two have different types).
  template <class McTma, class Tma>
  __device__ static decltype(auto) pick(McTma const& mc, Tma const& plain) {
    if constexpr (kMc) return (mc);
    else return (plain);
  }
  // The executable copy signalling `bar`: into both CTAs of the pair, or this one.
  template <class Tma>
  __device__ static auto with(Tma const& tma, uint64_t& bar) {
    if constexpr (kMc) return tma.with(bar, uint16_t(0b11));
    else return tma.with(bar);
  }
};

}  // namespace fa::cuda
