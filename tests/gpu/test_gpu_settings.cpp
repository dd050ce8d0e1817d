// The GPU library's settings (gpu/settings.h), no GPU needed: what each
// environment variable sets, one line naming the variable for a value it does
// not take, and ScopedSettings restoring what was there.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpu_test_util.h"
#include "manifold/error.h"
#include "settings.h"

using manifold::UsageError;
using manifold::gpu::GemmPath;
using manifold::gpu::Settings;
using manifold::gpu::settings_from_environment;

namespace {

std::map<std::string, std::string> environment;

const char* lookup(const char* name) {
  auto it = environment.find(name);
  return it == environment.end() ? nullptr : it->second.c_str();
}

Settings with(std::map<std::string, std::string> env) {
  environment = std::move(env);
  return settings_from_environment(lookup);
}

std::string refusal(std::map<std::string, std::string> env) {
  try {
    with(std::move(env));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(GpuSettings, EmptyEnvironmentIsTheDefaults) {
  const Settings s = with({});
  EXPECT_EQ(s.gemm, GemmPath::Auto);
  EXPECT_FALSE(s.timeline);
  EXPECT_FALSE(s.chebyshev_trace);
  EXPECT_EQ(s.select_table, "");
  EXPECT_EQ(s.tile, "");
  EXPECT_EQ(s.select_tile, "");
  EXPECT_EQ(s.slack, -1);
  EXPECT_TRUE(s.final_beside_loop);
  EXPECT_TRUE(s.certify_by_warp);
  EXPECT_FALSE(s.spmm_cusparse);
  // Set but empty is unset.
  EXPECT_FALSE(with({{"MANIFOLD_GPU_TIMELINE", ""}}).timeline);
  // The dot-product kernel is a test setting (--gemm of the GPU test
  // programs), not a variable.
  EXPECT_EQ(with({{"MANIFOLD_GPU_GEMM", "fused"}}).gemm, GemmPath::Auto);
}

TEST(GpuSettings, EachVariable) {
  EXPECT_TRUE(with({{"MANIFOLD_GPU_TIMELINE", "1"}}).timeline);
  EXPECT_FALSE(with({{"MANIFOLD_GPU_TIMELINE", "0"}}).timeline);
  EXPECT_TRUE(with({{"MANIFOLD_CHEB_TRACE", "1"}}).chebyshev_trace);
  EXPECT_TRUE(with({{"MANIFOLD_CHEB_TRACE", "yes"}}).chebyshev_trace);
  EXPECT_FALSE(with({{"MANIFOLD_CHEB_TRACE", "0"}}).chebyshev_trace);
  EXPECT_EQ(with({{"MANIFOLD_SELECT_TABLE", "t.txt"}}).select_table, "t.txt");
}

TEST(GpuSettings, BadValuesAreOneLineNamingTheVariable) {
  EXPECT_EQ(refusal({{"MANIFOLD_GPU_TIMELINE", "yes"}}), "MANIFOLD_GPU_TIMELINE: 'yes' is not 0 or 1");
}

TEST(GpuSettings, ScopesRestoreWhatWasThere) {
  const Settings before = manifold::gpu::settings();
  {
    gpu_tests::WithSettings outer([](Settings& s) { s.tile = "128x256"; });
    EXPECT_EQ(manifold::gpu::settings().tile, "128x256");
    {
      gpu_tests::WithSettings inner([](Settings& s) { s.slack = 0; });
      EXPECT_EQ(manifold::gpu::settings().tile, "128x256");  // the outer scope's, kept
      EXPECT_EQ(manifold::gpu::settings().slack, 0);
    }
    EXPECT_EQ(manifold::gpu::settings().slack, before.slack);
  }
  EXPECT_EQ(manifold::gpu::settings().tile, before.tile);
}

}  // namespace
