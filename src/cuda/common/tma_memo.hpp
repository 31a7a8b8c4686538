// Per-thread memo of built TMA copies (a tensor-map descriptor and cute's view of it), keyed by
// the global tensor they describe.
//
// Why: each descriptor is a driver call (cuTensorMapEncodeTiled, which CUTLASS's wrapper looks up
// by name through cudaGetDriverEntryPointByVersion every time: 0.12-0.21 us a map on the H200's
// host, against 0.07-0.10 called directly) plus cute's layout work. The sm90 forward builds four
// per call and the backward four: memoised, the FA3 forward's C ABI call took 0.9-1.5 us less
// (docs/perf/python_overhead_2026-12-02_session21.txt), about half of what the library added to a
// small call over a bare launch. A stream of calls repeats its tensors (a decode loop, a layer's
// fixed buffers, torch's caching allocator handing the same blocks back), so each call site keeps
// its last few descriptors.
//
// Exactness: a descriptor is a function of the element type, box, swizzle and multicast (fixed
// per call site: the site is the `make` lambda's type, unique per kernel instantiation) and of
// the tensor's address, shape and strides (the key). Encoding touches no device or context state,
// so an entry is the very descriptor a fresh build would produce, whatever happened to the memory
// at that address in between. Entries live in thread-local storage: no locks, no sharing.
// FA_NO_TMA_MEMO=1 (read once per process) builds every descriptor, for A/B measurements.
#pragma once

#include <cute/tensor.hpp>

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "cuda/common/env.hpp"

namespace fa::cuda {
namespace tma_memo_detail {

inline bool disabled() {
  static const bool off = env_flag("FA_NO_TMA_MEMO");
  return off;
}

// Address, then every shape and stride value of a tensor of rank <= 7: 15 words at most.
struct Key {
  static constexpr int kWords = 15;
  uint64_t w[kWords] = {};
  bool operator==(const Key& o) const { return std::memcmp(w, o.w, sizeof w) == 0; }
};

// Hits and builds on this thread since it started (tests read them: a memo that never hits, or
// that hits where the key differs, would otherwise go unnoticed behind identical results).
struct Counters {
  uint64_t hits = 0, builds = 0;
};
inline Counters& counters() {
  thread_local Counters c;
  return c;
}

template <class Engine, class Layout>
Key key_of(const cute::Tensor<Engine, Layout>& t) {
  auto shape = cute::flatten(t.shape());
  auto stride = cute::flatten(t.stride());
  static_assert(1 + 2 * decltype(cute::rank(shape))::value <= Key::kWords, "tensor rank too large for the key");
  Key k;
  int n = 0;
  k.w[n++] = uint64_t(reinterpret_cast<uintptr_t>(cute::raw_pointer_cast(t.data())));
  cute::for_each(shape, [&](auto s) { k.w[n++] = uint64_t(int64_t(s)); });
  cute::for_each(stride, [&](auto s) { k.w[n++] = uint64_t(int64_t(s)); });
  return k;
}

// The entries of one call site (Site = its `make` lambda's type).
template <class Site, class Value>
struct Table {
  static constexpr int kEntries = 4;  // a forward alternates between two output buffers
  Key key[kEntries];
  std::optional<Value> value[kEntries];
  int next = 0;
};

}  // namespace tma_memo_detail

// make(g) (typically cute::make_tma_copy(op, g, smem_layout, tile, multicast)), or the copy
// this thread last built from a tensor with g's address, shape and strides at this call site.
template <class Engine, class Layout, class Make>
auto memo_tma(const cute::Tensor<Engine, Layout>& g, Make&& make) {
  namespace d = tma_memo_detail;
  using Value = decltype(make(g));
  if (d::disabled()) return make(g);
  const d::Key key = d::key_of(g);
  thread_local d::Table<std::decay_t<Make>, Value> table;
  for (int i = 0; i < table.kEntries; ++i)
    if (table.value[i] && table.key[i] == key) {
      ++d::counters().hits;
      return *table.value[i];
    }
  const int slot = table.next;
  table.next = (slot + 1) % table.kEntries;
  table.key[slot] = key;
  table.value[slot] = make(g);
  ++d::counters().builds;
  return *table.value[slot];
}

}  // namespace fa::cuda
