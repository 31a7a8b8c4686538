// Run-time switches read from the environment (the ablation knobs of the launchers).
#pragma once

#include <cstdlib>

namespace fa::cuda {

// The variable's value as a non-negative int; unset, malformed, negative or absurdly large
// values keep the fallback (a typo must not turn a kernel switch into something it never meant).
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > (1 << 20)) return fallback;
  return int(x);
}

// An off switch: true when the variable is set to anything but "" or "0".
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && *v != '0';
}

}  // namespace fa::cuda
