#pragma once
// All-or-nothing output: files are written to hidden temporary names inside
// the output directory and renamed together by commit(). If the transaction
// is destroyed uncommitted (error, cancel), the temporaries are removed, and
// the directory too when this transaction created it and it is left empty.
#include <string>
#include <utility>
#include <vector>

namespace manifold {

class OutputTransaction {
 public:
  explicit OutputTransaction(std::string dir);
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  /// The temporary path to write `name` to; it becomes dir/name on commit().
  std::string path(const std::string& name);
  /// Renames every temporary into place.
  void commit();
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool created_dir_ = false;
  bool committed_ = false;
  std::vector<std::pair<std::string, std::string>> files_;  // temp, final
};

/// Fails early (before long work) when `dir` cannot become an output
/// directory: it exists as a non-directory, or its parent is not writable.
void check_output_dir(const std::string& dir);

/// Writes text to `path` atomically (temp + rename).
void write_text_file(const std::string& path, const std::string& text);

/// Writes `bytes` bytes to `path` through a new temporary file beside it,
/// renamed into place. The temporary file gets an unpredictable name and is
/// created with O_EXCL | O_NOFOLLOW: a file or symlink planted in a shared
/// folder is never followed or truncated. Throws Error naming `path`.
void write_file_atomically(const std::string& path, const void* bytes, size_t size);
/// The same for several pieces written in order (a header, then the data).
void write_file_atomically(const std::string& path, const std::vector<std::pair<const void*, size_t>>& pieces);

}  // namespace manifold
