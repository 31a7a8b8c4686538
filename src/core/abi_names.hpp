// Names and element sizes of the C ABI's enums (flashattn.h), for error messages, test names
// and the `fa` tool: one definition for the library, the tests and the CLI.
#pragma once

#include <flashattn/flashattn.h>

#include <cstddef>

namespace fa::core {

inline const char* algo_name(fa_algo a) {
  switch (a) {
    case FA_ALGO_AUTO: return "auto";
    case FA_ALGO_FA1: return "fa1";
    case FA_ALGO_FA2: return "fa2";
    case FA_ALGO_FA3: return "fa3";
  }
  return "?";
}

// Bytes per element; 0 for a value outside the enum.
inline size_t dtype_size(fa_dtype t) {
  switch (t) {
    case FA_DTYPE_FLOAT16:
    case FA_DTYPE_BFLOAT16: return 2;
    case FA_DTYPE_FLOAT32:
    case FA_DTYPE_INT32: return 4;
    case FA_DTYPE_FLOAT8_E4M3: return 1;
  }
  return 0;
}

}  // namespace fa::core
