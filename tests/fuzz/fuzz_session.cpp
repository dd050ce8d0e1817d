// libFuzzer harness: a session file (read_session), then its JSON written
// back and read again, which must give the same session.
#include <cstdlib>

#include "fuzz_support.h"
#include "manifold/error.h"
#include "manifold/session.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input(data, size, ".json");
  try {
    const manifold::Session s = manifold::read_session(path);
    const nlohmann::json j = manifold::session_to_json(s);
    const std::string text = j.dump();
    const manifold::Session again = manifold::session_from_json(nlohmann::json::parse(text), "", "again");
    if (manifold::session_to_json(again) != j) std::abort();
  } catch (const manifold::Error&) {
  }
  return 0;
}
