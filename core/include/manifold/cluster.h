#pragma once
// Dispatch of k-NN graph jobs to a cluster, for the CLI (`manifold submit`)
// and the GUI alike. Qt-free and MPI-free: jobs are separate processes, and
// this API only writes files, starts programs (mpirun, sbatch, squeue,
// scancel) and reads what the job writes back.
//
// A job is a folder under the profile's work directory:
//   job.json        what was asked (data, output, options, profile)
//   run.sh          the script that runs `mpirun manifold knn ... --backend mpi`
//                   (a Slurm batch script for kind "slurm")
//   progress.jsonl  progress of all ranks, written by rank 0 (JSON lines)
//   job.out/job.err the script's (and mpirun's) standard output and error
//   exit_status     the exit status of mpirun, written when it ends
// The graph itself goes to the job's output directory, all or nothing.
//
// Typical use (what `manifold submit` does):
//   auto profile = cluster::load_profile("cluster.json");
//   auto job = cluster::Job::submit(profile, {"/data/x.npy", "/data/x-graph", {"-k", "10"}});
//   KnnGraph g = cluster::follow(*job, progress);   // progress + cancel, blocks
// A GUI calls follow() from a worker thread with its Progress (sink and
// cancel flag), or polls job->read_progress() / job->poll() itself.
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/knn.h"
#include "manifold/progress.h"

namespace manifold::cluster {

/// The environment variable naming the progress file that rank 0 of an MPI
/// run appends to.
inline constexpr const char* kProgressFileEnv = "MANIFOLD_PROGRESS_FILE";

// ---- profiles ----------------------------------------------------------------

/// Where and how jobs run, read from a JSON file. Keys (all optional unless
/// said otherwise):
///   "kind": "mpirun" | "slurm"                        (required)
///   "name": text shown to the user                    (default: file name)
///   "work_dir": folder for job folders; for slurm it must be visible from
///               every node                            (default: system temp dir
///                                                      for mpirun; required for slurm)
///   "manifold": the manifold program on the nodes     (default: this program)
///   "mpirun": the mpirun command                      (default: "mpirun")
///   "mpirun_args": ["--oversubscribe", ...]           extra mpirun arguments
///   "env": {"NAME": "value", ...}                     exported in the job script
///   kind mpirun:  "ranks": P (default 1), "hostfile": path
///   kind slurm:   "partition", "nodes" (1), "ranks_per_node" (1),
///                 "gpus_per_node" (0), "time_limit" ("01:00:00"),
///                 "sbatch_args": [...]
struct Profile {
  enum class Kind { Mpirun, Slurm };
  Kind kind = Kind::Mpirun;
  std::string name;
  std::string work_dir;
  std::string manifold;
  std::string mpirun = "mpirun";
  std::vector<std::string> mpirun_args;
  std::map<std::string, std::string> env;
  // kind mpirun
  int ranks = 1;
  std::string hostfile;
  // kind slurm
  std::string partition;
  int nodes = 1;
  int ranks_per_node = 1;
  int gpus_per_node = 0;
  std::string time_limit = "01:00:00";
  std::vector<std::string> sbatch_args;

  /// Ranks of the MPI run: `ranks`, or nodes * ranks_per_node.
  int total_ranks() const { return kind == Kind::Slurm ? nodes * ranks_per_node : ranks; }
};

std::string to_string(Profile::Kind kind);
/// Checks every key; throws UsageError naming `origin` and the key.
Profile parse_profile(const nlohmann::json& json, const std::string& origin);
/// Reads and parses a profile file; Error when unreadable, UsageError when wrong.
Profile load_profile(const std::string& path);
nlohmann::json profile_to_json(const Profile& profile);

// ---- the progress file ------------------------------------------------------

/// One JSON object per line:
///   {"stage":"knn","unit":"tiles","done":12,"total":40,"elapsed_s":1.5,
///    "rate":8.0,"eta_s":3.5,"finished":false,"time":1700000000.1}
/// plus event lines {"event":"failed","message":"..."} / {"event":"computed"}.
std::string progress_line(const ProgressEvent& event);
/// Parses a progress line; nullopt for event lines and malformed lines.
std::optional<ProgressEvent> parse_progress_line(const std::string& line);

/// A ProgressSink appending to a progress file (and forwarding to `next`,
/// which may be null). Each line is written whole and flushed.
class ProgressFileSink : public ProgressSink {
 public:
  ProgressFileSink(const std::string& path, ProgressSink* next = nullptr);
  ~ProgressFileSink() override;
  void report(const ProgressEvent& event) override;
  /// Appends an event line {"event": name, ...fields}.
  void event(const std::string& name, const nlohmann::json& fields = nlohmann::json::object());
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  ProgressSink* next_;
};

/// Reads complete lines appended to a progress file since the last call
/// (a line still being written is kept for the next call).
class ProgressFileReader {
 public:
  explicit ProgressFileReader(std::string path) : path_(std::move(path)) {}
  std::vector<std::string> read_lines();

 private:
  std::string path_;
  uint64_t offset_ = 0;
  std::string partial_;
};

// ---- jobs --------------------------------------------------------------------

/// What to compute. Paths must be valid on the nodes (a shared file system).
struct JobSpec {
  std::string data;                   ///< the dataset
  std::string output;                 ///< the graph directory to write
  std::vector<std::string> knn_args;  ///< further `manifold knn` options, e.g. {"-k", "10"}
};

enum class JobState { Pending, Running, Completed, Failed, Cancelled };
std::string to_string(JobState state);

struct JobStatus {
  JobState state = JobState::Pending;
  std::string queue_state;  ///< Slurm's state (PENDING, RUNNING, ...) or "running"/"exited" for mpirun
  std::string reason;       ///< Slurm's pending reason, or why the job failed
  std::string nodes;        ///< nodes the job runs on, when known
  int exit_code = -1;       ///< exit status of the run when it ended
  bool finished() const {
    return state == JobState::Completed || state == JobState::Failed || state == JobState::Cancelled;
  }
  friend bool operator==(const JobStatus&, const JobStatus&) = default;
};

/// The text of run.sh for `profile` and `spec` with the job folder `dir`.
std::string job_script(const Profile& profile, const JobSpec& spec, const std::string& dir);

class Job {
 public:
  /// Writes a new job folder under profile.work_dir and starts the job:
  /// `sh run.sh` in a process group of its own (kind mpirun: a child of this
  /// process), or `sbatch run.sh` (kind slurm). Throws Error with one line
  /// when the folder cannot be written or the job cannot be started.
  static std::unique_ptr<Job> submit(const Profile& profile, const JobSpec& spec);
  /// A kind-mpirun job still running is ended (it is this process's child);
  /// a Slurm job stays in the queue.
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  /// The Slurm job id, or the process id of the mpirun-side script.
  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }
  const Profile& profile() const { return profile_; }
  const JobSpec& spec() const { return spec_; }

  /// Progress events the job wrote since the last call.
  std::vector<ProgressEvent> read_progress();
  /// The job's state now; does not block (one squeue call for Slurm).
  JobStatus poll();
  /// Asks the job to end: scancel for Slurm; SIGTERM to the mpirun process
  /// group, SIGKILL if still there after `grace_s` (checked by poll()).
  void cancel(double grace_s = 10);
  bool cancel_requested() const { return cancel_requested_; }
  /// The graph of a completed job (read_graph of the output directory).
  KnnGraph result() const;

 private:
  Job() = default;
  JobStatus poll_mpirun();
  JobStatus poll_slurm();
  std::optional<int> read_exit_status() const;
  std::string failure_message(int exit_code) const;

  Profile profile_;
  JobSpec spec_;
  std::string dir_, id_;
  int pid_ = -1;  // kind mpirun: the child running run.sh
  bool reaped_ = false;
  int wait_status_ = 0;
  bool cancel_requested_ = false;
  double cancel_grace_s_ = 10;
  std::chrono::steady_clock::time_point cancel_time_;
  std::chrono::steady_clock::time_point gone_since_;  // slurm: job left squeue
  bool gone_ = false;
  std::unique_ptr<ProgressFileReader> progress_reader_;
};

struct FollowOptions {
  double poll_interval_s = 0.5;
  double cancel_grace_s = 10;
  /// Called whenever the job's status changes (queue state, nodes, ...).
  std::function<void(const Job&, const JobStatus&)> on_status;
};

/// Follows `job` to its end: forwards its progress events to progress.sink(),
/// reports status changes, cancels the job when progress's cancel flag is set.
/// Returns the graph; throws Cancelled when cancelled, or Error("job ID
/// failed: ...") with the job's own one-line error.
KnnGraph follow(Job& job, Progress& progress, const FollowOptions& options = {});

}  // namespace manifold::cluster
