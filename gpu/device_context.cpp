#include "device_context.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>

#include "manifold/parallel.h"

namespace manifold::gpu {

namespace {
// A constructor that makes `device` current before the members that belong
// to it (streams, handle, events) are created.
int select_device(int device) {
  cuda_check(cudaSetDevice(device), "selecting the device");
  return device;
}
}  // namespace

int DeviceContext::highest_stream_priority() {
  int least = 0, greatest = 0;
  cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading the stream priorities");
  return greatest;
}

DeviceContext::DeviceContext(int dev) : device(select_device(dev)) {
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, dev), "reading the device properties");
  name = prop.name;
  shared_optin = prop.sharedMemPerBlockOptin;
  sms = prop.multiProcessorCount;
  compute_major = prop.major;
  cublas_check(cublasSetStream(cublas, gemm), "binding cuBLAS to its stream");
}

namespace {
std::atomic<bool> made_one{false};
}  // namespace

bool DeviceContext::any() { return made_one.load(std::memory_order_relaxed); }

DeviceContext& DeviceContext::get(int device) {
  static std::mutex registry_mutex;
  // Deliberately never destroyed: CUDA objects must not be released from
  // static destructors, after the runtime may already have shut down.
  static auto* contexts = new std::map<int, DeviceContext*>();
  std::lock_guard lock(registry_mutex);
  auto it = contexts->find(device);
  if (it != contexts->end()) return *it->second;
  int previous = -1;
  cudaGetDevice(&previous);
  auto* ctx = new DeviceContext(device);
  if (previous >= 0) cudaSetDevice(previous);
  (*contexts)[device] = ctx;
  made_one.store(true, std::memory_order_relaxed);
  return *ctx;
}

void* DeviceContext::workspace(size_t bytes) {
  if (workspace_.bytes() < bytes) {
    workspace_.release();
    workspace_.reset(bytes, "allocating the cuBLAS workspace");
  }
  return workspace_.data();
}

unsigned char* DeviceContext::staging(int i) {
  if (!staging_[i].data()) staging_[i] = PinnedBuffer<unsigned char>(kStagingBytes);
  return staging_[i].data();
}

unsigned char* DeviceContext::finish_staging(int i) {
  if (!finish_staging_[i].data()) finish_staging_[i] = PinnedBuffer<unsigned char>(kStagingBytes);
  return finish_staging_[i].data();
}

CopyCrew& DeviceContext::finish_crew() {
  if (!finish_crew_) finish_crew_ = std::make_unique<CopyCrew>(std::min(8, hardware_threads()));
  return *finish_crew_;
}

}  // namespace manifold::gpu
