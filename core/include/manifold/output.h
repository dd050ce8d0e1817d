#pragma once
// All-or-nothing output. A result folder (one holding graph.json or
// embedding.json) is one unit: its files are written into a new hidden folder
// beside it, completed, and swapped into place by commit(), so the folder
// holds either the whole previous result or the whole new one, never a mix,
// even after kill -9. The working directory itself is written in place, file
// by file (it must stay the folder the user's shell is in), and a result over
// a folder above it is refused. Other file sets (simulated patterns written into a
// folder of other files) are renamed into place file by file.
//
// While the transaction lives it holds an exclusive lock (flock on a hidden
// lock file beside the folder): a second writer of the same folder fails at
// once instead of mixing its files with the first one's. Destroyed
// uncommitted (error, cancel), it removes everything it made, including the
// parent folders it created.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace manifold {

struct OutputOptions {
  /// Replace an existing folder that holds anything but a previous result of
  /// the same kind (files of another command, files of the user).
  bool overwrite = false;
};

/// How same_graph_json() takes a record that lacks some of the keys.
enum class GraphRecord {
  /// Every key as in the graph, the fingerprint present on both sides.
  /// Whether a graph folder stays beside an embedding (OutputTransaction,
  /// SourceGraph): a graph not shown to be the embedding's own is another
  /// graph, refused unless --overwrite, since cluster, trajectory and the
  /// explorer take a graph beside an embedding as its own.
  Complete,
  /// A key the record lacks passes; one it holds must match. cluster, on
  /// the graph embedding.json's "graph" record names: an embedding.json of
  /// an older version (without keep_self, or without the record at all) is
  /// taken at its word, and a graph it contradicts is still refused.
  Partial,
};

/// Whether the graph.json object `recorded` (a record of a graph: a
/// folder's graph.json, embedding.json's "graph") describes the graph whose
/// graph.json is `actual`: the same data (fingerprint), n, d, k, metric and
/// keep_self (the graph is exact, so these determine it); other keys
/// (timings, backend) do not count. The one rule for every caller.
bool same_graph_json(const nlohmann::json& recorded, const nlohmann::json& actual, GraphRecord record);

/// Whether the graph folders `a` and `b` hold the same k-NN graph: the same
/// folder, or graph.json files that same_graph_json() finds the same
/// (Complete); without a fingerprint, byte-identical graph.json files.
bool same_graph(const std::string& a, const std::string& b);

/// The k-NN graph an embedding was computed from: its folder (embed), or,
/// for a graph held in memory (the explorer's), its graph.json as
/// graph_metadata() gives it. Empty: unknown.
struct SourceGraph {
  SourceGraph() = default;
  SourceGraph(std::string graph_folder) : folder(std::move(graph_folder)) {}  // NOLINT: a folder names it
  SourceGraph(const char* graph_folder) : folder(graph_folder) {}             // NOLINT
  static SourceGraph in_memory(nlohmann::json graph_json);

  std::string folder;
  nlohmann::json metadata;

  bool empty() const { return folder.empty() && metadata.is_null(); }
  /// Whether the graph folder `dir` holds this graph (same_graph()'s rule).
  bool is_in(const std::string& dir) const;
  /// "g50 (50 points, k=5, euclidean)", or "the graph in memory (...)".
  std::string describe() const;
};

class OutputTransaction {
 public:
  /// Creates the missing parent folders and takes the lock. Throws
  /// UsageError when `dir` is empty or an existing file, Error when another process
  /// holds the lock or the folder cannot be made.
  ///
  /// `source_graph`, for an embedding: the k-NN graph folder it was computed
  /// from. A graph already in `dir` is kept beside the embedding only when it
  /// is that graph (same_graph()); another graph there is refused like any
  /// foreign file (replaced with options.overwrite): cluster, trajectory and
  /// the explorer read a graph and the embedding beside it as one. Empty: a
  /// graph there is kept as it is.
  explicit OutputTransaction(std::string dir, OutputOptions options = {}, SourceGraph source_graph = {});
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  /// The temporary path to write `name` to; it becomes dir/name on commit().
  std::string path(const std::string& name);
  /// Puts the written files in place. For a result folder: refuses (UsageError)
  /// a folder holding anything but a previous result of the same kind unless
  /// options.overwrite, and a folder above the working directory; an
  /// embedding written beside a graph keeps the graph (only source_graph's,
  /// when named).
  void commit();
  const std::string& dir() const { return dir_; }

 private:
  /// Removes what an uncommitted transaction made; releases the lock.
  void release();

  std::string dir_;
  OutputOptions options_;
  SourceGraph source_graph_;
  std::vector<std::string> created_;  // parent folders made here, outermost first
  std::string lock_path_;
  int lock_fd_ = -1;
  std::string staging_;         // the hidden folder the files are written to
  bool staging_beside_ = true;  // beside dir (else inside it: its parent is read-only)
  bool committed_ = false;
  std::vector<std::string> names_;
};

/// Fails early (before long work) when `dir` cannot become an output
/// directory: it is empty or exists as a non-directory (UsageError), or no
/// file can be made in it, or where it is missing in the nearest folder
/// above it (Error). That is tried: a file is created there and removed,
/// since access() says yes to root for any folder, /proc among them.
void check_output_dir(const std::string& dir);
/// The same, and for a result made of the files `names`: refuses (UsageError,
/// one line) a folder that holds anything else unless options.overwrite
/// (a graph other than `source_graph` among it, see OutputTransaction), and
/// a folder above the working directory.
void check_output_dir(const std::string& dir, const std::vector<std::string>& names, const OutputOptions& options,
                      const SourceGraph& source_graph = {});

/// The same for a command that writes the file `path` (cluster, simulate,
/// trajectory's movies): refuses (UsageError, one line naming -o) an empty
/// path, one that ends in none of `suffixes` (none: any name) and an
/// existing folder, and (Error) a path whose folder, or the nearest one
/// above it, cannot take a new file.
void check_output_file(const std::string& path, const std::vector<std::string>& suffixes = {});

/// The path a message should name for `path`: a file being written by a live
/// OutputTransaction is named by where it will end up (OUT/indices.npy), not
/// by its hidden temporary; any other path is returned as it is.
std::string output_display_path(const std::string& path);

/// For tests: called with the name of each step of commit() ("staged",
/// "swapped"); a test's child process dies there to show what a crash at that
/// moment leaves. nullptr (the default) calls nothing.
void set_output_fault_hook(void (*hook)(const char* step));

/// Writes text to `path` atomically (temp + rename).
void write_text_file(const std::string& path, const std::string& text);

/// Writes `bytes` bytes to `path` through a new temporary file beside it,
/// renamed into place. The temporary file gets an unpredictable name and is
/// created with O_EXCL | O_NOFOLLOW: a file or symlink planted in a shared
/// folder is never followed or truncated. Throws Error naming `path`.
void write_file_atomically(const std::string& path, const void* bytes, size_t size);
/// The same for several pieces written in order (a header, then the data).
void write_file_atomically(const std::string& path, const std::vector<std::pair<const void*, size_t>>& pieces);

/// Output files written at the same time, each on a thread of its own: a
/// file system takes one writer per file at a time (a file's buffered
/// writes are serialised), so separate files are what goes out in parallel,
/// and a writer can run while the caller computes (the graph's files during
/// the embedding). Every write has ended before wait() returns or the object
/// is destroyed, so none outlives the transaction whose folder it writes to.
class ParallelWrites {
 public:
  ParallelWrites();
  ~ParallelWrites();
  ParallelWrites(const ParallelWrites&) = delete;
  ParallelWrites& operator=(const ParallelWrites&) = delete;

  /// Starts `write`, which writes the file `file`, as part of the step `step`.
  void start(const std::string& step, const std::string& file, std::function<void()> write);

  struct Seconds {
    /// Per step, in the order first started: the wall time wait() spent on
    /// it beyond the steps before it (0 when it ended before them), so the
    /// steps add up to wait()'s own wall time and a command's steps to its total.
    std::vector<std::pair<std::string, double>> steps;
    /// Per file, in the order started: the write's own wall time (they overlap).
    std::vector<std::pair<std::string, double>> files;
  };
  /// Waits for every write; then rethrows the first failure in the order
  /// started (an Error naming its file), else returns the seconds.
  Seconds wait();

 private:
  struct Write;
  std::vector<std::unique_ptr<Write>> writes_;
};

}  // namespace manifold
