#include "utils/host_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "manifold/parallel.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define MANIFOLD_HAVE_STREAM_STORES 1
#endif

namespace manifold::gpu {

namespace {

#ifdef MANIFOLD_HAVE_STREAM_STORES
// 64 bytes (one cache line) per step; `d` is 16-byte aligned, `s` need not be.
void stream_lines_sse2(char* d, const char* s, size_t lines) {
  for (size_t i = 0; i < lines; ++i, d += 64, s += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), e);
  }
}

// The same with 32-byte stores; `d` is 32-byte aligned.
__attribute__((target("avx2"))) void stream_lines_avx2(char* d, const char* s, size_t lines) {
  for (size_t i = 0; i < lines; ++i, d += 64, s += 64) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), b);
  }
}
#endif

}  // namespace

void stream_copy(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
#ifdef MANIFOLD_HAVE_STREAM_STORES
  if (bytes >= 256) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    // Ordinary stores up to the first 32-byte boundary of the destination.
    const size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
    std::memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    const size_t lines = bytes / 64;
    if (avx2) stream_lines_avx2(d, s, lines);
    else
      stream_lines_sse2(d, s, lines);
    _mm_sfence();  // the stores are visible before anyone is told the copy is done
    d += lines * 64, s += lines * 64, bytes -= lines * 64;
  }
#endif
  std::memcpy(d, s, bytes);
}

void staging_copy(void* dst, const void* src, size_t bytes, int threads, size_t min_piece, LoopPool& pool) {
  constexpr size_t kPage = 4096;
  threads = std::max(1, threads);
  size_t piece = std::max(min_piece, (bytes + threads - 1) / static_cast<size_t>(threads));
  piece = (piece + kPage - 1) / kPage * kPage;
  const int64_t pieces = static_cast<int64_t>((bytes + piece - 1) / piece);
  parallel_for(
      pool, 0, pieces, threads,
      [&](int64_t p) {
    const size_t off = static_cast<size_t>(p) * piece;
    stream_copy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, std::min(piece, bytes - off));
      },
      1);
}

}  // namespace manifold::gpu
