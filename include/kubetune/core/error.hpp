// Error hierarchy and check macros used by every module; converted to codes only at the C edge.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kubetune {

/// Base of every exception kubetune throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// A caller passed a bad value (Python: ValueError, C: KT_ERR_INVALID).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};
/// A name or id does not exist (Python: KeyError, C: KT_ERR_NOT_FOUND).
class NotFound : public Error {
 public:
  using Error::Error;
};
/// The call is not allowed in the object's current state (Python: RuntimeError, C: KT_ERR_STATE).
class StateError : public Error {
 public:
  using Error::Error;
};
/// A feature that this build does not include, e.g. CUDA (Python: RuntimeError, C: KT_ERR_UNSUPPORTED).
class Unsupported : public Error {
 public:
  using Error::Error;
};
/// Reading or writing a file failed (Python: OSError/ValueError, C: KT_ERR_IO).
class IoError : public Error {
 public:
  using Error::Error;
};

/// "a, b, c": the accepted names an error message lists.
template <class Names>
std::string join_names(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace kubetune

/// KT_THROW(InvalidArgument, "param '", name, "': lo=", lo, " > hi=", hi)
#define KT_THROW(Type, ...) throw ::kubetune::Type(::kubetune::detail::concat(__VA_ARGS__))
/// KT_CHECK(cond, InvalidArgument, "message parts", ...)
#define KT_CHECK(cond, Type, ...)     \
  do {                                \
    if (!(cond)) KT_THROW(Type, __VA_ARGS__); \
  } while (0)
