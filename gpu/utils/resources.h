#pragma once
// RAII owners for the CUDA objects the engine holds: device and pinned
// buffers, streams, events, a cuBLAS handle, and the current-device guard.
// Destructors never throw (errors at teardown are ignored: the first error
// was already reported).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "utils/cuda_check.h"
#include "utils/device_memory.h"

namespace manifold::gpu {

/// Makes `device` current for the scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaGetDevice(&previous_);
    cuda_check(cudaSetDevice(device), "selecting the device");
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count, const char* what = "allocating device memory") { reset(count, what); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)), device_(o.device_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void reset(size_t count, const char* what = "allocating device memory") {
    release();
    if (count == 0) return;
    ptr_ = static_cast<T*>(device_allocate(count * sizeof(T), what, &device_));
    count_ = count;
  }
  /// Back to the device's cache (utils/device_memory.h).
  void release() {
    if (ptr_) device_release(ptr_, device_, count_ * sizeof(T));
    ptr_ = nullptr;
    count_ = 0;
  }
  T* data() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
  int device_ = 0;
};

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t count) {
    void* p = nullptr;
    cuda_check(cudaMallocHost(&p, count * sizeof(T)), "allocating pinned host memory");
    ptr_ = static_cast<T*>(p);
    count_ = count;
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  T* data() const { return ptr_; }
  size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() { cuda_check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "creating a stream"); }
  /// A stream whose blocks the GPU schedules before those of lower
  /// priority (lower numbers first; cudaDeviceGetStreamPriorityRange).
  explicit Stream(int priority) {
    cuda_check(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, priority), "creating a stream");
  }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void synchronize(const char* what = "waiting for the GPU") const { cuda_check(cudaStreamSynchronize(s_), what); }
  void wait(cudaEvent_t e) const { cuda_check(cudaStreamWaitEvent(s_, e, 0), "ordering streams"); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = true) {
    cuda_check(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming), "creating an event");
  }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  operator cudaEvent_t() const { return e_; }
  void record(cudaStream_t s) const { cuda_check(cudaEventRecord(e_, s), "recording an event"); }
  void synchronize(const char* what = "waiting for the GPU") const { cuda_check(cudaEventSynchronize(e_), what); }
  /// Whether the work before the event is done (never waits).
  bool done(const char* what = "waiting for the GPU") const {
    const cudaError_t e = cudaEventQuery(e_);
    if (e == cudaErrorNotReady) return false;
    cuda_check(e, what);
    return true;
  }
  /// Milliseconds from `start` to this event (both completed).
  float since(const Event& start) const {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start.e_, e_), "reading an event timer");
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/// The cuBLAS math mode of the engine: the exactness argument rests on plain
/// float32 products, so never TF32. Pedantic also forbids any
/// reduced-precision internal step.
cublasMath_t engine_math_mode();
const char* engine_math_mode_name();

class CublasHandle {
 public:
  CublasHandle() {
    cublas_check(cublasCreate(&h_), "creating the cuBLAS handle");
    cublas_check(cublasSetMathMode(h_, engine_math_mode()), "setting the cuBLAS math mode");
    cublas_check(cublasSetPointerMode(h_, CUBLAS_POINTER_MODE_HOST), "setting the cuBLAS pointer mode");
  }
  ~CublasHandle() {
    if (h_) cublasDestroy(h_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }
  operator cublasHandle_t() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

}  // namespace manifold::gpu
