// A minimal parallel-for for the CPU backend: n tasks handed out in index order through one
// atomic counter to `threads` workers (the calling thread is worker 0). Tasks are claimed in
// increasing index order, which the backward's ordered dQ accumulation relies on: a task may wait
// for a lower-indexed task, and that task has always been claimed by a running worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace fa::cpu {

// 0 means all hardware threads.
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? int(hw) : 1;
}

// Calls fn(task, worker) for task in [0, n); worker in [0, threads) identifies per-worker scratch.
template <class Fn>
void parallel_for(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;
  threads = int(std::min<int64_t>(std::max(threads, 1), n));
  if (threads == 1) {
    for (int64_t t = 0; t < n; ++t) fn(t, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  auto work = [&](int worker) {
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(t, worker);
  };
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads - 1));
  try {
    for (int w = 1; w < threads; ++w) pool.emplace_back(work, w);
  } catch (const std::system_error&) {
    // The process is out of threads: the workers that did start (and this one) take all tasks.
  }
  work(0);
  for (auto& th : pool) th.join();
}

}  // namespace fa::cpu
