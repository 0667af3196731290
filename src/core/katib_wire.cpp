// Katib's GetSuggestionsRequest read straight from its protobuf wire bytes into the request shape of katib.hpp.
// The request carries every trial of the experiment, and building Python objects for thousands of trials costs
// more than answering: so the service passes the serialized message here. Field numbers and enum values are
// those of Katib's api.v1beta1 api.proto (the kubeflow-katib package's generated descriptors); unknown fields
// are skipped, as any protobuf reader does. Encoding: https://protobuf.dev/programming-guides/encoding/.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/katib.hpp"
#include "katib_request.hpp"

namespace kubetune::katib {
namespace {

using json = nlohmann::json;

// One length-delimited region of the message.
class Reader {
 public:
  explicit Reader(std::string_view b) : p_(b.data()), end_(b.data() + b.size()) {}
  bool done() const noexcept { return p_ == end_; }

  // Next field: number and wire type.
  std::pair<std::uint32_t, int> tag() {
    std::uint64_t t = varint();
    KT_CHECK((t >> 3) > 0 && (t >> 3) <= 0x1fffffff, InvalidArgument, "malformed request: bad field tag");
    return {static_cast<std::uint32_t>(t >> 3), static_cast<int>(t & 7)};
  }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      KT_CHECK(p_ < end_, InvalidArgument, "malformed request: truncated varint");
      auto byte = static_cast<std::uint8_t>(*p_++);
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    KT_THROW(InvalidArgument, "malformed request: varint longer than 10 bytes");
  }
  std::string_view bytes() {
    std::uint64_t n = varint();
    KT_CHECK(n <= static_cast<std::uint64_t>(end_ - p_), InvalidArgument, "malformed request: field length ", n,
             " past the end of its message");
    std::string_view s(p_, static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0: (void)varint(); return;
      case 1: advance(8); return;
      case 2: (void)bytes(); return;
      case 5: advance(4); return;
      default: KT_THROW(InvalidArgument, "malformed request: unsupported wire type ", wire_type);
    }
  }

 private:
  void advance(std::size_t n) {
    KT_CHECK(n <= static_cast<std::size_t>(end_ - p_), InvalidArgument, "malformed request: truncated field");
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

// Calls f(field, wire_type, reader) for each field of the message in `b`.
template <class F>
void each_field(std::string_view b, F&& f) {
  Reader r(b);
  while (!r.done()) {
    auto [field, wt] = r.tag();
    f(field, wt, r);
  }
}

std::string text(Reader& r, int wt) {
  KT_CHECK(wt == 2, InvalidArgument, "malformed request: string field with wire type ", wt);
  return std::string(r.bytes());
}

std::string_view sub(Reader& r, int wt) {
  KT_CHECK(wt == 2, InvalidArgument, "malformed request: message field with wire type ", wt);
  return r.bytes();
}

// Calls f(bytes) for each field `n` (a message) of the message in `b`, skipping the other fields: the wrappers
// that hold one repeated message (ParameterSpecs, ParameterAssignments, Observation).
template <class F>
void each_message(std::string_view b, std::uint32_t n, F&& f) {
  each_field(b, [&](std::uint32_t field, int wt, Reader& r) {
    if (field == n) f(sub(r, wt));
    else r.skip(wt);
  });
}

std::int64_t number(Reader& r, int wt) {
  KT_CHECK(wt == 0, InvalidArgument, "malformed request: integer field with wire type ", wt);
  return static_cast<std::int64_t>(r.varint());
}

// Enum value -> name, or the number itself for values this version does not know (rejected downstream).
std::string enum_name(std::int64_t v, std::initializer_list<const char*> names) {
  if (v >= 0 && v < static_cast<std::int64_t>(names.size())) return *(names.begin() + v);
  return std::to_string(v);
}

// {1: name, 2: value} messages: AlgorithmSetting, ParameterAssignment, Metric.
json name_value(std::string_view b) {
  std::string name, value;
  each_field(b, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) name = text(r, wt);
    else if (f == 2) value = text(r, wt);
    else r.skip(wt);
  });
  return json::array({std::move(name), std::move(value)});
}

json parameter(std::string_view b) {
  json p = {{"name", ""}, {"type", "UNKNOWN_TYPE"}, {"min", ""}, {"max", ""}, {"step", ""}, {"list", json::array()},
            {"distribution", "DISTRIBUTION_UNSPECIFIED"}};
  each_field(b, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) {
      p["name"] = text(r, wt);
    } else if (f == 2) {
      p["type"] = enum_name(number(r, wt), {"UNKNOWN_TYPE", "DOUBLE", "INT", "DISCRETE", "CATEGORICAL"});
    } else if (f == 3) {  // FeasibleSpace
      each_field(sub(r, wt), [&](std::uint32_t g, int wt2, Reader& r2) {
        switch (g) {
          case 1: p["max"] = text(r2, wt2); break;
          case 2: p["min"] = text(r2, wt2); break;
          case 3: p["list"].push_back(text(r2, wt2)); break;
          case 4: p["step"] = text(r2, wt2); break;
          case 5:
            p["distribution"] = enum_name(number(r2, wt2), {"DISTRIBUTION_UNSPECIFIED", "UNIFORM", "LOG_UNIFORM",
                                                            "NORMAL", "LOG_NORMAL"});
            break;
          default: r2.skip(wt2);
        }
      });
    } else {
      r.skip(wt);
    }
  });
  return p;
}

json experiment(std::string_view b) {
  json e = {{"name", ""},
            {"algorithm", {{"name", ""}, {"settings", json::array()}}},
            {"objective", {{"type", "UNKNOWN"}, {"metric", ""}}},
            {"parameters", json::array()},
            {"parallel_trial_count", 0},
            {"max_trial_count", 0}};
  each_field(b, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) {
      e["name"] = text(r, wt);
    } else if (f == 2) {  // ExperimentSpec
      each_field(sub(r, wt), [&](std::uint32_t g, int wt2, Reader& r2) {
        if (g == 1) {  // ParameterSpecs
          each_message(sub(r2, wt2), 1, [&](std::string_view m) { e["parameters"].push_back(parameter(m)); });
        } else if (g == 2) {  // ObjectiveSpec
          each_field(sub(r2, wt2), [&](std::uint32_t h, int wt3, Reader& r3) {
            if (h == 1) e["objective"]["type"] = enum_name(number(r3, wt3), {"UNKNOWN", "MINIMIZE", "MAXIMIZE"});
            else if (h == 3) e["objective"]["metric"] = text(r3, wt3);
            else r3.skip(wt3);
          });
        } else if (g == 5 || g == 6) {  // int32 parallel_trial_count, max_trial_count
          e[g == 5 ? "parallel_trial_count" : "max_trial_count"] =
              static_cast<std::int32_t>(static_cast<std::uint32_t>(number(r2, wt2)));
        } else if (g == 3) {  // AlgorithmSpec
          each_field(sub(r2, wt2), [&](std::uint32_t h, int wt3, Reader& r3) {
            if (h == 1) e["algorithm"]["name"] = text(r3, wt3);
            else if (h == 2) e["algorithm"]["settings"].push_back(name_value(sub(r3, wt3)));
            else r3.skip(wt3);
          });
        } else {
          r2.skip(wt2);
        }
      });
    } else {
      r.skip(wt);
    }
  });
  return e;
}

// {1: name, 2: value} as views into the message.
std::pair<std::string_view, std::string_view> name_value_view(std::string_view b) {
  std::pair<std::string_view, std::string_view> nv;
  each_field(b, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) nv.first = sub(r, wt);
    else if (f == 2) nv.second = sub(r, wt);
    else r.skip(wt);
  });
  return nv;
}

constexpr const char* kConditions[] = {"CREATED", "RUNNING", "SUCCEEDED", "KILLED", "FAILED", "METRICSUNAVAILABLE",
                                       "EARLYSTOPPED", "UNKNOWN"};

TrialView trial(std::string_view b) {
  TrialView t;
  t.condition = kConditions[0];
  each_field(b, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) {
      t.name = sub(r, wt);
    } else if (f == 2) {  // TrialSpec
      each_field(sub(r, wt), [&](std::uint32_t g, int wt2, Reader& r2) {
        if (g == 3) {  // ParameterAssignments
          each_message(sub(r2, wt2), 1, [&](std::string_view m) { t.assignments.push_back(name_value_view(m)); });
        } else {
          r2.skip(wt2);
        }
      });
    } else if (f == 3) {  // TrialStatus
      each_field(sub(r, wt), [&](std::uint32_t g, int wt2, Reader& r2) {
        if (g == 1) {
          t.start_time = sub(r2, wt2);
        } else if (g == 3) {
          std::int64_t c = number(r2, wt2);
          bool known = c >= 0 && c < static_cast<std::int64_t>(std::size(kConditions));
          t.condition = known ? kConditions[c] : std::to_string(c);  // an unknown one is named downstream
        } else if (g == 4) {  // Observation
          each_message(sub(r2, wt2), 1, [&](std::string_view m) { t.metrics.push_back(name_value_view(m)); });
        } else {
          r2.skip(wt2);
        }
      });
    } else {
      r.skip(wt);
    }
  });
  return t;
}

json to_json(const TextPairs& ps) {
  json out = json::array();
  for (const auto& [k, v] : ps) out.push_back(json::array({std::string(k), std::string(v)}));
  return out;
}

}  // namespace

RequestView read_suggestions_request(std::string_view bytes) {
  RequestView req;
  req.experiment = experiment({});
  each_field(bytes, [&](std::uint32_t f, int wt, Reader& r) {
    if (f == 1) {
      req.experiment = experiment(sub(r, wt));
    } else if (f == 2) {
      req.trials.push_back(trial(sub(r, wt)));
    } else if (f == 4) {  // int32 current_request_number: negative values arrive sign-extended to 64 bits
      req.count = static_cast<std::int32_t>(static_cast<std::uint32_t>(number(r, wt)));
    } else {
      r.skip(wt);
    }
  });
  return req;
}

nlohmann::json decode_suggestions_request(std::string_view bytes) {
  RequestView v = read_suggestions_request(bytes);
  json trials = json::array();
  for (const auto& t : v.trials)
    trials.push_back({{"name", std::string(t.name)},
                      {"start_time", std::string(t.start_time)},
                      {"condition", t.condition},
                      {"assignments", to_json(t.assignments)},
                      {"metrics", to_json(t.metrics)}});
  return {{"experiment", std::move(v.experiment)}, {"trials", std::move(trials)}, {"count", v.count}};
}

}  // namespace kubetune::katib
