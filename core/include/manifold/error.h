#pragma once
// Errors crossing the core API. Every message is one line that names the file
// (or option) and the problem, ready to print after "manifold: ".
#include <stdexcept>
#include <string>

namespace manifold {

/// A failure of the input or of the environment (exit status 1 in the CLI).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad argument or parameter (exit status 2 in the CLI).
class UsageError : public Error {
 public:
  using Error::Error;
};

/// Thrown from long work when the user cancelled it.
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled") {}
};

}  // namespace manifold
