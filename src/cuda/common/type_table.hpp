// Generated type tables (compile memory: sm80/bwd_partition_types.cuh, the d96 tables of
// sm90/flash_bwd_kernel.cuh). A table is a class template whose primary template is a miss and
// whose generated specialisations are hits carrying the precomputed type; a caller takes the type
// on a hit and CuTe's own derivation on a miss.
#pragma once

namespace fa::cuda {

struct TableMiss {
  static constexpr bool kKnown = false;
};
template <class X>
struct TableHit {
  static constexpr bool kKnown = true;
  using type = X;
};

}  // namespace fa::cuda
