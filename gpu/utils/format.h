#pragma once
// CUDA-free formatting for the GPU backend's messages.
#include <string>

namespace manifold::gpu {

/// Human-readable byte count for messages ("1.5 GB").
std::string format_bytes(double bytes);

}  // namespace manifold::gpu
