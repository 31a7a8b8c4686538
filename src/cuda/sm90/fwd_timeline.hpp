// Per-tile timeline of the persistent Hopper forward (flash_fwd_kernel.cuh), a diagnostic build
// only (-DFA_SM90_FWD_TIMELINE=1; the launcher fills it when FA_SM90_FWD_TIMELINE_OUT names a
// file, cuda/common/timeline_dump.hpp). For every tile a consumer warpgroup computes, its thread 0
// records clock64() (SM cycles) at the points FwdStamp names; slot Info holds the tile's key
// blocks | query block << 16 | SM id << 40. scripts/fwd_timeline.py reads it. Production builds
// compile none of it.
#pragma once

#ifndef FA_SM90_FWD_TIMELINE
#define FA_SM90_FWD_TIMELINE 0
#endif

// The timeline's row pointer travels as an extra argument of consume_tile and the epilogue's
// store / store_o_tma / stage_o_tma only in timeline builds, so production builds keep their
// exact SASS.
// A deferred epilogue's stores (kEpiOverlap) stamp nothing: they belong to an earlier tile's row.
#if FA_SM90_FWD_TIMELINE
#define FA_FWD_TL_PARAM , unsigned long long* tl
#define FA_FWD_TL_ARG , tl
#define FA_FWD_TL_NOARG , nullptr
#define FA_FWD_TL_NONE
#else
#define FA_FWD_TL_PARAM
#define FA_FWD_TL_ARG
#define FA_FWD_TL_NOARG
#define FA_FWD_TL_NONE [[maybe_unused]] constexpr unsigned long long* tl = nullptr;
#endif
// A mainloop wait, its cycles added to waits[i] in timeline builds; the plain statement otherwise
// (wrapping it in a lambda, even one that only runs it, changed the d256 masked kernels' SASS).
#if FA_SM90_FWD_TIMELINE
#define FA_FWD_TIMED(i, stmt)                 \
  do {                                        \
    const unsigned long long t0_ = clock64(); \
    stmt;                                     \
    waits[i] += clock64() - t0_;              \
  } while (0)
#else
#define FA_FWD_TIMED(i, stmt) stmt
#endif

namespace fa::cuda::sm90 {

enum class FwdStamp : int {
  Info = 0,
  Start,    // consume_tile entered
  QIn,      // the tile's Q slot is loaded
  KIn,      // its first K block is loaded
  Turn,     // first ping-pong turn taken (the first Q·Kᵀ is issued next)
  S0Done,   // first Q·Kᵀ retired
  LoopEnd,  // last P·V retired
  EpiConv,  // O normalised and converted, LSE computed
  EpiBar,   // TMA-store epilogue: the O buffer is free and every warp of the warpgroup is here
  End,      // epilogue done (or, with the epilogue overlap, handed to the next tile)
  // Cycles spent, summed over the mainloop's iterations after the first block, waiting for: a K
  // block, a V block, the ping-pong turn, S (the Q·Kᵀ wgmma), O (the P·V wgmma).
  KWait,
  VWait,
  TurnWait,
  SWait,
  PVWait,
  // Between tiles (consume's loop, clock64() values): the previous tile's consume_tile returned
  // and the scheduler is called; it returned this tile; tile_work returned (then Start).
  NextCall,
  NextDone,
  WorkDone,
  // FA_SM90_FWD_TILE_CHAIN, the tile's tail (cycles): waiting for the next tile's record, its Q,
  // its first K block, and the ping-pong turn of the last P·V.
  TailRec,
  TailQ,
  TailK,
  TailTurn,
  kCount
};

// One timeline stamp (FA_SM90_FWD_TIMELINE); tl is this tile's and warpgroup's row, or null.
__device__ inline void timeline_stamp(unsigned long long* tl, FwdStamp slot,
                                      unsigned long long value = 0) {
  if constexpr (FA_SM90_FWD_TIMELINE != 0) {
    if (tl == nullptr || threadIdx.x % 128 != 0) return;
    if (slot != FwdStamp::Info && int(slot) < int(FwdStamp::KWait)) value = clock64();
    tl[int(slot)] = value;
  } else {
    (void)tl, (void)slot, (void)value;
  }
}

}  // namespace fa::cuda::sm90
