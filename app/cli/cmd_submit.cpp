// manifold submit --profile FILE DATA [knn options] -o OUT: runs `manifold
// knn --backend mpi` on a cluster (mpirun or Slurm), follows it with the same
// progress line as a local run, and returns when the graph is in OUT.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/output.h"
#include "manifold/terminal_progress.h"

namespace fs = std::filesystem;

namespace manifold::cli {

int cmd_submit(int argc, char** argv) {
  std::vector<OptionSpec> specs = knn_option_specs();
  specs.push_back(value("--profile", "FILE", "the cluster profile (mpirun or Slurm; see manifold --help)"));
  Args a("submit", "Run knn --backend mpi on a cluster and wait for the graph.", specs, argc, argv, 2,
         {{"DATA", "the dataset, as the cluster's nodes see it"}});
  if (!a.has("--profile")) throw UsageError("submit: missing --profile FILE (a cluster profile, see manifold --help)");
  const std::string data = a.one_positional("DATA");
  if (!a.has("-o")) throw UsageError("submit: missing -o OUTDIR");
  if (a.has("--backend") && a.str("--backend") != "mpi")
    throw UsageError("submit: --backend " + a.str("--backend") + ": cluster jobs run the mpi backend");
  (void)knn_params_from(a);  // bad values are reported here, not after queueing
  std::error_code ec;
  if (!fs::exists(data, ec)) throw Error(data + ": no such file or folder");
  cluster::Profile profile = cluster::load_profile(a.str("--profile"));
  // The job's knn refuses a folder of other files; say so before queueing.
  check_output_dir(a.str("-o"), {"indices.npy", "distances.npy", "graph.json"}, {.overwrite = a.has("--overwrite")});

  cluster::JobSpec spec;
  spec.data = data;
  spec.output = a.str("-o");
  // The knn options pass through unchanged; --backend and -o are the job's.
  for (const OptionSpec& o : knn_option_specs()) {
    if (o.name == "--backend" || o.name == "-o" || o.name == "--quiet" || !a.has(o.name)) continue;
    spec.knn_args.push_back(o.name);
    if (o.takes_value) spec.knn_args.push_back(a.str(o.name));
  }

  const bool quiet = a.has("--quiet");
  TerminalProgress sink(stderr, quiet);
  install_cancel_on_signal();
  Progress progress(&sink, &cancel_flag());
  auto job = cluster::Job::submit(profile, spec);
  if (!quiet)
    std::fprintf(stderr, "submitted job %s (%s, %d ranks), folder %s\n", job->id().c_str(),
                 cluster::to_string(profile.kind).c_str(), profile.total_ranks(), job->dir().c_str());
  cluster::FollowOptions fo;
  fo.on_status = [quiet](const cluster::Job& j, const cluster::JobStatus& st) {
    if (quiet || st.finished()) return;
    std::string line = "job " + j.id() + ": " +
                       (st.queue_state.empty() ? cluster::to_string(st.state) : st.queue_state);
    if (!st.reason.empty()) line += " (" + st.reason + ")";
    if (!st.nodes.empty() && st.state == cluster::JobState::Running) line += " on " + st.nodes;
    std::fprintf(stderr, "%s%s\n", isatty(fileno(stderr)) ? "\r\033[K" : "", line.c_str());
  };
  KnnGraph g = cluster::follow(*job, progress, fo);
  if (!quiet) {
    double total = 0;
    for (auto& [s, t] : g.timings)
      if (s == "total") total = t;
    std::printf("k-NN graph: N=%lld d=%lld k=%d metric=%s backend=%s ranks=%d in %.3f s -> %s\n",
                static_cast<long long>(g.n), static_cast<long long>(g.d), g.k, to_string(g.metric).c_str(),
                g.backend.c_str(), g.extra.value("ranks", 0), total, job->spec().output.c_str());
  }
  return 0;
}

}  // namespace manifold::cli
