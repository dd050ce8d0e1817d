// The breakdown of a command's wall time: knn, embed and run print one
// "steps:" line and record the steps known when their JSON is written
// ("command_timings_s" in graph.json's extra and in embedding.json).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;

namespace {

std::string write_points(const TempDir& t, int64_t n) {
  std::mt19937_64 rng(9);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(static_cast<size_t>(n * 4));
  for (auto& x : v) x = g(rng);
  const std::string path = t / "points.npy";
  npy::write(path, v.data(), {n, 4});
  return path;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/// The names of the "steps:" line of `out`, in order; fails when there is none.
std::vector<std::string> step_names(const std::string& out) {
  const size_t at = out.find("steps: ");
  EXPECT_NE(at, std::string::npos) << out;
  if (at == std::string::npos) return {};
  std::istringstream line(out.substr(at + 7, out.find('\n', at) - at - 7));
  std::vector<std::string> names;
  std::string item;
  while (std::getline(line, item, ',')) {
    if (item.front() == ' ') item.erase(0, 1);
    const size_t value = item.rfind(' ', item.size() - 3);  // "NAME SECONDS s"
    names.push_back(item.substr(0, value));
  }
  return names;
}

void expect_seconds(const nlohmann::json& steps, const std::vector<std::string>& names) {
  ASSERT_TRUE(steps.is_object()) << steps;
  EXPECT_EQ(steps.size(), names.size()) << steps;
  for (const auto& name : names) {
    ASSERT_TRUE(steps.contains(name)) << name << " in " << steps;
    EXPECT_GE(steps[name].get<double>(), 0) << name;
  }
}

}  // namespace

TEST(CliTimings, RunRecordsEveryStep) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_points(t, 400);
  std::string err, out;
  ASSERT_EQ(run_cli("run " + data + " -k 10 --backend cpu --components 3 -o " + (t / "r"), &err, &out), 0) << err;
  EXPECT_EQ(step_names(out),
            (std::vector<std::string>{"load", "transform", "metadata", "graph", "embedding", "write graph",
                                      "write session", "write embedding .npy", "write CSV", "write VTP",
                                      "write embedding.json", "commit", "total"}));
  const auto j = read_json(t / "r/embedding.json");
  expect_seconds(j["command_timings_s"], {"load", "transform", "metadata", "graph", "embedding", "write graph",
                                          "write session", "write embedding .npy", "write CSV", "write VTP"});
  EXPECT_EQ(run_cli("run " + data + " -k 10 --backend cpu --components 3 -q --overwrite -o " + (t / "r"), &err, &out),
            0);
  EXPECT_EQ(out.find("steps:"), std::string::npos) << "--quiet prints no breakdown: " << out;
}

TEST(CliTimings, KnnThenEmbedRecordTheirSteps) {
  REQUIRE_CLI();
  TempDir t;
  const std::string data = write_points(t, 300);
  std::string err, out;
  ASSERT_EQ(run_cli("knn " + data + " -k 8 --backend cpu -o " + (t / "g"), &err, &out), 0) << err;
  EXPECT_EQ(step_names(out), (std::vector<std::string>{"load", "graph", "write graph", "total"}));
  expect_seconds(read_json(t / "g/graph.json")["extra"]["command_timings_s"], {"load", "graph"});

  ASSERT_EQ(run_cli("embed " + (t / "g") + " --components 2 -o " + (t / "e"), &err, &out), 0) << err;
  EXPECT_EQ(step_names(out),
            (std::vector<std::string>{"load graph", "metadata", "embedding", "write embedding .npy", "write CSV",
                                      "write VTP", "write embedding.json", "commit", "total"}));
  expect_seconds(read_json(t / "e/embedding.json")["command_timings_s"],
                 {"load graph", "metadata", "embedding", "write embedding .npy", "write CSV", "write VTP"});
}
