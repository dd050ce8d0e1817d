// run --metadata in the session run writes: the session names the metadata
// files (absolute, as run --metadata takes them), `run --session` reads them
// again so its embedding carries the same columns, and a --metadata given
// with --session adds to them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/npy.h"
#include "test_support.h"

using namespace manifold;
using namespace testing_support;
namespace fs = std::filesystem;

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST(CliRun, SessionKeepsTheMetadataFiles) {
  REQUIRE_CLI();
  TempDir t;
  // 300 points on a noisy circle in 6-D, and two columns of them.
  const int n = 300, d = 6;
  std::vector<float> x(static_cast<size_t>(n) * d);
  std::vector<int64_t> klass(n);
  std::vector<double> angle(n);
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / n;
    for (int j = 0; j < d; ++j)
      x[static_cast<size_t>(i) * d + j] = static_cast<float>(std::cos(a * (j + 1)) + 0.01 * j);
    klass[static_cast<size_t>(i)] = i * 4 / n;
    angle[static_cast<size_t>(i)] = a;
  }
  npy::write(t / "x.npy", x.data(), {n, d});
  npy::write(t / "klass.npy", klass.data(), {n});
  npy::write(t / "angle.npy", angle.data(), {n});
  std::string err;
  const std::string base = "run " + (t / "x.npy") + " -k 10 --backend cpu --components 3 -q";
  ASSERT_EQ(run_cli(base + " --metadata " + (t / "klass.npy") + ":klass -o " + (t / "r"), &err), 0) << err;
  EXPECT_NE(first_line(t / "r/embedding.csv").find("klass"), std::string::npos);
  nlohmann::json session;
  std::ifstream(t / "r/session.json") >> session;
  ASSERT_TRUE(session.contains("metadata")) << session.dump(2);
  EXPECT_EQ(session["metadata"][0], fs::absolute(t / "klass.npy").lexically_normal().string() + ":klass");

  ASSERT_EQ(run_cli("run --session " + (t / "r/session.json") + " -q -o " + (t / "again"), &err), 0) << err;
  EXPECT_EQ(first_line(t / "again/embedding.csv"), first_line(t / "r/embedding.csv"));
  // A --metadata beside --session adds its columns to the session's.
  ASSERT_EQ(run_cli("run --session " + (t / "r/session.json") + " -q --metadata " + (t / "angle.npy") + ":angle -o " +
                        (t / "more"),
                    &err),
            0)
      << err;
  const std::string header = first_line(t / "more/embedding.csv");
  EXPECT_NE(header.find("klass"), std::string::npos) << header;
  EXPECT_NE(header.find("angle"), std::string::npos) << header;
  // A session whose metadata file is gone: one line naming it, no output.
  fs::remove(t / "klass.npy");
  EXPECT_EQ(run_cli("run --session " + (t / "r/session.json") + " -q -o " + (t / "gone"), &err), 1);
  EXPECT_NE(err.find("klass.npy"), std::string::npos) << err;
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_FALSE(fs::exists(t / "gone"));
}
