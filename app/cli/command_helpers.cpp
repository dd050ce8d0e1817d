#include <cstdio>
#include <sstream>
#include <unistd.h>

#include "cli/commands.h"
#include "manifold/error.h"
#include "manifold/parallel.h"
#include "manifold/printable.h"

namespace manifold::cli {

nlohmann::json bench_environment(int threads) {
  nlohmann::json out;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  out["host"] = host;
  out["cpu_threads"] = hardware_threads(threads);
  return out;
}

std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> out;
  if (text.empty() || text == "all") return out;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    char* end = nullptr;
    long v = std::strtol(tok.c_str(), &end, 10);
    if (tok.empty() || *end || v < 0) throw UsageError("--devices: '" + text + "' is not 'all' or a list like 0,1");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

KnnParams knn_params_from(const Args& a) {
  KnnParams p;
  p.k = static_cast<int>(a.integer("-k", 10, 1, 1 << 20));
  p.metric = parse_metric(a.str("--metric", "euclidean"));
  p.keep_self = a.has("--keep-self");
  p.select = parse_select(a.str("--select", "auto"));
  p.devices = parse_devices(a.str("--devices", "all"));
  p.gpu_memory = a.bytes("--gpu-memory", 0);
  p.threads = static_cast<int>(a.integer("--threads", 0, 0, 4096));
  p.precision = parse_precision(a.str("--precision", "exact"));
  return p;
}

namespace {

/// ignored_gpu_options() for --select as given (bench takes a list there).
std::string ignored_gpu_options(const std::string& select, Precision precision, const std::string& backend) {
  if (backend != "cpu") return "";
  std::string what;
  if (select != "auto") what = "--select " + select;
  if (precision == Precision::FastExact) what += (what.empty() ? "" : " and ") + std::string("--precision fast-exact");
  if (what.empty()) return "";
  const bool both = select != "auto" && precision == Precision::FastExact;
  return "note: " + what + (both ? " apply" : " applies") +
         " to the gpu backend; the cpu backend has one selection and computes exact";
}

}  // namespace

std::string ignored_gpu_options(const KnnParams& p, const std::string& backend) {
  return ignored_gpu_options(to_string(p.select), p.precision, backend);
}

void note_ignored_gpu_options(const std::string& select, Precision precision, const std::string& backend) {
  const std::string note = ignored_gpu_options(select, precision, backend);
  if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
}

void note_ignored_gpu_options(const KnnParams& p, const std::string& backend) {
  note_ignored_gpu_options(to_string(p.select), p.precision, backend);
}

void note_read_beside(const std::string& file) {
  std::fprintf(stderr, "manifold: note: read %s beside the results: the recorded path is not there\n",
               printable_path(file).c_str());
}

}  // namespace manifold::cli
