#include "utils/device_memory.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#include "utils/cuda_check.h"

namespace manifold::gpu {

namespace {

/// Sizes as the cache matches them: 512-byte steps below 1 MB, 2 MB steps
/// above (at most 2 MB of a large buffer unused).
size_t rounded(size_t bytes) {
  const size_t step = bytes < (size_t{1} << 20) ? 512 : (size_t{2} << 20);
  return (bytes + step - 1) / step * step;
}

struct Cache {
  std::mutex m;
  struct PerDevice {
    std::multimap<size_t, void*> idle;  // rounded size -> block
    size_t bytes = 0;
    bool released_since_sync = false;  // a block went idle since the last device synchronisation
  };
  std::map<int, PerDevice> devices;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: CUDA may be gone at exit
  return *c;
}

int current_device() {
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  return dev;
}

/// Runs f with `device` current and restores the previous one; never
/// throws (DeviceScope does, and these run in destructors).
template <class F>
void on_device(int device, F&& f) noexcept {
  int previous = -1;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  f();
  if (previous >= 0) cudaSetDevice(previous);
}

void free_all(Cache::PerDevice& pd, int device) {
  if (pd.idle.empty()) return;
  on_device(device, [&] {
    for (auto& [size, p] : pd.idle) cudaFree(p);
  });
  pd.idle.clear();
  pd.bytes = 0;
  pd.released_since_sync = false;
}

}  // namespace

void* device_allocate(size_t bytes, const char* what, int* device) {
  const int dev = current_device();
  *device = dev;
  const size_t size = rounded(bytes);
  {
    Cache& c = cache();
    std::lock_guard lock(c.m);
    Cache::PerDevice& pd = c.devices[dev];
    if (auto it = pd.idle.find(size); it != pd.idle.end()) {
      if (pd.released_since_sync) {
        // Work queued before the block's release may still read or write it.
        cuda_check(cudaDeviceSynchronize(), what);
        pd.released_since_sync = false;
      }
      void* p = it->second;
      pd.idle.erase(it);
      pd.bytes -= size;
      return p;
    }
  }
  void* p = nullptr;
  cudaError_t st = cudaMalloc(&p, size);
  if (st == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    {
      Cache& c = cache();
      std::lock_guard lock(c.m);
      Cache::PerDevice& pd = c.devices[dev];
      if (pd.released_since_sync) cudaDeviceSynchronize();
      free_all(pd, dev);
    }
    st = cudaMalloc(&p, size);
  }
  cuda_check(st, what);
  return p;
}

void device_release(void* p, int device, size_t bytes) noexcept {
  if (!p) return;
  Cache& c = cache();
  std::lock_guard lock(c.m);
  Cache::PerDevice& pd = c.devices[device];
  const size_t size = rounded(bytes);
  pd.idle.emplace(size, p);
  pd.bytes += size;
  pd.released_since_sync = true;
}

size_t device_cached_bytes(int device) {
  Cache& c = cache();
  std::lock_guard lock(c.m);
  auto it = c.devices.find(device);
  return it == c.devices.end() ? 0 : it->second.bytes;
}

void device_trim_cache(int device) {
  Cache& c = cache();
  std::lock_guard lock(c.m);
  auto it = c.devices.find(device);
  if (it == c.devices.end()) return;
  if (it->second.released_since_sync) on_device(device, [] { cudaDeviceSynchronize(); });
  free_all(it->second, device);
}

size_t device_free_bytes() {
  size_t free_b = 0, total_b = 0;
  cuda_check(cudaMemGetInfo(&free_b, &total_b), "reading the free device memory");
  return free_b + device_cached_bytes(current_device());
}

}  // namespace manifold::gpu
