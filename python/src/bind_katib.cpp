// Submodule kubetune._kubetune._katib: Katib's Suggestion service logic (kubetune/core/katib.hpp) over dicts.
// kubetune.katib converts the protobuf messages to these dicts and back; nothing is decided here.
#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "json_conv.hpp"
#include "kubetune/core/katib.hpp"

namespace kubetune::python {
namespace {
/// f() (a JSON reply) run without the GIL, as Python data.
template <class F>
py::object json_reply_without_gil(F f) {
  nlohmann::json reply;
  {
    py::gil_scoped_release rel;
    reply = f();
  }
  return json_to_py(reply);
}
}  // namespace

void bind_katib(py::module_& m) {
  py::module_ k = m.def_submodule("_katib", "Katib Suggestion service logic (used by kubetune.katib)");
  k.attr("STATE_PREFIX") = katib::kStatePrefix;
  k.def("algorithm_names", &katib::algorithm_names, "Katib algorithm names kubetune's searchers answer.");
  k.def(
      "get_suggestions",
      [](py::handle request) {
        const nlohmann::json req = py_to_json(request);
        return json_reply_without_gil([&] { return katib::get_suggestions(req); });
      },
      py::arg("request"), "GetSuggestions on the request dict (see kubetune/core/katib.hpp); returns the reply dict.");
  k.def(
      "get_suggestions_wire",
      [](const py::bytes& request) {
        std::string_view bytes = request;  // the bytes object outlives the call
        return json_reply_without_gil([&] { return katib::get_suggestions_wire(bytes); });
      },
      py::arg("request"), "GetSuggestions on a serialized api.v1beta1.GetSuggestionsRequest; returns the reply dict.");
  k.def(
      "decode_suggestions_request",
      [](const py::bytes& request) { return json_to_py(katib::decode_suggestions_request(std::string_view(request))); },
      py::arg("request"), "The request dict read from a serialized GetSuggestionsRequest (for tests).");
  k.def(
      "validate_algorithm_settings",
      [](py::handle experiment) {
        nlohmann::json e = py_to_json(experiment);
        py::gil_scoped_release rel;
        katib::validate_algorithm_settings(e);
      },
      py::arg("experiment"), "Raises ValueError naming the setting or parameter at fault.");
}

}  // namespace kubetune::python
