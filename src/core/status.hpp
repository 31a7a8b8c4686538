// Host-side result of validation and backend calls: a C ABI status plus the message that
// fa_last_error() returns, fa::Error carries and Python raises.
#pragma once

#include <flashattn/flashattn.h>

#include <string>
#include <utility>

namespace fa::core {

struct Status {
  fa_status code = FA_OK;
  std::string message;

  bool ok() const { return code == FA_OK; }
  static Status success() { return {}; }
};

inline Status invalid(std::string msg) { return {FA_ERROR_INVALID_ARGUMENT, std::move(msg)}; }
inline Status unsupported(std::string msg) { return {FA_ERROR_UNSUPPORTED, std::move(msg)}; }
inline Status internal(std::string msg) { return {FA_ERROR_INTERNAL, std::move(msg)}; }

#define FA_RETURN_IF_ERROR(expr)      \
  do {                                \
    ::fa::core::Status _st = (expr);  \
    if (!_st.ok()) return _st;        \
  } while (0)

}  // namespace fa::core
