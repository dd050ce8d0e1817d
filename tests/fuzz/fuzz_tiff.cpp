// libFuzzer harness: load_dataset on an arbitrary file named *.tif. Every
// input must load or fail with manifold::Error (one line naming the file);
// a crash, a sanitizer report, a leak or an allocation beyond the fuzzer's
// malloc limit is a finding.
#include "fuzz_support.h"
#include "manifold/dataset.h"
#include "manifold/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input(data, size, ".tif");
  try {
    manifold::Dataset ds = manifold::load_dataset(path);
    // Touch every value, as the k-NN build would.
    volatile float sum = 0;
    for (int64_t i = 0; i < ds.rows() * ds.cols(); ++i) sum = sum + ds.data()[i];
  } catch (const manifold::Error&) {
  }
  return 0;
}
