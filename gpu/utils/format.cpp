#include "utils/format.h"

#include <cstdio>

namespace manifold::gpu {

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

}  // namespace manifold::gpu
