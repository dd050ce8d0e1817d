#include "manifold/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "manifold/error.h"

namespace manifold {

Dataset::Dataset(int64_t rows, int64_t cols, std::vector<float> values) : rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0 || static_cast<int64_t>(values.size()) != rows * cols)
    throw Error("dataset: " + std::to_string(values.size()) + " values do not form a " +
                std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
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
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    auto b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      h ^= b[i];
      h *= 1099511628211ull;
    }
  };
  mix(&rows_, sizeof rows_);
  mix(&cols_, sizeof cols_);
  mix(data_, static_cast<size_t>(rows_ * cols_) * sizeof(float));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace manifold
