#include "manifold/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include <xxhash.h>

#include "manifold/error.h"

namespace manifold {

Dataset::Dataset(int64_t rows, int64_t cols, std::vector<float> values) : rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0 || static_cast<int64_t>(values.size()) != rows * cols)
    throw Error("dataset: " + std::to_string(values.size()) + " values do not form a " + std::to_string(rows) + " x " +
                std::to_string(cols) + " matrix");
  auto holder = std::make_shared<std::vector<float>>(std::move(values));
  data_ = holder->data();
  owner_ = holder;
  item_shape = {cols};
}

Dataset::Dataset(int64_t rows, int64_t cols, const float* data, std::shared_ptr<const void> owner)
    : rows_(rows), cols_(cols), data_(data), owner_(std::move(owner)), mapped_(true) {
  item_shape = {cols};
}

std::pair<float, float> Dataset::value_range() const {
  if (!range_valid_) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    const int64_t n = rows_ * cols_;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, data_[i]);
      hi = std::max(hi, data_[i]);
    }
    range_ = n ? std::make_pair(lo, hi) : std::make_pair(0.f, 0.f);
    range_valid_ = true;
  }
  return range_;
}

std::string Dataset::fingerprint() const {
  // XXH3 runs at memory speed (tens of GB/s), so identifying the input costs
  // little next to building its graph.
  XXH3_state_t* state = XXH3_createState();
  if (!state) throw Error("fingerprint: out of memory");
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &rows_, sizeof rows_);
  XXH3_64bits_update(state, &cols_, sizeof cols_);
  XXH3_64bits_update(state, data_, static_cast<size_t>(rows_ * cols_) * sizeof(float));
  const XXH64_hash_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace manifold
