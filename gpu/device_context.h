#pragma once
// What a device keeps between builds (FAISS's GpuResources in spirit):
// streams, the cuBLAS handle and its workspace, pinned staging buffers and
// timing events. Creating these costs more than building a whole
// 100k-point graph, so each device gets one context for the life of the
// process, and builds on a device take turns (its mutex).
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>

#include "manifold/parallel.h"
#include "utils/copy_crew.h"
#include "utils/resources.h"

namespace manifold::gpu {

class DeviceContext {
 public:
  /// The current device's highest stream priority.
  static int highest_stream_priority();
  /// The device's context, created on first use (thread-safe).
  static DeviceContext& get(int device);
  /// Whether this process has made any device's context yet.
  static bool any();

  std::mutex busy;  ///< held by the build using this device
  int device = 0;
  std::string name;
  size_t shared_optin = 0;  ///< opt-in shared memory per block
  int sms = 0;
  int compute_major = 0;  ///< compute capability's major number (TF32 mma from 8)

  /// The selection stream (merges) is the device's highest priority: a
  /// merge's blocks start as soon as a tile kernel's leave room, so the
  /// merges do not fall behind the tiles and pace the loop.
  Stream gemm, select{highest_stream_priority()}, copy;
  /// A second stream for the fused kernel: alternate tiles go to it, so one
  /// tile's kernel fills the SMs that the previous one's last blocks leave.
  Stream gemm2;
  /// The final step's certificate and, on a stream of their own, its copies
  /// home while the tile loop still runs (final_step.h EarlyFinish). Made
  /// with the context: a stream made while the result's pages are faulted
  /// in waits for the address space's lock.
  Stream finish, finish_copy;
  CublasHandle cublas;

  /// The cuBLAS workspace, grown to `bytes` (never shrunk); device bytes held.
  void* workspace(size_t bytes);
  size_t held_bytes() const { return workspace_.bytes(); }

  static constexpr int kStaging = 3;
  static constexpr size_t kStagingBytes = size_t{32} << 20;
  /// Pinned staging buffer i (kStagingBytes), allocated on first use.
  unsigned char* staging(int i);
  /// The early final step's two pinned buffers (kStagingBytes each): the
  /// result's way home beside the loop. Allocated on first use and kept:
  /// allocating pinned memory stalls the GPU, and a build that did it
  /// mid-loop lost a strip's worth of time on every call.
  unsigned char* finish_staging(int i);
  /// The early final step's host threads for those copies (up to 8),
  /// started on first use and kept: a thread started while the result's
  /// pages are faulted in waits for the address space's lock.
  CopyCrew& finish_crew();
  /// The upload's staging copies' helper threads. Each device's own: with
  /// the process-wide pool, a second GPU's host thread found it busy with
  /// the first's copy and started (and joined) threads for every chunk.
  LoopPool upload_pool;
  Event staging_free[kStaging];
  bool staging_used[kStaging] = {false, false, false};

  struct TileEvents {
    Event gemm_start, gemm_end, sel_start, filter_end, sel_end;
  };
  static constexpr int kRing = 16;  ///< tiles in flight (more than the engine's candidate sets)
  TileEvents ring[kRing];
  Event loop_start, loop_end;

 private:
  explicit DeviceContext(int device);
  DeviceBuffer<unsigned char> workspace_;
  PinnedBuffer<unsigned char> staging_[kStaging];
  PinnedBuffer<unsigned char> finish_staging_[2];
  std::unique_ptr<CopyCrew> finish_crew_;
};

}  // namespace manifold::gpu
