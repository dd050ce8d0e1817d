// The MPI backend: every rank moves the rows it touches by one translation
// (shared_translation.h: the CPU backend's, decided once for all ranks) and
// computes its share of the upper-triangular tiles (block_plan.h) into
// per-row candidate lists, the lists are sent to the owners of the rows in
// one MPI_Alltoallv, the owners merge them into the CPU backend's candidate
// lists and certify the exact ranking from them (manifold/exact/certify.h;
// keys from the rows as they were; rows the bound cannot certify are
// scanned), and rank 0 gathers the rows for writing. Progress of all ranks
// flows to rank 0 in small control messages while the tiles are computed.
#include "manifold/mpi/mpi_knn_backend.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "block_plan.h"
#include "local_engine.h"
#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/exact/certify.h"
#include "manifold/parallel.h"
#include "rank_group.h"
#include "settings.h"
#include "shared_translation.h"

namespace manifold::mpi {

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      char* end = nullptr;
      long r = std::strtol(v, &end, 10);
      if (*end == '\0' && r >= 0) return static_cast<int>(r);
    }
  }
  return -1;
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Threads per rank: the cores of the host shared by its ranks, but never more
// than the CPUs this rank may run on (mpirun binds a rank to one core by
// default when there are at most two ranks; two threads there would only
// take turns). Launch with `--bind-to none` to give a lone rank every core.
int default_threads(int ranks_on_host) {
  int allowed = hardware_threads();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = std::max(1, CPU_COUNT(&set));
  return std::max(1, std::min(allowed, hardware_threads() / ranks_on_host));
}

// Test hook: MANIFOLD_MPI_FAIL_RANK=r makes rank r fail at one stage.
class FaultInjection {
 public:
  FaultInjection(int rank, const Settings& s)
      : armed_(s.fail_rank == rank), crash_(s.fail_crash), value_(std::to_string(s.fail_rank)), stage_(s.fail_stage) {}
  void at(const std::string& stage) {
    if (stage != stage_ || !armed_.exchange(false)) return;
    if (crash_) std::abort();
    throw Error("injected failure (MANIFOLD_MPI_FAIL_RANK=" + value_ + ", stage " + stage + ")");
  }

 private:
  std::atomic<bool> armed_{false};
  bool crash_ = false;
  std::string value_, stage_;
};

// Plain doubles so that MPI_Gather can carry it (value-initialise it).
struct RankStats {
  double prepare_s, compute_s, merge_s, certify_s, gather_s;
  double tiles, units, rows_touched, threads;
  double reevaluated, fallback_rows, bound_use;
  double bytes_merge, bytes_gather, bytes_control, bytes_received;
};
constexpr int kStatsDoubles = sizeof(RankStats) / sizeof(double);
constexpr int kHostChars = 64;

/// What the compute stage's MPI thread shares with its worker thread.
struct ComputeWorker {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false}, finished{false};
  std::optional<LocalFailure> failure;
  std::thread thread;

  /// This rank's outcome once the worker finished: `local` (a failure
  /// before the stage began) or else the worker's.
  void join_into(std::optional<LocalFailure>& local) {
    if (thread.joinable()) thread.join();
    if (!local) local = failure;
  }
};

constexpr auto kControlPoll = std::chrono::milliseconds(20);

/// Ranks other than 0: progress to rank 0 (every 0.25 s while it grows),
/// then this rank's outcome; Stop requests to the worker; returns rank 0's
/// End message.
ControlMessage relay_to_root(RankGroup& g, ComputeWorker& w, std::optional<LocalFailure>& local) {
  ControlMessage end;
  uint64_t sent = 0;
  auto last = Clock::now();
  bool final_sent = false, ended = false;
  while (!ended) {
    if (!final_sent && w.finished.load()) {
      w.join_into(local);
      ControlMessage m;
      m.done = w.done.load();
      m.state = local ? RankState::Failed : (w.stop.load() ? RankState::Stopped : RankState::Finished);
      if (local) m.kind = local->kind, m.text = local->message;
      send_control(g, 0, m);
      final_sent = true;
    } else if (!final_sent && w.done.load() != sent && seconds_since(last) >= 0.25) {
      ControlMessage m;
      m.done = sent = w.done.load();
      send_control(g, 0, m);
      last = Clock::now();
    }
    while (auto m = poll_control(g, 0)) {
      if (m->type == ControlType::Stop) w.stop.store(true);
      if (m->type == ControlType::End) end = *m, ended = true;
    }
    if (!ended) std::this_thread::sleep_for(kControlPoll);
  }
  return end;
}

/// The End message rank 0 sends once every rank is final: the failure to
/// report if any (an error is the news; cancellations and stops follow from
/// it), and whether every rank failed alike.
ControlMessage end_message(int P, std::vector<std::pair<int, LocalFailure>>& failures) {
  ControlMessage end;
  end.type = ControlType::End;
  if (failures.empty()) return end;
  auto pick = std::min_element(failures.begin(), failures.end(), [](const auto& a, const auto& b) {
    const bool ca = a.second.kind == FailureKind::Cancelled, cb = b.second.kind == FailureKind::Cancelled;
    return ca != cb ? cb : a.first < b.first;
  });
  end.failed_rank = pick->first;
  end.kind = pick->second.kind;
  end.text = pick->second.message;
  bool same = static_cast<int>(failures.size()) == P;
  for (auto& f : failures) same = same && f.second.message == pick->second.message;
  end.everywhere = same;
  return end;
}

/// Rank 0: every rank's progress summed into `progress`, a Stop to all at
/// the first failure, and, once every rank is final, the End message to all
/// (returned).
ControlMessage collect_at_root(RankGroup& g, ComputeWorker& w, std::optional<LocalFailure>& local, Progress& progress) {
  const int P = g.size();
  std::vector<uint64_t> rank_done(static_cast<size_t>(P), 0);
  std::vector<bool> final(static_cast<size_t>(P), false);
  std::vector<std::pair<int, LocalFailure>> failures;
  uint64_t reported = 0;
  bool stop_sent = false;
  int finals = 0;
  while (finals < P) {
    rank_done[0] = w.done.load();
    if (!final[0] && w.finished.load()) {
      w.join_into(local);
      if (local) failures.emplace_back(0, *local);
      final[0] = true, ++finals;
    }
    int from = 0;
    while (auto m = poll_control(g, MPI_ANY_SOURCE, &from)) {
      rank_done[static_cast<size_t>(from)] = m->done;
      if (m->state != RankState::Running && !final[static_cast<size_t>(from)]) {
        final[static_cast<size_t>(from)] = true, ++finals;
        if (m->state == RankState::Failed) failures.emplace_back(from, LocalFailure{m->kind, m->text});
      }
    }
    if (!failures.empty() && !stop_sent) {
      w.stop.store(true);
      ControlMessage s;
      s.type = ControlType::Stop;
      for (int r = 1; r < P; ++r) send_control(g, r, s);
      stop_sent = true;
    }
    uint64_t sum = 0;
    for (uint64_t v : rank_done) sum += v;
    if (sum > reported) {
      try {
        progress.advance(sum - reported);
      } catch (const Cancelled&) {
        // The workers see the same flag and fail as cancelled.
      }
      reported = sum;
    }
    if (finals < P) std::this_thread::sleep_for(kControlPoll);
  }
  ControlMessage end = end_message(P, failures);
  for (int r = 1; r < P; ++r) send_control(g, r, end);
  return end;
}

// The compute stage: workers compute the tiles while this (the MPI) thread
// relays progress to rank 0 and stop requests from it. Rank 0 ends the stage
// for everyone with an End message that carries the agreed outcome.
void run_compute_stage(RankGroup& g, LocalEngine& engine, Progress& progress, FaultInjection& fault,
                       std::optional<LocalFailure> local) {
  ComputeWorker w;
  const std::atomic<bool>* cancel = progress.cancel_flag();
  if (!local) {
    w.thread = std::thread([&] {
      w.failure = capture([&] {
        engine.compute(w.done, w.stop, cancel);
        if (!w.stop.load()) fault.at("knn");  // ranks without tiles fail too
      });
      if (w.failure) w.stop.store(true);
      w.finished.store(true);
    });
  } else {
    w.finished.store(true);
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{w.thread};

  const ControlMessage end = g.rank() != 0 ? relay_to_root(g, w, local) : collect_at_root(g, w, local, progress);
  if (end.failed_rank >= 0) {
    // The failed rank's host travels with the failure only in agree(); here
    // rank 0 asks it (a tiny collective every rank takes part in).
    char host[kHostChars] = {};
    if (g.rank() == end.failed_rank) std::strncpy(host, g.host().c_str(), kHostChars - 1);
    MPI_Bcast(host, kHostChars, MPI_CHAR, end.failed_rank, g.comm());
    throw RankFailure(end.failed_rank, end.kind, end.text, host, end.everywhere != 0);
  }
}

/// One build on this rank: the phases prepare, compute, merge, certify and
/// gather run in this order on every rank, each ending in an agreement
/// (RankGroup::agree: it succeeds everywhere or throws RankFailure
/// everywhere); then the ranks' statistics go to rank 0, which reports them.
class MpiBuild {
 public:
  MpiBuild(RankGroup& g, const Dataset& data, const KnnParams& params, const EngineOptions& eo, const std::string& mode,
           Progress& progress, FaultInjection& fault, KnnGraph& result)
      : g_(g),
        rank_(g.rank()),
        P_(g.size()),
        root_(g.rank() == 0),
        data_(data),
        params_(params),
        eo_(eo),
        mode_(mode),
        progress_(progress),
        fault_(fault),
        result_(result) {
    stats_.threads = eo.threads;
  }

  void prepare(const std::optional<LocalFailure>& early);
  void compute();
  void merge();
  void certify();
  void gather();
  void collect_rank_stats();
  /// Rank 0: the graph's strategy, timings and facts (extra).
  void report(double total_s);

 private:
  void choose_translation();
  void exchange_lists();
  void merge_received_candidates();
  void prepare_certification();
  void take_lists_as_final();
  nlohmann::json per_rank_json(double* sent_total, double* reevaluated, double* fallback_rows, double* bound_use) const;

  RankGroup& g_;
  const int rank_, P_;
  const bool root_;
  const Dataset& data_;
  const KnnParams& params_;
  const EngineOptions eo_;
  const std::string mode_;
  Progress& progress_;
  FaultInjection& fault_;
  KnnGraph& result_;

  RankStats stats_{};
  std::unique_ptr<BlockPlan> plan_;
  std::unique_ptr<LocalEngine> engine_;
  // Every rank's same translation of the prepared rows (tiles only): the
  // tiles multiply the moved rows, certification takes its keys from the
  // rows as they were.
  exact::Translation translation_;
  std::string strategy_;
  // Tiles: each row travels as the CPU backend's `capacity` candidates by
  // GEMM distance, and the owner certifies the exact ranking from them.
  // Sub-problems: k candidates by their (already exact) distance.
  bool certify_ = false;
  int width_ = 0;
  // The exchange: what this rank received, and from which rows.
  std::vector<Candidate> recv_;
  std::vector<int> recv_displ_;
  std::vector<std::vector<RowRange>> incoming_;
  // The owner's rows and their lists.
  RowRange mine_{};
  int64_t m_ = 0;
  std::vector<int64_t> out_index_;
  std::vector<float> out_dist_;
  std::vector<float> cand_key_;
  std::vector<int> cand_index_;  // global rows; for certification, compact slots relative to `mine_`
  // Certification input: the prepared rows of the owner's rows and of every
  // candidate, ascending by global row (so ties order as in the CPU
  // backend); the owner's rows start at slot `own_at_`.
  std::vector<int64_t> slot_row_;
  int64_t own_at_ = 0;
  PreparedRows compact_;
  std::vector<float> compact_raw_, norms_;
  double local_ymax_ = 0;
  double ymax_ = 0;  ///< the largest stored squared norm of every rank's rows (the bound's)
  // Every rank's statistics and host, on rank 0.
  std::vector<double> all_stats_;
  std::vector<char> hosts_;
};

// ---- prepare: read, normalise and move the rows this rank touches -----
void MpiBuild::prepare(const std::optional<LocalFailure>& early) {
  const auto t = Clock::now();
  g_.agree(early);
  g_.agree(capture([&] {
    validate(params_, data_.rows());
    if (data_.rows() >= std::numeric_limits<int32_t>::max())
      throw Error("the MPI backend indexes rows with 32-bit integers: " + std::to_string(data_.rows()) +
                  " rows is too many");
    if (!eo_.sub_backend.empty() && !backend_available(eo_.sub_backend))
      throw UsageError("MANIFOLD_MPI_LOCAL=" + mode_ + ": backend '" + eo_.sub_backend +
                       "' is not usable on this rank");
    progress_.stage("prepare", 1, "steps");
    plan_ = std::make_unique<BlockPlan>(data_.rows(), P_, kCpuTile);
    engine_ = make_local_engine(data_, params_, *plan_, rank_, eo_);
    engine_->prepare();
    if (root_) result_.fingerprint = data_.fingerprint();
  }));
  if (eo_.sub_backend.empty()) choose_translation();
  g_.agree(capture([&] {
    engine_->place_rows(translation_);
    fault_.at("prepare");
    progress_.finish();
  }));
  stats_.prepare_s = seconds_since(t);
  stats_.rows_touched = static_cast<double>(plan_->touched_rows(rank_));
  stats_.units = static_cast<double>(plan_->units(rank_).size());
  for (const WorkUnit& u : plan_->units(rank_)) stats_.tiles += static_cast<double>(plan_->tile_count(u));
}

/// The translation every rank moves its rows by (shared_translation.h):
/// rank 0 decides from choose_translation's sample and broadcasts it; the
/// exact kind is then checked over every value, each rank over the rows it
/// owns, and decided again by rank 0 where some column would round.
void MpiBuild::choose_translation() {
  const int64_t n = data_.rows(), d = data_.cols();
  std::vector<float> sample;  // rank 0: the sample rows, prepared for the metric
  int64_t samples = 0;
  g_.agree(capture([&] {
    if (!root_) return;
    const std::vector<int64_t> rows = exact::translation_sample_rows(n);
    samples = static_cast<int64_t>(rows.size());
    std::vector<float> raw(static_cast<size_t>(samples * d));
    for (int64_t s = 0; s < samples; ++s) std::copy_n(data_.row(rows[static_cast<size_t>(s)]), d, raw.data() + s * d);
    // prepare_rows() works row by row: the sample's rows are those the CPU
    // backend samples from all of them (and every one already passed it on
    // the rank that touches it).
    Dataset view(samples, d, raw.data(), nullptr);
    view.source = data_.source;
    const PreparedRows prepared = prepare_rows(view, params_.metric);
    sample.assign(prepared.data, prepared.data + samples * d);
    translation_ = exact::choose_translation(sample.data(), samples, d, eo_.threads, /*rounded_allowed=*/true);
  }));
  broadcast_translation(translation_, d, 0, g_.comm());
  if (!translation_.any() || !translation_.exact) return;
  std::vector<unsigned char> inexact(static_cast<size_t>(d), 0);
  g_.agree(capture([&] {
    const RowRange own = plan_->block(rank_);
    exact::mark_rounding_columns([&](int64_t i) { return engine_->prepared_row(own.begin + i); }, own.size(), d,
                                 translation_.offset, inexact, eo_.threads);
  }));
  MPI_Allreduce(MPI_IN_PLACE, inexact.data(), static_cast<int>(d), MPI_UNSIGNED_CHAR, MPI_BOR, g_.comm());
  if (std::find(inexact.begin(), inexact.end(), 1) == inexact.end()) return;
  g_.agree(capture([&] {
    if (root_) translation_ = exact::settle_translation(translation_, inexact, sample.data(), samples, d, eo_.threads);
  }));
  broadcast_translation(translation_, d, 0, g_.comm());
}

// ---- compute: tiles (or sub-problems) into candidate lists ------------
void MpiBuild::compute() {
  const auto t = Clock::now();
  auto f = capture([&] { progress_.stage("knn", static_cast<uint64_t>(plan_->total_tiles()), "tiles"); });
  run_compute_stage(g_, *engine_, progress_, fault_, f);
  capture([&] { progress_.finish(); });
  stats_.compute_s = seconds_since(t);
}

// ---- merge: candidate lists to the owners of their rows ---------------
void MpiBuild::merge() {
  const auto t = Clock::now();
  certify_ = eo_.sub_backend.empty();
  width_ = engine_->list_width();
  strategy_ = engine_->strategy();
  exchange_lists();
  mine_ = plan_->block(rank_);
  m_ = mine_.size();
  out_index_.resize(static_cast<size_t>(m_ * params_.k));
  out_dist_.resize(static_cast<size_t>(m_ * params_.k));
  g_.agree(capture([&] {
    merge_received_candidates();
    if (certify_) prepare_certification();
    else
      take_lists_as_final();
    fault_.at("merge");
    progress_.finish();
  }));
  std::vector<Candidate>().swap(recv_);
  stats_.merge_s = seconds_since(t);
}

/// Every touched row's list to the row's owner, in one MPI_Alltoallv.
void MpiBuild::exchange_lists() {
  const int P = P_, rank = rank_, width = width_;
  std::vector<Candidate> send;
  std::vector<int> send_rows(static_cast<size_t>(P), 0), send_displ(static_cast<size_t>(P), 0);
  std::vector<int> recv_rows(static_cast<size_t>(P), 0);
  recv_displ_.assign(static_cast<size_t>(P), 0);
  incoming_.assign(static_cast<size_t>(P), {});
  g_.agree(capture([&] {
    progress_.stage("merge", 1, "steps");
    progress_.check_cancel();
    auto lists = engine_->take_lists();
    engine_.reset();
    const auto& touched = plan_->touched(rank);
    std::vector<int64_t> slot_start;
    int64_t slots = 0;
    for (const RowRange& r : touched) slot_start.push_back(slots), slots += r.size();
    auto slot_of = [&](int64_t row) {
      size_t i = 0;
      while (row >= touched[i].end) ++i;
      return slot_start[i] + (row - touched[i].begin);
    };
    int64_t rows_out = 0, rows_in = 0;
    for (int dst = 0; dst < P; ++dst) {
      int64_t c = 0;
      for (const RowRange& r : plan_->touched_within(rank, plan_->block(dst))) c += r.size();
      incoming_[static_cast<size_t>(dst)] = plan_->touched_within(dst, plan_->block(rank));
      int64_t in = 0;
      for (const RowRange& r : incoming_[static_cast<size_t>(dst)]) in += r.size();
      if (rows_out + c > std::numeric_limits<int>::max() || rows_in + in > std::numeric_limits<int>::max())
        throw Error("more than 2^31 rows in one exchange: use more ranks");
      send_rows[static_cast<size_t>(dst)] = static_cast<int>(c);
      send_displ[static_cast<size_t>(dst)] = static_cast<int>(rows_out);
      recv_rows[static_cast<size_t>(dst)] = static_cast<int>(in);
      recv_displ_[static_cast<size_t>(dst)] = static_cast<int>(rows_in);
      rows_out += c;
      rows_in += in;
    }
    send.resize(static_cast<size_t>(rows_out * width));
    recv_.resize(static_cast<size_t>(rows_in * width));
    // Every row travels as exactly `width` candidates, padded when the rank saw fewer.
    const Candidate pad{std::numeric_limits<float>::infinity(), -1};
    size_t at = 0;
    for (int dst = 0; dst < P; ++dst)
      for (const RowRange& r : plan_->touched_within(rank, plan_->block(dst)))
        for (int64_t row = r.begin; row < r.end; ++row) {
          const auto& l = lists[static_cast<size_t>(slot_of(row))];
          for (int j = 0; j < width; ++j) send[at++] = j < static_cast<int>(l.size()) ? l[static_cast<size_t>(j)] : pad;
        }
  }));
  MPI_Datatype row_type;
  MPI_Type_contiguous(static_cast<int>(width * sizeof(Candidate)), MPI_BYTE, &row_type);
  MPI_Type_commit(&row_type);
  MPI_Alltoallv(send.data(), send_rows.data(), send_displ.data(), row_type, recv_.data(), recv_rows.data(),
                recv_displ_.data(), row_type, g_.comm());
  MPI_Type_free(&row_type);
  for (int dst = 0; dst < P; ++dst)
    if (dst != rank) {
      stats_.bytes_merge += static_cast<double>(send_rows[static_cast<size_t>(dst)]) * width * sizeof(Candidate);
      stats_.bytes_received += static_cast<double>(recv_rows[static_cast<size_t>(dst)]) * width * sizeof(Candidate);
    }
}

/// The owner's lists: the `width` smallest by (key, index) over all
/// senders. Each tile is computed once, so for tiles these are exactly the
/// CPU backend's lists (TopK keeps the smallest by the same total order).
void MpiBuild::merge_received_candidates() {
  const int P = P_, width = width_;
  const int64_t m = m_;
  std::vector<std::vector<int64_t>> position(static_cast<size_t>(P));  // row -> row in recv, or -1
  for (int s = 0; s < P; ++s) {
    auto& pos = position[static_cast<size_t>(s)];
    pos.assign(static_cast<size_t>(m), -1);
    int64_t at = recv_displ_[static_cast<size_t>(s)];
    for (const RowRange& r : incoming_[static_cast<size_t>(s)])
      for (int64_t row = r.begin; row < r.end; ++row) pos[static_cast<size_t>(row - mine_.begin)] = at++;
  }
  cand_key_.resize(static_cast<size_t>(m * width));
  cand_index_.resize(static_cast<size_t>(m * width));
  parallel_for(0, m, eo_.threads, [&](int64_t i) {
    std::vector<Candidate> c;
    c.reserve(static_cast<size_t>(P * width));
    for (int s = 0; s < P; ++s) {
      const int64_t p = position[static_cast<size_t>(s)][static_cast<size_t>(i)];
      if (p < 0) continue;
      for (int j = 0; j < width; ++j) {
        const Candidate& x = recv_[static_cast<size_t>(p * width + j)];
        if (x.index >= 0) c.push_back(x);
      }
    }
    std::sort(c.begin(), c.end(), key_less);
    c.erase(std::unique(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.index == b.index; }),
            c.end());
    if (static_cast<int>(c.size()) < width)
      throw Error("internal: row " + std::to_string(mine_.begin + i) + " received " + std::to_string(c.size()) +
                  " candidates, fewer than " + std::to_string(width));
    for (int j = 0; j < width; ++j) {
      cand_key_[static_cast<size_t>(i * width + j)] = c[static_cast<size_t>(j)].key;
      cand_index_[static_cast<size_t>(i * width + j)] = c[static_cast<size_t>(j)].index;
    }
  });
}

/// The rows certification reads (the owner's and every candidate's),
/// prepared and with their squared norms; candidates as compact slots.
void MpiBuild::prepare_certification() {
  const int width = width_;
  const int64_t m = m_;
  std::vector<int64_t> others;
  for (int v : cand_index_)
    if (v < mine_.begin || v >= mine_.end) others.push_back(v);
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  own_at_ = std::lower_bound(others.begin(), others.end(), mine_.begin) - others.begin();
  slot_row_.reserve(others.size() + static_cast<size_t>(m));
  slot_row_.insert(slot_row_.end(), others.begin(), others.begin() + own_at_);
  for (int64_t r = mine_.begin; r < mine_.end; ++r) slot_row_.push_back(r);
  slot_row_.insert(slot_row_.end(), others.begin() + own_at_, others.end());
  // Slots relative to the owner's first row: negative before it.
  parallel_for(0, m, eo_.threads, [&](int64_t i) {
    for (int j = 0; j < width; ++j) {
      int& v = cand_index_[static_cast<size_t>(i * width + j)];
      const int64_t slot = std::lower_bound(slot_row_.begin(), slot_row_.end(), int64_t{v}) - slot_row_.begin();
      v = static_cast<int>(slot - own_at_);
    }
  });
  // prepare_rows() works row by row: a subset gives the same floats.
  const int64_t d = data_.cols(), slots = static_cast<int64_t>(slot_row_.size());
  compact_raw_.resize(static_cast<size_t>(slots * d));
  parallel_for(0, slots, eo_.threads, [&](int64_t s) {
    std::copy_n(data_.row(slot_row_[static_cast<size_t>(s)]), d, compact_raw_.data() + s * d);
  });
  Dataset view(slots, d, compact_raw_.data(), nullptr);
  view.source = data_.source;
  try {
    compact_ = prepare_rows(view, params_.metric);
  } catch (const Error& e) {
    throw Error(globalise_row_message(e.what(), data_.source,
                                      [&](int64_t s) { return slot_row_[static_cast<size_t>(s)]; }));
  }
  if (params_.metric != Metric::Euclidean) std::vector<float>().swap(compact_raw_);
  // The norms the tiles used: of the moved rows, where moved (the keys stay
  // with the rows as they were).
  norms_.resize(static_cast<size_t>(slots));
  if (translation_.any()) {
    std::vector<float> moved(static_cast<size_t>(slots * d));
    exact::moved_rows(compact_.data, slots, d, translation_.offset, moved.data(), eo_.threads);
    squared_norms(moved.data(), slots, d, norms_.data(), eo_.threads);
  } else {
    squared_norms(compact_.data, slots, d, norms_.data(), eo_.threads);
  }
  // Every row is owned by one rank: the maximum over the owners' rows is
  // the maximum over all rows.
  for (int64_t i = 0; i < m; ++i) local_ymax_ = std::max(local_ymax_, double{norms_[static_cast<size_t>(own_at_ + i)]});
}

/// Sub-problems: the first k candidates are the exact lists.
void MpiBuild::take_lists_as_final() {
  const int k = params_.k, width = width_;
  for (int64_t i = 0; i < m_; ++i)
    for (int j = 0; j < k; ++j) {
      out_index_[static_cast<size_t>(i * k + j)] = cand_index_[static_cast<size_t>(i * width + j)];
      out_dist_[static_cast<size_t>(i * k + j)] = cand_key_[static_cast<size_t>(i * width + j)];
    }
}

// ---- certify: the exact ranking of the owner's rows (as the CPU backend)
void MpiBuild::certify() {
  const auto t = Clock::now();
  const int k = params_.k, width = width_;
  const int64_t m = m_;
  MPI_Allreduce(&local_ymax_, &ymax_, 1, MPI_DOUBLE, MPI_MAX, g_.comm());
  const double ymax = ymax_;
  g_.agree(capture([&] {
    progress_.check_cancel();
    if (!certify_) return;
    progress_.stage("certify", 1, "steps");
    const int64_t n = data_.rows(), d = data_.cols();
    const int64_t others = params_.keep_self ? n : n - 1;
    std::vector<int> fill(static_cast<size_t>(m), width), status(static_cast<size_t>(m));
    exact::CertifyRequest req;
    req.rows = compact_.data + own_at_ * d, req.d = d, req.k = k, req.norms = norms_.data() + own_at_;
    req.lists = {cand_key_.data(), cand_index_.data(), fill.data(), m, width};
    // Keys from the rows as they were: the loop's rows rounded when moved by
    // the rounded kind, which widens the bound (error_bound.h).
    req.ymax = ymax, req.model = exact::make_error_model(d, exact::DotArithmetic::Float32, !translation_.exact);
    req.metric = params_.metric;
    req.complete = width == others, req.threads = eo_.threads;
    stats_.bound_use = exact::certify_rows(req, {out_index_.data(), out_dist_.data(), status.data()});
    std::vector<int64_t> uncertified;
    for (int64_t i = 0; i < m; ++i) {
      if (status[static_cast<size_t>(i)] < 0) {
        uncertified.push_back(i);
        continue;
      }
      stats_.reevaluated += status[static_cast<size_t>(i)];
      for (int j = 0; j < k; ++j) {
        int64_t& v = out_index_[static_cast<size_t>(i * k + j)];
        v = slot_row_[static_cast<size_t>(own_at_ + v)];
      }
    }
    stats_.fallback_rows = static_cast<double>(uncertified.size());
    progress_.check_cancel();
    if (!uncertified.empty()) {
      // Dense neighbourhoods inside the bound: an exact scan over all rows,
      // which needs them all prepared (rare), into this rank's output rows.
      PreparedRows all = prepare_rows(data_, params_.metric);
      const exact::ExactScanRequest scan{all.data, n, d, k, params_.metric, params_.keep_self, eo_.threads};
      std::vector<float> keys;
      for (int64_t i : uncertified) {
        progress_.check_cancel();
        exact::exact_scan_row(scan, mine_.begin + i, keys, out_index_.data() + i * k, out_dist_.data() + i * k);
      }
    }
    progress_.finish();
  }));
  std::vector<float>().swap(cand_key_);
  std::vector<int>().swap(cand_index_);
  std::vector<float>().swap(norms_);
  std::vector<float>().swap(compact_raw_);
  compact_ = PreparedRows{};
  stats_.certify_s = seconds_since(t);
}

// ---- gather: the final rows to rank 0, which writes them --------------
void MpiBuild::gather() {
  const auto t = Clock::now();
  const int k = params_.k;
  g_.agree(capture([&] {
    progress_.stage("gather", 1, "steps");
    progress_.check_cancel();
    if (root_) {
      result_.indices.resize(static_cast<size_t>(data_.rows() * k));
      result_.distances.resize(static_cast<size_t>(data_.rows() * k));
    }
  }));
  std::vector<int> counts(static_cast<size_t>(P_)), displs(static_cast<size_t>(P_));
  for (int r = 0; r < P_; ++r) {
    counts[static_cast<size_t>(r)] = static_cast<int>(plan_->block(r).size());
    displs[static_cast<size_t>(r)] = static_cast<int>(plan_->block(r).begin);
  }
  MPI_Datatype idx_row, dist_row;
  MPI_Type_contiguous(k, MPI_INT64_T, &idx_row);
  MPI_Type_contiguous(k, MPI_FLOAT, &dist_row);
  MPI_Type_commit(&idx_row);
  MPI_Type_commit(&dist_row);
  MPI_Gatherv(out_index_.data(), static_cast<int>(m_), idx_row, result_.indices.data(), counts.data(), displs.data(),
              idx_row, 0, g_.comm());
  MPI_Gatherv(out_dist_.data(), static_cast<int>(m_), dist_row, result_.distances.data(), counts.data(), displs.data(),
              dist_row, 0, g_.comm());
  MPI_Type_free(&idx_row);
  MPI_Type_free(&dist_row);
  if (!root_) stats_.bytes_gather = static_cast<double>(m_) * k * (sizeof(int64_t) + sizeof(float));
  stats_.gather_s = seconds_since(t);
  stats_.bytes_control = static_cast<double>(g_.control_bytes());
}

/// Every rank's statistics and host name to rank 0.
void MpiBuild::collect_rank_stats() {
  all_stats_.assign(root_ ? static_cast<size_t>(P_ * kStatsDoubles) : 0, 0.0);
  MPI_Gather(&stats_, kStatsDoubles, MPI_DOUBLE, all_stats_.data(), kStatsDoubles, MPI_DOUBLE, 0, g_.comm());
  char host[kHostChars] = {};
  std::strncpy(host, g_.host().c_str(), kHostChars - 1);
  hosts_.assign(root_ ? static_cast<size_t>(P_ * kHostChars) : 0, '\0');
  MPI_Gather(host, kHostChars, MPI_CHAR, hosts_.data(), kHostChars, MPI_CHAR, 0, g_.comm());
  capture([&] { progress_.finish(); });
}

/// One entry per rank (rank 0: the gathered statistics), and the totals
/// over the ranks.
nlohmann::json MpiBuild::per_rank_json(double* sent_total, double* reevaluated, double* fallback_rows,
                                       double* bound_use) const {
  nlohmann::json per_rank = nlohmann::json::array();
  const double row_bytes = static_cast<double>(data_.cols()) * sizeof(float);
  for (int r = 0; r < P_; ++r) {
    RankStats s{};
    std::memcpy(&s, all_stats_.data() + static_cast<size_t>(r) * kStatsDoubles, sizeof s);
    const double sent = s.bytes_merge + s.bytes_gather + s.bytes_control;
    *sent_total += sent;
    *reevaluated += s.reevaluated;
    *fallback_rows += s.fallback_rows;
    *bound_use = std::max(*bound_use, s.bound_use);
    per_rank.push_back({{"rank", r},
                        {"host", std::string(hosts_.data() + static_cast<size_t>(r) * kHostChars)},
                        {"threads", static_cast<int>(s.threads)},
                        {"work_units", static_cast<int64_t>(s.units)},
                        {"tiles", static_cast<int64_t>(s.tiles)},
                        {"rows_owned", plan_->block(r).size()},
                        {"rows_read", static_cast<int64_t>(s.rows_touched)},
                        {"input_bytes_read", s.rows_touched * row_bytes},
                        {"bytes_sent", sent},
                        {"bytes_sent_merge", s.bytes_merge},
                        {"bytes_sent_gather", s.bytes_gather},
                        {"bytes_sent_control", s.bytes_control},
                        {"bytes_received_merge", s.bytes_received},
                        {"timings_s",
                         {{"prepare", s.prepare_s},
                          {"distances+select", s.compute_s},
                          {"merge", s.merge_s},
                          {"certify", s.certify_s},
                          {"gather", s.gather_s}}}});
  }
  return per_rank;
}

void MpiBuild::report(double total_s) {
  result_.strategy = strategy_;
  result_.timings.emplace_back("prepare", stats_.prepare_s);
  result_.timings.emplace_back("distances+select", stats_.compute_s);
  result_.timings.emplace_back("merge", stats_.merge_s);
  result_.timings.emplace_back("certify", stats_.certify_s);
  result_.timings.emplace_back("gather", stats_.gather_s);
  result_.timings.emplace_back("total", total_s);
  double sent_total = 0, reevaluated = 0, fallback_rows = 0, bound_use = 0;
  nlohmann::json per_rank = per_rank_json(&sent_total, &reevaluated, &fallback_rows, &bound_use);
  const double row_bytes = static_cast<double>(data_.cols()) * sizeof(float);
  nlohmann::json& x = result_.extra;
  x["ranks"] = P_;
  x["engine"] = eo_.sub_backend.empty() ? "tiles" : "backend:" + eo_.sub_backend;
  x["tile"] = kCpuTile;
  x["tiles"] = plan_->total_tiles();
  x["row_blocks"] = plan_->block_starts();
  x["input_bytes"] = static_cast<double>(data_.rows()) * row_bytes;
  x["input_memory_mapped"] = data_.memory_mapped();
  x["bytes_sent_total"] = sent_total;
  x["per_rank"] = per_rank;
  if (eo_.sub_backend.empty()) {
    x["capacity"] = list_capacity(params_, data_.rows(), data_.cols());
    x["reevaluated_per_row"] = data_.rows() ? reevaluated / static_cast<double>(data_.rows()) : 0.0;
    x["fallback_rows"] = static_cast<int64_t>(fallback_rows);
    x["error_bound_max_use"] = bound_use;
    x["error_bound_largest_norm"] = ymax_;
    x["translated_columns"] = translation_.columns;
    if (translation_.any()) {
      x["translation_norm_ratio"] = translation_.norm_ratio;
      x["translation_exact"] = translation_.exact;
    }
  }
}

class MpiKnnBackend final : public KnnBackend {
 public:
  std::string name() const override { return "mpi"; }
  KnnGraph build(const Dataset& data, const KnnParams& params, Progress& caller_progress) override;
};

KnnGraph MpiKnnBackend::build(const Dataset& data, const KnnParams& params, Progress& caller_progress) {
  RankGroup& g = RankGroup::world();
  const int rank = g.rank(), P = g.size();
  const bool root = rank == 0;
  const auto t0 = Clock::now();

  // Only rank 0 reports: to the caller's sink and to the progress file.
  // A bad setting fails every rank alike; prepare agrees on it, rank 0 reports it.
  Settings env;
  std::optional<LocalFailure> early = capture([&] { env = settings(); });
  std::unique_ptr<cluster::ProgressFileSink> file_sink;
  if (root && !early && !env.progress_file.empty()) {
    early = capture([&] {
      file_sink = std::make_unique<cluster::ProgressFileSink>(env.progress_file, caller_progress.sink());
    });
  }
  ProgressSink* sink = root ? (file_sink ? static_cast<ProgressSink*>(file_sink.get()) : caller_progress.sink())
                            : nullptr;
  Progress progress(sink, caller_progress.cancel_flag());
  FaultInjection fault(rank, env);

  KnnGraph result = empty_graph(data, params, "mpi");

  try {
    // The local engine must be the same everywhere: candidate keys differ
    // between exact tiles and sub-problems.
    const std::string& mode = env.local;
    int has_gpu = backend_available("gpu") ? 1 : 0, all_gpu = 0;
    MPI_Allreduce(&has_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, g.comm());
    EngineOptions eo;
    eo.threads = params.threads > 0 ? params.threads : default_threads(g.local_size());
    if (mode == "auto") eo.sub_backend = all_gpu ? "gpu" : "";
    else if (mode != "tiles")
      eo.sub_backend = mode;
    if (!params.devices.empty())
      eo.sub_devices = {params.devices[static_cast<size_t>(g.local_rank()) % params.devices.size()]};
    else if (eo.sub_backend == "gpu" && g.local_size() > 1)
      eo.sub_devices = {g.local_rank()};  // one GPU per rank on a node
    eo.after_work = [&](uint64_t) { fault.at("knn"); };

    MpiBuild phases(g, data, params, eo, mode, progress, fault, result);
    phases.prepare(early);
    phases.compute();
    phases.merge();
    phases.certify();
    phases.gather();
    phases.collect_rank_stats();
    if (!root) {
      result.output_rank = false;
      return result;
    }
    phases.report(seconds_since(t0));
    if (file_sink) file_sink->event("computed", {{"ranks", P}});
    return result;
  } catch (const RankFailure& f) {
    if (file_sink) {
      try {
        file_sink->event(f.kind == FailureKind::Cancelled ? "cancelled" : "failed",
                         {{"rank", f.rank}, {"host", f.host}, {"message", f.message}});
      } catch (...) {
      }
    }
    if (!root) {
      // Rank 0 reports; the others leave quietly so the job prints one line.
      result.output_rank = false;
      return result;
    }
    if (f.kind == FailureKind::Cancelled) throw Cancelled();
    const std::string text = P == 1 || f.everywhere ? f.message
                                                    : "rank " + std::to_string(f.rank) + " of " + std::to_string(P) +
                                                          " on " + f.host + " failed: " + f.message;
    if (f.kind == FailureKind::Usage) throw UsageError(text);
    throw Error(text);
  } catch (const std::exception& e) {
    // Outside the agreed phases the other ranks cannot be told: end the job.
    g.abort_job(e.what());
  }
}

}  // namespace

void register_mpi_backend() {
  register_backend("mpi", [] { return std::make_unique<MpiKnnBackend>(); });
}

}  // namespace manifold::mpi
