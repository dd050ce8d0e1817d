#pragma once
#include "manifold/distance_tile.h"
// What one rank computes: the candidate lists of the rows it touches, from
// the work units the plan gives it.
//
// "tiles" (the exact engine) computes the very 512 x 512 tiles the CPU backend
// computes, with the same SGEMM call and the same arithmetic, and feeds them
// into the same bounded (distance, index) lists: its lists, merged over the
// ranks, select exactly what the CPU backend selects.
//
// "backend:NAME" runs a registered backend (the GPU one) on each unit as a
// sub-problem (the rows of the unit, self-joined); candidates are then ranked
// by the backend's (exact) distance and duplicates of a pair are dropped.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "block_plan.h"
#include "manifold/dataset.h"
#include "manifold/exact/translation.h"
#include "manifold/knn.h"

namespace manifold::mpi {

/// One neighbour candidate as exchanged between ranks. `key` orders the
/// selection: the GEMM squared distance a for tiles (certified exactly by the
/// owner, manifold/exact/certify.h), the true distance for sub-problems;
/// index -1 pads a list. Rows are indexed with 32-bit integers, as in the CPU
/// backend.
struct Candidate {
  float key;
  int32_t index;
};
static_assert(sizeof(Candidate) == 8, "Candidate crosses the wire as 8 bytes");

inline bool key_less(const Candidate& a, const Candidate& b) {
  return a.key < b.key || (a.key == b.key && a.index < b.index);
}

/// The CPU backend's list capacity: k + exact::exact_slack(k, d), at most
/// the number of other points (n - 1, or n with keep_self).
int list_capacity(const KnnParams& params, int64_t n, int64_t d);

struct EngineOptions {
  int threads = 1;
  std::string sub_backend;       ///< empty: exact tiles
  std::vector<int> sub_devices;  ///< devices for the sub-problem backend
  /// Called by a worker after each finished tile (or unit) with its tile
  /// count; may throw (fault injection for tests).
  std::function<void(uint64_t)> after_work;
};

class LocalEngine {
 public:
  virtual ~LocalEngine() = default;
  /// Reads and prepares (normalises) the rows this rank touches.
  virtual void prepare() = 0;
  /// A prepared row this rank touches, as prepare() left it (for the exact
  /// translation's check of every value); nullptr where the engine keeps no
  /// prepared rows (sub-problems).
  virtual const float* prepared_row(int64_t row) const = 0;
  /// After prepare(), before compute(): moves the touched rows by `t` (every
  /// rank's same translation; none leaves them in place) and takes the
  /// squared norms of the rows the tiles multiply. Sub-problems ignore it:
  /// their backend moves its own rows.
  virtual void place_rows(const exact::Translation& t) = 0;
  /// Computes every unit of the rank. Runs on worker threads; counts finished
  /// tiles into `tiles_done`; returns early when `stop` is set; throws
  /// Cancelled when the cancel flag is set.
  virtual void compute(std::atomic<uint64_t>& tiles_done, const std::atomic<bool>& stop,
                       const std::atomic<bool>* cancel) = 0;
  /// The candidate lists of the touched rows, in the order of
  /// plan.touched(rank): each at most list_width() long, ascending by
  /// key_less. Empties the engine.
  virtual std::vector<std::vector<Candidate>> take_lists() = 0;
  /// The selection strategy to report in graph.json.
  virtual std::string strategy() const = 0;
  /// Candidates kept per row: list_capacity() for tiles (certified by the
  /// owner), k for sub-problems (already exact).
  virtual int list_width() const = 0;
  virtual std::string name() const = 0;
};

std::unique_ptr<LocalEngine> make_local_engine(const Dataset& data, const KnnParams& params, const BlockPlan& plan,
                                               int rank, const EngineOptions& options);

/// The CPU backend's tile edge: the MPI tiles must be the same tiles.
using manifold::kCpuTile;  // the CPU backend's tile edge (distance_tile.h)

/// Rewrites "row I" in a message of prepare_rows() run on a slice of the data
/// into the global row number.
std::string globalise_row_message(const std::string& message, const std::string& source,
                                  const std::function<int64_t(int64_t)>& to_global);

}  // namespace manifold::mpi
