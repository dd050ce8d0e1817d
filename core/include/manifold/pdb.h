#pragma once
// Atomic coordinates from a Protein Data Bank file (ATOM / HETATM records).
#include <string>
#include <vector>

namespace manifold {

struct Atom {
  std::string element;         ///< "C", "Fe", ... (capitalised as in the periodic table)
  double x = 0, y = 0, z = 0;  ///< Angstrom
  double occupancy = 1;
  bool hetero = false;  ///< from a HETATM record
  std::string name;     ///< atom name, e.g. "CA"
  std::string residue;  ///< residue name, e.g. "MET", "HOH"
};

struct Molecule {
  std::string source;  ///< file it was read from
  std::string id;      ///< PDB id from the HEADER record ("" when absent)
  std::vector<Atom> atoms;
};

struct PdbOptions {
  bool keep_water = false;  ///< keep HOH/WAT/DOD records (crystal waters are not part of a single molecule)
};

/// Reads the first model of a PDB file: ATOM and HETATM records, alternate
/// locations other than the first dropped. The element comes from columns
/// 77-78, or from the atom name when those are blank. Throws Error with
/// "FILE:LINE: problem" for a malformed record, or "FILE: problem" when the
/// file is missing or holds no atoms.
Molecule read_pdb(const std::string& path, const PdbOptions& options = {});

/// Parses PDB text (as read_pdb, `source` names it in messages).
Molecule parse_pdb(const std::string& text, const std::string& source, const PdbOptions& options = {});

}  // namespace manifold
