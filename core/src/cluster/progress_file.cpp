// The progress file of a cluster job: JSON lines appended by rank 0 and read
// incrementally by whoever follows the job (possibly on another machine, over
// a shared file system, so a half-written last line is normal).
#include <chrono>
#include <cstdio>
#include <fstream>

#include "manifold/cluster.h"
#include "manifold/error.h"

namespace manifold::cluster {

namespace {
double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string progress_line(const ProgressEvent& e) {
  nlohmann::json j;
  j["stage"] = e.stage;
  j["unit"] = e.unit;
  j["done"] = e.done;
  j["total"] = e.total;
  j["elapsed_s"] = e.elapsed_s;
  j["rate"] = e.rate;
  j["eta_s"] = e.eta_s;
  j["finished"] = e.finished;
  j["time"] = unix_time();
  return j.dump();
}

std::optional<ProgressEvent> parse_progress_line(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("stage")) return std::nullopt;
  try {
    ProgressEvent e;
    e.stage = j.at("stage").get<std::string>();
    e.unit = j.value("unit", std::string());
    e.done = j.value("done", uint64_t{0});
    e.total = j.value("total", uint64_t{0});
    e.elapsed_s = j.value("elapsed_s", 0.0);
    e.rate = j.value("rate", 0.0);
    e.eta_s = j.value("eta_s", -1.0);
    e.finished = j.value("finished", false);
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

ProgressFileSink::ProgressFileSink(const std::string& path, ProgressSink* next) : path_(path), next_(next) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw Error(path + ": cannot open the progress file for writing");
}

ProgressFileSink::~ProgressFileSink() {
  if (file_) std::fclose(file_);
}

void ProgressFileSink::report(const ProgressEvent& event) {
  const std::string line = progress_line(event) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
  if (next_) next_->report(event);
}

void ProgressFileSink::event(const std::string& name, const nlohmann::json& fields) {
  nlohmann::json j = fields.is_object() ? fields : nlohmann::json::object();
  j["event"] = name;
  j["time"] = unix_time();
  const std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

std::vector<std::string> ProgressFileReader::read_lines() {
  std::vector<std::string> lines;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return lines;  // not written yet
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size < offset_) offset_ = 0, partial_.clear();  // the file was replaced
  if (size == offset_) return lines;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk(static_cast<size_t>(size - offset_), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  offset_ += chunk.size();
  partial_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
    if (nl > start) lines.push_back(partial_.substr(start, nl - start));
  partial_.erase(0, start);
  return lines;
}

}  // namespace manifold::cluster
