// A folder of same-sized images: every *.png, *.tif, *.tiff file (any case;
// hidden files and subfolders ignored), in the natural order of the file
// names (a run of digits compares as a number, as file browsers list them:
// img2.png before img10.png), one row per image (every page of a multi-page
// TIFF), each row named by its file (Dataset::item_names). Only the first
// max_rows images are decoded.
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

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Numbers by value: leading zeros skipped, then the longer run is the
      // larger, then digit by digit.
      size_t i0 = i, j0 = j;
      while (i0 < a.size() && a[i0] == '0') ++i0;
      while (j0 < b.size() && b[j0] == '0') ++j0;
      size_t i1 = i0, j1 = j0;
      while (i1 < a.size() && digit(a[i1])) ++i1;
      while (j1 < b.size() && digit(b[j1])) ++j1;
      if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
      const int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
      if (c != 0) return c < 0;
      i = i1, j = j1;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i, ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal as numbers ("a01" and "a1"): byte order decides
}

namespace {

/// The folder's images: every PNG and TIFF file (hidden files and
/// subfolders skipped), in the natural order of their names.
std::vector<fs::path> image_files(const std::string& path) {
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
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  return files;
}

/// The names of the `images` rows one file gives: the file's name, or
/// "NAME, page P" for each page of a multi-page TIFF.
void append_names(std::vector<std::string>& names, const fs::path& file, int64_t images) {
  const std::string name = file.filename().string();
  for (int64_t page = 0; page < images; ++page)
    names.push_back(images == 1 ? name : name + ", page " + std::to_string(page + 1));
}

}  // namespace

Dataset read_image_folder(const std::string& path, const ReadOptions& opt) {
  const std::vector<fs::path> files = image_files(path);
  ImageStack stack;
  stack.max_images = opt.max_rows;
  stack.expected = static_cast<int64_t>(files.size());
  bool png = false, tiff = false;
  std::vector<std::string> names;
  for (const auto& f : files) {
    if (stack.full()) break;
    const int64_t before = stack.count;
    if (lower_extension(f) == ".png") {
      append_png(f.string(), stack);
      png = true;
    } else {
      append_tiff(f.string(), stack, true);
      tiff = true;
    }
    append_names(names, f, stack.count - before);
  }
  Dataset ds = std::move(stack).finish(png && tiff ? "png+tiff" : png ? "png" : "tiff");
  names.resize(static_cast<size_t>(ds.rows()));
  ds.item_names = std::move(names);
  return ds;
}

std::vector<std::string> image_folder_item_names(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& f : image_files(path))
    append_names(names, f, lower_extension(f) == ".png" ? 1 : tiff_image_count(f.string()));
  return names;
}

}  // namespace manifold::io
