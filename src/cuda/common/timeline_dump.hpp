// Timeline dumps of the diagnostic builds (FA_SM90_FWD_TIMELINE, FA_SM90_BWD_TIMELINE): a device
// buffer of stamps for one launch, written to the file an environment variable names once the
// launch has run. Not thread-safe; not for production (the destructor synchronises the stream).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

namespace fa::cuda {

// While it lives, buf holds `words` zeroed 64-bit stamps (or is null when `env` is unset or the
// allocation failed). On destruction: the header's int64 values, then the stamps, go to the file
// $env names, the last launch winning. The device buffer is kept and grown across launches.
class TimelineDump {
 public:
  unsigned long long* buf = nullptr;

  TimelineDump(const char* env, std::initializer_list<int64_t> header, int64_t words, cudaStream_t s)
      : env_(env), header_(header), words_(words), stream_(s) {
    static unsigned long long* mem = nullptr;
    static int64_t cap = 0;
    if (std::getenv(env) == nullptr || words <= 0) return;
    if (words > cap) {
      if (mem) cudaFree(mem);
      mem = nullptr;
      cap = 0;
      if (cudaMalloc(&mem, size_t(words) * 8) != cudaSuccess) return;
      cap = words;
    }
    cudaMemsetAsync(mem, 0, size_t(words) * 8, s);
    buf = mem;
  }
  TimelineDump(const TimelineDump&) = delete;
  TimelineDump& operator=(const TimelineDump&) = delete;

  ~TimelineDump() {
    if (!buf) return;
    std::vector<unsigned long long> host(static_cast<size_t>(words_));
    cudaStreamSynchronize(stream_);
    cudaMemcpy(host.data(), buf, host.size() * 8, cudaMemcpyDeviceToHost);
    if (FILE* f = std::fopen(std::getenv(env_), "wb")) {
      std::fwrite(header_.data(), 8, header_.size(), f);
      std::fwrite(host.data(), 8, host.size(), f);
      std::fclose(f);
    }
  }

 private:
  const char* env_;
  std::vector<int64_t> header_;
  int64_t words_;
  cudaStream_t stream_;
};

}  // namespace fa::cuda
