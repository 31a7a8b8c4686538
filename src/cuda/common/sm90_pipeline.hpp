// Hopper (sm90a) synchronisation primitives for the warp-specialised kernels: a multi-stage
// shared-memory ring filled by TMA (PipelineTma) and the named-barrier ids the consumer warpgroups
// use to take turns (ping-pong). Both are thin, explicit wrappers over mbarrier / bar.sync so the
// kernel reads as "acquire slot, load, wait full, compute, release".
#pragma once

#include <cutlass/arch/barrier.h>

#include <cstdint>

namespace fa::cuda::sm90 {

// Iteration `it` of a kStages ring: its slot and the parity of its round (the mbarrier phase).
template <int kStages>
struct RingIndex {
  __device__ static int stage(int it) { return it % kStages; }
  __device__ static uint32_t parity(int it) { return uint32_t(it / kStages) & 1u; }
};

// A ring of kStages slots. Slot s has two mbarriers:
//   full[s]  — the producer arrives once with the expected byte count; TMA completes the
//              transaction. Consumers wait on it.
//   empty[s] — every consumer thread arrives after its last read of the slot (its wgmma has
//              retired). The producer waits on it before overwriting the slot.
// Iteration `it` uses slot it % kStages in round it / kStages; the round's parity is the mbarrier
// phase. The producer waits for the *previous* round's release, so on a fresh barrier (phase 0 not
// yet complete) a wait on parity 1 returns at once: every slot starts empty.
template <int kStages>
struct PipelineTma : RingIndex<kStages> {
  using RingIndex<kStages>::stage;
  using RingIndex<kStages>::parity;
  using Barrier = cutlass::arch::ClusterBarrier;
  using TxBarrier = cutlass::arch::ClusterTransactionBarrier;
  uint64_t full[kStages];
  uint64_t empty[kStages];

  // One thread initialises; the caller fences (cutlass::arch::fence_barrier_init) and syncs.
  __device__ void init(uint32_t consumer_arrivals) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      Barrier::init(&full[s], 1);
      Barrier::init(&empty[s], consumer_arrivals);
    }
  }

  // Producer: wait until slot `it` is free, then announce the bytes TMA will deliver into it.
  // Returns the full barrier the TMA copies must signal.
  __device__ uint64_t& producer_acquire(int it, uint32_t tx_bytes) {
    Barrier::wait(&empty[stage(it)], parity(it) ^ 1u);
    TxBarrier::arrive_and_expect_tx(&full[stage(it)], tx_bytes);
    return full[stage(it)];
  }
  __device__ void consumer_wait(int it) { Barrier::wait(&full[stage(it)], parity(it)); }
  __device__ void consumer_release(int it) { Barrier::arrive(&empty[stage(it)]); }

  // Multicast ring (a cluster's CTAs fill each other's slots): a slot's producer in either CTA
  // overwrites it in both, so it must hear from every consumer of the cluster. One thread per
  // consumer warpgroup arrives on the slot's empty barrier in CTA `cta` of the cluster (itself
  // included), after the warpgroup's wgmma reading the slot has retired: a wgmma and its
  // completion are warpgroup-wide, so one arrival stands for all 128 threads (init with
  // consumer warpgroups × cluster size arrivals).
  __device__ void consumer_release_in(int it, uint32_t cta) { Barrier::arrive(&empty[stage(it)], cta, 1u); }
  // Producer tail of a multicast ring: returns once every consumer of the cluster has released
  // every slot this producer filled (call for the kStages iterations after the last one), so no
  // peer arrives on this CTA's barriers after it has exited.
  __device__ void producer_drain(int it) { Barrier::wait(&empty[stage(it)], parity(it) ^ 1u); }
};

// The same ring filled by cp.async instead of TMA (the forward's no-TMA ablation): every one of
// `producer_threads` copies part of a slot and arrives on full[s] through
// cp.async.mbarrier.arrive.noinc, which fires once all of that thread's earlier cp.async have
// landed, so full[s] completes when the whole slot is in shared memory. cp.async writes through
// the generic proxy: consumers fence (fence.proxy.async) before wgmma reads the slot.
template <int kStages>
struct PipelineCpAsync : RingIndex<kStages> {
  using RingIndex<kStages>::stage;
  using RingIndex<kStages>::parity;
  using Barrier = cutlass::arch::ClusterBarrier;
  uint64_t full[kStages];
  uint64_t empty[kStages];

  __device__ void init(uint32_t producer_threads, uint32_t consumer_arrivals) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      Barrier::init(&full[s], producer_threads);
      Barrier::init(&empty[s], consumer_arrivals);
    }
  }

  __device__ void producer_acquire(int it) { Barrier::wait(&empty[stage(it)], parity(it) ^ 1u); }
  // After this thread has issued its cp.async for slot `it`.
  __device__ void producer_commit(int it) { cutlass::arch::cpasync_barrier_arrive_noinc(&full[stage(it)]); }
  __device__ void consumer_wait(int it) { Barrier::wait(&full[stage(it)], parity(it)); }
  __device__ void consumer_release(int it) { Barrier::arrive(&empty[stage(it)]); }
};

// A ring of kStages small shared-memory records that one producer thread writes with ordinary
// stores and the consumer warps read: the forward's tile handoff (FA_SM90_FWD_TILE_HANDOFF), where
// the producer, which walks the tile schedule anyway, passes each tile's coordinates and key range
// to the consumers so they do not walk it themselves. full[s]: the producer's one arrival
// (mbarrier.arrive releases its stores at CTA scope; the consumers' wait acquires them).
// empty[s]: one arrival per consumer warp after its last read of the record.
// CUTLASS's barrier asm has no "memory" clobber, so nothing stops the compiler from moving
// ordinary shared-memory loads and stores across it; the empty asm statements with a clobber below
// pin the record accesses between the barriers (the SASS of session 31 had them in order either
// way), and the mbarrier instructions order them in hardware (arrive releases, wait acquires).
// racecheck cannot check this: it reports any producer → consumer handoff that is not ordered by a
// barrier every participant waits on (scripts/gpu/racecheck_probe.sh).
template <class Record, int kStages>
struct HandoffRing : RingIndex<kStages> {
  using RingIndex<kStages>::stage;
  using RingIndex<kStages>::parity;
  using Barrier = cutlass::arch::ClusterBarrier;
  Record slot[kStages];
  uint64_t full[kStages];
  uint64_t empty[kStages];

  __device__ void init(uint32_t consumer_warps) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      Barrier::init(&full[s], 1);
      Barrier::init(&empty[s], consumer_warps);
    }
  }

  // Producer thread: wait until record `it` is free, write it, publish it.
  __device__ void publish(int it, Record const& r) {
    Barrier::wait(&empty[stage(it)], parity(it) ^ 1u);
    asm volatile("" ::: "memory");
    slot[stage(it)] = r;
    asm volatile("" ::: "memory");
    Barrier::arrive(&full[stage(it)]);
  }
  // Consumer thread: the record of iteration `it`, once published (read it before release).
  __device__ Record const& wait(int it) {
    Barrier::wait(&full[stage(it)], parity(it));
    asm volatile("" ::: "memory");
    return slot[stage(it)];
  }
  // Every thread of a consumer warp, once none of them reads record `it` any more.
  __device__ void release(int it) {
    __syncwarp();  // (a compiler barrier as well)
    if (threadIdx.x % 32 == 0) Barrier::arrive(&empty[stage(it)]);
  }
};

// Hardware named barriers used by the forward kernel (ids above CUTLASS's reserved ones are
// taken by NamedBarrier's "user" interface, which adds the reserved offset itself).
enum class FwdNamedBarrier : uint32_t {
  WarpSchedulerWG1 = 0,  // ping-pong: consumer warpgroup 1 may issue its GEMMs
  WarpSchedulerWG2 = 1,  // ping-pong: consumer warpgroup 2 may issue its GEMMs
};

}  // namespace fa::cuda::sm90
