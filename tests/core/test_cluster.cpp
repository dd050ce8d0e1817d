// The cluster dispatch API without MPI or Slurm: profiles, job scripts, the
// progress file, and following a job whose launcher is a stand-in that runs
// the real CLI on the CPU (the end-to-end runs under mpirun and Slurm are in
// tests/mpi/).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "manifold/cluster.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"
#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
namespace fs = std::filesystem;

namespace {

cluster::Profile parse(const std::string& text) {
  return cluster::parse_profile(nlohmann::json::parse(text), "test.json");
}

std::string usage_error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterProfile, ParsesMpirunAndSlurmProfiles) {
  auto m = parse(R"({"kind":"mpirun","ranks":4,"hostfile":"hosts","mpirun_args":["--oversubscribe"],
                     "env":{"OMP_NUM_THREADS":"1"}})");
  EXPECT_EQ(m.kind, cluster::Profile::Kind::Mpirun);
  EXPECT_EQ(m.total_ranks(), 4);
  EXPECT_EQ(m.hostfile, "hosts");
  EXPECT_EQ(m.mpirun_args, std::vector<std::string>{"--oversubscribe"});
  EXPECT_EQ(m.env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(m.name, "test");

  auto s = parse(R"({"kind":"slurm","partition":"gpu","nodes":3,"ranks_per_node":2,"gpus_per_node":2,
                     "time_limit":"1-02:00:00","work_dir":"/shared/jobs","sbatch_args":["--account=x"]})");
  EXPECT_EQ(s.kind, cluster::Profile::Kind::Slurm);
  EXPECT_EQ(s.total_ranks(), 6);
  EXPECT_EQ(s.partition, "gpu");
  EXPECT_EQ(s.gpus_per_node, 2);
  EXPECT_EQ(s.time_limit, "1-02:00:00");
  // Round trip through JSON.
  auto again = cluster::parse_profile(cluster::profile_to_json(s), "again.json");
  EXPECT_EQ(again.total_ranks(), 6);
  EXPECT_EQ(again.sbatch_args, s.sbatch_args);
}

TEST(ClusterProfile, RejectsMistakesNamingTheFileAndKey) {
  EXPECT_NE(usage_error_of(R"({"ranks":2})").find("no \"kind\""), std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"pbs"})").find("'kind' is 'pbs'"), std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"mpirun","rank":2})").find("'rank' is unknown"), std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"mpirun","ranks":0})").find("'ranks' must be a positive integer"),
            std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"mpirun","ranks":"4"})").find("'ranks'"), std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"mpirun","partition":"x"})").find("does not apply to kind mpirun"),
            std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"slurm","nodes":2})").find("needs \"work_dir\""), std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"slurm","work_dir":"/w","time_limit":"soon"})").find("'time_limit'"),
            std::string::npos);
  EXPECT_NE(usage_error_of(R"({"kind":"mpirun","env":{"A B":"1"}})").find("not an environment variable name"),
            std::string::npos);
  for (auto* bad : {R"({"ranks":2})", R"({"kind":"mpirun","rank":2})"})
    EXPECT_EQ(usage_error_of(bad).rfind("test.json: ", 0), 0u) << usage_error_of(bad);
}

TEST(ClusterProfile, LoadsFilesAndAnchorsRelativePaths) {
  TempDir t;
  {
    std::ofstream(t / "c.json") << R"({"kind":"mpirun","hostfile":"hosts.txt","work_dir":"jobs"})";
    std::ofstream(t / "broken.json") << R"({"kind":"mpirun",)";
  }
  auto p = cluster::load_profile(t / "c.json");
  EXPECT_EQ(p.hostfile, fs::path(t.path) / "hosts.txt");
  EXPECT_EQ(p.work_dir, fs::path(t.path) / "jobs");
  EXPECT_EQ(p.name, "c");
  EXPECT_THROW(cluster::load_profile(t / "missing.json"), Error);
  try {
    cluster::load_profile(t / "broken.json");
    ADD_FAILURE() << "broken JSON accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(ClusterJobScript, SlurmScriptCarriesTheRequestAndQuotesPaths) {
  auto p = parse(R"({"kind":"slurm","partition":"gpu","nodes":2,"ranks_per_node":4,"gpus_per_node":4,
                     "time_limit":"02:00:00","work_dir":"/w","sbatch_args":["--account=proj"],
                     "manifold":"/opt/m/bin/manifold","mpirun_args":["--bind-to","none"],
                     "env":{"OMP_NUM_THREADS":"2"}})");
  cluster::JobSpec spec{"/data/it's here.npy", "/out/graph dir", {"-k", "15", "--metric", "cosine"}};
  const std::string s = cluster::job_script(p, spec, "/w/job1");
  for (const char* want :
       {"#!/bin/sh\n", "#SBATCH --partition=gpu\n", "#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n",
        "#SBATCH --gpus-per-node=4\n", "#SBATCH --time=02:00:00\n", "#SBATCH --account=proj\n",
        "#SBATCH --output=\"/w/job1/job.out\"\n", "#SBATCH --error=\"/w/job1/job.err\"\n",
        "export MANIFOLD_PROGRESS_FILE='/w/job1/progress.jsonl'\n", "export OMP_NUM_THREADS='2'\n",
        "'mpirun' -np 8 '--bind-to' 'none' '/opt/m/bin/manifold' knn '/data/it'\\''s here.npy' '-k' '15' "
        "'--metric' 'cosine' --backend mpi -o '/out/graph dir'\n",
        "/w/job1/exit_status"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << s;

  auto m = parse(R"({"kind":"mpirun","ranks":3,"hostfile":"/etc/hosts.mpi"})");
  const std::string t = cluster::job_script(m, spec, "jobs/j");
  EXPECT_EQ(t.find("#SBATCH"), std::string::npos);
  EXPECT_NE(t.find("'mpirun' --hostfile '/etc/hosts.mpi' -np 3 "), std::string::npos) << t;
}

TEST(ClusterJobScript, ControlCharactersCannotInjectShellLines) {
  // Issue 24: a newline in any value that reaches a comment or an #SBATCH
  // line ended it, and the rest ran as shell on the node.
  const char* payload = "x\\ntouch pwned";
  for (std::string key : {"name", "partition", "work_dir"}) {
    nlohmann::json j = nlohmann::json::parse(R"({"kind":"slurm","work_dir":"/w"})");
    j[key] = nlohmann::json::parse(std::string("\"") + payload + "\"");
    try {
      cluster::parse_profile(j, "p.json");
      ADD_FAILURE() << key << " with a newline was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("control character"), std::string::npos) << e.what();
    }
  }
  nlohmann::json j = nlohmann::json::parse(R"({"kind":"slurm","work_dir":"/w"})");
  j["sbatch_args"] = {"--account=a\ntouch pwned"};
  EXPECT_THROW(cluster::parse_profile(j, "p.json"), UsageError);
  // The command line's words too, DEL included (the fuzzer's find: a
  // hostfile "h\x7fsts").
  for (std::string key : {"hostfile", "manifold", "mpirun"})
    for (const char* bad : {"h\x7fsts", "h\nsts"}) {
      nlohmann::json m = nlohmann::json::parse(R"({"kind":"mpirun"})");
      m[key] = bad;
      EXPECT_THROW(cluster::parse_profile(m, "p.json"), UsageError) << key;
    }
  nlohmann::json m = nlohmann::json::parse(R"({"kind":"mpirun"})");
  m["mpirun_args"] = {"--x\ty"};
  EXPECT_THROW(cluster::parse_profile(m, "p.json"), UsageError);
  m = nlohmann::json::parse(R"({"kind":"mpirun"})");
  m["env"] = {{"OMP_NUM_THREADS", "1\n"}};
  EXPECT_THROW(cluster::parse_profile(m, "p.json"), UsageError);
  // The default name is the profile's file name: the same rule.
  EXPECT_THROW(cluster::parse_profile(nlohmann::json::parse(R"({"kind":"mpirun"})"), "evil\nrm -rf x.json"),
               UsageError);
  // A work_dir with a space stays one #SBATCH argument.
  auto p = parse(R"({"kind":"slurm","work_dir":"/shared/my jobs"})");
  cluster::JobSpec spec{"/d.npy", "/o", {"-k", "5"}};
  const std::string s = cluster::job_script(p, spec, "/shared/my jobs/j1");
  EXPECT_NE(s.find("#SBATCH --output=\"/shared/my jobs/j1/job.out\"\n"), std::string::npos) << s;
  EXPECT_NE(usage_error_of(R"({"kind":"slurm","work_dir":"/a\"b"})").find("double quote"), std::string::npos);
}

TEST(ClusterProgressFile, WritesAndReadsLinesIncrementally) {
  TempDir t;
  const std::string path = t / "progress.jsonl";
  cluster::ProgressFileReader reader(path);
  EXPECT_TRUE(reader.read_lines().empty());  // not there yet
  {
    cluster::ProgressFileSink sink(path);
    ProgressEvent e;
    e.stage = "knn";
    e.unit = "tiles";
    e.done = 3;
    e.total = 10;
    e.rate = 1.5;
    e.eta_s = 4.5;
    sink.report(e);
    sink.event("computed", {{"ranks", 4}});
  }
  auto lines = reader.read_lines();
  ASSERT_EQ(lines.size(), 2u);
  auto e = cluster::parse_progress_line(lines[0]);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->stage, "knn");
  EXPECT_EQ(e->done, 3u);
  EXPECT_EQ(e->total, 10u);
  EXPECT_DOUBLE_EQ(e->eta_s, 4.5);
  EXPECT_FALSE(cluster::parse_progress_line(lines[1]).has_value());  // an event line
  EXPECT_EQ(nlohmann::json::parse(lines[1])["event"], "computed");
  // A line still being written is not returned until complete.
  {
    std::ofstream out(path, std::ios::app);
    out << R"({"stage":"merge","done":0,"to)";
  }
  EXPECT_TRUE(reader.read_lines().empty());
  {
    std::ofstream out(path, std::ios::app);
    out << R"(tal":1})"
        << "\n";
  }
  lines = reader.read_lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(cluster::parse_progress_line(lines[0])->stage, "merge");
  EXPECT_FALSE(cluster::parse_progress_line("not json").has_value());
}

// A launcher standing in for mpirun: drops "-np N", runs the command with the
// CPU backend in place of mpi, and emits a progress line as rank 0 would.
std::string write_fake_mpirun(const TempDir& t, const std::string& extra = "") {
  const std::string path = t / "fake-mpirun";
  std::ofstream(path) << "#!/bin/sh\n"
                      << "echo '{\"stage\":\"knn\",\"unit\":\"tiles\",\"done\":1,\"total\":1,\"finished\":true}' "
                         ">> \"$MANIFOLD_PROGRESS_FILE\"\n"
                      << extra << "shift 2\n"
                      << "prev=\n"
                      << "for a in \"$@\"; do shift; if [ \"$prev\" = --backend ]; then set -- \"$@\" cpu; "
                         "else set -- \"$@\" \"$a\"; fi; prev=$a; done\n"
                      << "exec \"$@\"\n";
  chmod(path.c_str(), 0755);
  return path;
}

struct CapturingSink : ProgressSink {
  std::vector<ProgressEvent> events;
  void report(const ProgressEvent& e) override { events.push_back(e); }
};

class ClusterJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI is not set";
    Dataset ds = random_dataset(700, 12, 99);
    data = t / "data.npy";
    npy::write(data, ds.data(), {ds.rows(), ds.cols()});
    profile.kind = cluster::Profile::Kind::Mpirun;
    profile.work_dir = t / "jobs";
    profile.manifold = std::getenv("MANIFOLD_CLI");
  }
  TempDir t;
  std::string data;
  cluster::Profile profile;
};

TEST_F(ClusterJob, FollowsAJobToItsResult) {
  profile.mpirun = write_fake_mpirun(t);
  auto job = cluster::Job::submit(profile, {data, t / "graph", {"-k", "6", "--metric", "pearson"}});
  EXPECT_TRUE(fs::exists(fs::path(job->dir()) / "run.sh"));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(fs::path(job->dir()) / "job.json"))["id"], job->id());
  CapturingSink sink;
  Progress progress(&sink);
  std::vector<cluster::JobStatus> seen;
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.05;
  fo.on_status = [&](const cluster::Job&, const cluster::JobStatus& s) { seen.push_back(s); };
  KnnGraph g = cluster::follow(*job, progress, fo);
  EXPECT_EQ(g.n, 700);
  EXPECT_EQ(g.k, 6);
  EXPECT_EQ(g.metric, Metric::Pearson);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().state, cluster::JobState::Completed);
  EXPECT_EQ(seen.back().exit_code, 0);
  ASSERT_FALSE(sink.events.empty()) << "progress lines were not forwarded";
  EXPECT_EQ(sink.events[0].stage, "knn");
  // The graph is the one the CLI computes directly.
  ASSERT_EQ(run_cli("knn '" + data + "' -k 6 --metric pearson --backend cpu -q -o '" + (t / "direct") + "'"), 0);
  KnnGraph direct = read_graph(t / "direct");
  EXPECT_EQ(g.indices, direct.indices);
  EXPECT_EQ(g.distances, direct.distances);
}

TEST_F(ClusterJob, AFailedJobReportsItsOwnErrorLine) {
  profile.mpirun = write_fake_mpirun(t);
  auto job = cluster::Job::submit(profile, {data, t / "graph", {"-k", "5000"}});
  Progress progress;
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.05;
  try {
    cluster::follow(*job, progress, fo);
    ADD_FAILURE() << "a job with a bad -k succeeded";
  } catch (const Cancelled&) {
    ADD_FAILURE() << "reported as cancelled";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("job " + job->id() + " failed: -k 5000", 0), 0u) << msg;
  }
  EXPECT_FALSE(fs::exists(t / "graph"));
}

TEST_F(ClusterJob, CancelEndsTheProcessGroupAndLeavesNoOutput) {
  // The stand-in sleeps first, as a long job would compute.
  profile.mpirun = write_fake_mpirun(t, "sleep 30\n");
  auto job = cluster::Job::submit(profile, {data, t / "graph", {"-k", "5"}});
  std::atomic<bool> cancel{false};
  CapturingSink sink;
  Progress progress(&sink, &cancel);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancel.store(true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  cluster::FollowOptions fo;
  fo.poll_interval_s = 0.05;
  EXPECT_THROW(cluster::follow(*job, progress, fo), Cancelled);
  canceller.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0);
  EXPECT_NE(killpg(std::stoi(job->id()), 0), 0) << "processes of the job are still running";
  EXPECT_FALSE(fs::exists(t / "graph"));
  EXPECT_FALSE(fs::exists(fs::path(job->dir()) / "exit_status"));
}

TEST_F(ClusterJob, RejectsOptionsTheJobSetsItself) {
  EXPECT_THROW(cluster::Job::submit(profile, {data, t / "g", {"--backend", "cpu"}}), UsageError);
  EXPECT_THROW(cluster::Job::submit(profile, {data, t / "g", {"-o", "x"}}), UsageError);
  EXPECT_THROW(cluster::Job::submit(profile, {"", t / "g", {}}), UsageError);
}

TEST(ClusterSubmitCli, RejectsBadArgumentsWithOneLine) {
  if (!std::getenv("MANIFOLD_CLI")) GTEST_SKIP() << "MANIFOLD_CLI is not set";
  TempDir t;
  std::ofstream(t / "p.json") << R"({"kind":"mpirun","ranks":2})";
  std::ofstream(t / "d.npy") << "x";
  std::string err;
  EXPECT_EQ(run_cli("submit '" + (t / "d.npy") + "' -o '" + (t / "o") + "'", &err), 2);
  EXPECT_NE(err.find("missing --profile"), std::string::npos) << err;
  EXPECT_EQ(run_cli("submit --profile '" + (t / "p.json") + "' '" + (t / "d.npy") + "' --backend cpu -o x", &err), 2);
  EXPECT_NE(err.find("cluster jobs run the mpi backend"), std::string::npos) << err;
  EXPECT_EQ(run_cli("submit --profile '" + (t / "nope.json") + "' '" + (t / "d.npy") + "' -o x", &err), 1);
  EXPECT_NE(err.find("cannot open the cluster profile"), std::string::npos) << err;
  EXPECT_EQ(run_cli("submit --profile '" + (t / "p.json") + "' '" + (t / "missing.npy") + "' -o x", &err), 1);
  EXPECT_NE(err.find("no such file"), std::string::npos) << err;
  EXPECT_EQ(run_cli("submit --profile '" + (t / "p.json") + "' '" + (t / "d.npy") + "' --metric manhattan -o x", &err),
            2);
  EXPECT_NE(err.find("--metric"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
