#pragma once
// Who computes what: Dashti et al.'s decomposition of the symmetric distance
// matrix. The N rows are cut into P row blocks (one per rank, on tile
// boundaries so every tile is the very tile the CPU backend computes); block
// (I, J), J >= I, is computed once. The assignment is cyclic along the
// diagonals: rank I computes (I, I+s mod P) for s = 0 .. floor((P-1)/2), and
// for even P the blocks at distance P/2 are halved between their two ranks.
// Every rank thus does the same amount of work and reads only a cyclic window
// of row blocks: (P+1)/2 of the P blocks for odd P, between P/2 + 1/2 and
// P/2 + 1 for even P (2 of 3 at P = 3, 0.62 to 0.77 of the rows at P = 4),
// tending to half of the rows as P grows.
#include <cstdint>
#include <vector>

namespace manifold::mpi {

struct RowRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

/// A piece of the upper triangle: the distances between rows `a` and rows `b`
/// (a == b: the diagonal block, only its tiles on and above the diagonal).
/// Both ranges lie on tile boundaries and `a` precedes `b` when they differ.
struct WorkUnit {
  RowRange a, b;
  bool diagonal() const { return a == b; }
};

class BlockPlan {
 public:
  /// `tile`: the CPU backend's square tile edge in rows.
  BlockPlan(int64_t n, int ranks, int64_t tile);

  int ranks() const { return ranks_; }
  int64_t n() const { return n_; }
  int64_t tile() const { return tile_; }
  int64_t tile_count() const { return (n_ + tile_ - 1) / tile_; }
  /// Tiles (bi, bj), bj >= bi, over the whole matrix.
  int64_t total_tiles() const { return tile_count() * (tile_count() + 1) / 2; }

  /// Rows owned (merged and returned) by `rank`: row block `rank`.
  RowRange block(int rank) const { return {start_[rank], start_[rank + 1]}; }
  const std::vector<int64_t>& block_starts() const { return start_; }
  int owner_of(int64_t row) const;

  const std::vector<WorkUnit>& units(int rank) const { return units_[rank]; }
  /// Rows `rank` reads: the union of its units' ranges, sorted and merged.
  const std::vector<RowRange>& touched(int rank) const { return touched_[rank]; }
  int64_t touched_rows(int rank) const;
  /// The rows of `touched(rank)` inside `range`, in ascending order.
  std::vector<RowRange> touched_within(int rank, RowRange range) const;
  /// Tiles (bi, bj) of a unit, as the CPU backend would compute them.
  std::vector<std::pair<int64_t, int64_t>> tiles(const WorkUnit& unit) const;
  int64_t tile_count(const WorkUnit& unit) const;

 private:
  int64_t n_, tile_;
  int ranks_;
  std::vector<int64_t> start_;
  std::vector<std::vector<WorkUnit>> units_;
  std::vector<std::vector<RowRange>> touched_;
};

}  // namespace manifold::mpi
