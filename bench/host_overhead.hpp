// The CUDA helpers fa_host_overhead times (host_overhead_cuda.cu); a CPU-only build links the
// stand-ins at the end of host_overhead.cpp, where cuda_available() is false.
#pragma once

#include <cstddef>

namespace hob {
bool cuda_available();
void* device_alloc(size_t bytes);
void device_free(void* p);
void* make_stream();
void sync_stream(void* s);
void launch_empty(void* s);
void launch_big_param(void* s);
void set_smem_attribute();
void get_device();
void get_context_id();
void peek_last_error();
void encode_tma_descriptor();
void encode_tma_descriptor_via_entry_point();
}  // namespace hob
