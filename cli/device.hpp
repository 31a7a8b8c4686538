// Where the `fa` tool keeps its tensors: host memory for the CPU backend, GPU memory (through the
// CUDA runtime) when the tool is built with CUDA (FA_WITH_CUDA) and a device is present. The rest
// of the tool sees one Buffer type and one Timer, so no other file includes cuda_runtime.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fa::cli {

// True when this executable can allocate GPU memory and the library has a usable device.
bool gpu_available();
// A one-line description of device 0 ("NVIDIA H200, sm_90, 132 SMs"), or "" without a GPU.
std::string gpu_name();

class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t bytes, bool on_gpu);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;

  void* data() { return on_gpu_ ? gpu_ : static_cast<void*>(host_.data()); }
  size_t bytes() const { return bytes_; }
  bool on_gpu() const { return on_gpu_; }
  void upload(const void* src);            // bytes() bytes from host memory
  void download(void* dst) const;          // bytes() bytes to host memory
  void fill_byte(uint8_t value);           // poison: a result that is never written shows up

 private:
  size_t bytes_ = 0;
  bool on_gpu_ = false;
  void* gpu_ = nullptr;
  std::vector<uint8_t> host_;
};

// Wall time of a region: CUDA events on the GPU (device time of the default stream), a steady
// clock on the CPU.
class Timer {
 public:
  explicit Timer(bool gpu);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start();
  double stop_ms();  // waits for the GPU

 private:
  bool gpu_;
  void* ev_start_ = nullptr;
  void* ev_stop_ = nullptr;
  double t0_ = 0;
};

// Throws std::runtime_error with the CUDA runtime's message on a failed CUDA call.
void gpu_synchronize();

}  // namespace fa::cli
