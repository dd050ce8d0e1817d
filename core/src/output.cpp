#include "manifold/output.h"

#include <filesystem>
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
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::remove(tmp.c_str());
      throw Error(path + ": write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename temporary file into place");
  }
}

}  // namespace manifold
