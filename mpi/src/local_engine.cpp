#include "local_engine.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "manifold/distance_tile.h"
#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/exact/translation.h"
#include "manifold/parallel.h"
#include "manifold/topk.h"

namespace manifold::mpi {

std::string globalise_row_message(const std::string& message, const std::string& source,
                                  const std::function<int64_t(int64_t)>& to_global) {
  const size_t from = message.rfind(source, 0) == 0 ? source.size() : 0;
  const size_t at = message.find("row ", from);
  if (at == std::string::npos) return message;
  size_t p = at + 4, q = p;
  while (q < message.size() && std::isdigit(static_cast<unsigned char>(message[q]))) ++q;
  if (q == p) return message;
  const int64_t local = std::stoll(message.substr(p, q - p));
  return message.substr(0, p) + std::to_string(to_global(local)) + message.substr(q);
}

int list_capacity(const KnnParams& params, int64_t n, int64_t d) {
  const int64_t others = params.keep_self ? n : n - 1;
  return static_cast<int>(std::min<int64_t>(others, int64_t{params.k} + exact::exact_slack(params.k, d)));
}

namespace {

// The rows a rank touches, prepared for the metric: views of the (possibly
// memory-mapped) data for Euclidean, normalised copies of just those rows for
// cosine and Pearson; once moved (a translation), copies moved about the
// offsets. Slots number the touched rows consecutively.
class TouchedRows {
 public:
  TouchedRows(const Dataset& data, Metric metric, std::vector<RowRange> ranges)
      : ranges_(std::move(ranges)), d_(data.cols()) {
    int64_t slot = 0;
    for (const RowRange& r : ranges_) {
      slot_start_.push_back(slot);
      slot += r.size();
      if (metric == Metric::Euclidean) {
        base_.push_back(data.row(r.begin));
        continue;
      }
      Dataset view(r.size(), data.cols(), data.row(r.begin), nullptr);
      view.source = data.source;
      try {
        prepared_.push_back(std::make_unique<PreparedRows>(prepare_rows(view, metric)));
      } catch (const Error& e) {
        const int64_t begin = r.begin;
        throw Error(globalise_row_message(e.what(), data.source, [begin](int64_t i) { return begin + i; }));
      }
      base_.push_back(prepared_.back()->data);
    }
    slots_ = slot;
  }
  /// Moves every row by `offset` (exact::moved_rows: fl32(x - offset)) into
  /// storage of its own; the prepared copies are no longer needed.
  void move(const std::vector<float>& offset, int threads) {
    moved_.resize(static_cast<size_t>(slots_ * d_));
    for (size_t i = 0; i < ranges_.size(); ++i) {
      float* to = moved_.data() + slot_start_[i] * d_;
      exact::moved_rows(base_[i], ranges_[i].size(), d_, offset, to, threads);
      base_[i] = to;
    }
    prepared_.clear();
  }
  int64_t slots() const { return slots_; }
  const std::vector<RowRange>& ranges() const { return ranges_; }
  int64_t slot_of(int64_t row) const {
    const size_t i = range_of(row);
    return slot_start_[i] + (row - ranges_[i].begin);
  }
  const float* row(int64_t row) const {
    const size_t i = range_of(row);
    return base_[i] + (row - ranges_[i].begin) * d_;
  }

 private:
  size_t range_of(int64_t row) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), row,
                               [](int64_t r, const RowRange& x) { return r < x.begin; });
    const size_t i = static_cast<size_t>(it - ranges_.begin()) - 1;
    if (it == ranges_.begin() || row >= ranges_[i].end)
      throw Error("internal: row " + std::to_string(row) + " is not held by this rank");
    return i;
  }
  std::vector<RowRange> ranges_;
  std::vector<int64_t> slot_start_;
  std::vector<const float*> base_;
  std::vector<std::unique_ptr<PreparedRows>> prepared_;
  ResultVector<float> moved_;  ///< the moved rows, when moved (written whole)
  int64_t d_;
  int64_t slots_ = 0;
};

// Exact engine: the CPU backend's tiles, with its building blocks
// (manifold/distance_tile.h), so the candidates are bit-identical.
class TileEngine final : public LocalEngine {
 public:
  TileEngine(const Dataset& data, const KnnParams& params, const BlockPlan& plan, int rank, EngineOptions options)
      : data_(data), params_(params), plan_(plan), rank_(rank), options_(std::move(options)) {}

  std::string name() const override { return "tiles"; }
  std::string strategy() const override { return "nth_element"; }
  int list_width() const override { return list_capacity(params_, plan_.n(), data_.cols()); }

  void prepare() override { rows_ = std::make_unique<TouchedRows>(data_, params_.metric, plan_.touched(rank_)); }

  const float* prepared_row(int64_t row) const override { return rows_->row(row); }

  // The CPU backend's prepare_input: the tiles multiply the moved rows (both
  // kinds) with their norms; the owners take the exact keys from the rows
  // as they were (MpiBuild::prepare_certification).
  void place_rows(const exact::Translation& t) override {
    if (t.any()) rows_->move(t.offset, options_.threads);
    norms_.assign(static_cast<size_t>(rows_->slots()), 0.f);
    for (const RowRange& r : rows_->ranges()) {
      try {
        squared_norms(rows_->row(r.begin), r.size(), data_.cols(), norms_.data() + rows_->slot_of(r.begin),
                      options_.threads);
      } catch (const Error& e) {
        const int64_t begin = r.begin;
        throw Error(globalise_row_message(data_.source + (data_.source.empty() ? "" : ": ") + e.what(), data_.source,
                                          [begin](int64_t i) { return begin + i; }));
      }
    }
    lists_.assign(static_cast<size_t>(rows_->slots()), TopK(list_width()));
    for (const WorkUnit& u : plan_.units(rank_))
      for (auto t : plan_.tiles(u)) tiles_.push_back(t);
    locks_ = std::vector<std::mutex>(static_cast<size_t>(plan_.tile_count()));
  }

  void compute(std::atomic<uint64_t>& tiles_done, const std::atomic<bool>& stop,
               const std::atomic<bool>* cancel) override {
    const int64_t n = plan_.n(), d = data_.cols(), tile = plan_.tile();
    const bool keep_self = params_.keep_self;
    const SingleThreadedBlas one_blas_thread;  // as in the CPU backend (and the same kernels)

    // The CPU backend's tile loop; only the lists are indexed by this rank's
    // slots instead of global rows.
    auto work = [&](int64_t t) {
      if (stop.load(std::memory_order_relaxed)) return;
      if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
      thread_local std::vector<float> buf;
      buf.resize(static_cast<size_t>(tile * tile));
      const auto [bi, bj] = tiles_[static_cast<size_t>(t)];
      const int64_t r0 = bi * tile, rn = std::min(tile, n - r0);
      const int64_t c0 = bj * tile, cn = std::min(tile, n - c0);
      const int64_t rs = rows_->slot_of(r0), cs = rows_->slot_of(c0);
      distance_tile(rows_->row(r0), norms_.data() + rs, rn, rows_->row(c0), norms_.data() + cs, cn, d, buf.data());
      {
        std::lock_guard lock(locks_[static_cast<size_t>(bi)]);
        offer_to_rows(buf.data(), rn, cn, r0, c0, lists_.data() + rs, keep_self);
      }
      if (bj != bi) {
        std::lock_guard lock(locks_[static_cast<size_t>(bj)]);
        offer_to_columns(buf.data(), rn, cn, r0, c0, lists_.data() + cs, keep_self);
      }
      tiles_done.fetch_add(1, std::memory_order_relaxed);
      if (options_.after_work) options_.after_work(1);
    };
    parallel_for(0, static_cast<int64_t>(tiles_.size()), options_.threads, work, 1);
  }

  std::vector<std::vector<Candidate>> take_lists() override {
    std::vector<std::vector<Candidate>> out(static_cast<size_t>(rows_->slots()));
    parallel_for(0, rows_->slots(), options_.threads, [&](int64_t s) {
      auto sorted = lists_[static_cast<size_t>(s)].take_sorted();
      auto& o = out[static_cast<size_t>(s)];
      o.reserve(sorted.size());
      for (const Neighbour& nb : sorted) o.push_back({nb.dist, static_cast<int32_t>(nb.index)});
    });
    lists_.clear();
    return out;
  }

 private:
  const Dataset& data_;
  const KnnParams& params_;
  const BlockPlan& plan_;
  int rank_;
  EngineOptions options_;
  std::unique_ptr<TouchedRows> rows_;
  std::vector<float> norms_;
  std::vector<TopK> lists_;
  std::vector<std::pair<int64_t, int64_t>> tiles_;
  std::vector<std::mutex> locks_;
};

// Sub-problem engine: a registered backend (the GPU one on GPU nodes) builds
// the k-NN graph of each unit's rows; only the backend interface is used, so
// the unit is self-joined (rows a and b together), which also recomputes the
// pairs inside a and inside b. Those duplicates are dropped when merging.
class SubProblemEngine final : public LocalEngine {
 public:
  SubProblemEngine(const Dataset& data, const KnnParams& params, const BlockPlan& plan, int rank, EngineOptions options)
      : data_(data), params_(params), plan_(plan), rank_(rank), options_(std::move(options)) {}

  std::string name() const override { return "backend:" + options_.sub_backend; }
  std::string strategy() const override { return strategy_.empty() ? options_.sub_backend : strategy_; }
  int list_width() const override { return params_.k; }

  const float* prepared_row(int64_t) const override { return nullptr; }
  void place_rows(const exact::Translation&) override {}

  void prepare() override {
    ranges_ = plan_.touched(rank_);
    int64_t slot = 0;
    for (const RowRange& r : ranges_) {
      slot_start_.push_back(slot);
      slot += r.size();
    }
    lists_.assign(static_cast<size_t>(slot), {});
    backend_ = make_backend(options_.sub_backend);
  }

  void compute(std::atomic<uint64_t>& tiles_done, const std::atomic<bool>& stop,
               const std::atomic<bool>* cancel) override {
    const int64_t d = data_.cols();
    for (const WorkUnit& u : plan_.units(rank_)) {
      if (stop.load()) return;
      if (cancel && cancel->load()) throw Cancelled();
      const int64_t na = u.a.size(), nb = u.diagonal() ? 0 : u.b.size();
      const int64_t m = na + nb;
      auto to_global = [&](int64_t i) { return i < na ? u.a.begin + i : u.b.begin + (i - na); };
      KnnParams p = params_;
      p.k = static_cast<int>(std::min<int64_t>(params_.k, params_.keep_self ? m : m - 1));
      p.threads = options_.threads;
      p.devices = options_.sub_devices;
      if (m >= 2 && p.k >= 1) {
        Dataset sub;
        if (u.diagonal()) {
          sub = Dataset(na, d, data_.row(u.a.begin), nullptr);
        } else {
          std::vector<float> rows(static_cast<size_t>(m * d));
          std::copy_n(data_.row(u.a.begin), na * d, rows.begin());
          std::copy_n(data_.row(u.b.begin), nb * d, rows.begin() + na * d);
          sub = Dataset(m, d, std::move(rows));
        }
        sub.source = data_.source;
        Progress quiet(nullptr, cancel);
        KnnGraph g;
        try {
          g = backend_->build(sub, p, quiet);
        } catch (const Cancelled&) {
          throw;
        } catch (const UsageError& e) {
          throw UsageError(globalise_row_message(e.what(), data_.source, to_global));
        } catch (const Error& e) {
          throw Error(globalise_row_message(e.what(), data_.source, to_global));
        }
        if (strategy_.empty()) strategy_ = g.backend + ":" + g.strategy;
        for (int64_t i = 0; i < m; ++i) {
          auto& list = lists_[static_cast<size_t>(slot_of(to_global(i)))];
          for (int j = 0; j < g.k; ++j) {
            const float dist = g.distances[i * g.k + j];
            list.push_back({dist, static_cast<int32_t>(to_global(g.indices[i * g.k + j]))});
          }
        }
      }
      const uint64_t tiles = static_cast<uint64_t>(plan_.tile_count(u));
      tiles_done.fetch_add(tiles);
      if (options_.after_work) options_.after_work(tiles);
    }
  }

  std::vector<std::vector<Candidate>> take_lists() override {
    const size_t k = static_cast<size_t>(params_.k);
    parallel_for(0, static_cast<int64_t>(lists_.size()), options_.threads, [&](int64_t s) {
      auto& l = lists_[static_cast<size_t>(s)];
      std::sort(l.begin(), l.end(), key_less);
      l.erase(std::unique(l.begin(), l.end(),
                          [](const Candidate& a, const Candidate& b) { return a.index == b.index; }),
              l.end());
      if (l.size() > k) l.resize(k);
    });
    return std::move(lists_);
  }

 private:
  int64_t slot_of(int64_t row) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), row,
                               [](int64_t r, const RowRange& x) { return r < x.begin; });
    const size_t i = static_cast<size_t>(it - ranges_.begin()) - 1;
    return slot_start_[i] + (row - ranges_[i].begin);
  }
  const Dataset& data_;
  const KnnParams& params_;
  const BlockPlan& plan_;
  int rank_;
  EngineOptions options_;
  std::vector<RowRange> ranges_;
  std::vector<int64_t> slot_start_;
  std::vector<std::vector<Candidate>> lists_;
  std::unique_ptr<KnnBackend> backend_;
  std::string strategy_;
};

}  // namespace

std::unique_ptr<LocalEngine> make_local_engine(const Dataset& data, const KnnParams& params, const BlockPlan& plan,
                                               int rank, const EngineOptions& options) {
  if (options.sub_backend.empty()) return std::make_unique<TileEngine>(data, params, plan, rank, options);
  return std::make_unique<SubProblemEngine>(data, params, plan, rank, options);
}

}  // namespace manifold::mpi
