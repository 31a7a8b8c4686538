// Attention masks as one small policy type, shared by every kernel, the CPU backend and the
// reference so that "which keys does query row i see" has exactly one definition.
//
// Alignment is bottom-right (flash_attn >= 2.1): query row i of a sequence with Nq queries and
// Nk keys sits at key position i + (Nk - Nq). Causal is the window (unbounded, 0).
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace fa::core {

struct Mask {
  int64_t q_len = 0;
  int64_t k_len = 0;
  int64_t left = -1;   // -1 = unbounded
  int64_t right = -1;  // -1 = unbounded

  Mask() = default;
  FA_HD Mask(int64_t q_len_, int64_t k_len_, int64_t left_, int64_t right_)
      : q_len(q_len_), k_len(k_len_), left(left_), right(right_) {}

  FA_HD int64_t diag(int64_t i) const { return i + k_len - q_len; }

  FA_HD bool allowed(int64_t i, int64_t j) const {
    if (j < 0 || j >= k_len) return false;
    if (right >= 0 && j > diag(i) + right) return false;
    if (left >= 0 && j < diag(i) - left) return false;
    return true;
  }

  // Keys [first, last) that some row in [i_begin, i_end) may see; empty when first >= last.
  // Key blocks outside this range are skipped entirely (FA2's causal/local block skipping).
  FA_HD void key_range(int64_t i_begin, int64_t i_end, int64_t* first, int64_t* last) const {
    int64_t lo = 0, hi = k_len;
    if (left >= 0) {
      int64_t v = diag(i_begin) - left;
      lo = v > 0 ? v : 0;
    }
    if (right >= 0) {
      int64_t v = diag(i_end - 1) + right + 1;
      hi = v < k_len ? v : k_len;
    }
    *first = lo;
    *last = hi > lo ? hi : lo;
  }

  // True when every (i, j) in the block is allowed, so the kernel may skip per-element masking.
  FA_HD bool block_unmasked(int64_t i_begin, int64_t i_end, int64_t j_begin, int64_t j_end) const {
    if (j_end > k_len) return false;
    if (right >= 0 && j_end - 1 > diag(i_begin) + right) return false;
    if (left >= 0 && j_begin < diag(i_end - 1) - left) return false;
    return true;
  }

  // The key blocks of width block_n that block_unmasked calls unmasked for rows [i_begin, i_end),
  // as the block indices [*lo, *hi] (empty when *lo > *hi; only indices >= 0 are meant): a kernel
  // takes them once per tile and compares each block's index with two int compares instead of
  // three 64-bit conditions per block. Clamped to [0, INT32_MAX] / [-1, INT32_MAX].
  FA_HD void unmasked_blocks(int64_t i_begin, int64_t i_end, int64_t block_n, int* lo, int* hi) const {
    // j_end <= k_len: (nb + 1)·B <= k_len.
    int64_t h = k_len / block_n - 1;
    // j_end - 1 <= diag(i_begin) + right: nb·B <= diag(i_begin) + right - B + 1.
    if (right >= 0) h = min64(h, floor_div(diag(i_begin) + right - block_n + 1, block_n));
    // j_begin >= diag(i_end - 1) - left: nb·B >= diag(i_end - 1) - left.
    int64_t l = 0;
    if (left >= 0) l = max64(l, -floor_div(-(diag(i_end - 1) - left), block_n));
    constexpr int64_t kIntMax = 0x7fffffff;
    *lo = int(min64(l, kIntMax));
    *hi = int(min64(max64(h, -1), kIntMax));
  }

 private:
  FA_HD static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
  FA_HD static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
  FA_HD static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
};

}  // namespace fa::core
