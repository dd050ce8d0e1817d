// Cluster jobs: the job folder, starting it (a child `sh run.sh` or
// `sbatch run.sh`), its state (waitpid or squeue), cancelling it (process
// group signals or scancel) and following it to the end.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/output.h"

extern char** environ;

namespace fs = std::filesystem;

namespace manifold::cluster {

std::string to_string(JobState s) {
  switch (s) {
    case JobState::Pending: return "pending";
    case JobState::Running: return "running";
    case JobState::Completed: return "completed";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
  }
  return "?";
}

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a program (searched in PATH) and collects its output. Throws Error
// when it cannot be started at all.
CommandResult run_command(const std::vector<std::string>& argv) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw Error(argv[0] + ": cannot create a pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw Error(argv[0] + ": cannot run (" + std::strerror(rc) + ")" +
                (rc == ENOENT ? "; is it installed and in PATH?" : ""));
  }
  CommandResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

std::string first_line(const std::string& s) { return trim(s.substr(0, s.find('\n'))); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The manifold program to run on the nodes when the profile does not say:
// this program if it is the CLI, else the CLI next to it (the GUI's case).
std::string default_manifold() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "manifold";
  if (self.filename() == "manifold") return self.string();
  fs::path sibling = self.parent_path() / "manifold";
  if (fs::exists(sibling, ec)) return sibling.string();
  return "manifold";
}

std::string new_job_dir(const std::string& work_dir) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (!fs::is_directory(work_dir, ec))
    throw Error(work_dir + ": cannot create the cluster work directory" + (ec ? " (" + ec.message() + ")" : ""));
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  static std::atomic<int> counter{0};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    fs::path dir = fs::path(work_dir) / ("manifold-job-" + std::string(stamp) + "-" + std::to_string(getpid()) + "-" +
                                         std::to_string(counter++));
    if (mkdir(dir.c_str(), 0755) == 0) return dir.string();
    if (errno != EEXIST) throw Error(dir.string() + ": cannot create the job folder (" + std::strerror(errno) + ")");
  }
  throw Error(work_dir + ": cannot find a free job folder name");
}

}  // namespace

std::string job_script(const Profile& p, const JobSpec& spec, const std::string& dir) {
  std::ostringstream s;
  s << "#!/bin/sh\n";
  const std::string out = (fs::path(dir) / "job.out").string(), err = (fs::path(dir) / "job.err").string();
  if (p.kind == Profile::Kind::Slurm) {
    s << "#SBATCH --job-name=manifold-knn\n";
    // Double quotes keep a path with spaces one argument (sbatch reads
    // #SBATCH lines with shell-like quoting; the profile refuses '"').
    s << "#SBATCH --output=\"" << out << "\"\n";
    s << "#SBATCH --error=\"" << err << "\"\n";
    s << "#SBATCH --nodes=" << p.nodes << "\n";
    s << "#SBATCH --ntasks-per-node=" << p.ranks_per_node << "\n";
    s << "#SBATCH --time=" << p.time_limit << "\n";
    if (!p.partition.empty()) s << "#SBATCH --partition=" << p.partition << "\n";
    if (p.gpus_per_node > 0) s << "#SBATCH --gpus-per-node=" << p.gpus_per_node << "\n";
    for (auto& a : p.sbatch_args) s << "#SBATCH " << a << "\n";
  }
  s << "# Written by manifold (cluster profile '" << p.name << "'): the exact k-NN graph of\n"
    << "# the data below with the MPI backend, progress in progress.jsonl, the exit\n"
    << "# status of mpirun in exit_status.\n";
  s << "cd " << quote(dir) << " || exit 1\n";
  s << "export " << kProgressFileEnv << "=" << quote((fs::path(dir) / "progress.jsonl").string()) << "\n";
  for (auto& [k, v] : p.env) s << "export " << k << "=" << quote(v) << "\n";
  s << quote(p.mpirun);
  if (p.kind == Profile::Kind::Mpirun && !p.hostfile.empty()) s << " --hostfile " << quote(p.hostfile);
  s << " -np " << p.total_ranks();
  for (auto& a : p.mpirun_args) s << " " << quote(a);
  s << " " << quote(p.manifold.empty() ? default_manifold() : p.manifold) << " knn " << quote(spec.data);
  for (auto& a : spec.knn_args) s << " " << quote(a);
  s << " --backend mpi -o " << quote(spec.output) << "\n";
  s << "status=$?\n";
  const std::string status = (fs::path(dir) / "exit_status").string();
  s << "echo \"$status\" > " << quote(status + ".tmp") << " && mv " << quote(status + ".tmp") << " " << quote(status)
    << "\n";
  s << "exit \"$status\"\n";
  return s.str();
}

std::unique_ptr<Job> Job::submit(const Profile& profile, const JobSpec& spec_in) {
  if (spec_in.data.empty()) throw UsageError("cluster job: no data set given");
  if (spec_in.output.empty()) throw UsageError("cluster job: no output directory given");
  for (auto& a : spec_in.knn_args)
    if (a == "--backend" || a.rfind("--backend=", 0) == 0 || a == "-o" || a == "--output")
      throw UsageError("cluster job: '" + a + "' is set by the job itself (the MPI backend and its output)");
  std::unique_ptr<Job> job(new Job);
  job->profile_ = profile;
  job->spec_ = spec_in;
  job->spec_.data = fs::absolute(spec_in.data).lexically_normal().string();
  job->spec_.output = fs::absolute(spec_in.output).lexically_normal().string();
  const std::string work = profile.work_dir.empty() ? fs::temp_directory_path().string()
                                                    : fs::absolute(profile.work_dir).string();
  job->dir_ = new_job_dir(work);
  job->progress_reader_ = std::make_unique<ProgressFileReader>((fs::path(job->dir_) / "progress.jsonl").string());

  const std::string script = (fs::path(job->dir_) / "run.sh").string();
  write_text_file(script, job_script(profile, job->spec_, job->dir_));
  nlohmann::json desc;
  desc["data"] = job->spec_.data;
  desc["output"] = job->spec_.output;
  desc["knn_args"] = job->spec_.knn_args;
  desc["profile"] = profile_to_json(profile);
  desc["created"] = static_cast<int64_t>(std::time(nullptr));
  auto write_desc = [&] { write_text_file((fs::path(job->dir_) / "job.json").string(), desc.dump(2) + "\n"); };
  write_desc();

  if (profile.kind == Profile::Kind::Slurm) {
    CommandResult r = run_command({"sbatch", "--parsable", script});
    if (r.exit_code != 0) throw Error("sbatch refused the job: " + first_line(r.err.empty() ? r.out : r.err));
    std::string id = first_line(r.out);
    id = id.substr(0, id.find(';'));  // "ID;cluster" on federations
    if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
      throw Error("sbatch: unexpected answer '" + first_line(r.out) + "'");
    job->id_ = id;
  } else {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, (fs::path(job->dir_) / "job.out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&fa, 2, (fs::path(job->dir_) / "job.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    // A process group of its own: the terminal's Ctrl-C reaches only us, and
    // cancel() can signal mpirun and every rank it started at once.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    std::string sh = "/bin/sh";
    std::vector<char*> args = {sh.data(), const_cast<char*>(script.c_str()), nullptr};
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, sh.c_str(), &fa, &attr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw Error("cannot start " + script + " (" + std::strerror(rc) + ")");
    job->pid_ = pid;
    job->id_ = std::to_string(pid);
  }
  desc["id"] = job->id_;
  write_desc();
  return job;
}

Job::~Job() {
  if (pid_ <= 0 || reaped_) return;
  // Our child: end it rather than leave mpirun and its ranks behind.
  killpg(pid_, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
      reaped_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  killpg(pid_, SIGKILL);
  if (!reaped_) waitpid(pid_, &wait_status_, 0);
}

std::vector<ProgressEvent> Job::read_progress() {
  std::vector<ProgressEvent> events;
  for (const std::string& line : progress_reader_->read_lines())
    if (auto e = parse_progress_line(line)) events.push_back(*e);
  return events;
}

std::optional<int> Job::read_exit_status() const {
  std::ifstream in(fs::path(dir_) / "exit_status");
  int code = 0;
  if (in >> code) return code;
  return std::nullopt;
}

std::string Job::failure_message(int exit_code) const {
  // The job's own one line: manifold's error, else what mpirun noticed.
  std::istringstream err(read_text((fs::path(dir_) / "job.err").string()));
  std::string line, manifold_line, mpirun_line, last;
  while (std::getline(err, line)) {
    line = trim(line);
    if (line.empty() || line.find_first_not_of('-') == std::string::npos) continue;
    if (line.rfind("manifold: ", 0) == 0 && manifold_line.empty()) manifold_line = line.substr(10);
    if (line.find("noticed that process rank") != std::string::npos && mpirun_line.empty()) mpirun_line = line;
    last = line;
  }
  std::string why = !manifold_line.empty() ? manifold_line : !mpirun_line.empty() ? mpirun_line : last;
  if (why.empty()) why = "exit status " + std::to_string(exit_code) + " and no error output";
  return why;
}

JobStatus Job::poll() { return profile_.kind == Profile::Kind::Slurm ? poll_slurm() : poll_mpirun(); }

JobStatus Job::poll_mpirun() {
  JobStatus st;
  st.nodes = profile_.hostfile.empty() ? "localhost" : "hosts of " + profile_.hostfile;
  const bool overdue = cancel_requested_ &&
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - cancel_time_).count() >
                           cancel_grace_s_;
  if (!reaped_) {
    const pid_t r = waitpid(pid_, &wait_status_, WNOHANG);
    if (r == pid_) reaped_ = true;
  }
  // The script has ended, but after a cancel mpirun or a rank may linger in
  // its process group.
  const bool group_alive = killpg(pid_, 0) == 0;
  if (!reaped_ || (cancel_requested_ && group_alive)) {
    if (overdue) killpg(pid_, SIGKILL);
    st.state = JobState::Running;
    st.queue_state = cancel_requested_ ? "stopping" : "running";
    return st;
  }
  st.queue_state = "exited";
  if (auto code = read_exit_status()) st.exit_code = *code;
  else if (WIFEXITED(wait_status_))
    st.exit_code = WEXITSTATUS(wait_status_);
  else
    st.exit_code = 128 + (WIFSIGNALED(wait_status_) ? WTERMSIG(wait_status_) : 0);
  // A job that exited 0 finished (its output is complete) even when a
  // cancel came too late to stop it: report what happened.
  if (st.exit_code == 0) {
    st.state = JobState::Completed;
  } else if (cancel_requested_) {
    st.state = JobState::Cancelled;
  } else {
    st.state = JobState::Failed;
    st.reason = failure_message(st.exit_code);
  }
  return st;
}

JobStatus Job::poll_slurm() {
  JobStatus st;
  CommandResult r = run_command({"squeue", "-h", "-t", "all", "-j", id_, "-o", "%T|%r|%N"});
  const std::string line = first_line(r.out);
  if (r.exit_code == 0 && !line.empty()) {
    gone_ = false;
    std::string state = line.substr(0, line.find('|'));
    std::string rest = line.find('|') == std::string::npos ? "" : line.substr(line.find('|') + 1);
    st.queue_state = state;
    st.reason = rest.substr(0, rest.find('|'));
    if (st.reason == "None") st.reason.clear();
    st.nodes = rest.find('|') == std::string::npos ? "" : rest.substr(rest.find('|') + 1);
    static const std::set<std::string> pending = {"PENDING",     "CONFIGURING",   "REQUEUED",    "REQUEUE_HOLD",
                                                  "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"};
    static const std::set<std::string> running = {"RUNNING",  "COMPLETING", "STAGE_OUT", "SIGNALING",
                                                  "RESIZING", "SUSPENDED",  "STOPPED"};
    if (pending.count(state)) {
      st.state = JobState::Pending;
      return st;
    }
    if (running.count(state)) {
      st.state = JobState::Running;
      return st;
    }
    if (state == "CANCELLED") {
      st.state = JobState::Cancelled;
      if (!cancel_requested_) st.reason = "cancelled outside this program (scancel or an administrator)";
      return st;
    }
    if (state == "COMPLETED") {
      if (auto code = read_exit_status()) {
        st.exit_code = *code;
        st.state = *code == 0 ? JobState::Completed : JobState::Failed;
        if (*code != 0) st.reason = failure_message(*code);
        return st;
      }
      // A shared file system may show the status file a little later.
      st.state = JobState::Running;
      st.queue_state = "COMPLETING";
      return st;
    }
    st.state = JobState::Failed;
    st.exit_code = read_exit_status().value_or(-1);
    st.reason = "Slurm ended the job as " + state +
                (state == "TIMEOUT" ? " (time limit " + profile_.time_limit + ")" : std::string()) +
                (st.exit_code > 0 ? ": " + failure_message(st.exit_code) : std::string());
    return st;
  }
  // Not (or no longer) in squeue: the status file tells how it ended.
  if (auto code = read_exit_status()) {
    st.queue_state = "gone";
    st.exit_code = *code;
    st.state = *code == 0 ? JobState::Completed : cancel_requested_ ? JobState::Cancelled : JobState::Failed;
    if (st.state == JobState::Failed) st.reason = failure_message(*code);
    return st;
  }
  if (!gone_) gone_ = true, gone_since_ = std::chrono::steady_clock::now();
  const double gone_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - gone_since_).count();
  if (gone_s < 30) {
    st.state = JobState::Running;
    st.queue_state = "unknown";
    st.reason = r.exit_code != 0 ? "squeue: " + first_line(r.err) : "";
    return st;
  }
  st.state = cancel_requested_ ? JobState::Cancelled : JobState::Failed;
  st.reason = r.exit_code != 0 ? "squeue: " + first_line(r.err)
                               : "the job left the queue without an exit status (see " + dir_ + "/job.err)";
  return st;
}

void Job::cancel(double grace_s) {
  if (cancel_requested_) return;
  cancel_requested_ = true;
  cancel_grace_s_ = grace_s;
  cancel_time_ = std::chrono::steady_clock::now();
  if (profile_.kind == Profile::Kind::Slurm) {
    CommandResult r = run_command({"scancel", id_});
    if (r.exit_code != 0) throw Error("scancel " + id_ + " failed: " + first_line(r.err));
  } else if (!reaped_) {
    killpg(pid_, SIGTERM);
  }
}

KnnGraph Job::result() const { return read_graph(spec_.output); }

KnnGraph follow(Job& job, Progress& progress, const FollowOptions& options) {
  JobStatus last;
  bool first = true;
  for (;;) {
    for (const ProgressEvent& e : job.read_progress())
      if (progress.sink()) progress.sink()->report(e);
    if (progress.cancelled() && !job.cancel_requested()) job.cancel(options.cancel_grace_s);
    JobStatus st = job.poll();
    if ((first || !(st == last)) && options.on_status) options.on_status(job, st);
    first = false;
    last = st;
    if (st.finished()) {
      for (const ProgressEvent& e : job.read_progress())
        if (progress.sink()) progress.sink()->report(e);
      if (st.state == JobState::Cancelled || job.cancel_requested()) {
        if (job.cancel_requested()) throw Cancelled();
        throw Error("job " + job.id() + " was " + st.reason);
      }
      if (st.state == JobState::Failed) throw Error("job " + job.id() + " failed: " + st.reason);
      return job.result();
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options.poll_interval_s));
  }
}

}  // namespace manifold::cluster
