// Shared by the C++ suites (#include "../error_of.hpp"): the message of the InvalidArgument that f throws ("" if none).
#pragma once

#include <string>

#include "kubetune/core/error.hpp"

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const kubetune::InvalidArgument& e) {
    return e.what();
  }
  return "";
}
