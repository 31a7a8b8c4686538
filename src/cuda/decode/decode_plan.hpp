// The host-side plan of a KV-cache decode call (fa_kvcache_forward on CUDA): tile sizes, the
// split-KV count and the workspace its partial results need. One definition, used by the
// workspace query and by the launcher, so the two always agree.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/params.hpp"
#include "core/status.hpp"

namespace fa::cuda::decode {

// Packed query rows per CTA: 4 warps x one 16-row MMA slab. A row is a (query position, query
// head of the KV head's group) pair, so one CTA serves a whole GQA group from one read of K/V.
constexpr int kNWarps = 4;
constexpr int kBlockM = 16 * kNWarps;
// Keys per pipeline stage. d <= 128: 64 (16 KB of K+V at d128 per stage); d 192/256: 32, so two
// stages of K and V plus Q stay at 96 KB and two CTAs fit on an SM (the second CTA's loads
// cover the first one's softmax and MMA phases).
constexpr int block_n(int head_dim) { return head_dim <= 128 ? 64 : 32; }
// Key-split tile (decode_fwd_ks_kernel), chosen when the packed rows fit one 16-row MMA slab
// (M = Nq * group <= 16: every single-query decode with a group <= 16). Why: on the tile above such
// rows live in one warp, which then does all MMA, ldmatrix and softmax work of every key block
// while the other three only load; the H200 profile (session 8, Hk8 B1 L64k d128) showed that
// warp's stream of blocks, not DRAM, as the limit. Here the 4 warps share the 16 rows and each
// takes a quarter of every key block, with its own running max/sum and O; they merge once at the
// end. d <= 64: 128 keys per block (32 per warp); d 96/128: 64 (16 per warp), so a stage of K+V is
// 32 KB at d128 as on the tile above (two stages + Q = 68 KB: 2-3 CTAs per SM). d 192/256 keep the
// tile above (O per warp would be 96-128 registers on top of Q's fragment).
// FA_DECODE_KEY_SPLIT=0 (compile time) leaves the tile out; the environment variable of the same
// name set to 0 makes make_plan choose the tile above at run time (the A/B switch).
#ifndef FA_DECODE_KEY_SPLIT
#define FA_DECODE_KEY_SPLIT 1
#endif
constexpr int kKsBlockM = 16;
// Resident CTAs per SM the key-split kernel is compiled for (__launch_bounds__) and make_plan's
// wave model assumes for it. 2: as the 64-row tile (sm_90a: 112-198 registers). 3 caps it at 168
// registers (sm_90a d128: 168, 0 spills) so that a third CTA (68 KB of shared memory at d128) fits
// beside two: more warps to cover ldmatrix/MMA latency, more bytes in flight, and make_plan fills
// 3 slots per SM with splits. Not measured yet: -DFA_DECODE_KS_MIN_CTAS=3 is the A/B.
#ifndef FA_DECODE_KS_MIN_CTAS
#define FA_DECODE_KS_MIN_CTAS 2
#endif
constexpr int kKsCtasPerSm = FA_DECODE_KS_MIN_CTAS;
static_assert(kKsCtasPerSm == 2 || kKsCtasPerSm == 3, "FA_DECODE_KS_MIN_CTAS: 2 or 3");
constexpr bool has_key_split_tile(int head_dim) { return FA_DECODE_KEY_SPLIT != 0 && head_dim <= 128; }
constexpr int ks_block_n(int head_dim) { return head_dim <= 64 ? 128 : 64; }

// The combine kernel keeps each row's split LSEs in shared memory (kMaxSplits floats per row).
constexpr int kMaxSplits = 64;
// The auto heuristic gives every split at least this many key blocks: shorter splits cost more
// in partial-result traffic and combine work than their extra parallelism buys.
constexpr int kMinBlocksPerSplit = 4;

struct Plan {
  int64_t m_rows = 0;      // packed rows per (batch, KV head): Nq * group
  bool key_split = false;  // the key-split tile (kKsBlockM rows, ks_block_n keys per block)
  int64_t m_blocks = 0;    // CTAs along the packed rows
  int num_splits = 1;      // CTAs along the keys; 1 = no split, no workspace, no combine
  int64_t rows_total = 0;  // B * Hq * Nq: rows of out (the partials' row count)
  size_t ws_bytes = 0;     // fp32 partial O [S, rows_total, D] then LSE [S, rows_total]
};

// num_sms: the device's SM count (the heuristic's target is two resident CTAs per SM).
Plan make_plan(const core::AttnParams& p, int num_sms);
// make_plan with the SM count of p.device_id (cached device attribute).
Plan make_plan(const core::AttnParams& p);

// Writes k_new/v_new into the cache rows cache_seqlens[b] + i (rows past the capacity are
// skipped), enqueued on stream; a no-op without k_new.
core::Status launch_append(const core::AttnParams& p, cudaStream_t stream);

}  // namespace fa::cuda::decode
