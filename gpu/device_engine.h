#pragma once
// The tile loop of one GPU: for each assigned strip (a row block I and every
// column block J >= I), cuBLAS SGEMM writes a tile of dot products, the fused
// filter turns it into squared distances and keeps what beats each row's and
// each column's current bound, and the merge folds those candidates into the
// device's per-row lists. Rows come from host memory through pinned staging
// buffers on a copy stream; with a resident plan each block is copied once,
// otherwise blocks stream through a few slots (least recently used replaced).
// GEMMs run on one stream and selection on another, double-buffered, so a
// tile's GEMM overlaps the previous tile's selection.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "impl/kernels.h"
#include "manifold/progress.h"
#include "tile_plan.h"
#include "utils/resources.h"

namespace manifold::gpu {

struct EngineStats {
  uint64_t tiles = 0;
  double gemm_ms = 0;      ///< summed GEMM time of the tiles (CUDA events)
  double select_ms = 0;    ///< summed filter + merge time of the tiles (CUDA events)
  double loop_ms = 0;      ///< first copy to last merge (CUDA events)
  double gemm_flop = 0;    ///< 2 rows cols d over all tiles computed
  uint64_t candidates = 0; ///< entries that passed a bound
  uint64_t h2d_bytes = 0;  ///< rows copied to the device
};

class DeviceEngine {
 public:
  /// Allocates everything the plan needs (throws DeviceOutOfMemory).
  DeviceEngine(int device, const float* host_rows, const TilePlan& plan, bool keep_self, bool force_block);
  ~DeviceEngine();
  DeviceEngine(const DeviceEngine&) = delete;
  DeviceEngine& operator=(const DeviceEngine&) = delete;

  /// Runs the strips (row-block indices) on this device; call from one thread.
  /// Advances `progress` per finished tile; stops between tiles (Cancelled)
  /// when progress is cancelled or `stop` is set.
  void run(const std::vector<int64_t>& strips, Progress& progress, const std::atomic<bool>& stop);

  int device() const { return device_; }
  const std::string& device_name() const { return name_; }
  ListsView lists() const;
  const EngineStats& stats() const { return stats_; }
  cudaStream_t stream() const { return select_.get(); }

  /// Frees the tile and candidate buffers (and streaming slots) after run().
  void release_loop_buffers();
  /// Resident plans: copies any block still missing and returns all rows on
  /// the device, ready on stream(). Streaming plans: nullptr.
  const float* all_rows();

 private:
  struct TileEvents {
    Event gemm_start, gemm_end, sel_start, filter_end, sel_end;
  };
  void tile(uint64_t t, int64_t I, int64_t c0, int64_t cols, int64_t J);
  void complete(uint64_t t, Progress& progress, const std::atomic<bool>& stop);
  int ensure_block(int64_t b, int64_t keep_a, int64_t keep_b);
  void upload_block(int64_t b, float* rows, float* norms);
  void host_copy(void* dst, const void* src, size_t bytes);

  int device_;
  std::string name_;
  const float* host_rows_;
  TilePlan plan_;
  bool keep_self_, force_block_;

  Stream gemm_, select_, copy_;
  CublasHandle cublas_;
  DeviceBuffer<unsigned char> workspace_;
  DeviceBuffer<float> list_dist_, thr_;
  DeviceBuffer<int> list_index_, fill_;
  DeviceBuffer<float> rows_, norms_;  // resident: all rows; streaming: `slots` blocks
  DeviceBuffer<float> tiles_[2];
  DeviceBuffer<float> cand_dist_;
  DeviceBuffer<int> cand_index_, cand_count_, dirty_, n_dirty_;
  DeviceBuffer<unsigned long long> cand_total_;

  static constexpr int kStaging = 3;
  PinnedBuffer<unsigned char> staging_[kStaging];
  Event staging_free_[kStaging];
  bool staging_used_[kStaging] = {false, false, false};
  int staging_next_ = 0;
  size_t staging_bytes_ = 0;

  // Block residency. Resident: slot b holds block b. Streaming: LRU slots.
  std::vector<int64_t> block_slot_, slot_block_;
  std::vector<Event> slot_ready_, slot_free_;
  std::vector<char> slot_waited_, slot_free_recorded_;
  std::vector<uint64_t> slot_last_use_;
  uint64_t use_clock_ = 0;

  static constexpr int kRing = 4;  // tiles in flight
  std::vector<TileEvents> ring_;
  Event loop_start_, loop_end_;
  EngineStats stats_;
};

}  // namespace manifold::gpu
