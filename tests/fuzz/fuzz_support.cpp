#include "fuzz_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "manifold/dataset.h"
#include "manifold/error.h"

namespace fs = std::filesystem;

namespace fuzz {

namespace {
char g_folder[4096];  // a plain array: still there when the exit handler runs
}  // namespace

std::string input_folder() {
  static const bool made = [] {
    const std::string t = (fs::temp_directory_path() / "manifold-fuzz-XXXXXX").string();
    if (t.size() >= sizeof g_folder) std::abort();
    std::copy(t.begin(), t.end(), g_folder);
    if (!::mkdtemp(g_folder)) std::abort();
    // Removed when the fuzzer exits normally (a crash leaves it).
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(g_folder, ec);
    });
    return true;
  }();
  (void)made;
  return g_folder;
}

std::string write_input(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = input_folder() + "/input" + suffix;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

int load_dataset_input(const uint8_t* data, size_t size, const std::string& suffix) {
  const std::string path = write_input(data, size, suffix);
  try {
    manifold::Dataset ds = manifold::load_dataset(path);
    volatile float sum = 0;
    for (int64_t i = 0; i < ds.rows() * ds.cols(); ++i) sum = sum + ds.data()[i];
  } catch (const manifold::Error&) {
  }
  return 0;
}

}  // namespace fuzz
