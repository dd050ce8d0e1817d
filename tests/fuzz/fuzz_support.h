#pragma once
// Shared by the fuzz harnesses: the input written to a private temporary
// file (the readers take paths and pick the format by the file name).
#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

/// A file named "<unique>/input<suffix>" holding the bytes; the same file is
/// rewritten for every input of one process.
std::string write_input(const uint8_t* data, size_t size, const std::string& suffix);
/// A fresh folder for inputs made of several files.
std::string input_folder();
/// The reader harnesses' body: load_dataset on the input written to a file
/// ending in `suffix` (which picks the reader), every value touched as the
/// k-NN build would; manifold::Error (one line naming the file) is the only
/// failure allowed. Returns 0, as LLVMFuzzerTestOneInput does.
int load_dataset_input(const uint8_t* data, size_t size, const std::string& suffix);

}  // namespace fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
