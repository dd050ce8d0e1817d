// A fatal signal's last words (manifold/fatal_signal.h): with a note the
// process writes "PROGRAM: NOTE" on one line and exits with status 1; notes
// nest; without one the signal keeps its default action.
#include <gtest/gtest.h>
#include <signal.h>

#include "manifold/fatal_signal.h"

using manifold::FatalSignalNote;

namespace {

void fault_with(const char* outer, const char* inner) {
  manifold::install_fatal_signal_notes("prog");
  const FatalSignalNote a(outer);
  if (inner) {
    const FatalSignalNote b(inner);
  }
  raise(SIGSEGV);
}

}  // namespace

TEST(FatalSignal, TheNoteIsOneLineAndStatusOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_with("x.h5: crashed reading it", nullptr), testing::ExitedWithCode(1),
              "^prog: x\\.h5: crashed reading it\n$");
  // The inner note held while it lived; the outer one holds again after it.
  EXPECT_EXIT(fault_with("outer", "inner"), testing::ExitedWithCode(1), "^prog: outer\n$");
  EXPECT_EXIT(
      {
        manifold::install_fatal_signal_notes("prog");
        const FatalSignalNote a("outer");
        const FatalSignalNote b(manifold::hdf5_crash_note("y.h5"));
        raise(SIGBUS);
      },
      testing::ExitedWithCode(1), "^prog: y\\.h5: the HDF5 library crashed reading this file");
}

TEST(FatalSignal, WithoutANoteTheSignalKeepsItsDefault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        manifold::install_fatal_signal_notes("prog");
        { const FatalSignalNote gone("gone"); }
        raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "");
}
