// select=sort, after Dashti, Komarov & D'Souza (2013), batch index sort: the
// tile's (distance, row, column) triples are radix-sorted by distance, then
// stably re-sorted by column and, separately, by row; a stable sort keeps
// the distance order inside each column's (row's) run, so the first k of a
// run are that column's (row's) k nearest in the tile. Those are merged into
// the lists kept across tiles. The radix sorts are CUB's, from the CUDA
// toolkit.
//
// A triple is one 64-bit key: the distance's order-preserving bits, then the
// tile column (16 bits), then the tile row (16 bits). Sorting the whole key
// orders by distance and breaks ties by column then row, which is the
// (distance, index) order both a row's run (neighbours are columns) and a
// column's run (neighbours are rows) need; the re-sorts look only at the
// column bits or the row bits.
//
// Only triples within their row's or their column's current bound are
// sorted (the filter in filter.cu): after the first tiles nearly all the
// tile is beyond every bound, and sorting it would change no list.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "manifold/error.h"
#include "select/common.cuh"
#include "select/select_kernels.h"
#include "utils/cuda_check.h"

namespace manifold::gpu::select {

namespace {

constexpr int kThreads = 128;

int bits_for(int count) {
  int b = 1;
  while ((1 << b) < count) ++b;
  return b;
}

// One block per run (a row's or a column's), grid-stride. The run's first
// min(k, count) keys are decoded into shared memory and merged with the
// row's sorted list: an entry's place in the result is its place in its own
// sequence plus the number of entries of the other one before it (all keys
// of a row are distinct: each pair reaches a row from one tile only).
template <bool kColumns>
__global__ __launch_bounds__(kThreads) void merge_runs_kernel(ListsView l, Tile t, const uint64_t* __restrict__ keys,
                                                              const int* __restrict__ count,
                                                              const int* __restrict__ start, int runs, int run_cap,
                                                              float* merge_dist, int* merge_index) {
  extern __shared__ float smem[];
  float* cd = smem;
  int* ci = reinterpret_cast<int*>(smem + run_cap);
  const int k = l.k;
  float* od = merge_dist + static_cast<size_t>(blockIdx.x) * k;
  int* oi = merge_index + static_cast<size_t>(blockIdx.x) * k;
  for (int run = blockIdx.x; run < runs; run += gridDim.x) {
    const int c = count[run];
    if (c == 0) continue;  // uniform over the block
    const int m = min(k, c);
    const int row = kColumns ? t.c0 + run : t.r0 + run;
    const uint64_t* seg = keys + start[run];
    for (int e = threadIdx.x; e < m; e += kThreads) {
      const uint64_t key = seg[e];
      cd[e] = from_ordered_bits(static_cast<uint32_t>(key >> 32));
      ci[e] = kColumns ? t.r0 + static_cast<int>(key & 0xffffu) : t.c0 + static_cast<int>((key >> 16) & 0xffffu);
    }
    float* ld = l.dist + static_cast<size_t>(row) * k;
    int* li = l.index + static_cast<size_t>(row) * k;
    const int f = l.fill[row];
    __syncthreads();
    for (int a = threadIdx.x; a < f; a += kThreads) {
      const float d = ld[a];
      const int id = li[a];
      const int r = a + count_less_sorted(cd, ci, m, d, id);
      if (r < k) od[r] = d, oi[r] = id;
    }
    for (int b = threadIdx.x; b < m; b += kThreads) {
      const int r = b + count_less_sorted(ld, li, f, cd[b], ci[b]);
      if (r < k) od[r] = cd[b], oi[r] = ci[b];
    }
    __syncthreads();
    const int nf = min(k, f + m);
    for (int e = threadIdx.x; e < nf; e += kThreads) ld[e] = od[e], li[e] = oi[e];
    if (threadIdx.x == 0) {
      l.fill[row] = nf;
      if (nf == k) l.thr[row] = od[k - 1];
    }
    __syncthreads();
  }
}

void cub_check(cudaError_t e, const char* what) { cuda_check(e, what); }

size_t sort_bytes(int items, int begin_bit, int end_bit) {
  size_t bytes = 0;
  cub_check(cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                           static_cast<uint64_t*>(nullptr), items, begin_bit, end_bit),
            "sizing the radix sort");
  return bytes;
}

size_t scan_bytes(int items) {
  size_t bytes = 0;
  cub_check(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
                                          items),
            "sizing the prefix sum");
  return bytes;
}

template <bool kColumns>
void merge_runs(ListsView l, const Tile& t, const SortBuffers& b, const uint64_t* keys, cudaStream_t s) {
  const int runs = kColumns ? t.cols : t.rows;
  const int run_cap = std::min(l.k, std::max(b.T, b.W));
  const size_t smem = static_cast<size_t>(run_cap) * (sizeof(float) + sizeof(int));
  if (smem > 48 * 1024)
    cuda_check(cudaFuncSetAttribute(merge_runs_kernel<kColumns>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(smem)),
               "raising the sort merge kernel's shared memory limit");
  int dev = 0, sms = 0;
  cuda_check(cudaGetDevice(&dev), "reading the current device");
  cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the device's SM count");
  const int grid = std::min(runs, sort_merge_blocks(sms));
  merge_runs_kernel<kColumns><<<grid, kThreads, smem, s>>>(l, t, keys, kColumns ? b.col_count : b.row_count,
                                                           kColumns ? b.col_start : b.row_start, runs, run_cap,
                                                           b.merge_dist, b.merge_index);
  launch_check("sort merge kernel");
}

}  // namespace

int sort_merge_blocks(int device_sms) { return std::max(1, device_sms * 4); }

size_t sort_temp_bytes(int T, int W) {
  const int items = T * W;
  size_t bytes = std::max(sort_bytes(items, 0, 64), scan_bytes(std::max(T, W)));
  bytes = std::max(bytes, sort_bytes(items, 16, 16 + bits_for(W)));
  bytes = std::max(bytes, sort_bytes(items, 0, bits_for(T)));
  return bytes;
}

void sort_select_tile(ListsView lists, const Tile& t, const SortBuffers& b, int items, cudaStream_t s) {
  if (items <= 0) return;
  auto sort = [&](const uint64_t* in, uint64_t* out, int begin_bit, int end_bit, const char* what) {
    size_t bytes = sort_bytes(items, begin_bit, end_bit);
    if (bytes > b.temp_bytes)
      throw Error(std::string(what) + ": CUB asks for " + std::to_string(bytes) + " bytes of temporary storage, " +
                  std::to_string(b.temp_bytes) + " were planned");
    cub_check(cub::DeviceRadixSort::SortKeys(b.temp, bytes, in, out, items, begin_bit, end_bit, s), what);
  };
  auto scan = [&](const int* in, int* out, int n, const char* what) {
    size_t bytes = scan_bytes(n);
    if (bytes > b.temp_bytes) throw Error(std::string(what) + ": CUB asks for more temporary storage than planned");
    cub_check(cub::DeviceScan::ExclusiveSum(b.temp, bytes, in, out, n, s), what);
  };
  // By distance (ties: column, then row).
  sort(b.keys[0], b.keys[1], 0, 64, "radix-sorting a tile's triples by distance");
  if (t.col_role) {
    sort(b.keys[1], b.keys[2], 16, 16 + bits_for(t.cols), "re-sorting a tile's triples by column");
    scan(b.col_count, b.col_start, t.cols, "offsets of the tile's columns");
    merge_runs<true>(lists, t, b, b.keys[2], s);
  }
  sort(b.keys[1], b.keys[2], 0, bits_for(t.rows), "re-sorting a tile's triples by row");
  scan(b.row_count, b.row_start, t.rows, "offsets of the tile's rows");
  merge_runs<false>(lists, t, b, b.keys[2], s);
}

}  // namespace manifold::gpu::select
