// Transforms of photon counts before the graph: Anscombe, pixel binning and
// their chains (the sparse-photon setting of bench/physics/RESULTS.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "manifold/error.h"
#include "manifold/npy.h"
#include "manifold/simulate.h"
#include "test_support.h"

using namespace manifold;
using testing_support::run_cli;
using testing_support::TempDir;

namespace {

/// Two 4 x 4 images with values 0..15 and 16..31.
Dataset two_images() {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  Dataset ds(2, 16, std::move(v));
  ds.item_shape = {4, 4};
  ds.source = "two.npy";
  return ds;
}

float ans(float x) { return 2.0f * std::sqrt(x + 0.375f); }

}  // namespace

TEST(PhotonTransforms, BinningSumsBlocksAndKeepsTheImageShape) {
  const Dataset b = transformed(two_images(), "bin2");
  ASSERT_EQ(b.rows(), 2);
  ASSERT_EQ(b.cols(), 4);
  EXPECT_EQ(b.item_shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b.source, "two.npy");
  // Block (0,0) of the first image: 0 + 1 + 4 + 5; block (1,1): 10 + 11 + 14 + 15.
  const std::vector<float> want = {10, 18, 42, 50, 74, 82, 106, 114};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(b.data()[i], want[i]) << i;
  const Dataset all = transformed(two_images(), "bin4");
  EXPECT_EQ(all.cols(), 1);
  EXPECT_EQ(all.data()[0], 120.0f);
  EXPECT_EQ(all.data()[1], 376.0f);
}

TEST(PhotonTransforms, StepsApplyLeftToRight) {
  const Dataset sa = transformed(two_images(), "bin2+anscombe");
  EXPECT_FLOAT_EQ(sa.data()[0], ans(10));
  EXPECT_FLOAT_EQ(sa.data()[7], ans(114));
  const Dataset as = transformed(two_images(), "anscombe+bin2");
  EXPECT_FLOAT_EQ(as.data()[0], ans(0) + ans(1) + ans(4) + ans(5));
  EXPECT_EQ(as.item_shape, (std::vector<int64_t>{2, 2}));
  const Dataset a = transformed(two_images(), "anscombe");
  EXPECT_EQ(a.cols(), 16);
  EXPECT_FLOAT_EQ(a.data()[31], ans(31));
  EXPECT_EQ(transformed(two_images(), "none").data()[31], 31.0f);
}

TEST(PhotonTransforms, BadNamesAndShapesAreOneLineErrors) {
  for (const std::string bad : {"bin1", "bin", "binx", "bin2x", "Anscombe", "bin2+", "+anscombe", "log", ""}) {
    try {
      validate_transform(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--transform: unknown transform '" + bad + "'"), std::string::npos)
          << e.what();
    }
  }
  try {
    transformed(two_images(), "bin3");
    ADD_FAILURE() << "bin3 of 4 x 4 accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--transform bin3: two.npy has 4 x 4 images, not divisible by 3");
  }
  Dataset vectors = two_images();
  vectors.item_shape = {16};
  EXPECT_THROW(transformed(vectors, "bin2"), UsageError);
}

TEST(PhotonTransforms, RunEmbedsBinnedCountsAndRecordsTheTransform) {
  REQUIRE_CLI();
  TempDir t;
  std::vector<float> v(60 * 8 * 8);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 2654435761u >> 7) % 5);
  npy::write(t / "p.npy", v.data(), {60, 8, 8});
  std::string err, out;
  ASSERT_EQ(run_cli("run " + (t / "p.npy") + " -k 8 --transform bin2+anscombe -q -o " + (t / "e"), &err, &out), 0)
      << err;
  std::ifstream in(t / "e/embedding.json");
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["transform"], "bin2+anscombe");
  EXPECT_EQ(j["graph"]["d"], 16);
  // The session the run wrote replays with the same transform.
  ASSERT_EQ(run_cli("run --session " + (t / "e/session.json") + " -q -o " + (t / "replay"), &err), 0) << err;
  std::ifstream replayed(t / "replay/embedding.json");
  EXPECT_EQ(nlohmann::json::parse(replayed)["transform"], "bin2+anscombe");
  EXPECT_EQ(run_cli("run " + (t / "p.npy") + " -k 8 --transform bin3 -q -o " + (t / "f"), &err), 2);
  EXPECT_NE(err.find("not divisible by 3"), std::string::npos) << err;
  EXPECT_EQ(run_cli("run " + (t / "p.npy") + " -k 8 --transform sqrt -q -o " + (t / "g"), &err), 2);
  EXPECT_NE(err.find("unknown transform 'sqrt'"), std::string::npos) << err;
}
