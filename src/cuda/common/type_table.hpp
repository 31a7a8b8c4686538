// Generated type tables (compile memory: sm80/bwd_partition_types.cuh, and the sm90 MMA partition
// tables of cuda/common/mma_partition.hpp). A table is a class template whose primary template is
// a miss and whose generated specialisations are hits carrying the precomputed type; a caller
// takes the type on a hit and CuTe's own derivation on a miss.
#pragma once

#if defined(FA_SM80_BWD_PARTITION_GEN) || defined(FA_SM90_BWD_PARTITION_GEN) || \
    defined(FA_SM90_FWD_PARTITION_GEN)
#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <typeinfo>
#endif

namespace fa::cuda {

struct TableMiss {
  static constexpr bool kKnown = false;
};
template <class X>
struct TableHit {
  static constexpr bool kKnown = true;
  using type = X;
};

#if defined(FA_SM80_BWD_PARTITION_GEN) || defined(FA_SM90_BWD_PARTITION_GEN) || \
    defined(FA_SM90_FWD_PARTITION_GEN)
// The generators' printing (host programs, FA_SM80_BWD_PARTITION_GEN, FA_SM90_BWD_PARTITION_GEN,
// FA_SM90_FWD_PARTITION_GEN): a type's demangled name, which keeps the integer types of C<...>
// (0u, 8l, ...) so the printed table names exactly the type CuTe derived.
template <class X>
std::string table_type_name() {
  int status = 0;
  char* p = abi::__cxa_demangle(typeid(X).name(), nullptr, nullptr, &status);
  std::string s = p;
  std::free(p);
  return s;
}
#endif

}  // namespace fa::cuda
