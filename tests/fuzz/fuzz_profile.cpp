// libFuzzer harness: a cluster profile (load_profile) and, when it loads,
// the job script it makes: no control character other than the script's own
// line breaks may reach it (a newline in a value ends a comment or #SBATCH
// line and the rest runs as shell), and the profile survives a round trip.
#include <cstdlib>

#include "fuzz_support.h"
#include "manifold/cluster.h"
#include "manifold/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input(data, size, ".json");
  try {
    const manifold::cluster::Profile p = manifold::cluster::load_profile(path);
    const nlohmann::json j = manifold::cluster::profile_to_json(p);
    for (const auto& [key, value] : j.items())
      if (value.is_string())
        for (unsigned char c : value.get<std::string>())
          if (c < 0x20 || c == 0x7f) std::abort();  // a control character in a loaded value
    manifold::cluster::JobSpec spec{"data.npy", "graph", {"-k", "3"}};
    const std::string script = manifold::cluster::job_script(p, spec, fuzz::input_folder() + "/job");
    for (unsigned char c : script)
      if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) std::abort();
  } catch (const manifold::Error&) {
  }
  return 0;
}
