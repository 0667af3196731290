// Python bindings of the nas module (submodule kubetune._kubetune.nas): DARTS engine, genotype, ops list.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "dict_conv.hpp"
#include "json_conv.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/nas/darts.hpp"
#include "kubetune/nas/data.hpp"
#include "kubetune/nas/genotype.hpp"
#include "kubetune/nas/katib_ops.hpp"
#include "kubetune/nas/supernet.hpp"
#include "kubetune/nas/tensor.hpp"

namespace kubetune::python {

namespace {
namespace nas = kubetune::nas;
using namespace py::literals;
using FArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using IArray = py::array_t<int, py::array::c_style | py::array::forcecast>;

struct Images {
  FArray x;
  IArray y;
  int n, c, h, w;
};

Images check_images(const FArray& X, const IArray& y) {
  if (X.ndim() != 4)
    throw py::value_error("param 'X' must be a 4-D array [n, channels, height, width], got " +
                          std::to_string(X.ndim()) + " dimensions");
  if (y.ndim() != 1 || y.shape(0) != X.shape(0))
    throw py::value_error("param 'y' must be 1-D with one label per image (" + std::to_string(X.shape(0)) + ")");
  return {X, y, static_cast<int>(X.shape(0)), static_cast<int>(X.shape(1)), static_cast<int>(X.shape(2)),
          static_cast<int>(X.shape(3))};
}

py::dict epoch_dict(const nas::EpochStats& s, int edges, int ops) {
  return py::dict("epoch"_a = s.epoch, "lr"_a = s.lr, "train_loss"_a = s.train_loss, "train_acc"_a = s.train_acc,
                  "val_loss"_a = s.val_loss, "val_acc"_a = s.val_acc, "seconds"_a = s.seconds,
                  "alpha_normal"_a = py::array_t<float>({edges, ops}, s.alpha_normal.data()),
                  "alpha_reduce"_a = py::array_t<float>({edges, ops}, s.alpha_reduce.data()),
                  "genotype"_a = s.genotype);
}

nas::DartsConfig make_config(const py::kwargs& kw) {
  static const nlohmann::json schema = nas::DartsConfig::settings_schema();
  return nas::DartsConfig::from_json(settings_from_kwargs(kw, schema, "DartsEngine", "darts"));
}

/// Images [n, c, h, w] float32 and labels int32 as numpy arrays (copies).
py::tuple dataset_arrays(const nas::Dataset& d) {
  FArray X({d.n, d.c, d.h, d.w});
  std::copy(d.x.begin(), d.x.end(), X.mutable_data());
  IArray y(d.n);
  std::copy(d.y.begin(), d.y.end(), y.mutable_data());
  return py::make_tuple(X, y);
}

/// Katib operations as Python passes them: (operation_type, [(parameter name, feasible-space list), ...]).
using PyKatibOps = std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>>;

std::vector<nas::KatibOperation> katib_operations(const PyKatibOps& in) {
  std::vector<nas::KatibOperation> out;
  for (const auto& [type, params] : in) {
    nas::KatibOperation op{type, {}};
    for (const auto& [name, list] : params) op.parameters.push_back({name, list});
    out.push_back(std::move(op));
  }
  return out;
}

/// NotFound (a missing file) as Python's FileNotFoundError.
template <class F>
auto file_call(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const kubetune::NotFound& e) {
    PyErr_SetString(PyExc_FileNotFoundError, e.what());
    throw py::error_already_set();
  }
}

py::dict genotype_dict(const nas::Genotype& g) {
  return py::dict("normal"_a = g.normal, "normal_concat"_a = g.normal_concat, "reduce"_a = g.reduce,
                  "reduce_concat"_a = g.reduce_concat);
}

}  // namespace

void bind_nas(py::module_& m) {
  py::module_ s = m.def_submodule("nas", "DARTS architecture search engine (C++; CPU via OpenMP, CUDA when built)");

  s.def("darts_ops", &nas::darts_ops, "DARTS' 8 candidate operations, in PRIMITIVES order");
  s.def("canonical_op", [](const std::string& name) { return std::string(nas::op_name(nas::parse_op(name))); },
        py::arg("name"), "DARTS name of an op given its DARTS or Katib name (ValueError if unknown)");
  s.def("katib_op_name", [](const std::string& name) { return std::string(nas::katib_op_name(nas::parse_op(name))); },
        py::arg("name"), "Katib name of an op given its DARTS or Katib name");
  s.def("set_n_threads", &nas::set_n_threads, py::arg("n"),
        "CPU threads of the nas ops called on this thread (<= 0: all); per thread, not process-wide");
  s.def("n_threads", &nas::n_threads, "The calling thread's resolved op thread count");

  // ---- Katib's NAS operations (parsed and validated in C++: src/nas/katib_ops.cpp)
  s.def("katib_darts_operation_types", &nas::katib_darts_operation_types,
        "nasConfig.operations[].operationType values a DARTS trial builds, in Katib's order");
  s.def(
      "katib_darts_search_space",
      [](const PyKatibOps& operations, bool present) {
        nas::KatibNasConfig c;
        c.present = present;
        c.operations = katib_operations(operations);
        return nas::katib_darts_search_space(c);
      },
      py::arg("operations"), py::arg("present") = true,
      "Op names of nasConfig.operations ([(operation_type, [(parameter, [values])])]) in Katib's order; "
      "ValueError naming the field");
  s.def(
      "katib_darts_num_layers",
      [](std::int64_t n) {
        nas::KatibNasConfig c;
        c.num_layers = n;
        return nas::katib_darts_num_layers(c);
      },
      py::arg("num_layers"), "graphConfig.numLayers, checked (ValueError when < 1)");
  s.def(
      "katib_operations_to_ops",
      [](const PyKatibOps& operations) { return nas::katib_operations_to_ops(katib_operations(operations)); },
      py::arg("operations"), "Op names from operations in the dict form, 'none' first unless listed");
  s.def("katib_trial_ops", &nas::katib_trial_ops, py::arg("names"), py::arg("what"),
        "A DARTS trial's ops from Katib's search-space names, 'none' appended unless listed; [] = DARTS' ops");

  // ---- data (the C++ loader: IDX plain or .gz, Fashion-MNIST lookup, standardisation)
  s.def("gzip_supported", &nas::gzip_supported, "True when this build reads gzip-compressed files (zlib)");
  s.def(
      "read_idx",
      [](const std::string& path) {
        nas::IdxArray a = nas::read_idx_file(path);
        std::vector<py::ssize_t> shape(a.dims.begin(), a.dims.end());
        py::array_t<std::uint8_t> out(shape);
        std::copy(a.values.begin(), a.values.end(), out.mutable_data());
        return out;
      },
      py::arg("path"), "An unsigned-byte IDX file (plain or gzip-compressed) as a uint8 array of its dims");
  s.def("fashion_mnist_dir", &nas::fashion_mnist_dir, py::arg("directory") = "",
        "The Fashion-MNIST directory: `directory`, else $KUBETUNE_SHARED_DATA/fashion-mnist, else Debian's");
  s.def("fashion_mnist_available", &nas::fashion_mnist_available, py::arg("directory") = "",
        py::arg("train") = true, "True when both files of the split exist (plain or .gz)");
  s.def(
      "load_fashion_mnist",
      [](const std::string& directory, bool train, int limit, bool standardize) {
        nas::Dataset d = file_call([&] {
          py::gil_scoped_release rel;
          nas::Dataset r = nas::load_fashion_mnist(directory, train, limit);
          if (standardize) nas::standardize(r);
          return r;
        });
        return dataset_arrays(d);
      },
      py::arg("directory") = "", py::arg("train") = true, py::arg("limit") = 0, py::arg("standardize") = true,
      "Fashion-MNIST as (X [n, 1, 28, 28] float32, y int32); FileNotFoundError when absent");
  s.def(
      "standardize",
      [](const FArray& X) {
        if (X.ndim() != 4)
          throw py::value_error("param 'X' must be a 4-D array [n, channels, height, width], got " +
                                std::to_string(X.ndim()) + " dimensions");
        FArray out({X.shape(0), X.shape(1), X.shape(2), X.shape(3)});
        std::copy(X.data(), X.data() + X.size(), out.mutable_data());
        float* p = out.mutable_data();
        const auto n = static_cast<std::int64_t>(X.shape(0)), hw = static_cast<std::int64_t>(X.shape(2) * X.shape(3));
        const int c = static_cast<int>(X.shape(1));
        py::gil_scoped_release rel;
        nas::standardize(p, n, c, hw);
        return out;
      },
      py::arg("X"), "Per-channel standardisation (zero mean, unit variance) of images [n, c, h, w]; a copy");
  s.def(
      "pool_stats",
      [](const std::string& device) {
        auto st = nas::pool_stats(nas::parse_device(device));
        return py::dict("in_use"_a = st.in_use, "cached"_a = st.cached, "peak"_a = st.peak,
                        "raw_allocs"_a = st.raw_allocs);
      },
      py::arg("device") = "cpu", "Byte counters of the device's caching memory pool");
  s.def("pool_reset_peak", [](const std::string& d) { nas::pool_reset_peak(nas::parse_device(d)); },
        py::arg("device") = "cpu");

  py::class_<nas::Genotype>(s, "Genotype", "Discrete cell architecture derived from the alphas (DARTS' format)")
      KT_RO(nas::Genotype, normal) KT_RO(nas::Genotype, normal_concat) KT_RO(nas::Genotype, reduce)
      KT_RO(nas::Genotype, reduce_concat) KT_RO(nas::Genotype, edges_per_node)
      .def("to_darts_string", &nas::Genotype::to_darts_string)
      .def("to_katib_string", &nas::Genotype::to_katib_string)
      .def("to_json", &nas::Genotype::to_json)
      .def("to_dict", &genotype_dict)
      .def("validate", &nas::Genotype::validate)
      .def("__repr__", &nas::Genotype::to_darts_string)
      .def("__str__", &nas::Genotype::to_darts_string);

  s.def(
      "derive_genotype",
      [](const FArray& normal, const FArray& reduce, int nodes, int multiplier, const std::vector<std::string>& ops,
         int k) {
        std::vector<float> a(normal.data(), normal.data() + normal.size());
        std::vector<float> b(reduce.data(), reduce.data() + reduce.size());
        return nas::derive_genotype(a, b, nodes, multiplier, ops, k);
      },
      py::arg("normal"), py::arg("reduce"), py::arg("nodes"), py::arg("multiplier"), py::arg("ops"), py::arg("k") = 2,
      "Genotype from [edges, ops] weight arrays: per node the k strongest edges by their strongest non-'none' op");

  py::class_<nas::Darts>(s, "DartsEngine",
                         "DARTS bilevel search (Liu, Simonyan & Yang, ICLR 2019). Keyword settings as DartsConfig.")
      .def(py::init([](const std::string& device, py::kwargs kw) {
             return std::make_unique<nas::Darts>(make_config(kw), nas::parse_device(device));
           }),
           py::arg("device") = "cpu")
      .def(
          "search",
          [](nas::Darts& d, const FArray& X, const IArray& y, int epochs, py::object on_epoch, py::object on_step) {
            Images im = check_images(X, y);
            const int E = d.net().num_edges(), K = d.net().num_ops();
            std::function<bool(const nas::EpochStats&)> fe;
            std::function<void(int, int)> fs;
            if (!on_epoch.is_none())
              fe = [&](const nas::EpochStats& st) {
                py::gil_scoped_acquire g;
                py::object r = on_epoch(epoch_dict(st, E, K));
                return r.is_none() ? true : py::cast<bool>(r);
              };
            if (!on_step.is_none())
              fs = [&](int a, int b) {
                py::gil_scoped_acquire g;
                on_step(a, b);
              };
            nas::SearchResult res;
            {
              py::gil_scoped_release rel;
              res = d.search(im.x.data(), im.y.data(), im.n, im.c, im.h, im.w, epochs, fe, fs);
            }
            auto epoch = [&](const nas::EpochStats& st) { return epoch_dict(st, E, K); };
            return py::dict("history"_a = list_of(res.history, epoch), "genotype"_a = res.genotype,
                            "best_val_acc"_a = res.best_val_acc);
          },
          py::arg("X"), py::arg("y"), py::arg("epochs"), py::arg("on_epoch") = py::none(),
          py::arg("on_step") = py::none(),
          "Run the search on X [n, c, h, w] float32 and integer labels y; returns history, genotype, best_val_acc")
      .def(
          "step",
          [](nas::Darts& d, const FArray& Xt, const IArray& yt, const FArray& Xv, const IArray& yv, double lr) {
            Images a = check_images(Xt, yt), b = check_images(Xv, yv);
            std::vector<int> ra(a.n), rb(b.n);
            for (int i = 0; i < a.n; ++i) ra[i] = i;
            for (int i = 0; i < b.n; ++i) rb[i] = i;
            py::gil_scoped_release rel;
            auto bt = d.make_batch(a.x.data(), a.y.data(), ra, a.c, a.h, a.w);
            auto bv = d.make_batch(b.x.data(), b.y.data(), rb, b.c, b.h, b.w);
            auto r = d.step(bt, bv, lr);
            return std::make_pair(r.loss, r.correct);
          },
          py::arg("X_train"), py::arg("y_train"), py::arg("X_val"), py::arg("y_val"), py::arg("lr"),
          "One bilevel step (alpha on the validation batch, then weights); returns (train loss, correct)")
      .def(
          "evaluate",
          [](nas::Darts& d, const FArray& X, const IArray& y) {
            Images im = check_images(X, y);
            py::gil_scoped_release rel;
            return d.evaluate(im.x.data(), im.y.data(), im.n, im.c, im.h, im.w);
          },
          py::arg("X"), py::arg("y"), "(loss, accuracy) in evaluation mode")
      .def("genotype", &nas::Darts::genotype)
      .def("alpha_softmax",
           [](nas::Darts& d, bool reduce) {
             auto v = d.net().alpha_softmax(reduce);
             return py::array_t<float>({d.net().num_edges(), d.net().num_ops()}, v.data());
           },
           py::arg("reduce") = false)
      .def_property(
          "alphas",
          [](nas::Darts& d) {
            const auto& a = d.net().alphas();
            return py::array_t<float>({2, d.net().num_edges(), d.net().num_ops()}, a.data());
          },
          [](nas::Darts& d, const FArray& a) {
            auto& dst = d.net().alphas();
            if (static_cast<std::size_t>(a.size()) != dst.size())
              throw py::value_error("param 'alphas' must have " + std::to_string(dst.size()) + " entries");
            std::copy(a.data(), a.data() + a.size(), dst.begin());
          })
      .def_property_readonly("num_edges", [](nas::Darts& d) { return d.net().num_edges(); })
      .def_property_readonly("ops", [](nas::Darts& d) { return d.net().config().ops; })
      .def_property_readonly("num_weights", [](nas::Darts& d) { return d.net().num_weights(); })
      .def_property_readonly("n_threads", [](nas::Darts& d) { return d.config().n_threads; },
                             "CPU threads of this engine's ops (0: the calling thread's setting)")
      .def_property_readonly("seed", [](nas::Darts& d) { return d.config().seed; })
      .def("lr_at", &nas::Darts::lr_at, py::arg("epoch"), py::arg("epochs"));
}

}  // namespace kubetune::python
