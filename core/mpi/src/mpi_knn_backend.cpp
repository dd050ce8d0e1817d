// The MPI backend: every rank computes its share of the upper-triangular
// tiles (block_plan.h) into per-row candidate lists, the lists are sent to
// the owners of the rows in one MPI_Alltoallv, the owners merge them into the
// CPU backend's candidate lists and certify the exact ranking from them
// (manifold/exact/certify.h; rows the bound cannot certify are scanned), and
// rank 0 gathers the rows for writing. Progress of all ranks
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
  explicit FaultInjection(int rank) {
    const char* r = std::getenv("MANIFOLD_MPI_FAIL_RANK");
    if (!r || !*r) return;
    char* end = nullptr;
    long v = std::strtol(r, &end, 10);
    armed_.store(*end == '\0' && v == rank);
    value_ = r;
    const char* s = std::getenv("MANIFOLD_MPI_FAIL_STAGE");
    stage_ = s && *s ? s : "knn";
    const char* m = std::getenv("MANIFOLD_MPI_FAIL_MODE");
    crash_ = m && std::string(m) == "crash";
  }
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

// The compute stage: workers compute the tiles while this (the MPI) thread
// relays progress to rank 0 and stop requests from it. Rank 0 ends the stage
// for everyone with an End message that carries the agreed outcome.
void run_compute_stage(RankGroup& g, LocalEngine& engine, Progress& progress, FaultInjection& fault,
                       std::optional<LocalFailure> local) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false}, finished{false};
  const std::atomic<bool>* cancel = progress.cancel_flag();
  std::optional<LocalFailure> worker_failure;
  std::thread worker;
  if (!local) {
    worker = std::thread([&] {
      worker_failure = capture([&] {
        engine.compute(done, stop, cancel);
        if (!stop.load()) fault.at("knn");  // ranks without tiles fail too
      });
      if (worker_failure) stop.store(true);
      finished.store(true);
    });
  } else {
    finished.store(true);
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{worker};

  const int rank = g.rank(), P = g.size();
  auto sleep = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  ControlMessage end;
  if (rank != 0) {
    uint64_t sent = 0;
    auto last = Clock::now();
    bool final_sent = false, ended = false;
    while (!ended) {
      if (!final_sent && finished.load()) {
        if (worker.joinable()) worker.join();
        if (!local) local = worker_failure;
        ControlMessage m;
        m.done = done.load();
        m.state = local ? RankState::Failed : (stop.load() ? RankState::Stopped : RankState::Finished);
        if (local) m.kind = local->kind, m.text = local->message;
        send_control(g, 0, m);
        final_sent = true;
      } else if (!final_sent && done.load() != sent && seconds_since(last) >= 0.25) {
        ControlMessage m;
        m.done = sent = done.load();
        send_control(g, 0, m);
        last = Clock::now();
      }
      while (auto m = poll_control(g, 0)) {
        if (m->type == ControlType::Stop) stop.store(true);
        if (m->type == ControlType::End) end = *m, ended = true;
      }
      if (!ended) sleep();
    }
  } else {
    std::vector<uint64_t> rank_done(static_cast<size_t>(P), 0);
    std::vector<bool> final(static_cast<size_t>(P), false);
    std::vector<std::pair<int, LocalFailure>> failures;
    uint64_t reported = 0;
    bool stop_sent = false;
    int finals = 0;
    while (finals < P) {
      rank_done[0] = done.load();
      if (!final[0] && finished.load()) {
        if (worker.joinable()) worker.join();
        if (!local) local = worker_failure;
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
        stop.store(true);
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
      if (finals < P) sleep();
    }
    end.type = ControlType::End;
    if (!failures.empty()) {
      // An error is the news; cancellations and stops follow from it.
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
    }
    for (int r = 1; r < P; ++r) send_control(g, r, end);
  }
  if (end.failed_rank >= 0) {
    // The failed rank's host travels with the failure only in agree(); here
    // rank 0 asks it (a tiny collective every rank takes part in).
    char host[kHostChars] = {};
    if (rank == end.failed_rank) std::strncpy(host, g.host().c_str(), kHostChars - 1);
    MPI_Bcast(host, kHostChars, MPI_CHAR, end.failed_rank, g.comm());
    throw RankFailure(end.failed_rank, end.kind, end.text, host, end.everywhere != 0);
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
  std::unique_ptr<cluster::ProgressFileSink> file_sink;
  std::optional<LocalFailure> early;
  if (root) {
    const char* path = std::getenv(cluster::kProgressFileEnv);
    if (path && *path)
      early = capture([&] { file_sink = std::make_unique<cluster::ProgressFileSink>(path, caller_progress.sink()); });
  }
  ProgressSink* sink = root ? (file_sink ? static_cast<ProgressSink*>(file_sink.get()) : caller_progress.sink()) : nullptr;
  Progress progress(sink, caller_progress.cancel_flag());
  FaultInjection fault(rank);

  KnnGraph result;
  result.n = data.rows();
  result.d = data.cols();
  result.k = params.k;
  result.metric = params.metric;
  result.keep_self = params.keep_self;
  result.backend = "mpi";

  try {
    // The local engine must be the same everywhere: candidate keys differ
    // between exact tiles and sub-problems.
    const char* mode_env = std::getenv("MANIFOLD_MPI_LOCAL");
    const std::string mode = mode_env && *mode_env ? mode_env : "auto";
    int has_gpu = backend_available("gpu") ? 1 : 0, all_gpu = 0;
    MPI_Allreduce(&has_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, g.comm());
    EngineOptions eo;
    eo.threads = params.threads > 0 ? params.threads : default_threads(g.local_size());
    if (mode == "auto") eo.sub_backend = all_gpu ? "gpu" : "";
    else if (mode != "tiles") eo.sub_backend = mode;
    if (!params.devices.empty())
      eo.sub_devices = {params.devices[static_cast<size_t>(g.local_rank()) % params.devices.size()]};
    else if (eo.sub_backend == "gpu" && g.local_size() > 1)
      eo.sub_devices = {g.local_rank()};  // one GPU per rank on a node
    eo.after_work = [&](uint64_t) { fault.at("knn"); };

    RankStats stats{};
    stats.threads = eo.threads;
    std::unique_ptr<BlockPlan> plan;
    std::unique_ptr<LocalEngine> engine;

    // ---- prepare: read and normalise the rows this rank touches ----------
    auto t = Clock::now();
    g.agree(early);
    g.agree(capture([&] {
      validate(params, data.rows());
      if (data.rows() >= std::numeric_limits<int32_t>::max())
        throw Error("the MPI backend indexes rows with 32-bit integers: " + std::to_string(data.rows()) +
                    " rows is too many");
      if (!eo.sub_backend.empty() && !backend_available(eo.sub_backend))
        throw UsageError("MANIFOLD_MPI_LOCAL=" + mode + ": backend '" + eo.sub_backend +
                         "' is not usable on this rank");
      progress.stage("prepare", 1, "steps");
      plan = std::make_unique<BlockPlan>(data.rows(), P, kCpuTile);
      engine = make_local_engine(data, params, *plan, rank, eo);
      engine->prepare();
      if (root) result.fingerprint = data.fingerprint();
      fault.at("prepare");
      progress.finish();
    }));
    stats.prepare_s = seconds_since(t);
    stats.rows_touched = static_cast<double>(plan->touched_rows(rank));
    stats.units = static_cast<double>(plan->units(rank).size());
    for (const WorkUnit& u : plan->units(rank)) stats.tiles += static_cast<double>(plan->tile_count(u));

    // ---- compute: tiles (or sub-problems) into candidate lists ------------
    t = Clock::now();
    {
      auto f = capture([&] { progress.stage("knn", static_cast<uint64_t>(plan->total_tiles()), "tiles"); });
      run_compute_stage(g, *engine, progress, fault, f);
      capture([&] { progress.finish(); });
    }
    stats.compute_s = seconds_since(t);

    // ---- merge: candidate lists to the owners of their rows ---------------
    t = Clock::now();
    const int k = params.k;
    // Tiles: each row travels as the CPU backend's `capacity` candidates by
    // GEMM distance, and the owner certifies the exact ranking from them.
    // Sub-problems: k candidates by their (already exact) distance.
    const bool certify = eo.sub_backend.empty();
    const int width = engine->list_width();
    std::vector<Candidate> send, recv;
    std::vector<int> send_rows(static_cast<size_t>(P), 0), send_displ(static_cast<size_t>(P), 0);
    std::vector<int> recv_rows(static_cast<size_t>(P), 0), recv_displ(static_cast<size_t>(P), 0);
    std::vector<std::vector<RowRange>> incoming(static_cast<size_t>(P));
    const std::string strategy = engine->strategy();
    g.agree(capture([&] {
      progress.stage("merge", 1, "steps");
      progress.check_cancel();
      auto lists = engine->take_lists();
      engine.reset();
      const auto& touched = plan->touched(rank);
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
        for (const RowRange& r : plan->touched_within(rank, plan->block(dst))) c += r.size();
        incoming[static_cast<size_t>(dst)] = plan->touched_within(dst, plan->block(rank));
        int64_t in = 0;
        for (const RowRange& r : incoming[static_cast<size_t>(dst)]) in += r.size();
        if (rows_out + c > std::numeric_limits<int>::max() || rows_in + in > std::numeric_limits<int>::max())
          throw Error("more than 2^31 rows in one exchange: use more ranks");
        send_rows[static_cast<size_t>(dst)] = static_cast<int>(c);
        send_displ[static_cast<size_t>(dst)] = static_cast<int>(rows_out);
        recv_rows[static_cast<size_t>(dst)] = static_cast<int>(in);
        recv_displ[static_cast<size_t>(dst)] = static_cast<int>(rows_in);
        rows_out += c;
        rows_in += in;
      }
      send.resize(static_cast<size_t>(rows_out * width));
      recv.resize(static_cast<size_t>(rows_in * width));
      // Every row travels as exactly `width` candidates, padded when the rank saw fewer.
      const Candidate pad{std::numeric_limits<float>::infinity(), -1};
      size_t at = 0;
      for (int dst = 0; dst < P; ++dst)
        for (const RowRange& r : plan->touched_within(rank, plan->block(dst)))
          for (int64_t row = r.begin; row < r.end; ++row) {
            const auto& l = lists[static_cast<size_t>(slot_of(row))];
            for (int j = 0; j < width; ++j)
              send[at++] = j < static_cast<int>(l.size()) ? l[static_cast<size_t>(j)] : pad;
          }
    }));
    MPI_Datatype row_type;
    MPI_Type_contiguous(static_cast<int>(width * sizeof(Candidate)), MPI_BYTE, &row_type);
    MPI_Type_commit(&row_type);
    MPI_Alltoallv(send.data(), send_rows.data(), send_displ.data(), row_type, recv.data(), recv_rows.data(),
                  recv_displ.data(), row_type, g.comm());
    MPI_Type_free(&row_type);
    for (int dst = 0; dst < P; ++dst)
      if (dst != rank) {
        stats.bytes_merge += static_cast<double>(send_rows[static_cast<size_t>(dst)]) * width * sizeof(Candidate);
        stats.bytes_received += static_cast<double>(recv_rows[static_cast<size_t>(dst)]) * width * sizeof(Candidate);
      }
    std::vector<Candidate>().swap(send);

    // The owner's lists: the `width` smallest by (key, index) over all
    // senders. Each tile is computed once, so for tiles these are exactly the
    // CPU backend's lists (TopK keeps the smallest by the same total order).
    const RowRange mine = plan->block(rank);
    const int64_t m = mine.size();
    std::vector<int64_t> out_index(static_cast<size_t>(m * k));
    std::vector<float> out_dist(static_cast<size_t>(m * k));
    std::vector<float> cand_key;
    std::vector<int> cand_index;  // global rows; for certification, compact slots relative to `mine`
    // Certification input: the prepared rows of the owner's rows and of every
    // candidate, ascending by global row (so ties order as in the CPU
    // backend); the owner's rows start at slot `own_at`.
    std::vector<int64_t> slot_row;
    int64_t own_at = 0;
    PreparedRows compact;
    std::vector<float> compact_raw, norms;
    double local_ymax = 0;
    g.agree(capture([&] {
      std::vector<std::vector<int64_t>> position(static_cast<size_t>(P));  // row -> row in recv, or -1
      for (int s = 0; s < P; ++s) {
        auto& pos = position[static_cast<size_t>(s)];
        pos.assign(static_cast<size_t>(m), -1);
        int64_t at = recv_displ[static_cast<size_t>(s)];
        for (const RowRange& r : incoming[static_cast<size_t>(s)])
          for (int64_t row = r.begin; row < r.end; ++row) pos[static_cast<size_t>(row - mine.begin)] = at++;
      }
      cand_key.resize(static_cast<size_t>(m * width));
      cand_index.resize(static_cast<size_t>(m * width));
      parallel_for(0, m, eo.threads, [&](int64_t i) {
        std::vector<Candidate> c;
        c.reserve(static_cast<size_t>(P * width));
        for (int s = 0; s < P; ++s) {
          const int64_t p = position[static_cast<size_t>(s)][static_cast<size_t>(i)];
          if (p < 0) continue;
          for (int j = 0; j < width; ++j) {
            const Candidate& x = recv[static_cast<size_t>(p * width + j)];
            if (x.index >= 0) c.push_back(x);
          }
        }
        std::sort(c.begin(), c.end(), key_less);
        c.erase(std::unique(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.index == b.index; }),
                c.end());
        if (static_cast<int>(c.size()) < width)
          throw Error("internal: row " + std::to_string(mine.begin + i) + " received " + std::to_string(c.size()) +
                      " candidates, fewer than " + std::to_string(width));
        for (int j = 0; j < width; ++j) {
          cand_key[static_cast<size_t>(i * width + j)] = c[static_cast<size_t>(j)].key;
          cand_index[static_cast<size_t>(i * width + j)] = c[static_cast<size_t>(j)].index;
        }
      });
      if (certify) {
        std::vector<int64_t> others;
        for (int v : cand_index)
          if (v < mine.begin || v >= mine.end) others.push_back(v);
        std::sort(others.begin(), others.end());
        others.erase(std::unique(others.begin(), others.end()), others.end());
        own_at = std::lower_bound(others.begin(), others.end(), mine.begin) - others.begin();
        slot_row.reserve(others.size() + static_cast<size_t>(m));
        slot_row.insert(slot_row.end(), others.begin(), others.begin() + own_at);
        for (int64_t r = mine.begin; r < mine.end; ++r) slot_row.push_back(r);
        slot_row.insert(slot_row.end(), others.begin() + own_at, others.end());
        // Slots relative to the owner's first row: negative before it.
        parallel_for(0, m, eo.threads, [&](int64_t i) {
          for (int j = 0; j < width; ++j) {
            int& v = cand_index[static_cast<size_t>(i * width + j)];
            const int64_t slot = std::lower_bound(slot_row.begin(), slot_row.end(), int64_t{v}) - slot_row.begin();
            v = static_cast<int>(slot - own_at);
          }
        });
        // prepare_rows() works row by row: a subset gives the same floats.
        const int64_t d = data.cols(), slots = static_cast<int64_t>(slot_row.size());
        compact_raw.resize(static_cast<size_t>(slots * d));
        parallel_for(0, slots, eo.threads, [&](int64_t s) {
          std::copy_n(data.row(slot_row[static_cast<size_t>(s)]), d, compact_raw.data() + s * d);
        });
        Dataset view(slots, d, compact_raw.data(), nullptr);
        view.source = data.source;
        try {
          compact = prepare_rows(view, params.metric);
        } catch (const Error& e) {
          throw Error(globalise_row_message(e.what(), data.source,
                                            [&](int64_t s) { return slot_row[static_cast<size_t>(s)]; }));
        }
        if (params.metric != Metric::Euclidean) std::vector<float>().swap(compact_raw);
        norms.resize(static_cast<size_t>(slots));
        squared_norms(compact.data, slots, d, norms.data(), eo.threads);
        // Every row is owned by one rank: the maximum over the owners' rows is
        // the maximum over all rows.
        for (int64_t i = 0; i < m; ++i) local_ymax = std::max(local_ymax, double{norms[static_cast<size_t>(own_at + i)]});
      } else {
        for (int64_t i = 0; i < m; ++i)
          for (int j = 0; j < k; ++j) {
            out_index[static_cast<size_t>(i * k + j)] = cand_index[static_cast<size_t>(i * width + j)];
            out_dist[static_cast<size_t>(i * k + j)] = cand_key[static_cast<size_t>(i * width + j)];
          }
      }
      fault.at("merge");
      progress.finish();
    }));
    std::vector<Candidate>().swap(recv);
    stats.merge_s = seconds_since(t);

    // ---- certify: the exact ranking of the owner's rows (as the CPU backend)
    t = Clock::now();
    double ymax = 0;
    MPI_Allreduce(&local_ymax, &ymax, 1, MPI_DOUBLE, MPI_MAX, g.comm());
    g.agree(capture([&] {
      progress.check_cancel();
      if (!certify) return;
      progress.stage("certify", 1, "steps");
      const int64_t n = data.rows(), d = data.cols();
      const int64_t others = params.keep_self ? n : n - 1;
      exact::CandidateLists cl{cand_key.data(), cand_index.data(), nullptr, m, width};
      std::vector<int> fill(static_cast<size_t>(m), width), status(static_cast<size_t>(m));
      cl.fill = fill.data();
      const float* base = compact.data + own_at * d;
      stats.bound_use = exact::certify_rows(base, d, cl, k, norms.data() + own_at, ymax,
                                            exact::make_error_model(d, false), params.metric, width == others,
                                            eo.threads, out_index.data(), out_dist.data(), status.data());
      std::vector<int64_t> uncertified;
      for (int64_t i = 0; i < m; ++i) {
        if (status[static_cast<size_t>(i)] < 0) {
          uncertified.push_back(i);
          continue;
        }
        stats.reevaluated += status[static_cast<size_t>(i)];
        for (int j = 0; j < k; ++j) {
          int64_t& v = out_index[static_cast<size_t>(i * k + j)];
          v = slot_row[static_cast<size_t>(own_at + v)];
        }
      }
      stats.fallback_rows = static_cast<double>(uncertified.size());
      progress.check_cancel();
      if (!uncertified.empty()) {
        // Dense neighbourhoods inside the bound: an exact scan over all rows,
        // which needs them all prepared (rare), into this rank's output rows.
        PreparedRows all = prepare_rows(data, params.metric);
        std::vector<float> keys;
        for (int64_t i : uncertified) {
          progress.check_cancel();
          exact::exact_scan_row(all.data, n, d, mine.begin + i, k, params.metric, params.keep_self, eo.threads, keys,
                                out_index.data() + i * k, out_dist.data() + i * k);
        }
      }
      progress.finish();
    }));
    std::vector<float>().swap(cand_key);
    std::vector<int>().swap(cand_index);
    std::vector<float>().swap(norms);
    std::vector<float>().swap(compact_raw);
    compact = PreparedRows{};
    stats.certify_s = seconds_since(t);

    // ---- gather: the final rows to rank 0, which writes them --------------
    t = Clock::now();
    g.agree(capture([&] {
      progress.stage("gather", 1, "steps");
      progress.check_cancel();
      if (root) {
        result.indices.resize(static_cast<size_t>(data.rows() * k));
        result.distances.resize(static_cast<size_t>(data.rows() * k));
      }
    }));
    std::vector<int> counts(static_cast<size_t>(P)), displs(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) {
      counts[static_cast<size_t>(r)] = static_cast<int>(plan->block(r).size());
      displs[static_cast<size_t>(r)] = static_cast<int>(plan->block(r).begin);
    }
    MPI_Datatype idx_row, dist_row;
    MPI_Type_contiguous(k, MPI_INT64_T, &idx_row);
    MPI_Type_contiguous(k, MPI_FLOAT, &dist_row);
    MPI_Type_commit(&idx_row);
    MPI_Type_commit(&dist_row);
    MPI_Gatherv(out_index.data(), static_cast<int>(m), idx_row, result.indices.data(), counts.data(), displs.data(),
                idx_row, 0, g.comm());
    MPI_Gatherv(out_dist.data(), static_cast<int>(m), dist_row, result.distances.data(), counts.data(),
                displs.data(), dist_row, 0, g.comm());
    MPI_Type_free(&idx_row);
    MPI_Type_free(&dist_row);
    if (!root) stats.bytes_gather = static_cast<double>(m) * k * (sizeof(int64_t) + sizeof(float));
    stats.gather_s = seconds_since(t);
    stats.bytes_control = static_cast<double>(g.control_bytes());

    std::vector<double> all_stats(root ? static_cast<size_t>(P * kStatsDoubles) : 0);
    MPI_Gather(&stats, kStatsDoubles, MPI_DOUBLE, all_stats.data(), kStatsDoubles, MPI_DOUBLE, 0, g.comm());
    char host[kHostChars] = {};
    std::strncpy(host, g.host().c_str(), kHostChars - 1);
    std::vector<char> hosts(root ? static_cast<size_t>(P * kHostChars) : 0);
    MPI_Gather(host, kHostChars, MPI_CHAR, hosts.data(), kHostChars, MPI_CHAR, 0, g.comm());
    capture([&] { progress.finish(); });

    if (!root) {
      result.output_rank = false;
      return result;
    }
    result.strategy = strategy;
    result.timings.emplace_back("prepare", stats.prepare_s);
    result.timings.emplace_back("distances+select", stats.compute_s);
    result.timings.emplace_back("merge", stats.merge_s);
    result.timings.emplace_back("certify", stats.certify_s);
    result.timings.emplace_back("gather", stats.gather_s);
    result.timings.emplace_back("total", seconds_since(t0));
    nlohmann::json per_rank = nlohmann::json::array();
    double sent_total = 0, reevaluated = 0, fallback_rows = 0, bound_use = 0;
    const double row_bytes = static_cast<double>(data.cols()) * sizeof(float);
    for (int r = 0; r < P; ++r) {
      RankStats s{};
      std::memcpy(&s, all_stats.data() + static_cast<size_t>(r) * kStatsDoubles, sizeof s);
      const double sent = s.bytes_merge + s.bytes_gather + s.bytes_control;
      sent_total += sent;
      reevaluated += s.reevaluated;
      fallback_rows += s.fallback_rows;
      bound_use = std::max(bound_use, s.bound_use);
      per_rank.push_back({{"rank", r},
                          {"host", std::string(hosts.data() + static_cast<size_t>(r) * kHostChars)},
                          {"threads", static_cast<int>(s.threads)},
                          {"work_units", static_cast<int64_t>(s.units)},
                          {"tiles", static_cast<int64_t>(s.tiles)},
                          {"rows_owned", plan->block(r).size()},
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
    nlohmann::json& x = result.extra;
    x["ranks"] = P;
    x["engine"] = eo.sub_backend.empty() ? "tiles" : "backend:" + eo.sub_backend;
    x["tile"] = kCpuTile;
    x["tiles"] = plan->total_tiles();
    x["row_blocks"] = plan->block_starts();
    x["input_bytes"] = static_cast<double>(data.rows()) * row_bytes;
    x["input_memory_mapped"] = data.memory_mapped();
    x["bytes_sent_total"] = sent_total;
    x["per_rank"] = per_rank;
    if (eo.sub_backend.empty()) {
      x["capacity"] = list_capacity(params, data.rows());
      x["reevaluated_per_row"] = data.rows() ? reevaluated / static_cast<double>(data.rows()) : 0.0;
      x["fallback_rows"] = static_cast<int64_t>(fallback_rows);
      x["error_bound_max_use"] = bound_use;
    }
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
    const std::string text =
        P == 1 || f.everywhere ? f.message
                               : "rank " + std::to_string(f.rank) + " of " + std::to_string(P) + " on " + f.host +
                                     " failed: " + f.message;
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
