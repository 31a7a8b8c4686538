// Persistent FA3 backward main kernel (sm90a): bwd_main (flash_bwd_kernel.cuh) with each CTA
// running several tiles (tile = one CTA of bwd_main: key block n_block of (KV head, sequence) with
// its GQA group loop) in turn, for the head dims in FA_SM90_BWD_PERSISTENT (unmasked instances)
// and FA_SM90_BWD_PERSISTENT_MASKED (masked ones); see BwdConfig::kPersistent. A separate kernel
// so that bwd_main compiles to the same code whatever these switches are. The per-step work is
// bwd_main's; what differs is the tile loop, the barriers carried across tiles (table above
// bwd_main_persistent), and tile state kept in smem rather than registers (the consumers' 240
// and the producer warps' 24 registers).
#pragma once

#include "cuda/sm90/flash_bwd_kernel.cuh"

namespace fa::cuda::sm90_bwd {

// floor(n_block * m_count / nb) from a float estimate corrected with 64-bit products (the
// same value as rotation_start): a 64-bit division is a subroutine call, whose register saves
// are spills of the persistent kernel's 24-register warps.
__device__ __forceinline__ int rotation_start_tile(int n_block, int k_len, int block_n, int m_count) {
  const int nb = (k_len + block_n - 1) / block_n;
  if (m_count <= 1 || nb <= 0) return 0;
  const int64_t a = int64_t(n_block) * m_count;
  int64_t q = int64_t(float(a) / float(nb));
  while (q > 0 && q * nb > a) --q;
  while ((q + 1) * nb <= a) ++q;
  return int(q) % m_count;  // q < m_count when n_block < nb (a tile with keys)
}

// p, opaque to the compiler (so that what is derived from it is recomputed where it is used
// instead of being hoisted and kept live).
template <bool kOpaque = true>
__device__ __forceinline__ char* opaque_smem_ptr(char* p) {
  if constexpr (kOpaque) asm volatile("mov.b64 %0, %0;\n" : "+l"(p));
  return p;
}

// What the dQ warp needs of its tile (dq_writer): the query range, rows and mask band.
struct DqTile {
  int hk, m_first, m_count, m_rot, n_block, q_len;
  int64_t prow_seq;
  CtaBand band;
};

// One loop over the tile's steps (query head of the group, then query block in rotated_m order);
// step s is also the fused conversion's bit index (fused_convert_dq maps it back the same way).
// get() returns the tile's DqTile (the same values every call).
template <class Cfg, class GetTile>
__device__ void dq_writer_tiles(const BwdParams<Cfg>& prm, const float* sdq, uint32_t* sdq_last, GetTile get,
                          bool descending) {
  constexpr int kBlockM = Cfg::kBlockM, kHeadDim = Cfg::kHeadDim;
  const bool lane0 = threadIdx.x % 32 == 0;
  const int group = prm.p.group_size();
  const int n_steps = group * get().m_count;
  int64_t pend_prow = 0;  // kFusedConvert, non-deterministic: the step whose arrival is pending
  int pend_step = -1;
  named_arrive(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);  // the buffer starts free
  for (int step = 0; step < n_steps; ++step) {
    const DqTile t = get();
    const int h = t.hk * group + step / t.m_count;
    const int m = rotated_m(step % t.m_count, t.m_first, t.m_count, t.m_rot);
    const int64_t prow = int64_t(h) * prm.ws.rows_pad + t.prow_seq + int64_t(m) * kBlockM;
    int* turn = prm.ws.dq_turn + prow / kTurnRows;
    const int my_turn = t.band.dq_turn(m * kBlockM, t.n_block, kBlockM, Cfg::kBlockN, t.q_len, descending);
    if (prm.p.deterministic && lane0) {
      while (load_acquire(turn) != my_turn) __nanosleep(32);
      fence_proxy_async_global();  // the previous adder's writes before our TMA's reads
    }
    __syncwarp();  // bar.sync/arrive with the whole warp converged
    consumer_sync(int(BarrierId::DqFull), Cfg::kDqSyncThreads);
    if (lane0) {
      // dq_store_first: the block's first adder stores instead (bwd_preprocess did not zero the
      // accumulator). Deterministic mode: turn 0 is first, and the turns order the rest. Else the
      // turn counter (0 from bwd_preprocess, unused otherwise) says who: the CAS 0 -> 1 winner
      // stores, and sets it to 2 once the store is complete (the same wait / proxy fence /
      // release as a deterministic turn); the others wait for 2 before adding. The winner's
      // store follows its CAS with nothing to wait for in between, so every wait ends.
      bool first = false;
      if (prm.dq_store_first) {
        if (prm.p.deterministic) {
          first = my_turn == 0;
        } else {
          first = atomicCAS(turn, 0, 1) == 0;
          if (!first) {
            while (load_acquire(turn) != 2) __nanosleep(32);
            fence_proxy_async_global();  // the store before our TMA's reads
          }
        }
      }
      // One transfer per WG half (16 KB at d128), the size FA3 uses, rather than one of 32 KB.
      float* dq_blk = prm.ws.dq_acc + prow * kHeadDim;
#pragma unroll
      for (int wg = 0; wg < Cfg::kConsumerWGs; ++wg)
        bulk_store_or_add_f32(dq_blk + wg * Cfg::kDqHalf, sdq + wg * Cfg::kDqHalf, Cfg::kDqHalf * 4, first);
      bulk_commit();
      bulk_wait_read<0>();
      if (first && !prm.p.deterministic) {
        bulk_wait_all();
        fence_proxy_async_global();
        store_release(turn, 2);
      }
    }
    __syncwarp();
    // After the last step nobody waits (an arrival without its bar.sync would stay pending).
    if (step + 1 < n_steps) named_arrive(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);
    if (prm.p.deterministic && lane0) {
      bulk_wait_all();
      fence_proxy_async_global();
      store_release(turn, my_turn + 1);
    }
    if constexpr (kFusedConvert) {
      if (prm.fused_convert && lane0) {
        // An add must be complete in global memory (wait_group, not .read), ordered before the
        // generic-proxy counter update (proxy fence) and visible GPU-wide (release) before the
        // counter says so. The previous step's add is the one arrived for here (all groups but
        // the newest complete), so the add's completion latency overlaps the next step
        // instead of holding this warp; the deterministic mode has waited for this one anyway.
        if (prm.p.deterministic) {
          fused_arrive(prm, sdq_last, prow, step);
        } else {
          if (pend_step >= 0) {
            bulk_wait<1>();
            fence_proxy_async_global();
            fused_arrive(prm, sdq_last, pend_prow, pend_step);
          }
          pend_prow = prow;
          pend_step = step;
        }
      }
    }
  }
  // The writes must be complete (and the smem read) before the CTA exits.
  if (lane0) bulk_wait_all();
  if constexpr (kFusedConvert) {
    if (lane0 && pend_step >= 0) {  // non-deterministic mode: the last step's arrival
      fence_proxy_async_global();
      fused_arrive(prm, sdq_last, pend_prow, pend_step);
    }
  }
  __syncwarp();
}

// The (key block, KV head, sequence) of linear index lin (x = key block fastest, then y = KV head,
// z = sequence, as the hardware rasterises a 3D grid). By default (x, y, z), with x reversed in
// the deterministic mode with a right-bounded mask (CtaBand::dq_turn). With prm.cta_group = G > 0
// the index is read in groups of G (KV head, sequence) pairs (the last group may be smaller, gs):
// within a group, key block L' / gs of pair L' % gs, so the G pairs' key block 0 come first, then
// their key block 1, ... With a causal mask key block n has (n_blocks - n) query blocks to do:
// each group is launched longest first, and a group of ~2 waves of CTAs keeps the tail short
// while the CTAs resident at a time still share the few heads' Q, dO and dQ accumulator in L2.
__device__ __forceinline__ CtaCoord coord_of_linear(int lin, int nx, int ny, int nz, int G, bool reverse_x) {
  if (G > 0) {
    const int pairs = ny * nz, per_group = G * nx;
    const int g = lin / per_group, w = lin - g * per_group;
    const int gs = min(G, pairs - g * G);
    const int pair = g * G + w % gs;
    return {w / gs, pair % ny, pair / ny};
  }
  const int x = lin % nx, yz = lin / nx;
  return {reverse_x ? nx - 1 - x : x, yz % ny, yz / ny};
}

// Tile `tile`'s (key block, KV head, sequence): only the tile index stays live, the rest is
// recomputed from it and the (constant) parameters where it is needed.
template <class Cfg, bool kMasked>
__device__ __forceinline__ CtaCoord tile_coord(const BwdParams<Cfg>& prm, int tile) {
  const int G = Cfg::kGroupedOrder ? prm.cta_group : 0;
  // The launcher sets n_tiles = n_blocks_k * heads_kv * batch only when it fits in an int.
  return coord_of_linear(tile, prm.n_blocks_k, prm.p.heads_kv, prm.p.batch, G,
                         kMasked && prm.p.deterministic && prm.p.window_right >= 0);
}

// Fused dQ conversion (kFusedConvert), run by the consumers after the epilogue: every block whose
// bit the dQ warp set (this CTA's add took its arrival counter to 0, so every visiting CTA's add
// is complete and visible) is converted exactly as bwd_convert_dq does it (same fragment order,
// same fp32 value times scale, same rounding: dQ is bit-identical), through a row-major tile in
// the dQ staging buffer, which the dQ warp no longer uses. The accumulator is read with ld.cg:
// other SMs wrote it, this SM's L1 must not answer.
template <class Cfg, bool kMasked>
__device__ __forceinline__ void fused_convert_dq_tile(const BwdParams<Cfg>& prm, const uint32_t* sdq_last, uint16_t* sdq,
                                              int tid, int tile) {
  using Element = typename Cfg::T;
  constexpr int kBlockM = Cfg::kBlockM, kHeadDim = Cfg::kHeadDim, kThreads = Cfg::kConsumerThreads;
  static_assert(sizeof(Element) == 2);
  const core::AttnParams& p = prm.p;
  const CtaCoord cc = tile_coord<Cfg, kMasked>(prm, tile);
  const core::SeqInfo seq = core::seq_info(p, cc.b);
  const int64_t n0 = int64_t(cc.n_block) * Cfg::kBlockN;
  const core::Mask mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1, kMasked ? p.window_right : -1);
  int m_first = 0, m_last = 0;
  query_block_range(mask, n0, min(n0 + Cfg::kBlockN, seq.k_len), kBlockM, &m_first, &m_last);
  const int m_count = m_last - m_first, group = p.group_size();
  const int m_rot = prm.rotate_m ? rotation_start_tile(cc.n_block, int(seq.k_len), Cfg::kBlockN, m_count) : 0;
  const int64_t prow_seq = padded_row_start(p, cc.b, seq.q_start);
  typename Cfg::MmadQ mma_dq;
  Tensor cdQ = mma_dq.get_thread_slice(tid).partition_C(make_identity_tensor(Shape<Int<kBlockM>, Int<kHeadDim>>{}));
  static_assert(decltype(size(cdQ))::value == Cfg::kDqFragValues);
  static_assert(kBlockM * dq_tile_ld<kHeadDim>() * 2 <= kBlockM * kHeadDim * 4, "the tile fits the staging buffer");
#pragma unroll 1
  for (int w = 0; w < kFuseWords; ++w) {
    uint32_t bits = sdq_last[w];
#pragma unroll 1
    while (bits) {
      const int s = w * 32 + __ffs(int(bits)) - 1;
      bits &= bits - 1;
      // Bit s is the dQ warp's step s (dq_writer): the same head and rotated query block.
      const int h = cc.hk * group + s / m_count;
      const int64_t row0 = int64_t(rotated_m(s % m_count, m_first, m_count, m_rot)) * kBlockM;
      const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + row0;
      const float* acc = prm.ws.dq_acc + prow * kHeadDim + Cfg::dq_frag_offset(tid, 0);
      float4 v[Cfg::kDqFragValues / 4];
      CUTE_UNROLL
      for (int i = 0; i < Cfg::kDqFragValues; i += 4) v[i / 4] = __ldcg(reinterpret_cast<const float4*>(acc + i * 128));
      consumer_sync(int(BarrierId::FuseTile), kThreads);  // the previous block's tile has been read
      dq_fragment_to_tile<Cfg>(v, cdQ, p.scale, sdq);
      consumer_sync(int(BarrierId::FuseTile), kThreads);
      const int rows_left = int(min(seq.q_len - row0, int64_t(kBlockM)));
      dq_tile_to_rows<Cfg, kThreads>(sdq, p, cc.b, seq.q_start + row0, h, rows_left, tid);
    }
  }
}

// What one tile is, derived from its index alone, so that every role (producer, dQ warp,
// consumers) agrees on which tiles have keys (n0 < k_len; varlen: a sequence may have fewer key
// blocks than the grid, and such a tile does nothing at all) and on its step count (0 with a
// window that hides every query from these keys: no loads, no dQ, but dK/dV are still written,
// as zeros, by the consumers' epilogue).
// tile_state word of a consumer thread (kPersistent): tile index << kTileShift | has steps |
// K/V parity | dS^T buffer | ring phase | ring stage.
// kHasSteps: set for the tile being worked on when it has steps (read back after its main loop
// instead of keeping n_steps live through it).
constexpr uint32_t kStageMask = 3u, kPhaseBit = 2, kBufBit = 3, kKvBit = 4, kHasStepsBit = 5, kTileShift = 6;

struct TileWork {
  CtaCoord c;
  core::SeqInfo seq;
  int64_t n0;
  int m_first, m_count, n_steps, m_rot;
};
template <class Cfg, bool kMasked>
__device__ __forceinline__ core::Mask tile_mask(const core::AttnParams& p, const core::SeqInfo& seq) {
  return core::Mask(seq.q_len, seq.k_len, kMasked ? p.window_left : -1, kMasked ? p.window_right : -1);
}
template <class Cfg, bool kMasked>
__device__ __forceinline__ TileWork tile_work(const BwdParams<Cfg>& prm, int tile) {
  TileWork w;
  w.c = tile_coord<Cfg, kMasked>(prm, tile);
  w.seq = core::seq_info(prm.p, w.c.b);
  w.n0 = int64_t(w.c.n_block) * Cfg::kBlockN;
  // (An inactive tile's (n0 >= k_len) range is computed too; every role skips such a tile first.)
  int m_last = 0;
  query_block_range(tile_mask<Cfg, kMasked>(prm.p, w.seq), w.n0, min(w.n0 + Cfg::kBlockN, w.seq.k_len), Cfg::kBlockM,
                    &w.m_first, &m_last);
  w.m_count = m_last - w.m_first;
  w.n_steps = w.m_count * prm.p.group_size();  // (query head of the group) x (query block)
  w.m_rot = prm.rotate_m ? rotation_start_tile(w.c.n_block, int(w.seq.k_len), Cfg::kBlockN, w.m_count) : 0;
  return w;
}

// tile_work for the producer warps (24 registers): computed in stages, each stage's results
// stored to the warp's smem words and what a later stage needs read back from there (volatile),
// so that no stage keeps another's values live (tile_work whole, inlined there, spilled ~30
// values per warp). Words: n_block, hk, b, then q_start, q_len, k_start, k_len as two words
// each (little-endian), m_first, m_count, m_rot.
struct StagedTile {
  volatile int* s;
  __device__ int n_block() const { return s[0]; }
  __device__ int hk() const { return s[1]; }
  __device__ int b() const { return s[2]; }
  __device__ int64_t get64(int i) const { return int64_t(uint64_t(uint32_t(s[i])) | uint64_t(uint32_t(s[i + 1])) << 32); }
  __device__ void put64(int i, int64_t v) const {
    s[i] = int(uint32_t(uint64_t(v)));
    s[i + 1] = int(uint32_t(uint64_t(v) >> 32));
  }
  __device__ int64_t q_start() const { return get64(3); }
  __device__ int64_t q_len() const { return get64(5); }
  __device__ int64_t k_start() const { return get64(7); }
  __device__ int64_t k_len() const { return get64(9); }
  __device__ int m_first() const { return s[11]; }
  __device__ int m_count() const { return s[12]; }
  __device__ int m_rot() const { return s[13]; }
};
template <class Cfg, bool kMasked>
__device__ __forceinline__ void stage_tile_work(const BwdParams<Cfg>& prm, int tile, const StagedTile& t) {
  {
    const CtaCoord c = tile_coord<Cfg, kMasked>(prm, tile);
    t.s[0] = c.n_block, t.s[1] = c.hk, t.s[2] = c.b;
  }
  {
    const core::SeqInfo q = core::seq_info(prm.p, t.b());
    t.put64(3, q.q_start), t.put64(5, q.q_len), t.put64(7, q.k_start), t.put64(9, q.k_len);
  }
  {
    const int64_t k_len = t.k_len(), n0 = int64_t(t.n_block()) * Cfg::kBlockN;
    int m_first = 0, m_last = 0;
    const core::Mask mask(t.q_len(), k_len, kMasked ? prm.p.window_left : -1, kMasked ? prm.p.window_right : -1);
    query_block_range(mask, n0, min(n0 + Cfg::kBlockN, k_len), Cfg::kBlockM, &m_first, &m_last);
    t.s[11] = m_first, t.s[12] = m_last - m_first;
  }
  t.s[13] = prm.rotate_m ? rotation_start_tile(t.n_block(), int(t.k_len()), Cfg::kBlockN, t.m_count()) : 0;
}

// Persistent CTAs (Cfg::kPersistent): every role walks the same tiles (tile = blockIdx.x,
// + gridDim.x, ... < n_tiles) and skips the same ones (TileWork), carrying its state across them:
//
//   barrier            who arrives / completes          who waits, parity
//   bar_kv             producer (expect_tx), TMA of      consumers, once per tile with steps:
//                      K+V, once per tile with steps     kv_phase (0, 1, 0, ... per such tile)
//   bar_kv_empty       all consumer threads, after the   producer, before a tile's K/V TMA:
//   (count 256)        last step of a tile with steps    kv_phase ^ 1 (the first finds it free)
//                      (every wgmma reading sK/sV has
//                      retired: each step ends waiting
//                      for all of its wgmmas)
//   bar_q/bar_do[s]    producer + TMA, per step          consumers, (stage, phase) of the ring,
//   bar_empty[s]       consumers, per step               producer, phase ^ 1; stage and phase
//                                                        run on across tiles on both sides
//   DqEmpty/DqFull     named barriers (counts, no parity): per tile with steps the dQ warp
//                      arrives DqEmpty once before its first step and after every step but
//                      the last, and syncs DqFull per step; the consumers sync DqEmpty and arrive
//                      DqFull once per step (stage_dq). n_steps each way per tile, and the dQ
//                      warp's first arrival of tile t+1 follows its last DqFull of tile t, so the
//                      counts never run ahead by more than one generation.
//   DsWritten/PtWritten consumers only, per step; the dS^T/P^T double buffer index `buf` runs on
//                      across tiles, so the reuse argument at DsWritten holds over the boundary.
//   DqDone (fused dQ   dQ warp arrives / consumers sync once per tile with keys; the launcher
//   conversion)        runs one tile per CTA with the fused conversion (its smem bits and DqDone
//                      are per CTA), so only the non-persistent case meets it.
// The producer issues a later tile's first kStages - 1 Q/dO stages before its K/V (the stages
// they use are freed by the previous tile's steps, not by its end) and the K/V load as soon as
// bar_kv_empty completes: both run while the consumers write the previous tile's dK/dV.
//
// Deterministic mode (its turns: dq_writer, CtaBand::dq_turn): a tile only waits for tiles of the
// same (KV head, sequence) with a lower turn, which have a lower linear index (cta_coord: key
// blocks ascending, or reversed with a right bound, so that lower turns come first). Every CTA
// runs its tiles in increasing index, and the launcher never launches more CTAs than can be
// resident at once, so all of them run: the unfinished tile of smallest index is then being
// worked on by its CTA (all of that CTA's earlier tiles are done) and waits for nothing that is
// unfinished, so it completes, and by induction every tile does. (Without the residency bound
// a CTA could spin on a tile of a CTA that never started; one tile per CTA relies on the
// hardware starting CTAs in index order instead, as before.)
template <class Cfg, bool kMasked, bool kSoftcap>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
bwd_main_persistent(const __grid_constant__ BwdParams<Cfg> prm) {
  using T = typename Cfg::T;
  constexpr int kBlockM = Cfg::kBlockM, kBlockN = Cfg::kBlockN, kHeadDim = Cfg::kHeadDim;
  constexpr int kStages = Cfg::kStages, kConsumerThreads = Cfg::kConsumerThreads;
  constexpr bool kPersistent = Cfg::kPersistent;
  static_assert(kPersistent, "launched only for head dims in FA_SM90_BWD_PERSISTENT (flash_bwd.cuh)");
  using SharedStorage = typename Cfg::SharedStorage;

  extern __shared__ __align__(1024) char smem_raw[];
  SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem_raw);
  const core::AttnParams& p = prm.p;

  // Deterministic mode with a right-bounded mask: descending key blocks (CtaBand::dq_turn).
  const bool dq_descending = kMasked && p.deterministic && p.window_right >= 0;
  // This CTA's tiles: without kPersistent the one tile of its blockIdx (tile 0 stands for it).
  const int n_tiles = kPersistent ? prm.n_tiles : 1;
  const int tile0 = kPersistent ? int(blockIdx.x) : 0;
  const int tile_stride = kPersistent ? int(gridDim.x) : 1;
  // Without kPersistent the producer warps take their one tile's values from here, computed
  // before they drop to 24 registers (computed there, they spilled); the consumers recompute.
  const TileWork w_cta = tile_work<Cfg, kMasked>(prm, 0);
  if constexpr (!kPersistent) {
    if (w_cta.n0 >= w_cta.seq.k_len) {  // varlen: this sequence has fewer key blocks than the grid
      // FA_SM90_BWD_PDL: even a grid of such CTAs ends only after bwd_preprocess, so bwd_convert_dq
      // (which waits for this grid) never reads an accumulator that is still being zeroed.
      pdl_wait();
      return;
    }
  }
  pdl_trigger();  // bwd_convert_dq may be scheduled once every CTA has started (pdl_wait there)

  if (threadIdx.x == 0) {
    cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_kv, 1);
    cutlass::arch::ClusterBarrier::init(&ss.bar_kv_empty, kConsumerThreads);
    for (int s = 0; s < kStages; ++s) {
      cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_q[s], 1);
      cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_do[s], 1);
      cutlass::arch::ClusterBarrier::init(&ss.bar_empty[s], kConsumerThreads);
    }
    cutlass::arch::fence_barrier_init();
    if constexpr (kFusedConvert)
      for (int w = 0; w < kFuseWords; ++w) ss.dq_last[w] = 0u;
  }
  __syncthreads();

  if (threadIdx.x < 128) {
    // ---------------- producer ----------------
    cutlass::arch::warpgroup_reg_dealloc<Cfg::kProducerRegs>();
    if constexpr (Cfg::kDqTma) {
      if (threadIdx.x / 32 == 1) {
        pdl_wait();  // the accumulator, counters: bwd_preprocess
#pragma unroll 1
        for (int tile = tile0; tile < n_tiles; tile += tile_stride) {
          // All lanes compute and write the same words; the __syncwarp()s keep the warp on one
          // tile (no lane rewrites a word another still reads: dq_writer ends with __syncwarp).
          __syncwarp();
          const StagedTile t{ss.pwork[1]};
          stage_tile_work<Cfg, kMasked>(prm, tile, t);
          __syncwarp();
          if (int64_t(t.n_block()) * kBlockN >= t.k_len()) continue;
          if (t.m_count() > 0) {  // n_steps = group * m_count > 0
            // The tile's DqTile to smem in stages as well, read back per step by dq_writer.
            static_assert(sizeof(DqTile) == sizeof(ss.dq_tile) && offsetof(DqTile, prow_seq) == 24 &&
                              offsetof(DqTile, band) == 32 && offsetof(CtaBand, diag_n0) == 20,
                          "DqTile as 14 words: 6 ints, prow_seq (little-endian), CtaBand's 6 ints");
            volatile int* d = ss.dq_tile;
            d[0] = t.hk(), d[1] = t.m_first(), d[2] = t.m_count(), d[3] = t.m_rot(), d[4] = t.n_block();
            d[5] = int(t.q_len());
            {
              const int64_t ps = padded_row_start(p, t.b(), t.q_start());
              d[6] = int(uint32_t(uint64_t(ps))), d[7] = int(uint32_t(uint64_t(ps) >> 32));
            }
            {
              const core::Mask mask(t.q_len(), t.k_len(), kMasked ? p.window_left : -1, kMasked ? p.window_right : -1);
              const CtaBand band(mask, int64_t(t.n_block()) * kBlockN);
              d[8] = band.diag0, d[9] = band.left, d[10] = band.right;
              d[11] = band.key_end, d[12] = band.k_last, d[13] = band.diag_n0;
            }
            __syncwarp();
            auto smem_dq_tile = [&]() {
              const volatile int* v = ss.dq_tile;
              DqTile r{v[0], v[1], v[2], v[3], v[4], v[5], int64_t(uint32_t(v[6])) | int64_t(v[7]) << 32, CtaBand()};
              r.band.diag0 = v[8], r.band.left = v[9], r.band.right = v[10];
              r.band.key_end = v[11], r.band.k_last = v[12], r.band.diag_n0 = v[13];
              return r;
            };
            dq_writer_tiles<Cfg>(prm, ss.dq.data(), ss.dq_last, smem_dq_tile, dq_descending);
          }
          // The conversion bits are final: the consumers may start converting.
          if (kFusedConvert && prm.fused_convert) named_arrive(int(BarrierId::DqDone), Cfg::kDqSyncThreads);
        }
        return;
      }
    }
    if (threadIdx.x != 0) return;
    Tensor sQ = make_tensor(make_smem_ptr(ss.q.data()), typename Cfg::SmemLayoutQ{});
    Tensor sdO = make_tensor(make_smem_ptr(ss.dout.data()), typename Cfg::SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(ss.k.data()), typename Cfg::SmemLayoutK{});
    Tensor sV = make_tensor(make_smem_ptr(ss.v.data()), typename Cfg::SmemLayoutV{});
    prefetch_tma_descriptor(prm.tma_q.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_do.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_k.get_tma_descriptor());
    prefetch_tma_descriptor(prm.tma_v.get_tma_descriptor());
    const int rows_q = p.varlen ? int(p.total_q) : int(p.seqlen_q);
    const int rows_k = p.varlen ? int(p.total_k) : int(p.seqlen_k);
    const int batch_g = p.varlen ? 1 : p.batch;
    Tensor mQ = prm.tma_q.get_tma_tensor(make_shape(rows_q, kHeadDim, p.heads_q, batch_g));
    Tensor mdO = prm.tma_do.get_tma_tensor(make_shape(rows_q, kHeadDim, p.heads_q, batch_g));
    Tensor mK = prm.tma_k.get_tma_tensor(make_shape(rows_k, kHeadDim, p.heads_kv, batch_g));
    Tensor mV = prm.tma_v.get_tma_tensor(make_shape(rows_k, kHeadDim, p.heads_kv, batch_g));

    int stage = 0, phase = 0;
    uint32_t kv_phase = 0;
    bool first = true;
#pragma unroll 1
    for (int tile = tile0; tile < n_tiles; tile += tile_stride) {
      const StagedTile t{ss.pwork[0]};
      stage_tile_work<Cfg, kMasked>(prm, tile, t);
      const int group = p.group_size(), n_steps = t.m_count() * group;
      if (int64_t(t.n_block()) * kBlockN >= t.k_len() || n_steps == 0) continue;
      // The values the steps need, through smem (written here, read per step).
      {
        volatile int* dst = ss.prod_tile;
        dst[0] = t.hk(), dst[1] = p.varlen ? 0 : t.b(), dst[2] = t.m_first(), dst[3] = t.m_count();
        dst[4] = t.m_rot(), dst[5] = int(t.q_start());
        const int64_t ps = padded_row_start(p, t.b(), t.q_start());
        dst[6] = int(uint32_t(uint64_t(ps))), dst[7] = int(uint32_t(uint64_t(ps) >> 32));
      }
      auto tv = [&](int i) -> int { return static_cast<const volatile int*>(ss.prod_tile)[i]; };
      auto load_kv = [&]() {  // K and V of this tile, once
        // Persistent: the previous tile's last wgmma reading sK/sV has retired (see the table).
        if constexpr (kPersistent) cutlass::arch::ClusterBarrier::wait(&ss.bar_kv_empty, kv_phase ^ 1);
        // Coordinates recomputed here rather than kept live: the producer has 24 registers.
        // Read back from the staged tile (still this tile's: the next is staged after it).
        const int b_k = p.varlen ? 0 : t.b(), hk_k = t.hk(), n_block_k = t.n_block();
        const int64_t k_start = p.varlen ? t.k_start() : 0;
        auto tile_k = Shape<Int<kBlockN>, Int<kHeadDim>>{};
        Tensor gK = local_tile(domain_offset(make_coord(int(k_start), _0{}), mK(_, _, hk_k, b_k)), tile_k,
                               make_coord(n_block_k, _0{}));
        Tensor gV = local_tile(domain_offset(make_coord(int(k_start), _0{}), mV(_, _, hk_k, b_k)), tile_k,
                               make_coord(n_block_k, _0{}));
        auto [tKgK, tKsK] = tma_partition(prm.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK),
                                          group_modes<0, 2>(gK));
        auto [tVgV, tVsV] = tma_partition(prm.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV),
                                          group_modes<0, 2>(gV));
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_kv, Cfg::kBytesKV);
        copy(prm.tma_k.with(ss.bar_kv), tKgK, tKsK);
        copy(prm.tma_v.with(ss.bar_kv), tVgV, tVsV);
        kv_phase ^= 1;
      };
      // The first tile loads K/V before anything else (they are inputs: no wait for
      // bwd_preprocess); a later one after its first kStages - 1 Q/dO stages (-> the table above).
      const int kv_at = first ? -1 : min(n_steps, kStages - 1);
      if (first) {
        load_kv();
        pdl_wait();  // LSE*log2e and D: bwd_preprocess (K/V above are inputs)
        first = false;
      }

#pragma unroll 1  // unrolled, the loop does not fit the producer's 24 registers
      for (int step = 0; step < n_steps; ++step) {
        if (kPersistent && step == kv_at) load_kv();
        const int hk = tv(0), b_tma = tv(1), m_first = tv(2), m_count = tv(3), m_rot = tv(4), q_start = tv(5);
        const int64_t prow_seq = int64_t(uint64_t(uint32_t(tv(6))) | uint64_t(uint32_t(tv(7))) << 32);
        const int h = hk * group + step / m_count;
        const int m = rotated_m(step % m_count, m_first, m_count, m_rot);
        auto tile_q = Shape<Int<kBlockM>, Int<kHeadDim>>{};
        Tensor gQ = local_tile(domain_offset(make_coord(q_start, _0{}), mQ(_, _, h, b_tma)),
                               tile_q, make_coord(m, _0{}));
        Tensor gdO = local_tile(domain_offset(make_coord(q_start, _0{}), mdO(_, _, h, b_tma)),
                                tile_q, make_coord(m, _0{}));
        auto [tQgQ, tQsQ] = tma_partition(prm.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ),
                                          group_modes<0, 2>(gQ));
        auto [tdOgdO, tdOsdO] = tma_partition(prm.tma_do, _0{}, Layout<_1>{}, group_modes<0, 2>(sdO),
                                              group_modes<0, 2>(gdO));
        const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + int64_t(m) * kBlockM;

        // Parity phase^1: the first pass through the ring finds every stage free.
        cutlass::arch::ClusterBarrier::wait(&ss.bar_empty[stage], phase ^ 1);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_q[stage],
                                                                       Cfg::kBytesQ + Cfg::kBytesRow);
        copy(prm.tma_q.with(ss.bar_q[stage]), tQgQ, tQsQ(_, stage));
        SM90_BULK_COPY_G2S::copy(prm.ws.lse_log2 + prow, &ss.bar_q[stage], ss.lse[stage], Cfg::kBytesRow);
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ss.bar_do[stage],
                                                                       Cfg::kBytesQ + Cfg::kBytesRow);
        copy(prm.tma_do.with(ss.bar_do[stage]), tdOgdO, tdOsdO(_, stage));
        SM90_BULK_COPY_G2S::copy(prm.ws.dpsum + prow, &ss.bar_do[stage], ss.dpsum[stage], Cfg::kBytesRow);
        if (++stage == kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      if (kPersistent && kv_at == n_steps) load_kv();  // fewer steps than kStages - 1
    }
    return;
  }

  // ---------------- consumers ----------------
  cutlass::arch::warpgroup_reg_alloc<Cfg::kConsumerRegs>();
  // Before the first global access: the RED dQ path adds to the accumulator bwd_preprocess
  // zeroes, and the fused conversion reads it (their data otherwise comes through smem).
  pdl_wait();

  // What runs on across tiles (the table above bwd_main): ring stage and phase, the dS^T buffer
  // index, the K/V parity and the tile index. Persistent, they wait out the epilogue in this
  // warp's smem word (tile_state, kTileShift and below), not in registers: kept live around
  // the tile loop they spilled (d128), and within a tile stage/phase/buf are registers as before.
  // Every lane writes the same value, always as read, __syncwarp, write (set_tile_word), so no
  // lane reads a word another lane has already moved on. Without kPersistent every one of them
  // starts at 0 and the tile loop runs once.
  auto tile_word = [&]() -> volatile uint32_t& {
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return ss.tile_state[kPersistent ? (t - 128) / 32 : 0];
  };
  auto set_tile_word = [&](uint32_t v) {
    __syncwarp();
    tile_word() = v;
  };
  auto cur_tile = [&]() { return kPersistent ? int(tile_word() >> kTileShift) : 0; };
  if constexpr (kPersistent) set_tile_word(uint32_t(tile0) << kTileShift);
  auto next_tile = [&]() {
    const uint32_t v = uint32_t(tile_word()) + (uint32_t(tile_stride) << kTileShift);
    set_tile_word(v);
    return int(v >> kTileShift);
  };

  for (int tile = tile0; tile < n_tiles; tile = kPersistent ? next_tile() : n_tiles) {
  const TileWork w = tile_work<Cfg, kMasked>(prm, tile);
  if (w.n0 >= w.seq.k_len) continue;
  const int n_block = w.c.n_block, hk = w.c.hk, b = w.c.b;
  const core::SeqInfo seq = w.seq;
  const int64_t n0 = w.n0;
  const int m_first = w.m_first, m_count = w.m_count, n_steps = w.n_steps, m_rot = w.m_rot;
  const int group = p.group_size();
  const int64_t prow_seq = padded_row_start(p, b, seq.q_start);
  // (Built here, not where cta_band is: in the call below it cost d128 ~100 bytes of spills.)
  const core::Mask mask = tile_mask<Cfg, kMasked>(p, seq);
  // Persistent: the smem tensors and wgmma descriptors are rebuilt per tile from a base address
  // the compiler cannot see through, so they are not hoisted out of the tile loop and kept live
  // through the epilogue beside the dK/dV accumulators (d128: 364 -> 144 bytes of spill stores
  // with this and the opaque thread index below).
  SharedStorage& st = *reinterpret_cast<SharedStorage*>(opaque_smem_ptr<kPersistent>(smem_raw));
  // The same for the thread index: what derives from it (fragment coordinates, mask offsets,
  // stmatrix addresses) is dead during the epilogue instead of hoisted out of the tile loop.
  uint32_t tid_raw = threadIdx.x;
  if constexpr (kPersistent) asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid_raw));
  const int tid = int(tid_raw) - 128;
  Tensor sQ = make_tensor(make_smem_ptr(st.q.data()), typename Cfg::SmemLayoutQ{});
  Tensor sdO = make_tensor(make_smem_ptr(st.dout.data()), typename Cfg::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(st.k.data()), typename Cfg::SmemLayoutK{});
  Tensor sV = make_tensor(make_smem_ptr(st.v.data()), typename Cfg::SmemLayoutV{});
  Tensor sQt = make_tensor(make_smem_ptr(st.q.data()), typename Cfg::SmemLayoutQt{});
  Tensor sdOt = make_tensor(make_smem_ptr(st.dout.data()), typename Cfg::SmemLayoutQt{});
  Tensor sKt = make_tensor(make_smem_ptr(st.k.data()), typename Cfg::SmemLayoutKt{});
  Tensor sdSt = make_tensor(make_smem_ptr(st.ds.data()), typename Cfg::SmemLayoutdSt{});
  Tensor sdS = make_tensor(make_smem_ptr(st.ds.data()), typename Cfg::SmemLayoutdS{});

  typename Cfg::MmaSdP mma_sdp;
  typename Cfg::MmadKV mma_dkv;
  typename Cfg::MmadQ mma_dq;
  auto thr_sdp = mma_sdp.get_thread_slice(tid);
  auto thr_dkv = mma_dkv.get_thread_slice(tid);
  auto thr_dq = mma_dq.get_thread_slice(tid);

  Tensor tSrK = thr_sdp.partition_fragment_A(sK);     // (MMA, MMA_M, MMA_K)
  Tensor tSrQ = thr_sdp.partition_fragment_B(sQ);     // (MMA, MMA_N, MMA_K, stages)
  Tensor tdPrV = thr_sdp.partition_fragment_A(sV);
  Tensor tdPrdO = thr_sdp.partition_fragment_B(sdO);
  Tensor tdVrdO = thr_dkv.partition_fragment_B(sdOt);  // (MMA, MMA_N, MMA_K, stages)
  Tensor tdKrQ = thr_dkv.partition_fragment_B(sQt);
  Tensor tdQrdS = thr_dq.partition_fragment_A(sdS);   // (MMA, MMA_M, MMA_K, buffers)
  Tensor tdQrK = thr_dq.partition_fragment_B(sKt);

  Tensor tdVrdV = partition_fragment_C(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  Tensor tdKrdK = partition_fragment_C(mma_dkv, Shape<Int<kBlockN>, Int<kHeadDim>>{});
  clear(tdVrdV);
  clear(tdKrdK);

  // Element coordinates of the accumulators: S^T is (key, query), dQ is (query, head dim).
  Tensor tScS = thr_sdp.partition_C(make_identity_tensor(Shape<Int<kBlockN>, Int<kBlockM>>{}));

  auto copy_ds = make_tiled_copy_C(Copy_Atom<AutoVectorizingCopyWithAssumedAlignment<128>, T>{}, mma_sdp);
  auto thr_copy_ds = copy_ds.get_thread_slice(tid);
  Tensor tdSsdS = thr_copy_ds.partition_D(sdSt);  // (CPY, CPY_M, CPY_N, buffers)
  // Split-D only: P^T in smem (the SS operands of dV/dK are partitioned where used).
  Tensor sPt = make_tensor(make_smem_ptr(st.pt.data()), typename Cfg::SmemLayoutdSt{});

  // kDsStsm: the lane's dS^T stmatrix address (buffer 0, column pair 0); unused otherwise. P^T
  // (split-D) sits at a compile-time distance from dS^T in the same layout.
  const uint32_t ds_base = Cfg::kDsStsm ? ds_stsm_lane_base<Cfg::kSplitD>(st.ds.data(), tid) : 0u;
  const uint32_t pt_from_ds =
      uint32_t(reinterpret_cast<const char*>(st.pt.data()) - reinterpret_cast<const char*>(st.ds.data()));
  // One S^T-shaped bf16 tile (P^T or dS^T) to smem buffer `buf` by stmatrix. The packed register
  // 2j + h holds rows 8h + lane/4, query columns 8j + 2(lane%4) + {0, 1} (the wgmma accumulator
  // layout), i.e. matrix (h, j) of stmatrix. Query columns 64.. (kBlockM = 128) are in the second
  // SW128 atom column, kBlockN * 64 elements further on; the offsets added are multiples of 1024
  // bytes, so the XOR (bits 4-6) applies to them unchanged.
  auto stsm_tile = [&](uint32_t tile_base, auto& r, int buffer) {
    static_assert(decltype(size(r))::value == Cfg::kSdPValues, "one S^T accumulator's worth");
    Tensor r32 = recast<uint32_t>(r);
    const uint32_t base = tile_base + uint32_t(buffer) * uint32_t(kBlockN * kBlockM * sizeof(T));
    CUTE_UNROLL
    for (int j = 0; j < Cfg::kSdPValues / 4; j += 2)
      stmatrix_x4((base + uint32_t((j / 8) * kBlockN * 64 * sizeof(T))) ^ uint32_t(16 * (j % 8)), r32(2 * j),
                  r32(2 * j + 1), r32(2 * j + 2), r32(2 * j + 3));
  };

  // With kPrefetchS the S^T accumulators live across steps (issued at the end of the previous
  // step). Not with softcap: its P^T/dS^T loop keeps tanh's derivative per score, and ptxas then
  // serialised the wgmmas (C7511, d64).
  constexpr bool kPrefetchS = Cfg::kPrefetchS && !kSoftcap;
  Tensor tSrS_carried = partition_fragment_C(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
  // dQ_blk (fragment order) to the staging buffer once the dQ warp has finished reading the
  // previous one (conflict-free 16-byte stores), then handed to the dQ warp, which issues the
  // reduce-add (and in the deterministic mode waits for its turn) while we go on.
  auto stage_dq = [&](auto const& acc) {
    consumer_sync(int(BarrierId::DqEmpty), Cfg::kDqSyncThreads);
    // The thread index is re-read (volatile) so that this address is not kept live across
    // the loop in a register the softcap variant does not have.
    uint32_t tid_now;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid_now));
    float* sdq = st.dq.data() + Cfg::dq_frag_offset(int(tid_now) - 128, 0);
    CUTE_UNROLL
    for (int i = 0; i < size(acc); i += 4)
      *reinterpret_cast<float4*>(sdq + i * 128) = make_float4(acc(i), acc(i + 1), acc(i + 2), acc(i + 3));
    cutlass::arch::fence_view_async_shared();  // generic-proxy stores -> the TMA unit's reads
    named_arrive(int(BarrierId::DqFull), Cfg::kDqSyncThreads);
  };
  // kDqDefer: the previous step's dQ_blk, staged in this step (see BwdConfig::kDqDefer).
  Tensor tdQrdQ_prev = partition_fragment_C(mma_dq, Shape<Int<kBlockM>, Int<kHeadDim>>{});
  const uint32_t carried = kPersistent ? uint32_t(tile_word()) : 0u;
  if constexpr (kPersistent) set_tile_word(carried | uint32_t(n_steps > 0) << kHasStepsBit);
  int stage = int(carried & kStageMask), phase = int(carried >> kPhaseBit) & 1, buf = int(carried >> kBufBit) & 1;
  if (n_steps > 0) cutlass::arch::ClusterBarrier::wait(&ss.bar_kv, (carried >> kKvBit) & 1u);

  const CtaBand cta_band_r(mask, n0);
  // Persistent: the loop's per-tile scalars through this warp's smem copy (written by every lane,
  // same values, after the warp's reads of the previous tile's: __syncwarp); one tile per CTA:
  // the registers, as before.
  auto cons_slot = [&]() -> volatile int* {
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    return ss.cons_tile[kPersistent ? (t - 128) / 32 : 0];
  };
  if constexpr (kPersistent) {
    __syncwarp();
    volatile int* c = cons_slot();
    c[0] = hk, c[1] = m_first, c[2] = m_count, c[3] = m_rot;
    c[4] = cta_band_r.diag0, c[5] = cta_band_r.left, c[6] = cta_band_r.right;
    c[7] = cta_band_r.key_end, c[8] = cta_band_r.k_last, c[9] = cta_band_r.diag_n0;
    c[10] = group;  // a division: kept in a register across the loop it was spilled (d128)
  }
  auto cval = [&](int i, int reg) -> int {
    if constexpr (kPersistent) return cons_slot()[i];
    return reg;
  };
  auto cband = [&]() -> CtaBand {
    if constexpr (!kPersistent) return cta_band_r;
    CtaBand r;
    volatile int* c = cons_slot();
    r.diag0 = c[4], r.left = c[5], r.right = c[6], r.key_end = c[7], r.k_last = c[8], r.diag_n0 = c[9];
    return r;
  };
  if constexpr (kPrefetchS) {
    if (n_steps > 0) {
      cutlass::arch::ClusterBarrier::wait(&ss.bar_q[stage], phase);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, stage), tSrS_carried);
      warpgroup_wait<0>();
    }
  }
  int steps_left = n_steps;
  for (int h = cval(0, hk) * cval(10, group); h < (cval(0, hk) + 1) * cval(10, group); ++h) {
  for (int mi = 0; mi < cval(2, m_count); ++mi) {
    const int i0 = rotated_m(mi, cval(1, m_first), cval(2, m_count), cval(3, m_rot)) * kBlockM;
    const BlockBand band = cband().block(i0);
    const bool need_mask = !band.template whole_tile_visible<kBlockM, kBlockN>();
    --steps_left;

    // Without kPrefetchS the accumulators are a fresh tensor per step: the wgmma's accumulator
    // operands are read-write, so a tensor declared outside the loop would keep the previous
    // step's 32 values live across the back edge (at d128 that alone spilled).
    Tensor tSrS_step = partition_fragment_C(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
    auto& tSrS = select_ref<kPrefetchS>(tSrS_carried, tSrS_step);
    Tensor tdPrdP = partition_fragment_C(mma_sdp, Shape<Int<kBlockN>, Int<kBlockM>>{});
    if constexpr (!kPrefetchS) {
      cutlass::arch::ClusterBarrier::wait(&ss.bar_q[stage], phase);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, stage), tSrS);
    }
    // kDqDefer: every step but the first stages the previous step's dQ_blk under this step's
    // S^T (1), or under S^T and dP^T (2).
    if constexpr (Cfg::kDqDefer == 1) {
      if (steps_left + 1 < n_steps) stage_dq(tdQrdQ_prev);
    }
    cutlass::arch::ClusterBarrier::wait(&ss.bar_do[stage], phase);
    wgmma_batch<true>(mma_sdp, tdPrV, tdPrdO(_, _, _, stage), tdPrdP);
    if constexpr (Cfg::kDqDefer == 2) {
      if (steps_left + 1 < n_steps) stage_dq(tdQrdQ_prev);
    }
    // Overlap: P is computed (and dV issued) while the dP^T product is still running. Softcap
    // needs tanh's derivative in dS, so it waits for dP^T and does both in one pass instead of
    // keeping 32 more registers alive.
    constexpr bool kOverlap = Cfg::kOverlapSdP && !kSoftcap;
    warpgroup_wait<kOverlap ? 1 : 0>();

    // P^T (and without overlap dS^T), element-wise; masked entries get P = 0 (hence dS = 0).
    const float* lse = ss.lse[stage];
    const float* dpsum = ss.dpsum[stage];
    // kMaskTile: this tile needs the per-element mask. With kMaskSplit the loop exists twice and
    // the branch is uniform per step; without it, one loop tests need_mask per element.
    auto scores_to_p = [&](auto mask_tile) {
      constexpr bool kMaskTile = decltype(mask_tile)::value;
      // kBlockM = 128: the mask test in thread-relative coordinates (BlockBand::relative).
      const int kj_t = get<0>(tScS(0)), q_t = get<1>(tScS(0));
      const BlockBand rband = band.relative(kj_t, q_t);
      auto visible = [&](int qi, int kj) {
        if constexpr (kBlockM == 128) return rband.allowed(qi - q_t, kj - kj_t);
        else return band.allowed(qi, kj);
      };
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) {
        const int kj = get<0>(tScS(i)), qi = get<1>(tScS(i));
        float x, grad = 1.f;
        if constexpr (kSoftcap) {
          // tanh(u) = 1 - 2 / (2^(2u log2 e) + 1): absolute error ~1e-7, far cheaper than tanhf;
          // |u| <= 15 keeps 2^(...) finite (tanh(15) is 1 in fp32).
          const float u = fminf(fmaxf(tSrS(i) * prm.cap_inv, -15.f), 15.f);
          const float t = 1.f - 2.f / (exp2f(u * (2.f * core::kLog2e)) + 1.f);
          x = t * prm.cap_log2;
          grad = 1.f - t * t;  // d(softcap*tanh(u))/du; the softmax scale is applied at the end
        } else {
          x = tSrS(i) * prm.scale_log2;
        }
        float pr;
        if constexpr (Cfg::kMaskSplit && !kSoftcap) {
          // One FFMA instead of FMUL + FADD (the mask select no longer sits between them).
          pr = exp2f(fmaf(tSrS(i), prm.scale_log2, -lse[qi]));
          if (kMaskTile && !visible(qi, kj)) pr = 0.f;
        } else if constexpr (Cfg::kMaskSplit) {
          pr = (kMaskTile && !visible(qi, kj)) ? 0.f : exp2f(x - lse[qi]);
        } else {
          if (need_mask && !visible(qi, kj)) x = -INFINITY;
          pr = exp2f(x - lse[qi]);
        }
        tSrS(i) = pr;
        if constexpr (!kOverlap) tdPrdP(i) = pr * (tdPrdP(i) - dpsum[qi]) * grad;
      }
    };
    if (!Cfg::kMaskSplit || need_mask)
      scores_to_p(std::true_type{});
    else
      scores_to_p(std::false_type{});
    Tensor rP = make_tensor<T>(tSrS.layout());
    CUTE_UNROLL
    for (int i = 0; i < size(tSrS); ++i) rP(i) = T(tSrS(i));
    if constexpr (!Cfg::kSplitD) {
      // dV += P^T dO with the A operand straight from registers.
      Tensor tdVrP = make_tensor(rP.data(), acc_as_a_operand(tSrS.layout()));
      wgmma_batch<false>(mma_dkv, tdVrP, tdVrdO(_, _, _, stage), tdVrdV);
    } else {
      // P^T to smem: dV reads both WGs' query halves.
      if constexpr (Cfg::kDsStsm) {
        stsm_tile(ds_base + pt_from_ds, rP, buf);
      } else {
        Tensor tPsPt = thr_copy_ds.partition_D(sPt);
        copy(copy_ds, thr_copy_ds.retile_S(rP), tPsPt(_, _, _, buf));
      }
      if constexpr (Cfg::kDvEarly) {
        // dV as soon as both halves of P^T are in smem: it runs while dS^T is computed and stored.
        // The double-buffered P^T needs no second barrier for its reuse: a WG writes buffer b
        // again two steps on, after passing the other WG's next PtWritten, which that WG reaches
        // only after waiting for all of its wgmmas of this step (this dV among them).
        cutlass::arch::fence_view_async_shared();
        consumer_sync(int(BarrierId::PtWritten), kConsumerThreads);
        Tensor tdVrPt = thr_dkv.partition_fragment_A(sPt);  // (MMA, MMA_M, MMA_K, buffers)
        wgmma_batch<false>(mma_dkv, tdVrPt(_, _, _, buf), tdVrdO(_, _, _, stage), tdVrdV);
      }
    }

    if constexpr (kOverlap) {
      // dP^T is done (batches retire in order); dV may still run (split-D issued none, or with
      // kDvEarly the SS one just above)
      warpgroup_wait<(Cfg::kSplitD && !Cfg::kDvEarly) ? 0 : 1>();
      CUTE_UNROLL
      for (int i = 0; i < size(tSrS); ++i) {
        const int qi = get<1>(tScS(i));
        tdPrdP(i) = tSrS(i) * (tdPrdP(i) - dpsum[qi]);
      }
    }
    Tensor rdS = make_tensor<T>(tdPrdP.layout());
    CUTE_UNROLL
    for (int i = 0; i < size(tdPrdP); ++i) rdS(i) = T(tdPrdP(i));
    // dK += dS^T Q, A from registers as well (kDqBeforeDk: after dQ, below).
    // (Generic so that split-D instances, whose dK is an SS product, never instantiate it.)
    auto issue_dk = [&](auto) {
      Tensor tdKrdS = make_tensor(rdS.data(), acc_as_a_operand(tdPrdP.layout()));
      wgmma_batch<false>(mma_dkv, tdKrdS, tdKrQ(_, _, _, stage), tdKrdK);
    };
    if constexpr (!Cfg::kSplitD && !Cfg::kDqBeforeDk) issue_dk(0);

    // dS^T to smem for dQ (both WGs read both halves). The fence makes the generic-proxy stores
    // visible to the async proxy (wgmma reads smem through it).
    if constexpr (Cfg::kDsStsm) {
      stsm_tile(ds_base, rdS, buf);
    } else {
      copy(copy_ds, thr_copy_ds.retile_S(rdS), tdSsdS(_, _, _, buf));
    }
    cutlass::arch::fence_view_async_shared();
    consumer_sync(int(BarrierId::DsWritten), kConsumerThreads);
    Tensor tdQrdQ = partition_fragment_C(mma_dq, Shape<Int<kBlockM>, Int<kHeadDim>>{});
    static_assert(decltype(size(tdQrdQ))::value == Cfg::kDqFragValues);
    if constexpr (Cfg::kSplitD) {
      // Both query halves of P^T and dS^T are in smem now (FA_SM90_BWD_SPLITD_ORDER: the order).
      Tensor tdVrPt = thr_dkv.partition_fragment_A(sPt);  // (MMA, MMA_M, MMA_K, buffers)
      Tensor tdKrdSt = thr_dkv.partition_fragment_A(sdSt);
      if constexpr (Cfg::kDqFirst) wgmma_batch<true>(mma_dq, tdQrdS(_, _, _, buf), tdQrK, tdQrdQ);
      if constexpr (!Cfg::kDvEarly) wgmma_batch<false>(mma_dkv, tdVrPt(_, _, _, buf), tdVrdO(_, _, _, stage), tdVrdV);
      wgmma_batch<false>(mma_dkv, tdKrdSt(_, _, _, buf), tdKrQ(_, _, _, stage), tdKrdK);
    }
    if constexpr (!Cfg::kDqFirst) {
      // The dQ operands' descriptors from a fresh opaque base, here rather than loop-invariant
      // registers (kept live across the step loop they were spilled, d128).
      SharedStorage& s2 = *reinterpret_cast<SharedStorage*>(opaque_smem_ptr<kPersistent>(smem_raw));
      Tensor tdQrdS2 = thr_dq.partition_fragment_A(make_tensor(make_smem_ptr(s2.ds.data()), typename Cfg::SmemLayoutdS{}));
      Tensor tdQrK2 = thr_dq.partition_fragment_B(make_tensor(make_smem_ptr(s2.k.data()), typename Cfg::SmemLayoutKt{}));
      wgmma_batch<true>(mma_dq, tdQrdS2(_, _, _, buf), tdQrK2, tdQrdQ);
    }
    if constexpr (Cfg::kDqBeforeDk) issue_dk(0);  // dQ is waited for below, with dK in flight
    if constexpr (kPrefetchS) {
      // Wait for dV/dK first (their register operands P^T, dS^T are then free), so that only
      // dQ's and the next S^T's accumulators are in flight, then queue the next S^T behind dQ.
      // It is retired at the end of this iteration (after the dQ staging), not in the next one:
      // ptxas does not follow wgmma groups across the loop's back edge and serialised every
      // wgmma (C7514/C7515) when the group was in flight there. Issued after the last step too
      // (reading a stage whose loads have all completed; the result is dropped), so that every
      // path has the same groups in flight. (Persistent: the producer may already be loading
      // the next tile's Q into that stage; the dropped result may then read a mix.)
      warpgroup_wait<1>();
      const int next = stage + 1 == kStages ? 0 : stage + 1;
      if (steps_left > 0) cutlass::arch::ClusterBarrier::wait(&ss.bar_q[next], next == 0 ? phase ^ 1 : phase);
      wgmma_batch<true>(mma_sdp, tSrK, tSrQ(_, _, _, next), tSrS);
      warpgroup_wait<1>();  // dQ done; the next S^T may still run
    } else if constexpr (!Cfg::kDqFirst && !Cfg::kDqBeforeDk) {
      warpgroup_wait<0>();
    }

    // dQ_blk to the fp32 accumulator in the workspace (staged for the dQ warp, or REDs).
    auto add_dq = [&]() {
      if constexpr (Cfg::kDqDefer > 0) {
        // Kept for the next step (or after the loop) in registers that no wgmma defines: ends
        // the per-step accumulator's live range here. The copy is an asm mov because a plain
        // one is coalesced away, and ptxas, which does not follow wgmma groups across the back
        // edge, then injected a warpgroup.wait before the staging's first read (C7517), i.e.
        // waited for this step's S^T there.
        CUTE_UNROLL
        for (int i = 0; i < size(tdQrdQ); ++i) asm volatile("mov.b32 %0, %1;\n" : "=f"(tdQrdQ_prev(i)) : "f"(tdQrdQ(i)));
      } else if constexpr (Cfg::kDqTma) {
        stage_dq(tdQrdQ);
      } else {
        // dQ_blk added to the fp32 accumulator from registers. Rows past the sequence end are added
        // too: they are padding of this (head, sequence) that nobody reads, and their dS is 0.
        const int64_t prow = int64_t(h) * prm.ws.rows_pad + prow_seq + i0;
        float* dq_blk = prm.ws.dq_acc + prow * kHeadDim;
        int* turn = prm.ws.dq_turn + prow / kTurnRows;
        int my_turn = 0;
        if (p.deterministic) {
          my_turn = cband().dq_turn(i0, n_block, kBlockM, kBlockN, int(seq.q_len), dq_descending);
          if (tid == 0)
            while (load_acquire(turn) != my_turn) __nanosleep(32);
          consumer_sync(int(BarrierId::DqTurn), kConsumerThreads);
        }
        // One base pointer plus compile-time offsets (folded into the REDs' immediates).
        float* gdq = dq_blk + Cfg::dq_frag_offset(tid, 0);
        CUTE_UNROLL
        for (int i = 0; i < size(tdQrdQ); i += 4)
          red_add_v4(gdq + i * 128, tdQrdQ(i), tdQrdQ(i + 1), tdQrdQ(i + 2), tdQrdQ(i + 3));
        if (p.deterministic) {
          // The barrier orders every consumer's REDs before thread 0's release store (the same
          // pattern as CUTLASS's GenericBarrier), so no thread needs a full fence of its own.
          consumer_sync(int(BarrierId::DqTurn), kConsumerThreads);
          if (tid == 0) store_release(turn, my_turn + 1);
        }
      }
    };
    if constexpr (Cfg::kDqBeforeDk) {
      // Groups in order: (dV), dQ, dK. dQ_blk leaves while dK runs; dK reads this stage's Q, so
      // the stage goes back only once it has retired.
      warpgroup_wait<1>();
      add_dq();
      warpgroup_wait<0>();
      cutlass::arch::ClusterBarrier::arrive(&ss.bar_empty[stage]);
    } else if constexpr (Cfg::kDqFirst) {
      // dQ has retired (and the early dV, which was issued before it); dK (and with order 1 dV)
      // still runs while the REDs are issued. The stage goes back once those retire too.
      warpgroup_wait<Cfg::kDvEarly ? 1 : 2>();
      add_dq();
      warpgroup_wait<0>();
      cutlass::arch::ClusterBarrier::arrive(&ss.bar_empty[stage]);
    } else {
      // Every wgmma reading this stage's Q/dO has retired: hand the stage back to the producer.
      cutlass::arch::ClusterBarrier::arrive(&ss.bar_empty[stage]);
      add_dq();
    }

    if constexpr (kPrefetchS) warpgroup_wait<0>();  // the next step's S^T (see above)
    buf ^= 1;
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  }
  if constexpr (kPersistent) {
    const uint32_t t = uint32_t(tile_word());
    const uint32_t had_steps = (t >> kHasStepsBit) & 1u;
    // Every wgmma of this tile has retired (each step ends waiting for all of its own): sK/sV
    // may take the next tile's K/V while we finish this one.
    if (had_steps) cutlass::arch::ClusterBarrier::arrive(&ss.bar_kv_empty);
    set_tile_word((t & ~((1u << kTileShift) - 1u)) | (((t >> kKvBit) ^ had_steps) & 1u) << kKvBit |
                  uint32_t(buf) << kBufBit | uint32_t(phase) << kPhaseBit | uint32_t(stage));
  }
  if constexpr (Cfg::kDqDefer > 0) {
    if (n_steps > 0) stage_dq(tdQrdQ_prev);  // the last step's dQ_blk
  }

  // Epilogue: dK (times the softmax scale, which dS^T left out) and dV of the valid keys.
  Tensor tdKVc = thr_dkv.partition_C(make_identity_tensor(Shape<Int<kBlockN>, Int<kHeadDim>>{}));
  T* dk = static_cast<T*>(p.dk);
  T* dv = static_cast<T*>(p.dv);
  const CtaCoord ce = tile_coord<Cfg, kMasked>(prm, cur_tile());  // = (n_block, hk, b), recomputed
  const int64_t n0_epi = int64_t(ce.n_block) * kBlockN;         // = n0
  const int b_e = ce.b, hk_e = ce.hk;
  // Recomputed (varlen: two loads) rather than kept live across the main loop.
  const core::SeqInfo seq_e = core::seq_info(p, b_e);
  if constexpr (Cfg::kEpilogueRows) {
    // The thread's values sit in two key rows (kj0, kj0 + 8) at columns c0 + 8j + {0, 1}: value
    // i = e + 2h + 4j of the one-atom wgmma accumulator (checked against the MMA partition by
    // scripts/check_sm90_bwd_layout.cu). One row address per row instead of a 64-bit offset
    // computation per stored pair (~25 instructions each, ~4% of a d64 N1k CTA's instructions).
    static_assert(decltype(size<1>(tdKrdK))::value == 1 && decltype(size<2>(tdKrdK))::value == 1,
                  "one wgmma atom per thread and accumulator");
    const int kj0 = get<0>(tdKVc(0)), c0 = get<1>(tdKVc(0));
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      const int64_t key = n0_epi + kj0 + 8 * h;
      if (key < seq_e.k_len) {
        T* dk_row = dk + p.dk_str.offset(b_e, seq_e.k_start + key, hk_e) + c0;
        T* dv_row = dv + p.dv_str.offset(b_e, seq_e.k_start + key, hk_e) + c0;
        CUTE_UNROLL
        for (int i = 2 * h; i < size(tdKrdK); i += 4) {
          store_pair(dk_row + 8 * (i / 4), tdKrdK(i) * p.scale, tdKrdK(i + 1) * p.scale);
          store_pair(dv_row + 8 * (i / 4), tdVrdV(i), tdVrdV(i + 1));
        }
      }
    }
  } else {
    CUTE_UNROLL
    for (int i = 0; i < size(tdKrdK); i += 2) {
      const int kj = get<0>(tdKVc(i)), c = get<1>(tdKVc(i));
      const int64_t key = n0_epi + kj;
      if (key < seq_e.k_len) {
        store_pair(dk + p.dk_str.offset(b_e, seq_e.k_start + key, hk_e) + c, tdKrdK(i) * p.scale,
                   tdKrdK(i + 1) * p.scale);
        store_pair(dv + p.dv_str.offset(b_e, seq_e.k_start + key, hk_e) + c, tdVrdV(i), tdVrdV(i + 1));
      }
    }
  }
  if constexpr (kFusedConvert && Cfg::kDqTma) {
    if (prm.fused_convert) {
      consumer_sync(int(BarrierId::DqDone), Cfg::kDqSyncThreads);
      __threadfence();  // with the dQ warp's acquiring atom: the other CTAs' adds before our reads
      uint32_t tid_now;
      asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid_now));
      fused_convert_dq_tile<Cfg, kMasked>(prm, ss.dq_last, reinterpret_cast<uint16_t*>(ss.dq.data()),
                                     int(tid_now) - 128, cur_tile());
    }
  }
  }  // tile loop
}


}  // namespace fa::cuda::sm90_bwd
