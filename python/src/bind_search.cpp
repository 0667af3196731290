// Python bindings of the search module: RandomSearch, GridSearch, Sobol, SobolSequence, submodule functions.
#include <cmath>
#include <memory>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "json_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/search/functions.hpp"
#include "kubetune/search/grid.hpp"
#include "kubetune/search/random.hpp"
#include "kubetune/search/sobol.hpp"

namespace kubetune::python {
namespace {
namespace fn = kubetune::search::functions;
using kubetune::search::GridSearch;
using kubetune::search::RandomSearch;
using kubetune::search::Sobol;
using kubetune::search::SobolSequence;
using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;


template <class T>
std::shared_ptr<T> build(const nlohmann::json& j) {
  std::unique_ptr<Searcher> s = T::from_json(j);
  return std::shared_ptr<T>(static_cast<T*>(s.release()));
}

py::list points_to_dicts(const SearchSpace& space, const std::vector<std::vector<double>>& pts) {
  py::list out;
  for (const auto& x : pts) {
    py::dict d;
    for (const auto& [k, v] : space.to_assignment(x)) {
      if (auto* f = std::get_if<double>(&v)) d[py::str(k)] = py::float_(*f);
      else if (auto* i = std::get_if<std::int64_t>(&v)) d[py::str(k)] = py::int_(*i);
      else d[py::str(k)] = py::str(std::get<std::string>(v));
    }
    out.append(d);
  }
  return out;
}

// Coordinates from a dict {"x0": .., "x1": ..} (or an object with a .params dict, e.g. a trial).
std::vector<double> coords_from_dict(const py::dict& d, std::size_t dim, const std::string& name) {
  std::vector<double> x(dim, std::nan(""));
  for (auto item : d) {
    std::string k = py::str(item.first).cast<std::string>();
    std::size_t i = dim;
    if (k.size() >= 2 && k[0] == 'x' && k.find_first_not_of("0123456789", 1) == std::string::npos)
      i = std::stoul(k.substr(1));
    KT_CHECK(i < dim, InvalidArgument, "function '", name, "': unknown parameter '", k, "' (expected x0..x",
             dim - 1, ")");
    x[i] = item.second.cast<double>();
  }
  for (std::size_t i = 0; i < dim; ++i)
    KT_CHECK(!std::isnan(x[i]), InvalidArgument, "function '", name, "': parameter 'x", i, "' is missing");
  return x;
}

// Evaluate f on a dict, a 1-D point or an (n, d) batch. Variable-dimension families adapt to the input.
py::object call_function(const fn::Function& f, py::handle arg, int n_threads) {
  py::handle h = arg;
  py::object params;
  if (!py::isinstance<py::dict>(h) && py::hasattr(h, "params")) {
    params = h.attr("params");
    h = params;
  }
  if (py::isinstance<py::dict>(h)) {
    auto d = h.cast<py::dict>();
    fn::Function g = f.variable_dim() && d.size() != f.dim() && d.size() > 0 ? fn::get(f.name(), d.size()) : f;
    return py::float_(g.evaluate(coords_from_dict(d, g.dim(), g.name())));
  }
  Array a = Array::ensure(h);
  if (!a) throw py::type_error("function '" + f.name() + "' takes a dict of x0..x{d-1}, a point or an (n, d) array");
  KT_CHECK(a.ndim() == 1 || a.ndim() == 2, InvalidArgument, "function '", f.name(),
           "': expected a point (d,) or a batch (n, d), got an array with ", a.ndim(), " dimensions");
  const std::size_t d = static_cast<std::size_t>(a.shape(a.ndim() - 1));
  fn::Function g = f.variable_dim() && d != f.dim() && d > 0 ? fn::get(f.name(), d) : f;
  KT_CHECK(d == g.dim(), InvalidArgument, "function '", f.name(), "' takes ", g.dim(), " coordinates, got ", d);
  if (a.ndim() == 1) return py::float_(g(a.data()));
  const std::size_t n = static_cast<std::size_t>(a.shape(0));
  Array out(static_cast<py::ssize_t>(n));
  {
    py::gil_scoped_release nogil;
    g.evaluate(n, d, a.data(), out.mutable_data(), n_threads);
  }
  return std::move(out);
}

void bind_functions(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "functions", "Benchmark functions (Surjanovic & Bingham's Virtual Library of Simulation Experiments).");
  py::class_<fn::Function>(m, "Function",
                           "A benchmark function to minimise: call it on a dict {'x0': ..}, a point or an (n, d) "
                           "array; .space() gives its domain as a SearchSpace.")
      .def("__call__", &call_function, py::arg("x"), py::arg("n_threads") = 1,
           "f(x): float for a dict or a 1-D point, ndarray (n,) for an (n, d) batch.")
      .def(
          "space", [](const fn::Function& f, std::optional<std::size_t> dim) {
            if (dim && *dim != f.dim()) return fn::get(f.name(), *dim).make_space();
            return f.make_space();
          },
          py::arg("dim") = py::none(), "The domain as a SearchSpace of doubles x0..x{d-1}.")
      .def("with_dim", [](const fn::Function& f, std::size_t dim) { return fn::get(f.name(), dim); },
           py::arg("dim"), "The same family in another dimension.")
      .def_property_readonly("name", &fn::Function::name)
      .def_property_readonly("dim", &fn::Function::dim)
      .def_property_readonly("variable_dim", &fn::Function::variable_dim)
      .def_property_readonly("optimum", &fn::Function::optimum, "Known global minimum value.")
      .def_property_readonly("argmin", &fn::Function::argmin, "One global minimiser.")
      .def_property_readonly("argmins", &fn::Function::argmins, "All known global minimisers.")
      .def_property_readonly("bounds", &fn::Function::bounds, "Domain as a list of (low, high).")
      .def_property_readonly("reference", &fn::Function::reference)
      .def("__repr__", [](const fn::Function& f) {
        return "<kubetune function " + f.name() + " dim=" + std::to_string(f.dim()) + ">";
      });
  m.def(
      "get", [](const std::string& name, std::optional<std::size_t> dim) { return fn::get(name, dim.value_or(0)); },
      py::arg("name"), py::arg("dim") = py::none(),
      "Function by name; dim=None picks its natural dimension (2 for the any-dimension families).");
  m.def("names", &fn::names, "Names of the built-in benchmark functions.");
  for (const auto& name : fn::names()) m.attr(py::str(name)) = py::cast(fn::get(name));
}
}  // namespace

void bind_search(py::module_& m) {
  const char* katib_doc = "Build from Katib algorithmSettings (dict or [{name, value}]).";
  settings_class<RandomSearch, Searcher>(
      m, "RandomSearch", "random",
      "Random search (Bergstra & Bengio, JMLR 2012): independent draws from the priors; with dedupe, a finite "
      "space never repeats a point while unseen ones remain.")
      .def_static(
          "from_katib", [](py::handle s) { return build<RandomSearch>(katib_settings(s, "random")); },
          py::arg("settings") = py::none(), katib_doc);

  settings_class<GridSearch, Searcher>(
      m, "GridSearch", "grid",
      "Exhaustive grid with Katib's semantics: ints by their step, doubles by their step (or points/steps/"
      "default_points), discrete and categorical lists; fixed order, only active conditional combinations, "
      "stateless (continues after reload); fewer suggestions once exhausted.")
      .def_static(
          "from_katib", [](py::handle s) { return build<GridSearch>(katib_settings(s, "grid")); },
          py::arg("settings") = py::none(), katib_doc)
      .def("grid_size", &GridSearch::grid_size, py::arg("space"), "Number of (active) grid points of a space.")
      .def(
          "enumerate",
          [](const GridSearch& g, const SearchSpace& s, std::uint64_t limit) {
            return points_to_dicts(s, g.enumerate(s, limit));
          },
          py::arg("space"), py::arg("limit") = 1'000'000, "Every grid point, in order, as parameter dicts.");

  settings_class<Sobol, Searcher>(
      m, "Sobol", "sobol",
      "Scrambled Sobol' sequence (Joe & Kuo 2008 direction numbers, linear matrix scramble + digital shift); "
      "trial k gets point k (stored as system attribute 'sobol_index').")
      .def_static(
          "from_katib", [](py::handle s) { return build<Sobol>(katib_settings(s, "sobol")); },
          py::arg("settings") = py::none(), katib_doc)
      .def_property_readonly_static("max_dims", [](py::handle) { return search::sobol_max_dims(); });

  py::class_<SobolSequence>(m, "SobolSequence", "Standalone scrambled Sobol' generator over [0, 1)^dim.")
      .def(py::init<std::size_t, bool, std::uint64_t>(), py::arg("dim"), py::kw_only(), py::arg("scramble") = true,
           py::arg("seed") = 0)
      .def_property_readonly("dim", &SobolSequence::dim)
      .def_property_readonly("index", &SobolSequence::index, "Index of the next point.")
      .def("seek", &SobolSequence::seek, py::arg("index"))
      .def("next", [](SobolSequence& s) {
        Array out(static_cast<py::ssize_t>(s.dim()));
        s.next(out.mutable_data());
        return out;
      })
      .def(
          "generate",
          [](SobolSequence& s, std::size_t n) {
            Array out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(s.dim())});
            double* p = out.mutable_data();
            {
              py::gil_scoped_release nogil;
              s.generate(n, s.dim(), p);
            }
            return out;
          },
          py::arg("n"), "Next n points as an (n, dim) array.")
      .def("point", [](const SobolSequence& s, std::uint64_t i) {
        Array out(static_cast<py::ssize_t>(s.dim()));
        s.point(i, out.mutable_data());
        return out;
      }, py::arg("index"));

  bind_functions(m);
}

}  // namespace kubetune::python
