// The upload pipeline's staging copy (gpu/utils/host_copy.cpp), CUDA-free:
// non-temporal stores must copy every byte exactly, whatever the lengths and
// alignments (a head up to the first aligned store, whole cache lines, a
// tail), and the threaded version must cover every piece once.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "utils/host_copy.h"

using namespace manifold::gpu;

namespace {

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

}  // namespace

TEST(HostCopy, EveryLengthAndAlignment) {
  const auto src = random_bytes(4096 + 64, 1);
  for (size_t so : {0, 1, 7, 16, 33}) {
    for (size_t dof : {0, 1, 8, 31, 32, 45}) {
      for (size_t len : {0, 1, 63, 64, 255, 256, 257, 1000, 1024, 4000}) {
        std::vector<unsigned char> dst(len + 128, 0xAB);
        stream_copy(dst.data() + dof, src.data() + so, len);
        for (size_t i = 0; i < dst.size(); ++i) {
          const unsigned char want = i >= dof && i < dof + len ? src[so + i - dof] : 0xAB;
          ASSERT_EQ(dst[i], want) << "src offset " << so << ", dst offset " << dof << ", length " << len << ", byte "
                                  << i;
        }
      }
    }
  }
}

TEST(HostCopy, ThreadedPiecesCoverEverything) {
  // 5 MB and a bit, in pages of pieces over 1 to 8 threads, the smallest
  // piece below, at and above the even share.
  const size_t n = (size_t{5} << 20) + 4099;
  const auto src = random_bytes(n, 2);
  for (int threads : {1, 3, 8}) {
    for (size_t min_piece : {size_t{1}, size_t{256} << 10, size_t{8} << 20}) {
      std::vector<unsigned char> dst(n + 64, 0);
      staging_copy(dst.data(), src.data(), n, threads, min_piece);
      ASSERT_TRUE(std::equal(src.begin(), src.end(), dst.begin()))
          << threads << " threads, smallest piece " << min_piece;
      for (size_t i = n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0) << "wrote past the end";
    }
  }
  staging_copy(nullptr, nullptr, 0, 8, 1);  // nothing to copy: no piece runs
  // On a pool of the caller's (each GPU's upload has one).
  manifold::LoopPool pool;
  std::vector<unsigned char> dst(n, 0);
  staging_copy(dst.data(), src.data(), n, 4, size_t{256} << 10, pool);
  ASSERT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << "on a pool of its own";
}
