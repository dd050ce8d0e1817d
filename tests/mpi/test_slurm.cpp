// Jobs on a real Slurm cluster: the CTest fixture `slurm_start` starts a
// private single-node cluster (munged, slurmctld, slurmd; see
// scripts/slurm/start-local-slurm.sh) and `slurm_stop` stops it. A job is
// submitted with `manifold submit` and with the API it uses, followed to the
// end and compared with the CPU backend; another one is cancelled (scancel).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "manifold/cluster.h"
#include "manifold/graph_io.h"
#include "mpi_test_support.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
using namespace mpi_testing;
namespace fs = std::filesystem;

namespace {

std::string slurm_dir() {
  const char* d = std::getenv("MANIFOLD_SLURM_DIR");
  return d ? d : "";
}

class SlurmJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    // Not a skip: in CI the cluster must be there; say why it is not.
    ASSERT_NE(std::getenv("SLURM_CONF"), nullptr) << "SLURM_CONF is not set: run through CTest (fixture slurm_start)";
    ASSERT_TRUE(fs::exists(std::getenv("SLURM_CONF")))
        << "no Slurm cluster: " << std::getenv("SLURM_CONF")
        << " is missing; the slurm_start test failed to start one (see its output and " << slurm_dir() << "/log)";
    RunResult up = run_shell_probe();
    ASSERT_EQ(up.status, 0) << "the local Slurm cluster does not answer: " << up.err;

    // The work folder sits next to the cluster's own files: "shared" by the one node.
    work = (fs::path(slurm_dir()) / "jobs").string();
    data = t / "data.npy";
    write_npy(data, random_dataset(1500, 32, 41, 15));
    nlohmann::json p;
    p["kind"] = "slurm";
    p["nodes"] = 1;
    // The node has as many CPUs as this machine; 2 ranks fit on any CI runner.
    p["ranks_per_node"] = 2;
    p["time_limit"] = "00:15:00";
    p["work_dir"] = work;
    p["mpirun"] = std::getenv("MANIFOLD_MPIRUN") ? std::getenv("MANIFOLD_MPIRUN") : "mpirun";
    p["mpirun_args"] = {"--oversubscribe"};
    p["manifold"] = std::getenv("MANIFOLD_CLI");
    p["env"] = job_environment();
    profile_path = t / "slurm.json";
    std::ofstream(profile_path) << p.dump(2);
    RunResult r = run_manifold("knn '" + data + "' -k 8 --metric pearson --backend cpu -q -o '" + (t / "cpu") + "'");
    ASSERT_EQ(r.status, 0) << r.err;
  }

  static RunResult run_shell_probe() {
    // sinfo must answer and show the node usable.
    testing_support::TempDir d;
    const int s = std::system(("sinfo -h -o %T >" + d.path + "/o 2>" + d.path + "/e").c_str());
    RunResult r;
    r.status = WEXITSTATUS(s);
    std::ifstream o(d.path + "/o"), e(d.path + "/e");
    std::getline(o, r.out);
    std::getline(e, r.err);
    if (r.status == 0 && r.out.find("idle") == std::string::npos && r.out.find("mix") == std::string::npos &&
        r.out.find("alloc") == std::string::npos) {
      r.status = 1;
      r.err = "node state is '" + r.out + "'";
    }
    return r;
  }

  TempDir t;
  std::string work, data, profile_path;
};

TEST_F(SlurmJobs, SubmitCommandRunsTheJobAndWritesTheCpuGraph) {
  const std::string out = t / "graph";
  RunResult r = run_manifold("submit --profile '" + profile_path + "' '" + data + "' -k 8 --metric pearson -o '" + out +
                             "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("(slurm, 2 ranks)"), std::string::npos) << r.err;
  // The queue state from squeue is shown; which states a short job passes
  // through between two polls depends on the scheduler's timing.
  const bool state_shown = r.err.find(": PENDING") != std::string::npos ||
                           r.err.find(": RUNNING") != std::string::npos ||
                           r.err.find(": CONFIGURING") != std::string::npos ||
                           r.err.find(": COMPLETING") != std::string::npos;
  EXPECT_TRUE(state_shown) << "queue state was not shown:\n" << r.err;
  GraphArrays want = read_arrays(t / "cpu"), got = read_arrays(out);
  EXPECT_TRUE(got.indices == want.indices);
  EXPECT_TRUE(got.distances == want.distances);
  EXPECT_EQ(read_graph(out).extra["ranks"], 2);
}

TEST_F(SlurmJobs, ApiShowsQueueStatesAndProgress) {
  auto job = cluster::Job::submit(cluster::load_profile(profile_path),
                                  {data, t / "graph", {"-k", "8", "--metric", "pearson"}});
  EXPECT_FALSE(job->id().empty());
  struct Sink : ProgressSink {
    bool knn_done = false;
    void report(const ProgressEvent& e) override {
      knn_done |= e.stage == "knn" && e.finished && e.total > 0 && e.done == e.total;
    }
  } sink;
  Progress progress(&sink);
  std::vector<std::string> states;
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.2;
  fo.on_status = [&](const cluster::Job&, const cluster::JobStatus& s) { states.push_back(s.queue_state); };
  KnnGraph g = cluster::follow(*job, progress, fo);
  EXPECT_TRUE(sink.knn_done) << "progress did not come through the progress file";
  // squeue's view was followed (which states a short job shows between two
  // polls depends on the scheduler's timing).
  const bool from_squeue = std::any_of(states.begin(), states.end(), [](const std::string& q) {
    return q == "PENDING" || q == "RUNNING" || q == "CONFIGURING" || q == "COMPLETING" || q == "COMPLETED";
  });
  EXPECT_TRUE(from_squeue) << "no Slurm queue state seen";
  GraphArrays want = read_arrays(t / "cpu");
  EXPECT_TRUE(g.indices == want.indices);
  EXPECT_TRUE(g.distances == want.distances);
  std::ifstream status(fs::path(job->dir()) / "exit_status");
  int code = -1;
  status >> code;
  EXPECT_EQ(code, 0);
}

TEST_F(SlurmJobs, ScancelEndsTheJobWithNoOutput) {
  const std::string big = t / "big.npy";
  write_npy(big, random_dataset(40000, 64, 9));
  auto job = cluster::Job::submit(cluster::load_profile(profile_path), {big, t / "graph", {"-k", "10"}});
  std::atomic<bool> cancel{false};
  struct CancelOnKnn : ProgressSink {
    std::atomic<bool>* flag;
    void report(const ProgressEvent& e) override {
      if (e.stage == "knn") flag->store(true);
    }
  } sink;
  sink.flag = &cancel;
  Progress progress(&sink, &cancel);
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.2;
  EXPECT_THROW(cluster::follow(*job, progress, fo), Cancelled);
  EXPECT_TRUE(cancel.load()) << "the job never reached the knn stage";
  EXPECT_EQ(job->poll().state, cluster::JobState::Cancelled);
  EXPECT_EQ(job->poll().queue_state, "CANCELLED");
  // Slurm kills what is left of the job within KillWait; nothing may appear.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  EXPECT_FALSE(fs::exists(t / "graph"));
}

}  // namespace
