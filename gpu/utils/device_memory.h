#pragma once
// Device memory for DeviceBuffer, kept between builds (FAISS's temporary
// memory and PyTorch's caching allocator in spirit). cudaMalloc and cudaFree
// of the engine's ~20 buffers are a few percent of a 100k-point build, and a
// GUI or a benchmark builds again and again with the same sizes. A freed block goes to its device's cache, and the next
// request of the same rounded size takes it back. cudaFree synchronises the
// device; a cached block is handed out again only after one device
// synchronisation, so no work queued before its release can still touch it.
// The cache gives way: an allocation that fails empties it and tries again,
// and the free-memory figures the planners read count it as free.
#include <cstddef>

namespace manifold::gpu {

/// `bytes` of device memory on the current device (cached or cudaMalloc'd;
/// throws DeviceOutOfMemory, or Error naming `what`); `*device` is set to it.
void* device_allocate(size_t bytes, const char* what, int* device);
/// Gives back what device_allocate returned for (`device`, `bytes`); never throws.
void device_release(void* p, int device, size_t bytes) noexcept;
/// Bytes the cache holds on `device`.
size_t device_cached_bytes(int device);
/// Frees every cached block of `device` (cudaFree; idle blocks only).
void device_trim_cache(int device);
/// cudaMemGetInfo's free bytes of the current device plus what the cache
/// holds there: memory a new allocation can have.
size_t device_free_bytes();

}  // namespace manifold::gpu
