#pragma once
// Detector masks: which pixels of a frame take part in the distances.
//
// A mask is one flag per pixel of a frame (1 = valid, 0 = left out). The
// k-NN graph is built from the valid pixels only, compacted into an
// N x valid matrix (masked_features), so a dead pixel, a hot pixel or a gap
// between detector panels decides nothing, for every metric: zeroing the
// pixels instead would still shift the correlation metric's row means and
// leak into binned pixels. Images shown to the user keep their full frames.
//
// Where a mask comes from (mask_for):
//   --mask FILE     .npy (bool or integers) or .mrc of the frame's shape:
//                   non-zero = valid. A CXI/HDF5 file: its CXI mask, read
//                   by the CXI rule below. A stack of masks (N x h x w, or an
//                   MRC with several sections) keeps a pixel only where it
//                   is valid in every one.
//   --mask none     no mask, even where one would be found.
//   (nothing)       the CXI mask inside DATA.cxi|h5 (/entry_1/data_1/mask,
//                   else /entry_1/instrument_1/detector_1/mask), else
//                   NAME.mask.npy beside DATA = NAME.EXT or the folder NAME.
//
// CXI rule (the CXI format's pixel-mask bits, as CXIDB and Condor write
// them): a pixel is bad when any of bit 0 invalid, 1 saturated, 2 hot,
// 3 dead, 4 shadowed, 6 to be ignored, 7 bad or 9 missing is set; the other
// bits (in a peak mask, beyond the resolution limit, noisy, corrected, ...)
// describe a pixel that still measures, and leave it valid. A 3-D CXI mask
// (one per frame) keeps a pixel only where it is valid in every frame.
//
// Transforms (transformed_mask in simulate.h, beside transformed): Anscombe works pixel by pixel and keeps the
// mask; binB makes a bin valid only when all its B x B pixels are, since a
// bin summing a hot or a missing pixel measures something else.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "manifold/dataset.h"

namespace manifold {

/// The CXI pixel-mask bits that make a pixel bad (see above).
constexpr uint32_t kCxiBadPixelBits = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 6) |
                                      (1u << 7) | (1u << 9);

struct DetectorMask {
  std::vector<int64_t> shape;  ///< the frame shape it applies to: {h, w}, or {d} for vectors
  std::vector<uint8_t> valid;  ///< one flag per pixel, row-major: 1 = valid, 0 = left out
  std::string source;          ///< "FILE", or "FILE:/entry_1/data_1/mask" for a mask inside an HDF5 file
  std::string file;            ///< FILE alone: what --mask takes to read this mask again

  bool empty() const { return valid.empty(); }
  int64_t pixels() const { return static_cast<int64_t>(valid.size()); }
  int64_t valid_count() const;
};

/// Reads a mask file by the rules above (.npy, .mrc: non-zero = valid;
/// .cxi/.h5/.hdf5: its CXI mask). Throws Error naming the file.
DetectorMask read_mask(const std::string& path);

/// The mask found inside (`format` "hdf5": its CXI mask) or beside
/// `data_path` (see above); empty when none.
DetectorMask find_mask(const std::string& data_path, const std::string& format);

/// The mask a run uses: `option` "" = find_mask(data_path), "none" = no
/// mask, else read_mask(option). Checked against the frames of `frames`.
DetectorMask mask_for(const std::string& data_path, const std::string& option, const Dataset& frames);

/// Throws Error naming the mask's source when it does not fit the frames of
/// `frames` (its shape) or leaves no pixel valid.
void check_mask(const DetectorMask& mask, const Dataset& frames);

/// The mask of frames after `transform` (see above); empty stays empty.
DetectorMask transformed_mask(const DetectorMask& mask, const std::string& transform);

/// The matrix the k-NN graph is built from: the valid pixels of every row of
/// `frames`, in frame order (N x valid_count). `frames` itself when the mask
/// is empty or every pixel valid. The copy keeps the source and labels.
Dataset masked_features(const Dataset& frames, const DetectorMask& mask);

/// "mask: 3,912 of 4,096 pixels valid (95.5%) from FILE".
std::string mask_summary(const DetectorMask& mask);

/// What graph.json and embedding.json record: source, file (absolute), shape, pixels, valid.
nlohmann::json mask_json(const DetectorMask& mask);

}  // namespace manifold
