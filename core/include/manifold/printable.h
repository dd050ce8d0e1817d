#pragma once
// File names in messages: a name holding a newline or a terminal escape
// would split the one-line message or drive the user's terminal, so such a
// name is printed quoted with C-style escapes; any other name as it is.
#include <string>

namespace manifold {

/// `path` as it is when it holds no control characters; otherwise in double
/// quotes with \n, \r, \t, \\, \" and \xHH for the other control bytes.
std::string printable_path(const std::string& path);

/// A number as a user would write it back in an option: 1.5, -1, 1e-09,
/// 0.333333 (six significant digits, "%g"), not std::to_string's 1.500000.
std::string printable_number(double v);

/// An English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd.
std::string ordinal(int n);

}  // namespace manifold
