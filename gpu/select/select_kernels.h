#pragma once
// Launchers of the papers' selection kernels (select/*.cu). Host code sees
// plain structs of device pointers and a stream; every launcher checks its
// launches. The per-row lists are the engine's ListsView (impl/kernels.h):
// how a strategy keeps a row's entries differs -- sorted (sort, bitonic), a
// max-heap (heap), unordered (quick) -- but fill and thr always mean the
// same (entries held; the last (capacity-th) distance once full, +inf
// before), which is all the filter relies on. Before the final step
// (final_step.h) heap and quick lists are sorted (launch_sort_lists), so the
// final step sees the engine's layout: ascending by (distance, index).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "impl/kernels.h"

namespace manifold::gpu::select {

/// One distance tile computed by cuBLAS: dot products of rows [r0, r0+rows)
/// with rows [c0, c0+cols), column-major, element (i, j) at dots[i + j*ld].
/// col_role: the tile lies above the diagonal, so it also stands for its
/// mirror image and feeds the lists of its columns.
struct Tile {
  const float* dots = nullptr;
  int ld = 0;
  int rows = 0, cols = 0;
  int r0 = 0, c0 = 0;
  bool col_role = false;
  const float* row_norms = nullptr;  ///< |x|^2 of the tile's rows (local index)
  const float* col_norms = nullptr;  ///< |y|^2 of the tile's columns (local index)
  bool keep_self = false;
};

/// Entries of one tile that passed a row's bound, by slot: slot s < T is tile
/// row s (capacity W), slot T + j is tile column j (capacity T), each
/// capacity the most one tile can give a slot, so nothing overflows. dirty
/// lists the slots that received any, *n_dirty of them. The select kernels
/// clear count[] of the slots they consume; *n_dirty is cleared by the host
/// before each tile.
struct Slots {
  float* dist = nullptr;
  int* index = nullptr;
  int* count = nullptr;
  int* dirty = nullptr;
  int* n_dirty = nullptr;
  unsigned long long* total = nullptr;  ///< entries ever passed (statistics)
  int T = 0, W = 0;
  int r0 = 0, c0 = 0;  ///< the current tile's first row and column (slot -> global row)
};

/// The filter shared by quick, heap and bitonic: squared distances of the
/// tile, kept where they are within a row's (or column's) current bound.
void launch_slot_filter(const Tile& t, const float* thr, Slots s, cudaStream_t stream);

/// heap (Kato & Hosino): each dirty slot's entries pushed into its row's
/// bounded max-heap, filtered again against the heap top in batches.
void launch_heap_push(ListsView lists, Slots s, cudaStream_t stream);

/// quick (Komarov et al.): each dirty slot's row gets the k smallest of its
/// list and the slot's entries by quick multi-select, one warp per row (the
/// warp variant) or one thread block per row (the block variant).
enum class QuickVariant { Warp, Block };
/// Lists of at least this many entries (k + slack, what the kernel selects)
/// take the block variant (unless Settings::quick forces one): from
/// here a row's range is thousands of entries and few rows are dirty per
/// tile. The block variant is faster from lists of about a thousand entries
/// and slower below a couple of hundred (bench/gpu/select/RESULTS.md, "The
/// two quick variants").
inline constexpr int kQuickBlockMinK = 512;
/// The variant for lists of k entries: by kQuickBlockMinK, or the one
/// Settings::quick forces (tests run both on the same data).
QuickVariant quick_variant(int k);
const char* quick_variant_name(QuickVariant v);
/// Concurrent workers of each variant on this device (each needs 2 * cap
/// scratch entries): warps (a multiple of 4), blocks of 256 threads.
int quick_warps(int device_sms, int slots);
int quick_blocks(int device_sms, int slots);
int quick_workers(QuickVariant v, int device_sms, int slots);
/// Runs the variant quick_variant(lists.k) picks now on `workers` workers;
/// scratch: 2 * cap entries (dist and index arrays) per worker. Returns the
/// variant that ran.
QuickVariant launch_quick_select(ListsView lists, Slots s, float* scratch_dist, int* scratch_index, int cap,
                                 int workers, cudaStream_t stream);

/// bitonic (Sismanis et al., TBiS): one block per dirty slot; the row's
/// sorted list and the slot's entries go through a truncated bitonic network.
/// max_entries: the largest slot capacity.
void launch_bitonic_select(ListsView lists, Slots s, int max_entries, cudaStream_t stream);
/// Shared memory one bitonic block needs for lists of k and slots of up to max_entries.
size_t bitonic_shared_bytes(int k, int max_entries);

/// Sorts every row's `fill` entries ascending by (distance, index), in place:
/// the final step's layout (heap and quick keep their lists unordered).
void launch_sort_lists(ListsView lists, cudaStream_t stream);
/// Shared memory the list sort needs for lists of this capacity.
size_t sort_lists_shared_bytes(int capacity);

/// sort (Dashti et al.): the tile's (distance, row, column) triples.
struct SortBuffers {
  uint64_t* keys[3] = {nullptr, nullptr, nullptr};  ///< T*W keys each
  int* n_items = nullptr;                           ///< triples passed by the filter (device)
  int* row_count = nullptr;                         ///< per tile row
  int* col_count = nullptr;                         ///< per tile column
  int* row_start = nullptr;                         ///< exclusive prefix sums of the counts
  int* col_start = nullptr;
  void* temp = nullptr;  ///< CUB temporary storage
  size_t temp_bytes = 0;
  float* merge_dist = nullptr;  ///< merge output, k per block of the merge kernel
  int* merge_index = nullptr;
  int T = 0, W = 0;
};
/// Triples of the tile within their row's or their column's bound.
void launch_sort_filter(const Tile& t, const float* thr, SortBuffers b, cudaStream_t stream);
/// CUB temporary storage for tiles of T x W (T, W <= 65536).
size_t sort_temp_bytes(int T, int W);
/// Blocks of the sort strategy's merge kernel (its merge buffers hold k entries each).
int sort_merge_blocks(int device_sms);
/// Radix-sorts the tile's `items` triples by distance, stably re-sorts them
/// by column and by row, and merges the k first of every column and of every
/// row into its list.
void sort_select_tile(ListsView lists, const Tile& t, const SortBuffers& b, int items, cudaStream_t stream);

}  // namespace manifold::gpu::select
