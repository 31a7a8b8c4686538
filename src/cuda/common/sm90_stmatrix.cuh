// stmatrix (sm_90): the inline-PTX wrappers the sm90 forward (O staging) and backward (P^T and
// dS^T staging; the transposing one for the 80-query tile's dS) share.
#pragma once

#include <cstdint>

namespace fa::cuda::sm90 {

// Four 8x8 16-bit matrices from a warp's registers to smem (the ldmatrix fragment layout: lane l
// holds row l/4, elements 2(l%4), 2(l%4)+1 of each; lanes 8i..8i+7 give the row addresses of
// matrix i).
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// As stmatrix_x4, each matrix stored transposed: lane 8i + r's address receives column r of matrix
// i (its 8 rows' elements, contiguous).
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t smem_addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                                  uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.x4.trans.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

}  // namespace fa::cuda::sm90
