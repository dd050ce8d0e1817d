// PDB reader: fixed-column ATOM / HETATM records of the first model.
#include "manifold/pdb.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "manifold/error.h"
#include "manifold/printable.h"

namespace manifold {

namespace {

std::string field(const std::string& line, size_t begin, size_t width) {
  if (line.size() <= begin) return {};
  std::string s = line.substr(begin, width);
  const auto b = s.find_first_not_of(' ');
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(' ');
  return s.substr(b, e - b + 1);
}

std::string element_case(std::string e) {
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (!e.empty()) e[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(e[0])));
  return e;
}

}  // namespace

Molecule parse_pdb(const std::string& text, const std::string& source, const PdbOptions& options) {
  Molecule mol;
  mol.source = source;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  bool any_record = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string rec = line.substr(0, 6);
    if (rec == "HEADER") mol.id = field(line, 62, 4);
    if (rec == "ENDMDL") break;  // first model only (NMR files hold many)
    if (rec != "ATOM  " && rec != "HETATM") continue;
    any_record = true;
    auto where = printable_path(source) + ":" + std::to_string(lineno) + ": ";
    if (line.size() < 54) throw Error(where + "ATOM/HETATM record is too short for coordinates (columns 31-54)");
    const char alt = line[16];
    if (alt != ' ' && alt != 'A' && alt != '1') continue;
    Atom a;
    a.hetero = rec == "HETATM";
    a.name = field(line, 12, 4);
    a.residue = field(line, 17, 3);
    if (!options.keep_water && (a.residue == "HOH" || a.residue == "WAT" || a.residue == "DOD")) continue;
    double* xyz[3] = {&a.x, &a.y, &a.z};
    for (int c = 0; c < 3; ++c) {
      const std::string s = field(line, 30 + 8 * c, 8);
      char* end = nullptr;
      *xyz[c] = std::strtod(s.c_str(), &end);
      // nan and inf parse as numbers but place no atom anywhere.
      if (s.empty() || *end || !std::isfinite(*xyz[c]))
        throw Error(where + "bad " + "xyz"[c] + " coordinate '" + s + "'");
    }
    const std::string occ = field(line, 54, 6);
    if (!occ.empty()) {
      char* end = nullptr;
      a.occupancy = std::strtod(occ.c_str(), &end);
      if (*end || !(a.occupancy >= 0 && a.occupancy <= 1)) throw Error(where + "bad occupancy '" + occ + "'");
    }
    std::string el = field(line, 76, 2);
    if (el.empty()) {
      // Columns 13-14 hold the element right-justified in the atom name.
      el = field(line, 12, 2);
      while (!el.empty() && std::isdigit(static_cast<unsigned char>(el[0]))) el.erase(0, 1);
    }
    for (char ch : el)
      if (!std::isalpha(static_cast<unsigned char>(ch))) throw Error(where + "bad element symbol '" + el + "'");
    if (el.empty()) throw Error(where + "no element symbol (columns 77-78) and none in the atom name");
    a.element = element_case(el);
    mol.atoms.push_back(std::move(a));
  }
  if (!any_record) throw Error(printable_path(source) + ": no ATOM/HETATM records (not a PDB file?)");
  if (mol.atoms.empty())
    throw Error(printable_path(source) + ": no atoms left after dropping waters and alternate locations");
  return mol;
}

Molecule read_pdb(const std::string& path, const PdbOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open PDB file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_pdb(ss.str(), path, options);
}

}  // namespace manifold
