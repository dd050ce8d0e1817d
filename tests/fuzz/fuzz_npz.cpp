// libFuzzer harness: load_dataset on an arbitrary file named *.npz (a zip
// archive of .npy arrays, read through minizip). Every input must load or
// fail with manifold::Error (one line naming the file); a crash, a
// sanitizer report, a leak or an allocation beyond the fuzzer's malloc
// limit is a finding.
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::load_dataset_input(data, size, ".npz");
}
