// GQA/MQA head packing for the Hopper forward: when to pack, decided once per call on the host.
//
// Unpacked, a query tile holds kBlockM positions of one query head, and every query head of a
// GQA group reads its KV head's K/V again. With a short query (decode, Nq = 1..64) most of the
// tile's rows are padding. Packed, the tile's rows are (query position i, head-in-group g) pairs,
// row r = i·G + g, all of one KV head: one CTA reads K/V once for the whole group and fills its
// rows G times better. The kernel side (flash_fwd_kernel.cuh) loads Q with a rank-5 TMA map
// (d, G, Nq, Hk, B), so G must divide kBlockM: a power of two here (G = 7 never packs).
//
// The rule (auto): pack when G > 1, G | kBlockM and the packed tiles are filled clearly better:
//     fill(n) = n / (ceil(n / kBlockM) · kBlockM),   pack  iff  fill(Nq) < 0.9 · fill(Nq · G).
// Packing never adds tiles (ceil(Nq·G/M) ≤ G·ceil(Nq/M)), so it never adds waves either; each
// tile still streams all its keys, so at equal waves it costs the same and reads K/V G× less.
// Long queries seldom qualify (fill(Nq) → 1 for Nq ≫ kBlockM; Nq = 1000, G = 2 does not pack).
// Varlen packs by its longest sequence. FA_SM90_PACK_GQA = 0 (never), 1 (whenever the layout
// allows) or auto (default) chooses; read once per process, like FA_SM90_FWD_ABLATE.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace fa::cuda::sm90 {

enum class PackGqaMode { Never, Always, Auto };

inline PackGqaMode pack_gqa_mode() {
  static const PackGqaMode mode = [] {
    const char* v = std::getenv("FA_SM90_PACK_GQA");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return PackGqaMode::Auto;
    if (std::strcmp(v, "0") == 0) return PackGqaMode::Never;
    if (std::strcmp(v, "1") == 0) return PackGqaMode::Always;
    return PackGqaMode::Auto;  // unknown value: the default
  }();
  return mode;
}

// log2(G) when G query heads per KV head can share a tile of block_m rows; -1 otherwise.
inline int pack_gqa_log2(int group, int block_m) {
  if (group <= 1 || (group & (group - 1)) != 0 || block_m % group != 0) return -1;
  int s = 0;
  while ((1 << s) < group) ++s;
  return s;
}

// The packing shift for one call: log2(G) when packed, 0 when not. seqlen_q is the batch form's
// Nq or the varlen form's longest sequence. Pure arithmetic (tests/core checks it).
inline int pack_gqa_shift(PackGqaMode mode, int group, int64_t seqlen_q, int block_m) {
  const int s = pack_gqa_log2(group, block_m);
  if (s <= 0 || mode == PackGqaMode::Never || seqlen_q <= 0) return 0;
  if (mode == PackGqaMode::Always) return s;
  auto fill = [&](int64_t n) {
    const int64_t tiles = (n + block_m - 1) / block_m;
    return double(n) / double(tiles * block_m);
  };
  return fill(seqlen_q) < 0.9 * fill(seqlen_q * group) ? s : 0;
}

}  // namespace fa::cuda::sm90
