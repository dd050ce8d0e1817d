// Host-to-device upload probe (bench/gpu/RESULTS.md, "Defaults and the
// measurements behind them"): how fast the host copies into pinned staging
// buffers, alone and beside the DMA that reads them, with ordinary and
// non-temporal stores, and what pinning the input would cost. Built by hand
// for the device machine:
//   nvcc -O3 -std=c++20 -gencode=arch=compute_90,code=sm_90 -Xcompiler -mavx2 \
//     -Icore/include bench/gpu/upload_probe.cu -o upload_probe -lpthread
//   shared/tools/device-bundle OUT upload_probe   # then OUT/run upload_probe there
#include <cuda_runtime.h>
#include <immintrin.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
#include "manifold/parallel.h"
using namespace manifold;
static double now() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
#define CK(x)                                                      \
  do {                                                             \
    cudaError_t e_ = (x);                                          \
    if (e_) {                                                      \
      printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); \
      exit(1);                                                     \
    }                                                              \
  } while (0)
static void nt_copy(void* dst, const void* src, size_t bytes) {
  char* d = (char*)dst;
  const char* s = (const char*)src;
  size_t n = bytes / 64;
  for (size_t i = 0; i < n; ++i) {
    __m256i a = _mm256_loadu_si256((const __m256i*)(s + 64 * i));
    __m256i b = _mm256_loadu_si256((const __m256i*)(s + 64 * i + 32));
    _mm256_stream_si256((__m256i*)(d + 64 * i), a);
    _mm256_stream_si256((__m256i*)(d + 64 * i + 32), b);
  }
  std::memcpy(d + 64 * n, s + 64 * n, bytes - 64 * n);
  _mm_sfence();
}
static double med(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
const size_t N = 102400000;
std::vector<float> src(N / 4);
char* dev;
cudaStream_t st;
// pipeline with K staging buffers of size c, copy by `threads` fork-join, wait mode spin or block
double pipeline(char** pin, int K, size_t c, int threads, int nt, bool spin) {
  std::vector<cudaEvent_t> ev(K);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::vector<double> r;
  for (int rep = 0; rep < 7; ++rep) {
    std::vector<char> used(K, 0);
    CK(cudaStreamSynchronize(st));
    double t0 = now();
    int s = 0;
    for (size_t off = 0; off < N; off += c, s = (s + 1) % K) {
      size_t len = std::min(c, N - off);
      if (used[s]) {
        if (spin) {
          while (cudaEventQuery(ev[s]) == cudaErrorNotReady) {
          }
        } else
          CK(cudaEventSynchronize(ev[s]));
      }
      size_t piece = (std::max(size_t(128) << 10, (len + threads - 1) / threads) + 4095) / 4096 * 4096;
      int64_t pieces = (len + piece - 1) / piece;
      parallel_for(
          0, pieces, threads,
          [&](int64_t p) {
        size_t o = p * piece;
        size_t l = std::min(piece, len - o);
        if (nt) nt_copy(pin[s] + o, (const char*)src.data() + off + o, l);
        else
          std::memcpy(pin[s] + o, (const char*)src.data() + off + o, l);
          },
          1);
      CK(cudaMemcpyAsync(dev + off, pin[s], len, cudaMemcpyHostToDevice, st));
      CK(cudaEventRecord(ev[s], st));
      used[s] = 1;
    }
    CK(cudaStreamSynchronize(st));
    r.push_back(now() - t0);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return med(r);
}
// persistent threads: each of T threads owns chunks t, t+T, ... and a staging buffer pair; DMA on its own stream
double persistent(char** pin, int T, size_t c, int nt) {
  std::vector<cudaStream_t> ss(T);
  for (auto& s : ss) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> r;
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaDeviceSynchronize());
    double t0 = now();
    std::vector<std::thread> th;
    for (int t = 0; t < T; ++t)
      th.emplace_back([&, t] {
        cudaEvent_t ev[2];
        for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        bool used[2] = {0, 0};
        int b = 0;
        for (size_t off = t * c; off < N; off += T * c, b ^= 1) {
          size_t len = std::min(c, N - off);
          if (used[b]) CK(cudaEventSynchronize(ev[b]));
          char* p = pin[2 * t + b];
          if (nt) nt_copy(p, (const char*)src.data() + off, len);
          else
            std::memcpy(p, (const char*)src.data() + off, len);
          CK(cudaMemcpyAsync(dev + off, p, len, cudaMemcpyHostToDevice, ss[t]));
          CK(cudaEventRecord(ev[b], ss[t]));
          used[b] = 1;
        }
        CK(cudaStreamSynchronize(ss[t]));
        for (auto& e : ev) cudaEventDestroy(e);
      });
    for (auto& x : th) x.join();
    r.push_back(now() - t0);
  }
  for (auto& s : ss) cudaStreamDestroy(s);
  return med(r);
}
// DMA alone, then the same DMA while 8 threads memcpy unrelated memory: how
// much the host's copying slows the transfer that reads the staging buffers.
static void dma_beside_memcpy(char** pin, const char* fn) {
  double t0 = now();
  for (int rep = 0; rep < 5; ++rep)
    for (size_t off = 0; off < N; off += 8 << 20)
      CK(cudaMemcpyAsync(dev + off, pin[(off >> 23) % 32], std::min(size_t(8) << 20, N - off), cudaMemcpyHostToDevice,
                         st));
  CK(cudaStreamSynchronize(st));
  double dma = 5 * N / (now() - t0) / 1e6;
  std::atomic<bool> go{true};
  std::vector<char> a(N), b(N);
  memset(a.data(), 1, N);
  memset(b.data(), 2, N);
  std::atomic<long> copied{0};
  std::vector<std::thread> th;
  for (int t = 0; t < 8; ++t)
    th.emplace_back([&, t] {
      size_t part = N / 8;
      while (go) {
        memcpy(b.data() + t * part, a.data() + t * part, part);
        copied += part;
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  long c0 = copied;
  t0 = now();
  for (int rep = 0; rep < 5; ++rep)
    for (size_t off = 0; off < N; off += 8 << 20)
      CK(cudaMemcpyAsync(dev + off, pin[(off >> 23) % 32], std::min(size_t(8) << 20, N - off), cudaMemcpyHostToDevice,
                         st));
  CK(cudaStreamSynchronize(st));
  double t1 = now();
  long c1 = copied;
  go = false;
  for (auto& x : th) x.join();
  printf("[%s] DMA alone %.1f GB/s; DMA beside 8-thread memcpy %.1f GB/s (memcpy %.1f GB/s)\n", fn, dma,
         5 * N / (t1 - t0) / 1e6, (c1 - c0) / (t1 - t0) / 1e6);
}
// The host's copy into the staging buffers alone (8 threads), with ordinary
// and with non-temporal stores.
static void host_copy_alone(char** pin, const char* fn) {
  for (int nt : {0, 1}) {
    std::vector<double> r;
    for (int rep = 0; rep < 5; ++rep) {
      double t0 = now();
      for (size_t off = 0; off < N; off += 8 << 20) {
        size_t len = std::min(size_t(8) << 20, N - off);
        size_t piece = 1 << 20;
        char* p = pin[(off >> 23) % 32];
        parallel_for(
            0, (len + piece - 1) / piece, 8,
            [&](int64_t q) {
          size_t o = q * piece;
          size_t l = std::min(piece, len - o);
          if (nt) nt_copy(p + o, (const char*)src.data() + off + o, l);
          else
            memcpy(p + o, (const char*)src.data() + off + o, l);
            },
            1);
      }
      r.push_back(N / (now() - t0) / 1e6);
    }
    printf("[%s] host copy alone nt=%d 8 threads: %.1f GB/s\n", fn, nt, med(r));
  }
}
// The two upload schemes over their parameters: a fork-join pipeline and
// persistent threads.
static void upload_schemes(char** pin, const char* fn) {
  for (int K : {3, 6})
    for (size_t c : {size_t(4) << 20, size_t(8) << 20})
      for (int threads : {8, 12})
        for (int nt : {0, 1})
          for (bool spin : {false, true}) {
            double ms = pipeline(pin, K, c, threads, nt, spin);
            printf("[%s] pipeline K=%d chunk=%zuMB threads=%d nt=%d spin=%d: %.2f ms (%.1f GB/s)\n", fn, K, c >> 20,
                   threads, nt, (int)spin, ms, N / ms / 1e6);
          }
  for (int T : {4, 8, 12, 16})
    for (size_t c : {size_t(1) << 20, size_t(2) << 20, size_t(4) << 20})
      for (int nt : {0, 1}) {
        double ms = persistent(pin, T, c, nt);
        printf("[%s] persistent T=%d chunk=%zuMB nt=%d: %.2f ms (%.1f GB/s)\n", fn, T, c >> 20, nt, ms, N / ms / 1e6);
      }
}
// Pinning the input itself instead of staging it: register 8 MB pieces and
// DMA each as it is registered.
static void register_in_pieces() {
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = now();
    size_t c = 8 << 20;
    for (size_t off = 0; off < N; off += c) {
      size_t len = std::min(c, N - off);
      CK(cudaHostRegister((char*)src.data() + off, len, 0));
      CK(cudaMemcpyAsync(dev + off, (char*)src.data() + off, len, cudaMemcpyHostToDevice, st));
    }
    CK(cudaStreamSynchronize(st));
    double t1 = now();
    for (size_t off = 0; off < N; off += c) CK(cudaHostUnregister((char*)src.data() + off));
    printf("register-in-pieces + DMA: %.2f ms (unregister %.2f ms)\n", t1 - t0, now() - t1);
  }
}
int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = (float)(i * 2654435761u % 1000003) * 1e-3f;
  CK(cudaMalloc(&dev, N));
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  // Every measurement with ordinary pinned staging buffers, then write-combined ones.
  for (unsigned flags : {unsigned(cudaHostAllocDefault), unsigned(cudaHostAllocWriteCombined)}) {
    char* pin[32];
    for (int i = 0; i < 32; ++i) CK(cudaHostAlloc((void**)&pin[i], 8u << 20, flags));
    const char* fn = flags ? "WC" : "default";
    dma_beside_memcpy(pin, fn);
    host_copy_alone(pin, fn);
    upload_schemes(pin, fn);
    for (int i = 0; i < 32; ++i) cudaFreeHost(pin[i]);
  }
  register_in_pieces();
  return 0;
}
