// Programmatic dependent launch (PDL, sm_90+): a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization (launch_ex.hpp) after another in the stream
// may be scheduled before that one has finished, so its launch and prologue overlap the previous
// grid's tail instead of following its last CTA.
//   pdl_trigger  the calling grid allows its dependents to be scheduled; they are only scheduled
//                once every CTA of this grid has triggered or exited, so they take SMs in this
//                grid's last wave and never hold an SM that one of its CTAs still needs.
//   pdl_wait     blocks until the previous grid has completed and its writes are visible; a
//                dependent calls it before its first access to memory that grid writes.
// Without the launch attribute (or on sm_8x, where the instructions do not exist) both return at
// once, so the same kernel serves both launches.
#pragma once

namespace fa::cuda {

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace fa::cuda
