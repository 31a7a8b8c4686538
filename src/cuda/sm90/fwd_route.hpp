// Run-time choices among the sm90 forward's kernels that depend only on the call's sizes: host
// code without CUDA, so tests/core checks them on any machine (run_sm90_fwd applies them).
#pragma once

#include <cstdint>

#include "core/params.hpp"

namespace fa::cuda::sm90 {

// The keys one query tile of block_m rows can see: the key length, or, under a two-sided window
// (rows i .. i + block_m - 1 each see wl + 1 + wr keys, shifted by one per row), wl + wr + block_m
// when that is shorter. A causal mask alone (window_right = 0, no left bound) bounds nothing for
// the tile that holds the last rows.
inline int64_t fwd_tile_key_span(const core::AttnParams& p, int block_m) {
  int64_t span = p.seqlen_k;
  if (p.window_left >= 0 && p.window_right >= 0) {
    const int64_t w = p.window_left + p.window_right + block_m;
    if (w < span) span = w;
  }
  return span;
}

// Whether a call takes its head dim's short-range tile (FwdTile<hd, masked, true>: d192, d256): the
// span of its block_m-row query tiles is at most max_n keys; max_n <= 0 means never. Masked: few key
// blocks per tile favour halving their number; many favour the default tile's second stage and
// overlap. Unmasked: a key length the default tile's 80- or 112-key blocks cover raggedly
// (fwd_tile_config.hpp).
inline bool takes_short_tile(const core::AttnParams& p, int block_m, int64_t max_n) {
  return max_n > 0 && fwd_tile_key_span(p, block_m) <= max_n;
}

}  // namespace fa::cuda::sm90
