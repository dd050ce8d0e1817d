#include "manifold/output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "manifold/error.h"

namespace fs = std::filesystem;

namespace manifold {

namespace {

// Result folders are recognised by their description files; the graph is
// what an embedding written beside it builds on.
const std::set<std::string> kDescriptions = {"graph.json", "embedding.json", "session.json", "patterns.json"};
const std::vector<std::string> kGraphFiles = {"indices.npy", "distances.npy", "graph.json"};

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool is_result(const std::vector<std::string>& names) {
  return contains(names, "graph.json") || contains(names, "embedding.json");
}

// Temporaries of an earlier run that died (this writer's and older ones).
bool is_leftover(const std::string& name) {
  return name.rfind(".manifold-", 0) == 0 ||
         (!name.empty() && name[0] == '.' &&
          (name.find(".partial-") != std::string::npos || name.find(".tmp-") != std::string::npos));
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_leftover(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The existing files a result keeps: an embedding written without a graph
// of its own keeps the graph it was computed from (when the caller names
// that graph, only that one).
std::vector<std::string> kept_files(const fs::path& dir, const std::vector<std::string>& names,
                                    const SourceGraph& source_graph) {
  std::vector<std::string> keep;
  if (contains(names, "graph.json") || !contains(names, "embedding.json")) return keep;
  std::error_code ec;
  if (!source_graph.empty() && fs::exists(dir / "graph.json", ec) && !source_graph.is_in(dir.string())) return keep;
  for (const auto& f : kGraphFiles)
    if (fs::is_regular_file(dir / f, ec)) keep.push_back(f);
  return keep;
}

// What in `dir` the result `names` would mix with or silently drop: files it
// neither writes nor keeps, and descriptions of a result of another kind
// (a k-NN graph folder is not a previous `run`, whose files it lacks).
std::vector<std::string> foreign_entries(const fs::path& dir, const std::vector<std::string>& names,
                                         const SourceGraph& source_graph) {
  const std::vector<std::string> keep = kept_files(dir, names, source_graph);
  std::vector<std::string> foreign, old_kind, new_kind;
  for (const auto& e : entries_of(dir)) {
    if (contains(keep, e)) continue;
    if (!contains(names, e)) foreign.push_back(e);
    if (kDescriptions.count(e)) old_kind.push_back(e);
  }
  for (const auto& n : names)
    if (kDescriptions.count(n) && !contains(new_kind, n)) new_kind.push_back(n);
  std::sort(new_kind.begin(), new_kind.end());
  if (!old_kind.empty() && old_kind != new_kind)
    for (const auto& e : old_kind)
      if (!contains(foreign, e)) foreign.push_back(e);
  return foreign;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// graph.json of a graph folder; null when missing or not JSON.
nlohmann::json graph_json(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "graph.json", ec)) return nullptr;
  nlohmann::json j = nlohmann::json::parse(slurp(dir / "graph.json"), nullptr, false);
  return j.is_object() ? j : nlohmann::json();
}

/// "2000 points, k=10, cosine" from graph.json (what tells two graphs apart
/// at a glance).
std::string summary_of(const nlohmann::json& j) {
  auto field = [&](const char* key) { return j.contains(key) ? j[key].dump() : std::string("?"); };
  return field("n") + " points, k=" + field("k") + ", " + j.value("metric", std::string("?"));
}

std::string graph_summary(const fs::path& dir) {
  const nlohmann::json j = graph_json(dir);
  return j.is_null() ? "unreadable graph.json" : summary_of(j);
}

void refuse_foreign(const std::string& dir, const std::vector<std::string>& foreign) {
  std::string list;
  for (size_t i = 0; i < foreign.size() && i < 4; ++i) list += (i ? ", " : "") + foreign[i];
  if (foreign.size() > 4) list += " and " + std::to_string(foreign.size() - 4) + " more";
  throw UsageError(dir + ": folder holds files that are not a previous result of this command (" + list +
                   "); choose another folder or pass --overwrite to replace it");
}

// An embedding beside another graph than its own: refused by name before
// the generic list of files, which would not say why the graph is foreign.
void refuse_other_graph(const std::string& dir, const fs::path& target, const std::vector<std::string>& names,
                        const OutputOptions& options, const SourceGraph& source_graph) {
  std::error_code ec;
  if (options.overwrite || source_graph.empty() || contains(names, "graph.json") ||
      !contains(names, "embedding.json") || !fs::exists(target / "graph.json", ec) ||
      source_graph.is_in(target.string()))
    return;
  throw UsageError(dir + ": holds another k-NN graph (" + graph_summary(target) + ") than " + source_graph.describe() +
                   "; the embedding would sit beside a graph it was not computed from: choose another folder "
                   "or pass --overwrite to replace it");
}

// The folder as one absolute path without a trailing separator ("." and
// "out/" name their folder, not an empty last component) and with symbolic
// links resolved: a link to a folder is written through (the swap would
// otherwise replace the link), and every name of one folder takes one lock.
fs::path target_of(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) p = fs::absolute(dir, ec).lexically_normal();
  if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

// Where the process's working directory (the user's shell's, for the CLI)
// lies relative to an output folder. A result swapped into the working
// directory's place would leave the shell in the old, deleted folder; one
// written over a folder above it would replace or remove the folder the
// user is in.
enum class WorkingDirectory { Outside, Is, Below };

WorkingDirectory working_directory_in(const fs::path& target) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return WorkingDirectory::Outside;
  if (cwd == target) return WorkingDirectory::Is;
  const std::string t = target.string(), c = cwd.string();
  if (c.size() > t.size() && c.compare(0, t.size(), t) == 0 && (t.back() == '/' || c[t.size()] == '/'))
    return WorkingDirectory::Below;
  return WorkingDirectory::Outside;
}

void refuse_folder_above_working_directory(const std::string& dir, const fs::path& target) {
  if (working_directory_in(target) == WorkingDirectory::Below)
    throw UsageError(dir +
                     ": holds the current folder; a result there would replace the folder you are in "
                     "(choose another folder, or write into the current folder itself)");
}

// "" names no folder: a usage error, where it failed later as an unwritable
// folder with an empty name in the message.
void refuse_empty(const std::string& dir) {
  if (dir.empty()) throw UsageError("-o: the output path is empty; name a folder");
}

// 12 hexadecimal characters for a name no other process or thread is
// making at the same time: random, and a counter for this process's calls.
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  std::random_device device;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x%04x", static_cast<unsigned>(device()),
                static_cast<unsigned>(counter++ & 0xffff));
  return suffix;
}

// Why a new file cannot be made in the folder `dir`, or "" when one can: a
// file is created there (O_EXCL, a name no result uses) and removed again.
// access(W_OK) asks the permission bits alone, and as root says yes for
// every folder: /proc, where a file cannot be made, passed, and the command
// failed only when it moved its result into place, after the work.
std::string cannot_create_file_in(const fs::path& dir) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string probe = (dir / (".manifold-probe-" + unique_suffix())).string();
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
      return {};
    }
    if (errno != EEXIST) return std::strerror(errno);
  }
  return "no free name for a file there";
}

// The folder a new path would be made in: the nearest existing folder at or
// above `p` (absolute); empty when none exists.
fs::path nearest_existing(const fs::path& p) {
  std::error_code ec;
  fs::path at = fs::absolute(p, ec);
  while (!at.empty() && !fs::exists(at, ec)) {
    if (at == at.parent_path()) return {};
    at = at.parent_path();
  }
  return at;
}

void (*g_fault_hook)(const char*) = nullptr;
void fault_point(const char* step) {
  if (g_fault_hook) g_fault_hook(step);
}

// Staging folder -> the folder its files are for, to name them in messages.
std::mutex g_staging_mutex;
std::map<std::string, std::string> g_staging;

// An exclusive flock on `path`. The holder removes the file when done, so a
// lock taken on a file that was meanwhile unlinked is retried on the new one.
int take_lock(const std::string& path, const std::string& dir) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK)
        throw Error(dir + ": another manifold process is writing this folder; wait for it or choose another folder");
      throw Error(dir + ": cannot lock the output folder (" + std::strerror(err) + ")");
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::lstat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      return fd;
    ::close(fd);
  }
  throw Error(dir + ": cannot lock the output folder (its lock file keeps changing)");
}

// A new folder `prefix` + 12 random characters, made by mkdir(0777) so that
// the umask (and a default ACL) applies as to any folder: it becomes the
// result folder by rename, and mkdtemp's 0700 then kept colleagues out of
// every result. "" (errno set) when it cannot be made.
std::string make_staging(const fs::path& prefix) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string path = prefix.string() + unique_suffix();
    if (::mkdir(path.c_str(), 0777) == 0) return path;
    if (errno != EEXIST) return {};
  }
  return {};
}

// Moves a file by rename, or by copy where `from` and `to` lie on different
// file systems (a folder that is a mount point).
void move_file(const fs::path& from, const fs::path& to, const std::string& shown) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec == std::errc::cross_device_link) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::remove(from, ec);
  }
  if (ec) throw Error(shown + ": cannot move output into place (" + ec.message() + ")");
}

}  // namespace

void set_output_fault_hook(void (*hook)(const char* step)) { g_fault_hook = hook; }

bool same_graph_json(const nlohmann::json& recorded, const nlohmann::json& actual, GraphRecord record) {
  // The graph is exact: its data and these parameters determine it.
  static const char* const kIdentity[] = {"fingerprint", "n", "d", "k", "metric", "keep_self"};
  auto field = [](const nlohmann::json& j, const char* key) {
    return j.is_object() ? j.value(key, nlohmann::json()) : nlohmann::json();
  };
  auto fingerprinted = [&](const nlohmann::json& j) {
    const nlohmann::json f = field(j, "fingerprint");
    return f.is_string() && !f.get<std::string>().empty();
  };
  if (record == GraphRecord::Complete) {
    if (!fingerprinted(recorded) || !fingerprinted(actual)) return false;
    for (const char* key : kIdentity)
      if (field(recorded, key) != field(actual, key)) return false;
    return true;
  }
  for (const char* key : kIdentity)
    if (!field(recorded, key).is_null() && field(recorded, key) != field(actual, key)) return false;
  return true;
}

bool same_graph(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;
  const nlohmann::json ja = graph_json(a), jb = graph_json(b);
  if (ja.is_null() || jb.is_null()) return false;
  if (ja.value("fingerprint", std::string()).empty() || jb.value("fingerprint", std::string()).empty())
    return slurp(fs::path(a) / "graph.json") == slurp(fs::path(b) / "graph.json");
  return same_graph_json(ja, jb, GraphRecord::Complete);
}

SourceGraph SourceGraph::in_memory(nlohmann::json graph_json) {
  SourceGraph g;
  g.metadata = std::move(graph_json);
  return g;
}

bool SourceGraph::is_in(const std::string& dir) const {
  if (!folder.empty()) return same_graph(dir, folder);
  const nlohmann::json there = graph_json(dir);
  return !there.is_null() && same_graph_json(metadata, there, GraphRecord::Complete);
}

std::string SourceGraph::describe() const {
  if (!folder.empty()) return folder + " (" + graph_summary(folder) + ")";
  return "the embedding's own (" + summary_of(metadata) + ")";
}

std::string output_display_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_staging_mutex);
  for (const auto& [staging, dir] : g_staging)
    if (path.size() > staging.size() && path.compare(0, staging.size(), staging) == 0 && path[staging.size()] == '/') {
      const std::string name = fs::path(path).filename().string();
      // The temporary beside a file (".NAME.tmp-...") names that file.
      std::string shown = name;
      if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos)
        shown = name.substr(1, name.find(".tmp-") - 1);
      return (fs::path(dir) / shown).string();
    }
  return path;
}

OutputTransaction::OutputTransaction(std::string dir, OutputOptions options, SourceGraph source_graph)
    : dir_(std::move(dir)), options_(options), source_graph_(std::move(source_graph)) {
  refuse_empty(dir_);
  const fs::path target = target_of(dir_);
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (exists && !fs::is_directory(target, ec))
    throw UsageError(dir_ + ": exists and is not a folder (the output must be a folder)");
  // Missing parents are made now and removed again if nothing is committed.
  std::vector<fs::path> missing;
  for (fs::path p = target.parent_path(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) && ec) {
      const std::string why = ec.message();
      release();
      throw Error(dir_ + ": cannot create output folder (" + why + ")");
    }
    created_.push_back(it->string());
  }
  const fs::path parent = target.parent_path();
  const std::string name = target.filename().string();
  lock_path_ = (parent / ("." + name + ".lock")).string();
  lock_fd_ = take_lock(lock_path_, dir_);
  if (lock_fd_ < 0 && exists) {  // a read-only parent: the lock lives inside the folder
    lock_path_ = (target / ".manifold.lock").string();
    lock_fd_ = take_lock(lock_path_, dir_);
  }
  if (lock_fd_ < 0) {
    const std::string why = std::strerror(errno);
    lock_path_.clear();
    release();
    throw Error(dir_ + ": cannot create output folder here (" + why + ")");
  }
  // Under the lock, staging folders left by a writer that died are stale.
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind("." + name + ".manifold-", 0) == 0) fs::remove_all(it->path(), ec);
  if (exists)
    for (fs::directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename().string().rfind(".manifold-staging-", 0) == 0) fs::remove_all(it->path(), ec);
  staging_ = make_staging(parent / ("." + name + ".manifold-"));
  if (staging_.empty() && exists) {
    staging_ = make_staging(target / ".manifold-staging-");
    staging_beside_ = false;
  }
  if (staging_.empty()) {
    const std::string why = std::strerror(errno);
    release();
    throw Error(dir_ + ": cannot create output folder (" + why + ")");
  }
  std::lock_guard<std::mutex> lock(g_staging_mutex);
  g_staging[staging_] = dir_;
}

OutputTransaction::~OutputTransaction() { release(); }

void OutputTransaction::release() {
  std::error_code ec;
  if (!staging_.empty()) {
    {
      std::lock_guard<std::mutex> lock(g_staging_mutex);
      g_staging.erase(staging_);
    }
    if (!committed_) fs::remove_all(staging_, ec);
    staging_.clear();
  }
  if (lock_fd_ >= 0) {
    ::unlink(lock_path_.c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  if (!committed_)
    for (auto it = created_.rbegin(); it != created_.rend(); ++it)
      if (fs::is_empty(*it, ec)) fs::remove(*it, ec);
  created_.clear();
}

std::string OutputTransaction::path(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw Error(dir_ + ": invalid output file name '" + name + "'");
  names_.push_back(name);
  return (fs::path(staging_) / name).string();
}

void OutputTransaction::commit() {
  const fs::path target = target_of(dir_), staging(staging_);
  std::error_code ec;
  const bool exists = fs::is_directory(target, ec);
  if (!is_result(names_)) {
    // A file set among other files: each file replaces its namesake.
    if (!exists && !fs::create_directory(target, ec) && ec)
      throw Error(dir_ + ": cannot create output folder (" + ec.message() + ")");
    fault_point("staged");
    for (const auto& n : names_) move_file(staging / n, target / n, (fs::path(dir_) / n).string());
  } else {
    refuse_folder_above_working_directory(dir_, target);
    const std::vector<std::string> keep = exists ? kept_files(target, names_, source_graph_)
                                                 : std::vector<std::string>{};
    if (exists) refuse_other_graph(dir_, target, names_, options_, source_graph_);
    if (exists && !options_.overwrite)
      if (const auto foreign = foreign_entries(target, names_, source_graph_); !foreign.empty())
        refuse_foreign(dir_, foreign);
    // The new folder is completed first: the graph an embedding keeps is
    // linked (copied where links are refused) into it.
    for (const auto& k : keep) {
      if (::link((target / k).c_str(), (staging / k).c_str()) != 0) fs::copy_file(target / k, staging / k, ec);
      if (ec) throw Error((fs::path(dir_) / k).string() + ": cannot keep it in the new result (" + ec.message() + ")");
    }
    fault_point("staged");
    if (!exists && staging_beside_) {
      if (::rename(staging_.c_str(), target.c_str()) != 0)
        throw Error(dir_ + ": cannot move output into place (" + std::strerror(errno) + ")");
      staging_.clear();  // it is the result now
    } else if (staging_beside_ && working_directory_in(target) == WorkingDirectory::Outside &&
               ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
      fault_point("swapped");  // the staging path now holds the previous result
    } else {
      // No atomic exchange here (the folder is the working directory, which
      // must stay the folder the user is in, or a mount point, or the file
      // system lacks it): file by file, then what the new result does not
      // hold goes.
      for (const auto& n : names_) move_file(staging / n, target / n, (fs::path(dir_) / n).string());
      for (const auto& e : entries_of(target))
        if (!contains(names_, e) && !contains(keep, e)) fs::remove_all(target / e, ec);
    }
  }
  committed_ = true;
  if (!staging_.empty()) fs::remove_all(staging_, ec);
}

void check_output_dir(const std::string& dir) {
  refuse_empty(dir);
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw UsageError(dir + ": exists and is not a folder (the output must be a folder)");
    if (const std::string why = cannot_create_file_in(p); !why.empty())
      throw Error(dir + ": output directory is not writable (" + why + ")");
    return;
  }
  // The folders it needs are made in the nearest existing one.
  const fs::path parent = nearest_existing(fs::absolute(p, ec).parent_path());
  if (parent.empty() || !fs::is_directory(parent, ec))
    throw Error(dir + ": cannot create output directory here (no folder above it)");
  if (const std::string why = cannot_create_file_in(parent); !why.empty())
    throw Error(dir + ": cannot create output directory here (" + parent.string() + " is not writable: " + why + ")");
}

void check_output_file(const std::string& path, const std::vector<std::string>& suffixes) {
  std::string wanted;  // "FILE.npy or FILE.cxi"
  for (const std::string& s : suffixes) wanted += (wanted.empty() ? "FILE" : " or FILE") + s;
  if (path.empty()) throw UsageError("-o: the output path is empty; name a " + (wanted.empty() ? "file" : wanted));
  const bool suffix_ok = suffixes.empty() || std::any_of(suffixes.begin(), suffixes.end(), [&](const std::string& s) {
                           return path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
                         });
  if (!suffix_ok) {
    std::string list;
    for (const std::string& s : suffixes) list += (list.empty() ? "" : " or ") + s;
    throw UsageError("-o " + path + ": the output must end in " + list);
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UsageError("-o " + path + ": is a folder; -o names the file to write");
  // The file goes into its folder, made first where missing (OutputTransaction).
  const fs::path folder = nearest_existing(fs::absolute(path, ec).parent_path());
  if (folder.empty() || !fs::is_directory(folder, ec))
    throw Error(path + ": cannot write it (" +
                (folder.empty() ? "no folder above it" : folder.string() + " is a file") + ")");
  if (const std::string why = cannot_create_file_in(folder); !why.empty())
    throw Error(path + ": cannot write a file in " + folder.string() + " (" + why + ")");
}

void check_output_dir(const std::string& dir, const std::vector<std::string>& names, const OutputOptions& options,
                      const SourceGraph& source_graph) {
  check_output_dir(dir);
  std::error_code ec;
  if (is_result(names)) refuse_folder_above_working_directory(dir, target_of(dir));
  if (!is_result(names) || !fs::is_directory(dir, ec)) return;
  refuse_other_graph(dir, target_of(dir), names, options, source_graph);
  if (options.overwrite) return;
  if (const auto foreign = foreign_entries(target_of(dir), names, source_graph); !foreign.empty())
    refuse_foreign(dir, foreign);
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
    if (errno != EEXIST)
      throw Error(output_display_path(path) + ": cannot open for writing (" + std::strerror(errno) + ")");
  }
  throw Error(output_display_path(path) + ": cannot find a free temporary name beside it");
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
      else
        done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0 && !error) error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    throw Error(output_display_path(path) + ": write failed (" + std::string(std::strerror(error)) + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(output_display_path(path) + ": cannot rename the temporary file into place");
  }
}

struct ParallelWrites::Write {
  std::string step, file;
  std::future<void> done;
  std::chrono::steady_clock::time_point end;
  double seconds = 0;
};

void ParallelWrites::start(const std::string& step, const std::string& file, std::function<void()> write) {
  auto w = std::make_unique<Write>();
  w->step = step;
  w->file = file;
  Write* record = w.get();
  // The record is written by the thread and read after done.wait(): the
  // future's completion orders the two.
  w->done = std::async(std::launch::async, [record, write = std::move(write)] {
    const auto begin = std::chrono::steady_clock::now();
    try {
      write();
    } catch (...) {
      record->end = std::chrono::steady_clock::now();
      throw;
    }
    record->end = std::chrono::steady_clock::now();
    record->seconds = std::chrono::duration<double>(record->end - begin).count();
  });
  writes_.push_back(std::move(w));
}

ParallelWrites::ParallelWrites() = default;

ParallelWrites::~ParallelWrites() {
  for (auto& w : writes_)
    if (w->done.valid()) w->done.wait();
}

ParallelWrites::Seconds ParallelWrites::wait() {
  const auto waited_from = std::chrono::steady_clock::now();
  for (auto& w : writes_) w->done.wait();
  for (auto& w : writes_) w->done.get();  // the first failure, every write having ended
  Seconds out;
  // Each step ends with its last file; it counts from where the steps
  // before it (or the wait) ended, so overlapping writes are counted once.
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> ends;
  for (const auto& w : writes_) {
    out.files.emplace_back(w->file, w->seconds);
    auto it = std::find_if(ends.begin(), ends.end(), [&](const auto& e) { return e.first == w->step; });
    if (it == ends.end()) ends.emplace_back(w->step, w->end);
    else
      it->second = std::max(it->second, w->end);
  }
  auto reached = waited_from;
  for (const auto& [step, end] : ends) {
    const auto until = std::max(reached, end);
    out.steps.emplace_back(step, std::chrono::duration<double>(until - reached).count());
    reached = until;
  }
  writes_.clear();
  return out;
}

}  // namespace manifold
