// Does compute-sanitizer's racecheck take an mbarrier arrive → wait as ordering ordinary
// shared-memory stores before loads? The forward's tile handoff (HandoffRing) relies on it, and
// racecheck flagged its records (session 31). Three kernels, one CTA of two warps each:
//   mbar  — warp 0's lane 0 writes a 2-record ring with plain stores and arrives on the record's
//           full mbarrier; warp 1 waits on it, reads, and arrives on the empty mbarrier the writer
//           waits on before reusing the record (HandoffRing's protocol, 8 records);
//   named — a 1-record ring ordered by named barriers instead: the writer (warp 0's lane 0, its
//           other lanes exited) barrier.cta.arrive on "full" after writing and barrier.cta.sync on
//           "empty" before rewriting; warp 1 syncs on "full", reads, arrives on "empty";
//   sync  — the same stores and loads ordered by __syncthreads (racecheck must call it clean);
//   racy  — the same without any ordering (racecheck must report it).
// Run under racecheck by scripts/gpu/racecheck_probe.sh; prints each kernel's sum (the mbar and
// sync sums must be equal: 8 records of 4 words, record r holds r + 1 .. r + 4).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

__device__ void mbar_init(uint64_t* b, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(uint32_t(__cvta_generic_to_shared(b))), "r"(count));
}
__device__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(uint32_t(__cvta_generic_to_shared(b))) : "memory");
}
__device__ void mbar_wait(uint64_t* b, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n"
      "W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra W;\n}" ::"r"(uint32_t(__cvta_generic_to_shared(b))),
      "r"(parity)
      : "memory");
}

constexpr int kRecords = 8;

__global__ void ring_mbar(int* out) {
  __shared__ int slot[2][4];
  __shared__ uint64_t full[2], empty[2];
  if (threadIdx.x == 0) {
    for (int s = 0; s < 2; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int r = 0; r < kRecords; ++r) {
      const int s = r % 2;
      mbar_wait(&empty[s], ((r / 2) & 1) ^ 1);
      for (int i = 0; i < 4; ++i) slot[s][i] = r + 1 + i;
      mbar_arrive(&full[s]);
    }
  } else if (threadIdx.x >= 32) {
    int sum = 0;
    for (int r = 0; r < kRecords; ++r) {
      const int s = r % 2;
      mbar_wait(&full[s], (r / 2) & 1);
      for (int i = 0; i < 4; ++i) sum += slot[s][i];
      __syncwarp();
      if (threadIdx.x == 32) mbar_arrive(&empty[s]);
    }
    if (threadIdx.x == 32) out[0] = sum;
  }
}

__device__ void named_arrive(int id) { asm volatile("barrier.cta.arrive %0, 64;" ::"r"(id) : "memory"); }
__device__ void named_sync(int id) { asm volatile("barrier.cta.sync %0, 64;" ::"r"(id) : "memory"); }

__global__ void ring_named(int* out) {
  __shared__ int slot[4];
  if (threadIdx.x > 0 && threadIdx.x < 32) return;  // the writer warp keeps one lane
  if (threadIdx.x == 0) {
    for (int r = 0; r < kRecords; ++r) {
      if (r > 0) named_sync(2);  // the reader is done with record r - 1
      for (int i = 0; i < 4; ++i) slot[i] = r + 1 + i;
      named_arrive(1);
    }
  } else {
    int sum = 0;
    for (int r = 0; r < kRecords; ++r) {
      named_sync(1);
      for (int i = 0; i < 4; ++i) sum += slot[i];
      if (r + 1 < kRecords) named_arrive(2);
    }
    if (threadIdx.x == 32) out[3] = sum;
  }
}

__global__ void ring_sync(int* out) {
  __shared__ int slot[4];
  int sum = 0;
  for (int r = 0; r < kRecords; ++r) {
    if (threadIdx.x == 0)
      for (int i = 0; i < 4; ++i) slot[i] = r + 1 + i;
    __syncthreads();
    if (threadIdx.x >= 32)
      for (int i = 0; i < 4; ++i) sum += slot[i];
    __syncthreads();
  }
  if (threadIdx.x == 32) out[1] = sum;
}

__global__ void ring_racy(int* out) {
  __shared__ int slot[4];
  int sum = 0;
  for (int r = 0; r < kRecords; ++r) {
    if (threadIdx.x == 0)
      for (int i = 0; i < 4; ++i) slot[i] = r + 1 + i;
    if (threadIdx.x >= 32)
      for (int i = 0; i < 4; ++i) sum += slot[i];
  }
  if (threadIdx.x == 32) out[2] = sum;
}

}  // namespace

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "all";
  int* d = nullptr;
  if (cudaMalloc(&d, 4 * sizeof(int)) != cudaSuccess) return 2;
  cudaMemset(d, 0, 4 * sizeof(int));
  const bool all = std::strcmp(which, "all") == 0;
  if (all || std::strcmp(which, "mbar") == 0) ring_mbar<<<1, 64>>>(d);
  if (all || std::strcmp(which, "named") == 0) ring_named<<<1, 64>>>(d);
  if (all || std::strcmp(which, "sync") == 0) ring_sync<<<1, 64>>>(d);
  if (all || std::strcmp(which, "racy") == 0) ring_racy<<<1, 64>>>(d);
  int h[4] = {};
  const cudaError_t e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  std::printf("%s: %s; sums mbar %d sync %d racy %d named %d (all but racy expect %d)\n", which,
              cudaGetErrorString(e), h[0], h[1], h[2], h[3], kRecords * (kRecords + 1) / 2 * 4 + kRecords * 6);
  return e == cudaSuccess ? 0 : 1;
}
