// SettingsStore and ScopedOverride (manifold/settings_store.h), the read-once
// store behind core's, the GPU library's and the MPI library's settings.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "manifold/settings.h"
#include "manifold/settings_store.h"

using namespace manifold;

namespace {

struct Fake {
  std::string value;
};

int reads = 0;
bool fail_next_reads = false;

Fake read_fake() {
  ++reads;
  if (fail_next_reads) throw std::runtime_error("FAKE_VARIABLE: 'x' is not a value");
  return Fake{"from the environment"};
}

SettingsStore<Fake>& fake_store() {
  static SettingsStore<Fake> store(read_fake);
  return store;
}

using ScopedFake = ScopedOverride<Fake, fake_store>;

}  // namespace

// In one test: the store is a process-wide static, so the steps depend on
// their order.
TEST(SettingsStore, ReadsOnceFailsAgainAndRestoresOverrides) {
  // A read that throws keeps nothing: the next call reads, and fails, again.
  fail_next_reads = true;
  EXPECT_THROW(fake_store().get(), std::runtime_error);
  EXPECT_THROW(fake_store().get(), std::runtime_error);
  EXPECT_EQ(reads, 2);

  // Once read, the value is kept for the process.
  fail_next_reads = false;
  EXPECT_EQ(fake_store().get().value, "from the environment");
  EXPECT_EQ(fake_store().get().value, "from the environment");
  EXPECT_EQ(reads, 3);

  // Overrides nest and each restores what was in force before it.
  {
    ScopedFake outer(Fake{"outer"});
    EXPECT_EQ(fake_store().get().value, "outer");
    {
      ScopedFake inner(Fake{"inner"});
      EXPECT_EQ(fake_store().get().value, "inner");
    }
    EXPECT_EQ(fake_store().get().value, "outer");
  }
  EXPECT_EQ(fake_store().get().value, "from the environment");
  EXPECT_EQ(reads, 3);
}

// Core's own settings go through the same store.
TEST(SettingsStore, CoreSettingsOverrideForOneScope) {
  const bool before = settings().warm_trace;
  {
    Settings s = settings();
    s.warm_trace = !before;
    ScopedSettings scoped(s);
    EXPECT_EQ(settings().warm_trace, !before);
    EXPECT_EQ(&settings(), &settings_store().get());
  }
  EXPECT_EQ(settings().warm_trace, before);
}
