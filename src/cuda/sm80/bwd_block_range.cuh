// Block ranges for the FA2 backward, which loops the other way round from the forward: a CTA owns
// one key block and visits the query blocks that can see it. core::Mask::key_range answers the
// forward's question (keys seen by a row range); this is its transpose, plus the rank a key block
// has among the contributors to one query block's dQ (the deterministic mode orders by it).
//
// Candidate for src/core/mask.hpp (Mask::query_range) if another backward needs it.
#pragma once

#include <cstdint>

#include "core/hd.hpp"
#include "core/mask.hpp"

namespace fa::cuda::sm80 {

// Query rows [*first, *last) that see at least one key of [j_begin, j_end) (j_end <= k_len).
// Row i sees keys [diag(i) - left, diag(i) + right] ∩ [0, k_len), an interval that moves by one
// key per row, so the rows meeting [j_begin, j_end) are those with
//   diag(i) + right >= j_begin   and   diag(i) - left <= j_end - 1.
FA_HD void query_range(const core::Mask& m, int64_t j_begin, int64_t j_end, int64_t* first,
                       int64_t* last) {
  const int64_t shift = m.k_len - m.q_len;  // diag(i) = i + shift
  int64_t lo = 0, hi = m.q_len;
  if (m.right >= 0) {
    const int64_t v = j_begin - m.right - shift;
    lo = v > 0 ? v : 0;
  }
  if (m.left >= 0) {
    const int64_t v = j_end - 1 + m.left - shift + 1;
    hi = v < m.q_len ? v : m.q_len;
  }
  *first = lo;
  *last = hi > lo ? hi : lo;
}

// Query blocks [*b_first, *b_last) of size block_m whose rows see key block [j_begin, j_end).
FA_HD void query_block_range(const core::Mask& m, int64_t j_begin, int64_t j_end, int block_m,
                             int64_t* b_first, int64_t* b_last) {
  int64_t first = 0, last = 0;
  query_range(m, j_begin, j_end, &first, &last);
  *b_first = first / block_m;
  *b_last = first < last ? (last + block_m - 1) / block_m : *b_first;
}

// The first key block (of size block_n) that contributes to query block [i_begin, i_end): key
// blocks contributing to one query block are contiguous, so a key block's rank among them is
// its index minus this one.
FA_HD int64_t first_key_block(const core::Mask& m, int64_t i_begin, int64_t i_end, int block_n) {
  int64_t first = 0, last = 0;
  m.key_range(i_begin, i_end, &first, &last);
  return first / block_n;
}

// core::Mask restricted to one tile with corner (m0, n0), in 32-bit tile-local coordinates, for
// the per-element test in the inner loop: key c of row r is allowed iff
//   c < col_end  and  diag_lo <= c - r <= diag_hi.
// (j - i = (n0 - m0) + c - r; c - r lies in (-2^15, 2^15), so clamping to ±2^30 is exact.)
struct TileMask {
  int col_end;
  int diag_lo;
  int diag_hi;

  FA_HD static int clamp30(int64_t v) {
    constexpr int64_t kLim = int64_t(1) << 30;
    return int(v < -kLim ? -kLim : (v > kLim ? kLim : v));
  }
  FA_HD TileMask(const core::Mask& m, int64_t m0, int64_t n0) {
    const int64_t shift = m.k_len - m.q_len - (n0 - m0);
    col_end = clamp30(m.k_len - n0);
    diag_hi = m.right >= 0 ? clamp30(shift + m.right) : (1 << 30);
    diag_lo = m.left >= 0 ? clamp30(shift - m.left) : -(1 << 30);
  }
  FA_HD bool allowed(int r, int c) const {
    return c < col_end && c - r >= diag_lo && c - r <= diag_hi;
  }
  // The same test without short-circuits: three compares and two predicate ANDs, no branches
  // (with per-element coordinates computed in the step, && became a branch per element).
  FA_HD bool allowed_flat(int r, int c) const {
    return (c < col_end) & (c - r >= diag_lo) & (c - r <= diag_hi);
  }
};

}  // namespace fa::cuda::sm80
