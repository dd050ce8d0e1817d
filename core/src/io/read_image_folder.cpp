// A folder of same-sized images: every *.png, *.tif, *.tiff file (any case;
// hidden files and subfolders ignored), in byte order of the file names, one
// row per image (every page of a multi-page TIFF). Only the first max_rows
// images are decoded.
#include <algorithm>
#include <filesystem>

#include "readers.h"

namespace fs = std::filesystem;

namespace manifold::io {

namespace {

std::string lower_extension(const fs::path& p) {
  std::string e = p.extension().string();
  for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

Dataset read_image_folder(const std::string& path, const ReadOptions& opt) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) fail(path, "cannot list folder (" + ec.message() + ")");
  for (const auto& entry : it) {
    const fs::path& p = entry.path();
    const std::string name = p.filename().string();
    const std::string ext = lower_extension(p);
    if (name.empty() || name[0] == '.' || (ext != ".png" && ext != ".tif" && ext != ".tiff")) continue;
    std::error_code e2;
    if (!fs::is_regular_file(p, e2)) continue;
    files.push_back(p);
  }
  if (files.empty()) fail(path, "folder holds no PNG or TIFF images (*.png, *.tif, *.tiff)");
  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });

  ImageStack stack;
  stack.max_images = opt.max_rows;
  stack.expected = static_cast<int64_t>(files.size());
  bool png = false, tiff = false;
  for (const auto& f : files) {
    if (stack.full()) break;
    if (lower_extension(f) == ".png") {
      append_png(f.string(), stack);
      png = true;
    } else {
      append_tiff(f.string(), stack, true);
      tiff = true;
    }
  }
  return std::move(stack).finish(png && tiff ? "png+tiff" : png ? "png" : "tiff");
}

}  // namespace manifold::io
