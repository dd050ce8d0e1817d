#include "manifold/output.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <fstream>
#include <unistd.h>

#include "manifold/error.h"

namespace fs = std::filesystem;

namespace manifold {

OutputTransaction::OutputTransaction(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    if (!fs::is_directory(dir_, ec)) throw Error(dir_ + ": exists and is not a directory");
  } else {
    fs::create_directories(dir_, ec);
    if (ec) throw Error(dir_ + ": cannot create output directory (" + ec.message() + ")");
    created_dir_ = true;
  }
}

OutputTransaction::~OutputTransaction() {
  if (committed_) return;
  std::error_code ec;
  for (auto& [tmp, final_path] : files_) fs::remove(tmp, ec);
  if (created_dir_ && fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
}

std::string OutputTransaction::path(const std::string& name) {
  std::string final_path = (fs::path(dir_) / name).string();
  std::string tmp = (fs::path(dir_) / ("." + name + ".partial-" + std::to_string(::getpid()))).string();
  files_.emplace_back(tmp, final_path);
  return tmp;
}

void OutputTransaction::commit() {
  for (auto& [tmp, final_path] : files_) {
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    if (ec) throw Error(final_path + ": cannot move output into place (" + ec.message() + ")");
  }
  committed_ = true;
}

void check_output_dir(const std::string& dir) {
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw Error(dir + ": exists and is not a directory");
    if (::access(dir.c_str(), W_OK) != 0) throw Error(dir + ": output directory is not writable");
    return;
  }
  // The nearest existing ancestor must be a writable directory.
  fs::path parent = fs::absolute(p, ec).parent_path();
  while (!parent.empty() && !fs::exists(parent, ec)) parent = parent.parent_path();
  if (parent.empty() || !fs::is_directory(parent, ec) || ::access(parent.c_str(), W_OK) != 0)
    throw Error(dir + ": cannot create output directory here (" + parent.string() + " is not writable)");
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

void write_file_atomically(const std::string& path, const void* bytes, size_t size) {
  write_file_atomically(path, {{bytes, size}});
}

namespace {

/// A new file ".NAME.tmp-XXXXXXXXXXXX" beside `path`, O_EXCL | O_NOFOLLOW,
/// mode 0666 less the umask; retried on the (unlikely) name clash.
std::pair<std::string, int> create_temp_beside(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  const fs::path p(path);
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%08x%04x", static_cast<unsigned>(device()),
                  static_cast<unsigned>(counter++ & 0xffff));
    const std::string tmp = (p.parent_path() / ("." + p.filename().string() + ".tmp-" + suffix)).string();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return {tmp, fd};
    if (errno != EEXIST) throw Error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  throw Error(path + ": cannot find a free temporary name beside it");
}

}  // namespace

void write_file_atomically(const std::string& path, const std::vector<std::pair<const void*, size_t>>& pieces) {
  auto [tmp, fd] = create_temp_beside(path);
  int error = 0;
  for (const auto& [data, size] : pieces) {
    const char* b = static_cast<const char*>(data);
    for (size_t done = 0; done < size && !error;) {
      const ssize_t n = ::write(fd, b + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) error = n < 0 ? errno : EIO;
      else done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0 && !error) error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    throw Error(path + ": write failed (" + std::string(std::strerror(error)) + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(path + ": cannot rename the temporary file into place");
  }
}

}  // namespace manifold
