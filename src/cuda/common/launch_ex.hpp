// Kernel launches with launch attributes (cudaLaunchKernelEx): programmatic dependent launch and
// thread-block clusters along x. One place builds the attribute list, so the launch and the
// occupancy query for a clustered kernel (cudaOccupancyMaxActiveClusters) describe the same
// launch. Without attributes the launch stays a plain kernel<<<...>>>.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

namespace fa::cuda {

class LaunchConfig {
 public:
  // pdl: a programmatic dependent of the kernel before it in the stream; cluster_x > 1: clusters
  // of that many CTAs along x (grid.x must be a multiple of it).
  LaunchConfig(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl = false, int cluster_x = 1) {
    cfg_.gridDim = grid;
    cfg_.blockDim = block;
    cfg_.dynamicSmemBytes = smem;
    cfg_.stream = stream;
    unsigned n = 0;
    if (pdl) {
      attr_[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr_[n].val.programmaticStreamSerializationAllowed = 1;
      ++n;
    }
    if (cluster_x > 1) {
      attr_[n].id = cudaLaunchAttributeClusterDimension;
      attr_[n].val.clusterDim.x = unsigned(cluster_x);
      attr_[n].val.clusterDim.y = 1;
      attr_[n].val.clusterDim.z = 1;
      ++n;
    }
    cfg_.attrs = attr_;
    cfg_.numAttrs = n;
  }
  // cfg_.attrs points into this object.
  LaunchConfig(const LaunchConfig&) = delete;
  LaunchConfig& operator=(const LaunchConfig&) = delete;

  const cudaLaunchConfig_t* get() const { return &cfg_; }
  bool has_attrs() const { return cfg_.numAttrs > 0; }

 private:
  cudaLaunchAttribute attr_[2] = {};
  cudaLaunchConfig_t cfg_ = {};
};

// The launch `lc` describes; returns cudaLaunchKernelEx's error (a plain launch returns
// cudaSuccess: the caller's launch check sees its error).
template <class... KArgs, class... Args>
cudaError_t launch_ex(const LaunchConfig& lc, void (*kernel)(KArgs...), Args&&... args) {
  const cudaLaunchConfig_t& c = *lc.get();
  if (!lc.has_attrs()) {
    kernel<<<c.gridDim, c.blockDim, c.dynamicSmemBytes, c.stream>>>(std::forward<Args>(args)...);
    return cudaSuccess;
  }
  return cudaLaunchKernelEx(&c, kernel, std::forward<Args>(args)...);
}

}  // namespace fa::cuda
