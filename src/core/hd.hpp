// FA_HD marks the arch-neutral math that host backends, CUDA kernels and the reference share.
#pragma once

#if defined(__CUDACC__)
#define FA_HD __host__ __device__ __forceinline__
#else
#define FA_HD inline
#endif
