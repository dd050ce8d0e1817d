// libFuzzer harness: read_graph on a graph folder made from the input. The
// first 4 bytes give the sizes of indices.npy and distances.npy (two
// little-endian uint16); the rest of the input is graph.json.
#include <filesystem>
#include <fstream>

#include "fuzz_support.h"
#include "manifold/error.h"
#include "manifold/graph_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  size_t a = data[0] | data[1] << 8, b = data[2] | data[3] << 8;
  data += 4, size -= 4;
  a = std::min(a, size);
  b = std::min(b, size - a);
  const std::string dir = fuzz::input_folder() + "/graph";
  std::filesystem::create_directories(dir);
  auto put = [&dir](const char* name, const uint8_t* p, size_t n) {
    std::ofstream(dir + "/" + name, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
  };
  put("indices.npy", data, a);
  put("distances.npy", data + a, b);
  put("graph.json", data + a + b, size - a - b);
  try {
    manifold::KnnGraph g = manifold::read_graph(dir);
    volatile int64_t sum = 0;
    for (int64_t i = 0; i < g.n * g.k; ++i) sum = sum + g.indices[static_cast<size_t>(i)];
  } catch (const manifold::Error&) {
  }
  return 0;
}
