#include "block_plan.h"

#include <algorithm>

#include "manifold/error.h"

namespace manifold::mpi {

BlockPlan::BlockPlan(int64_t n, int ranks, int64_t tile) : n_(n), tile_(tile), ranks_(ranks) {
  if (n < 0 || ranks < 1 || tile < 1) throw Error("block plan: bad sizes");
  const int64_t nt = tile_count();
  // Row blocks of nearly equal tile counts; with fewer tiles than ranks some
  // blocks are empty and their ranks only merge nothing.
  start_.resize(static_cast<size_t>(ranks) + 1);
  for (int b = 0; b <= ranks; ++b) start_[b] = std::min(n, (nt * b / ranks) * tile);
  start_[ranks] = n;

  units_.resize(static_cast<size_t>(ranks));
  touched_.resize(static_cast<size_t>(ranks));
  auto add = [&](int rank, RowRange a, RowRange b) {
    if (a.size() > 0 && b.size() > 0) units_[rank].push_back({a, b});
  };
  for (int i = 0; i < ranks; ++i) {
    add(i, block(i), block(i));
    for (int j = i + 1; j < ranks; ++j) {
      const int s = j - i;  // cyclic distance from i forward to j
      if (2 * s < ranks) {
        add(i, block(i), block(j));
      } else if (2 * s > ranks) {
        add(j, block(i), block(j));  // j reaches i going forward by ranks - s < s
      } else {
        // Even P, opposite blocks: halve rows of block i (on a tile boundary)
        // between the two ranks.
        const RowRange bi = block(i);
        const int64_t tiles_i = (bi.size() + tile - 1) / tile;
        const int64_t mid = std::min(bi.end, bi.begin + (tiles_i / 2) * tile);
        add(i, {bi.begin, mid}, block(j));
        add(j, {mid, bi.end}, block(j));
      }
    }
  }
  for (int r = 0; r < ranks; ++r) {
    std::vector<RowRange> rs;
    for (const WorkUnit& u : units_[r]) {
      rs.push_back(u.a);
      if (!u.diagonal()) rs.push_back(u.b);
    }
    std::sort(rs.begin(), rs.end(), [](const RowRange& x, const RowRange& y) { return x.begin < y.begin; });
    std::vector<RowRange> merged;
    for (const RowRange& x : rs) {
      if (!merged.empty() && x.begin <= merged.back().end) merged.back().end = std::max(merged.back().end, x.end);
      else
        merged.push_back(x);
    }
    touched_[r] = std::move(merged);
  }
}

int BlockPlan::owner_of(int64_t row) const {
  auto it = std::upper_bound(start_.begin(), start_.end(), row);
  return static_cast<int>(it - start_.begin()) - 1;
}

int64_t BlockPlan::touched_rows(int rank) const {
  int64_t s = 0;
  for (const RowRange& r : touched_[rank]) s += r.size();
  return s;
}

std::vector<RowRange> BlockPlan::touched_within(int rank, RowRange range) const {
  std::vector<RowRange> out;
  for (const RowRange& r : touched_[rank]) {
    RowRange x{std::max(r.begin, range.begin), std::min(r.end, range.end)};
    if (x.size() > 0) out.push_back(x);
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> BlockPlan::tiles(const WorkUnit& u) const {
  std::vector<std::pair<int64_t, int64_t>> out;
  const int64_t a0 = u.a.begin / tile_, a1 = (u.a.end + tile_ - 1) / tile_;
  const int64_t b0 = u.b.begin / tile_, b1 = (u.b.end + tile_ - 1) / tile_;
  for (int64_t bi = a0; bi < a1; ++bi)
    for (int64_t bj = u.diagonal() ? bi : b0; bj < b1; ++bj) out.emplace_back(bi, bj);
  return out;
}

int64_t BlockPlan::tile_count(const WorkUnit& u) const {
  const int64_t ta = (u.a.end + tile_ - 1) / tile_ - u.a.begin / tile_;
  const int64_t tb = (u.b.end + tile_ - 1) / tile_ - u.b.begin / tile_;
  return u.diagonal() ? ta * (ta + 1) / 2 : ta * tb;
}

}  // namespace manifold::mpi
