#include "device.hpp"

#include <flashattn/flashattn.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>

#ifdef FA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace fa::cli {

#ifdef FA_WITH_CUDA
namespace {
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
}  // namespace
#endif

bool gpu_available() {
#ifdef FA_WITH_CUDA
  return fa_cuda_built() && fa_cuda_device_count() > 0;
#else
  return false;
#endif
}

std::string gpu_name() {
#ifdef FA_WITH_CUDA
  if (!gpu_available()) return "";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "";
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         ", " + std::to_string(prop.multiProcessorCount) + " SMs";
#else
  return "";
#endif
}

Buffer::Buffer(size_t bytes, bool on_gpu) : bytes_(bytes), on_gpu_(on_gpu) {
  if (!on_gpu_) {
    host_.resize(bytes);
    return;
  }
#ifdef FA_WITH_CUDA
  if (bytes > 0) check(cudaMalloc(&gpu_, bytes), "cudaMalloc");
#else
  throw std::runtime_error("this fa was built without CUDA");
#endif
}

Buffer::~Buffer() {
#ifdef FA_WITH_CUDA
  if (gpu_) cudaFree(gpu_);
#endif
}

Buffer::Buffer(Buffer&& o) noexcept { *this = std::move(o); }

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
#ifdef FA_WITH_CUDA
    if (gpu_) cudaFree(gpu_);
#endif
    bytes_ = std::exchange(o.bytes_, 0);
    on_gpu_ = std::exchange(o.on_gpu_, false);
    gpu_ = std::exchange(o.gpu_, nullptr);
    host_ = std::move(o.host_);
  }
  return *this;
}

void Buffer::upload(const void* src) {
  if (bytes_ == 0) return;
  if (!on_gpu_) {
    std::memcpy(host_.data(), src, bytes_);
    return;
  }
#ifdef FA_WITH_CUDA
  check(cudaMemcpy(gpu_, src, bytes_, cudaMemcpyHostToDevice), "cudaMemcpy to device");
#endif
}

void Buffer::download(void* dst) const {
  if (bytes_ == 0) return;
  if (!on_gpu_) {
    std::memcpy(dst, host_.data(), bytes_);
    return;
  }
#ifdef FA_WITH_CUDA
  check(cudaMemcpy(dst, gpu_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
#endif
}

void Buffer::fill_byte(uint8_t value) {
  if (bytes_ == 0) return;
  if (!on_gpu_) {
    std::memset(host_.data(), value, bytes_);
    return;
  }
#ifdef FA_WITH_CUDA
  check(cudaMemset(gpu_, value, bytes_), "cudaMemset");
#endif
}

Timer::Timer(bool gpu) : gpu_(gpu) {
#ifdef FA_WITH_CUDA
  if (gpu_) {
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    ev_start_ = a;
    ev_stop_ = b;
  }
#endif
}

Timer::~Timer() {
#ifdef FA_WITH_CUDA
  if (ev_start_) cudaEventDestroy(static_cast<cudaEvent_t>(ev_start_));
  if (ev_stop_) cudaEventDestroy(static_cast<cudaEvent_t>(ev_stop_));
#endif
}

namespace {
double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void Timer::start() {
#ifdef FA_WITH_CUDA
  if (gpu_) {
    check(cudaEventRecord(static_cast<cudaEvent_t>(ev_start_), nullptr), "cudaEventRecord");
    return;
  }
#endif
  t0_ = now_ms();
}

double Timer::stop_ms() {
#ifdef FA_WITH_CUDA
  if (gpu_) {
    auto stop = static_cast<cudaEvent_t>(ev_stop_);
    check(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "kernel execution");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(ev_start_), stop), "cudaEventElapsedTime");
    return ms;
  }
#endif
  return now_ms() - t0_;
}

void gpu_synchronize() {
#ifdef FA_WITH_CUDA
  check(cudaDeviceSynchronize(), "kernel execution");
#endif
}

}  // namespace fa::cli
