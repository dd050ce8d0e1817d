// Dispatch to a cluster profile of kind "mpirun": `manifold submit` and the
// cluster API it uses run a real `mpirun ... manifold knn --backend mpi`, follow
// its progress file, and return the graph; cancel ends mpirun and its ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
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

struct CapturingSink : ProgressSink {
  std::mutex m;
  std::vector<ProgressEvent> events;
  void report(const ProgressEvent& e) override {
    std::lock_guard lock(m);
    events.push_back(e);
  }
};

class MpirunDispatch : public ::testing::Test {
 protected:
  void SetUp() override {
    data = t / "data.npy";
    write_npy(data, random_dataset(1600, 40, 5, 20));
    nlohmann::json p;
    p["kind"] = "mpirun";
    p["ranks"] = 3;
    p["mpirun"] = std::getenv("MANIFOLD_MPIRUN") ? std::getenv("MANIFOLD_MPIRUN") : "mpirun";
    p["mpirun_args"] = {"--oversubscribe"};
    p["work_dir"] = t / "jobs";
    p["manifold"] = std::getenv("MANIFOLD_CLI");
    p["env"] = job_environment();
    profile_path = t / "local.json";
    std::ofstream(profile_path) << p.dump(2);
    RunResult r = run_manifold("knn '" + data + "' -k 9 --metric cosine --backend cpu -q -o '" + (t / "cpu") + "'");
    ASSERT_EQ(r.status, 0) << r.err;
  }
  TempDir t;
  std::string data, profile_path;
};

TEST_F(MpirunDispatch, SubmitCommandWritesTheSameGraphAsTheCpu) {
  const std::string out = t / "graph";
  RunResult r = run_manifold("submit --profile '" + profile_path + "' '" + data + "' -k 9 --metric cosine -o '" + out +
                             "'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("submitted job"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("ranks=3"), std::string::npos) << r.out;
  GraphArrays want = read_arrays(t / "cpu"), got = read_arrays(out);
  EXPECT_TRUE(got.indices == want.indices);
  EXPECT_TRUE(got.distances == want.distances);
}

TEST_F(MpirunDispatch, ApiFollowsProgressToTheResult) {
  auto job = cluster::Job::submit(cluster::load_profile(profile_path),
                                  {data, t / "graph", {"-k", "9", "--metric", "cosine"}});
  CapturingSink sink;
  Progress progress(&sink);
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.1;
  KnnGraph g = cluster::follow(*job, progress, fo);
  EXPECT_EQ(g.extra["ranks"], 3);
  GraphArrays want = read_arrays(t / "cpu");
  EXPECT_TRUE(g.indices == want.indices);
  EXPECT_TRUE(g.distances == want.distances);
  bool knn_done = false;
  for (auto& e : sink.events) knn_done |= e.stage == "knn" && e.finished && e.done == e.total && e.total > 0;
  EXPECT_TRUE(knn_done) << "the aggregated knn stage was not forwarded from the progress file";
}

TEST_F(MpirunDispatch, AFailingRankFailsTheJobWithItsLine) {
  nlohmann::json p = nlohmann::json::parse(std::ifstream(profile_path));
  p["env"]["MANIFOLD_MPI_FAIL_RANK"] = "1";
  std::ofstream(profile_path) << p.dump(2);
  const std::string out = t / "graph";
  RunResult r = run_manifold("submit --profile '" + profile_path + "' '" + data + "' -k 9 -q -o '" + out + "'");
  EXPECT_EQ(r.status, 1);
  auto lines = nonempty_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_NE(lines[0].find("failed: rank 1 of 3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("injected failure"), std::string::npos) << lines[0];
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(MpirunDispatch, CancelEndsMpirunAndItsRanksWithNoOutput) {
  // Big enough to run for a while on a small machine.
  const std::string big = t / "big.npy";
  write_npy(big, random_dataset(40000, 64, 8));
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
  fo.poll_interval_s = 0.1;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(cluster::follow(*job, progress, fo), Cancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 120.0);
  EXPECT_TRUE(cancel.load()) << "the job never reported the knn stage";
  EXPECT_NE(killpg(std::stoi(job->id()), 0), 0) << "mpirun or a rank is still running";
  EXPECT_FALSE(fs::exists(t / "graph"));
}

TEST_F(MpirunDispatch, CtrlCOnSubmitCancelsTheJob) {
  const std::string big = t / "big.npy", out = t / "graph", err = t / "submit.err";
  // Long enough (tens of seconds on 2 cores) that Ctrl-C lands while it computes
  // on any machine; cancellation ends it within a second.
  write_npy(big, random_dataset(200000, 16, 10));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(err.c_str(), "w", stderr);
    freopen("/dev/null", "w", stdout);
    const char* cli = std::getenv("MANIFOLD_CLI");
    execl(cli, cli, "submit", "--profile", profile_path.c_str(), big.c_str(), "-k", "10", "-o", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  auto text = [&] {
    std::ifstream in(err);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  // Wait until the job runs, then press Ctrl-C.
  for (int i = 0; i < 600 && text().find(": running") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(text().find(": running"), std::string::npos) << text();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << text();
  const std::string e = text();
  EXPECT_NE(e.find("cancelled; no output written"), std::string::npos) << e;
  const size_t at = e.find("submitted job ");
  ASSERT_NE(at, std::string::npos) << e;
  const int job_pid = std::atoi(e.c_str() + at + 14);
  EXPECT_NE(killpg(job_pid, 0), 0) << "mpirun or a rank is still running";
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
