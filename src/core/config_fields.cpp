// Config tables (config_fields.hpp): reading, writing, checking and describing declared settings.
#include "kubetune/core/config_fields.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "kubetune/core/error.hpp"
#include "kubetune/core/json_limits.hpp"
#include "kubetune/core/settings.hpp"

namespace kubetune::settings {
namespace {
using nlohmann::json;

// Shortest text that reads back as d (0.25, 1e-05, 100).
std::string show(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string range_text(const Field& f) {
  if (f.has_lo && f.has_hi)
    return std::string("in ") + (f.lo_open ? "(" : "[") + show(f.lo) + ", " + show(f.hi) + (f.hi_open ? ")" : "]");
  if (f.has_lo) return std::string(f.lo_open ? "> " : ">= ") + show(f.lo);
  if (f.has_hi) return std::string(f.hi_open ? "< " : "<= ") + show(f.hi);
  return "";
}

bool in_range(const Field& f, double d) {
  if (!f.has_lo && !f.has_hi) return true;
  if (!std::isfinite(d)) return false;
  if (f.has_lo && (f.lo_open ? !(d > f.lo) : !(d >= f.lo))) return false;
  if (f.has_hi && (f.hi_open ? !(d < f.hi) : !(d <= f.hi))) return false;
  return true;
}

void* member(const Field& f, void* obj) { return f.at(f.via ? f.via(obj) : obj); }
const void* member(const Field& f, const void* obj) { return member(f, const_cast<void*>(obj)); }

// Exact integer in [lo, hi] from 10, 10.0 or "10"; `label` is "tpe: setting 'gamma_max'".
std::int64_t read_int(const json& v, const std::string& label, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const auto i = v.get<std::int64_t>();
    KT_CHECK(i >= lo && i <= hi, InvalidArgument, label, " = ", i, " is out of range (allowed ", lo, "..", hi, ")");
    return i;
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    KT_CHECK(u <= static_cast<std::uint64_t>(hi), InvalidArgument, label, " = ", u, " is out of range (allowed ", lo,
             "..", hi, ")");
    return static_cast<std::int64_t>(u);
  }
  const double d = parse_number(v, label);
  KT_CHECK(std::isfinite(d) && d == std::floor(d), InvalidArgument, label, " = ", json_summary(v),
           " must be an integer");
  KT_CHECK(d >= static_cast<double>(lo) && d <= static_cast<double>(hi) && std::fabs(d) < 9.2e18, InvalidArgument,
           label, " = ", json_summary(v), " is out of range (allowed ", lo, "..", hi, ")");
  return static_cast<std::int64_t>(d);
}

std::uint64_t read_uint(const json& v, const std::string& label) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    KT_CHECK(i >= 0, InvalidArgument, label, " = ", i, " must be a non-negative integer");
    return static_cast<std::uint64_t>(i);
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (!s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos) return std::stoull(s);
  }
  const double d = parse_number(v, label);
  KT_CHECK(std::isfinite(d) && d >= 0 && d == std::floor(d) && d < 1.8e19, InvalidArgument, label, " = ",
           json_summary(v), " must be a non-negative integer");
  return static_cast<std::uint64_t>(d);
}

std::string read_string(const json& v, const std::string& label) {
  KT_CHECK(v.is_string(), InvalidArgument, label, " = ", json_summary(v), " must be a string");
  return v.get<std::string>();
}

std::string choices_text(const Field& f) { return join_names(f.choices); }

int read_choice(const Field& f, const json& v, const std::string& label) {
  const std::string s = read_string(v, label);
  for (std::size_t i = 0; i < f.choices.size(); ++i)
    if (f.choices[i] == s) return static_cast<int>(i);
  if (f.parse_choice) {
    try {
      return f.parse_choice(s);
    } catch (const InvalidArgument& e) {
      KT_THROW(InvalidArgument, label, " = \"", s, "\" is not one of ", choices_text(f), " (", e.what(), ")");
    }
  }
  KT_THROW(InvalidArgument, label, " = \"", s, "\" is not one of ", choices_text(f));
}

// Range check of a numeric value that was read (or built in C++).
void check_value(const Field& f, double d, const std::string& label, const std::string& shown) {
  KT_CHECK(in_range(f, d), InvalidArgument, label, " = ", shown, " must be ", range_text(f));
}

double numeric(const Field& f, const void* m) {
  switch (f.kind) {
    case Kind::Int: return *static_cast<const int*>(m);
    case Kind::Int64: return static_cast<double>(*static_cast<const std::int64_t*>(m));
    case Kind::UInt64: return static_cast<double>(*static_cast<const std::uint64_t*>(m));
    case Kind::Double: return *static_cast<const double*>(m);
    default: return 0.0;
  }
}

bool is_numeric(Kind k) { return k == Kind::Int || k == Kind::Int64 || k == Kind::UInt64 || k == Kind::Double; }

void read_value(const Field& f, const json& v, void* obj, const std::string& label) {
  if (f.kind == Kind::Ignored) {
    (void)read_uint(v, label);
    return;
  }
  void* m = member(f, obj);
  switch (f.kind) {
    case Kind::Bool: {
      auto b = parse_boolean(v);
      KT_CHECK(b.has_value(), InvalidArgument, label, " = ", json_summary(v),
               " is not a boolean (true/false, 0/1, \"true\"/\"false\", \"True\"/\"False\", \"1\"/\"0\")");
      *static_cast<bool*>(m) = *b;
      return;
    }
    case Kind::Int: {
      const auto i = read_int(v, label, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
      check_value(f, static_cast<double>(i), label, std::to_string(i));
      *static_cast<int*>(m) = static_cast<int>(i);
      return;
    }
    case Kind::Int64: {
      const auto i = read_int(v, label, std::numeric_limits<std::int64_t>::min() / 2,
                              std::numeric_limits<std::int64_t>::max() / 2);
      check_value(f, static_cast<double>(i), label, std::to_string(i));
      *static_cast<std::int64_t*>(m) = i;
      return;
    }
    case Kind::UInt64: {
      const auto u = read_uint(v, label);
      check_value(f, static_cast<double>(u), label, std::to_string(u));
      *static_cast<std::uint64_t*>(m) = u;
      return;
    }
    case Kind::OptUInt64: {
      auto& o = *static_cast<std::optional<std::uint64_t>*>(m);
      if (v.is_null()) o.reset();
      else o = read_uint(v, label);
      return;
    }
    case Kind::OptInt: {
      auto& o = *static_cast<std::optional<int>*>(m);
      if (v.is_null()) {
        o.reset();
        return;
      }
      const auto i = read_int(v, label, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
      check_value(f, static_cast<double>(i), label, std::to_string(i));
      o = static_cast<int>(i);
      return;
    }
    case Kind::OptDouble: {
      auto& o = *static_cast<std::optional<double>*>(m);
      if (v.is_null()) {
        o.reset();
        return;
      }
      const double d = parse_number(v, label);
      check_value(f, d, label, json_summary(v));
      o = d;
      return;
    }
    case Kind::Double: {
      const double d = parse_number(v, label);
      check_value(f, d, label, json_summary(v));
      *static_cast<double*>(m) = d;
      return;
    }
    case Kind::String: *static_cast<std::string*>(m) = read_string(v, label); return;
    case Kind::Choice: f.set_choice(m, read_choice(f, v, label)); return;
    case Kind::CountMap: {
      KT_CHECK(v.is_object(), InvalidArgument, label, " must map parameter names to counts, got ", json_summary(v));
      auto& out = *static_cast<std::map<std::string, std::uint64_t>*>(m);
      out.clear();
      for (const auto& [name, n] : v.items()) {
        const std::string l = label.substr(0, label.size() - 1) + "." + name + "'";
        const std::uint64_t k = read_uint(n, l);
        KT_CHECK(k >= 1, InvalidArgument, l, " = 0 must be >= 1");
        out[name] = k;
      }
      return;
    }
    case Kind::StepMap: {
      KT_CHECK(v.is_object(), InvalidArgument, label, " must map parameter names to steps, got ", json_summary(v));
      auto& out = *static_cast<std::map<std::string, double>*>(m);
      out.clear();
      for (const auto& [name, s] : v.items()) {
        const std::string l = label.substr(0, label.size() - 1) + "." + name + "'";
        const double st = parse_number(s, l);
        KT_CHECK(st > 0 && std::isfinite(st), InvalidArgument, l, " = ", json_summary(s), " must be > 0");
        out[name] = st;
      }
      return;
    }
    case Kind::StringList: {
      KT_CHECK(v.is_array(), InvalidArgument, label, " must be a list of strings, got ", json_summary(v));
      auto& out = *static_cast<std::vector<std::string>*>(m);
      out.clear();
      for (std::size_t i = 0; i < v.size(); ++i)
        out.push_back(read_string(v[i], label.substr(0, label.size() - 1) + "[" + std::to_string(i) + "]'"));
      return;
    }
    case Kind::Object: f.read_object(v, m); return;
    case Kind::Ignored: return;
  }
}

json value_json(const Field& f, const void* obj) {
  const void* m = member(f, obj);
  switch (f.kind) {
    case Kind::Bool: return *static_cast<const bool*>(m);
    case Kind::Int: return *static_cast<const int*>(m);
    case Kind::Int64: return *static_cast<const std::int64_t*>(m);
    case Kind::UInt64: return *static_cast<const std::uint64_t*>(m);
    case Kind::OptUInt64: {
      const auto& o = *static_cast<const std::optional<std::uint64_t>*>(m);
      return o ? json(*o) : json(nullptr);
    }
    case Kind::OptInt: {
      const auto& o = *static_cast<const std::optional<int>*>(m);
      return o ? json(*o) : json(nullptr);
    }
    case Kind::OptDouble: {
      const auto& o = *static_cast<const std::optional<double>*>(m);
      return o ? json(*o) : json(nullptr);
    }
    case Kind::Double: return *static_cast<const double*>(m);
    case Kind::String: return *static_cast<const std::string*>(m);
    case Kind::Choice: {
      const int i = f.get_choice(m);
      KT_CHECK(i >= 0 && static_cast<std::size_t>(i) < f.choices.size(), InvalidArgument, "setting '", f.name,
               "' holds value ", i, ", not one of ", choices_text(f));
      return f.choices[static_cast<std::size_t>(i)];
    }
    case Kind::CountMap: {
      json o = json::object();
      for (const auto& [k, v] : *static_cast<const std::map<std::string, std::uint64_t>*>(m)) o[k] = v;
      return o;
    }
    case Kind::StepMap: {
      json o = json::object();
      for (const auto& [k, v] : *static_cast<const std::map<std::string, double>*>(m)) o[k] = v;
      return o;
    }
    case Kind::StringList: return *static_cast<const std::vector<std::string>*>(m);
    case Kind::Object: {
      json o;
      f.write_object(m, o);
      return o;
    }
    case Kind::Ignored: return nullptr;
  }
  return nullptr;
}

const char* type_name(const Field& f) {
  switch (f.kind) {
    case Kind::Bool: return "bool";
    case Kind::Int:
    case Kind::Int64:
    case Kind::UInt64:
    case Kind::Ignored: return "int";
    case Kind::OptUInt64:
    case Kind::OptInt: return "int | None";
    case Kind::OptDouble: return "float | None";
    case Kind::Double: return "float";
    case Kind::String:
    case Kind::Choice: return "str";
    case Kind::CountMap: return "dict[str, int]";
    case Kind::StepMap: return "dict[str, float]";
    case Kind::StringList: return "list[str]";
    case Kind::Object: return "dict[str, Any]";
  }
  return "object";
}
}  // namespace

FieldTable::FieldTable(std::string what) : what_(std::move(what)) {}

void FieldTable::add(Field f) {
  for (const Field& g : fields_) KT_CHECK(g.name != f.name, InvalidArgument, what_, ": setting '", f.name, "' declared twice");
  fields_.push_back(std::move(f));
}

void FieldTable::add_nested(Field f, void* (*via)(void*)) {
  KT_CHECK(f.via == nullptr, InvalidArgument, what_, ": setting '", f.name, "' is nested twice");
  f.via = via;
  add(std::move(f));
}

Field& FieldTable::last() {
  KT_CHECK(!fields_.empty(), InvalidArgument, what_, ": modifier before the first field");
  return fields_.back();
}

Field& FieldTable::named(const std::string& name) {
  for (Field& f : fields_)
    if (f.name == name) return f;
  KT_THROW(InvalidArgument, what_, ": no setting '", name, "' declared");
}

const Field* FieldTable::find(const std::string& name) const {
  for (const Field& f : fields_) {
    if (f.name == name) return &f;
    for (const auto& a : f.aliases)
      if (a == name) return &f;
    for (const auto& a : f.deprecated)
      if (a == name) return &f;
  }
  return nullptr;
}

void FieldTable::read(const json& j, void* obj) const {
  if (j.is_null()) return;
  KT_CHECK(j.is_object(), InvalidArgument, what_, " config must be a JSON object, got ", json_summary(j));
  std::vector<const std::string*> given(fields_.size(), nullptr);  // the key each field was read from
  for (const auto& [k, v] : j.items()) {
    if (k == "type") continue;
    bool extra = false;
    for (const auto& e : extras_) extra = extra || e == k;
    if (extra) continue;
    const Field* f = find(k);
    if (!f) {
      std::string list;
      for (const Field& g : fields_) {
        list += (list.empty() ? "" : ", ") + g.name;
        for (const auto& a : g.aliases) list += " / " + a;
        for (const auto& a : g.deprecated) list += " / " + a;
      }
      for (const auto& e : extras_) list += ", " + e;
      KT_THROW(InvalidArgument, what_, ": unknown setting '", k, "' (accepted: ", list, ")");
    }
    const auto idx = static_cast<std::size_t>(f - fields_.data());
    KT_CHECK(given[idx] == nullptr, InvalidArgument, what_, ": setting '", f->name, "' is given twice (as '",
             *given[idx], "' and '", k, "')");
    given[idx] = &k;
    read_value(*f, v, obj, what_ + ": setting '" + k + "'");
  }
}

json FieldTable::write(const void* obj) const {
  json j = json::object();
  for (const Field& f : fields_)
    if (f.kind != Kind::Ignored) j[f.name] = value_json(f, obj);
  return j;
}

void FieldTable::check(const void* obj) const {
  for (const Field& f : fields_) {
    if (!f.has_lo && !f.has_hi) continue;
    const void* m = member(f, obj);
    if (f.kind == Kind::OptInt || f.kind == Kind::OptDouble) {  // an unset optional has no range to meet
      const json v = value_json(f, obj);
      if (!v.is_null()) check_value(f, v.get<double>(), what_ + ": setting '" + f.name + "'", v.dump());
      continue;
    }
    if (!is_numeric(f.kind)) continue;
    const double d = numeric(f, m);
    std::string shown = f.kind == Kind::Double ? show(d) : value_json(f, obj).dump();
    check_value(f, d, what_ + ": setting '" + f.name + "'", shown);
  }
}

json FieldTable::schema(const void* defaults) const {
  json out = json::array();
  for (const Field& f : fields_) {
    json e = {{"name", f.name}, {"type", type_name(f)}, {"doc", f.doc}, {"aliases", f.aliases},
              {"deprecated", f.deprecated}};
    e["default"] = f.kind == Kind::Ignored ? json(nullptr) : value_json(f, defaults);
    if (f.kind == Kind::Choice) {
      e["choices"] = f.choices;
      e["exact"] = f.parse_choice == nullptr;  // only these spellings (a Literal in the stubs)
    }
    if (f.kind == Kind::Ignored) e["ignored"] = true;
    if (f.has_lo) e[f.lo_open ? "above" : "min"] = f.lo;
    if (f.has_hi) e[f.hi_open ? "below" : "max"] = f.hi;
    out.push_back(std::move(e));
  }
  return out;
}

std::string schema_doc(const json& schema) {
  auto list = [](const json& a) {
    std::string s;
    for (const auto& e : a) s += (s.empty() ? "" : ", ") + e.get<std::string>();
    return s;
  };
  std::string out;
  for (const auto& e : schema) {
    std::string line = e.at("name").get<std::string>() + ": " + e.at("type").get<std::string>();
    if (!e.contains("ignored")) {
      const json& d = e.at("default");
      line += " = " + (d.is_null() ? std::string("None") : d.is_boolean() ? (d.get<bool>() ? "True" : "False")
                                                                           : d.dump());
    }
    std::string doc = e.at("doc").get<std::string>();
    if (!doc.empty() && doc.back() != '.') doc += '.';
    line += ". " + doc;
    if (e.contains("choices")) line += " One of " + list(e["choices"]) + ".";
    std::string range;
    if (e.contains("min")) range = ">= " + show(e["min"].get<double>());
    if (e.contains("above")) range = "> " + show(e["above"].get<double>());
    if (e.contains("max")) range += (range.empty() ? "<= " : ", <= ") + show(e["max"].get<double>());
    if (e.contains("below")) range += (range.empty() ? "< " : ", < ") + show(e["below"].get<double>());
    if (!range.empty()) line += " Must be " + range + ".";
    if (!e.at("aliases").empty()) line += " Also accepted as " + list(e["aliases"]) + ".";
    if (!e.at("deprecated").empty()) line += " Deprecated name: " + list(e["deprecated"]) + ".";
    out += line + "\n";
  }
  return out;
}

}  // namespace kubetune::settings
