// Config tables: a searcher's or pruner's settings declared once (name, member, default, range, aliases, doc).
// From one table come from_json (unknown keys refused, Katib strings coerced by one rule, ranges checked),
// to_json, validation of a struct built in C++, and the schema the Python bindings and stubs use.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kubetune::settings {

/// How a field's value is read and written. Integers accept 10, 10.0 and "10"; booleans true/false, 0/1 and
/// "true"/"false"/"True"/"False"/"1"/"0" (the one Katib rule, see settings.hpp's boolean()).
enum class Kind {
  Bool,
  Int,        ///< int
  Int64,      ///< std::int64_t
  UInt64,     ///< std::uint64_t / std::size_t
  OptUInt64,  ///< std::optional<std::uint64_t>; JSON null = unset
  OptInt,     ///< std::optional<int>; JSON null = unset
  OptDouble,  ///< std::optional<double>; JSON null = unset
  Double,
  String,
  Choice,     ///< an enum (or bool) written as one of `choices`
  CountMap,   ///< std::map<std::string, std::uint64_t>, each >= 1
  StepMap,    ///< std::map<std::string, double>, each finite and > 0
  StringList, ///< std::vector<std::string>
  Object,     ///< a member with a JSON form of its own (an object), read and written by functions of its type
  Ignored,    ///< accepted and checked as a non-negative integer, never stored (Katib's random_state of random)
};

/// One declared setting. Built through Fields<T>; plain data so that the table's logic lives in one .cpp.
struct Field {
  std::string name;
  Kind kind = Kind::Double;
  void* (*at)(void*) = nullptr;   ///< address of the member inside the (sub)object; nullptr for Ignored
  void* (*via)(void*) = nullptr;  ///< the nested struct holding the member (nullptr: the config itself)
  int (*get_choice)(const void*) = nullptr;
  void (*set_choice)(void*, int) = nullptr;
  int (*parse_choice)(const std::string&) = nullptr;  ///< lenient parser (nullptr: exactly one of `choices`)
  void (*write_object)(const void*, nlohmann::json&) = nullptr;  ///< Object: the member's JSON
  void (*read_object)(const nlohmann::json&, void*) = nullptr;   ///< Object: reads the member; its errors pass as-is
  std::vector<std::string> choices;                   ///< index = the enum's value
  std::vector<std::string> aliases;                   ///< other accepted names (Katib's, older ones)
  std::vector<std::string> deprecated;                ///< accepted names Python warns about
  bool has_lo = false, has_hi = false, lo_open = false, hi_open = false;
  double lo = 0.0, hi = 0.0;
  std::string doc;
};

/// The type-independent table: every algorithm over Field lives here (src/core/config_fields.cpp).
class FieldTable {
 public:
  /// `what` opens every error message ("tpe", "gp", "asha pruner").
  explicit FieldTable(std::string what);

  const std::string& what() const noexcept { return what_; }
  const std::vector<Field>& fields() const noexcept { return fields_; }
  /// Keys the owner reads itself (e.g. TPE's "preset"): accepted by read(), left to the owner.
  const std::vector<std::string>& extras() const noexcept { return extras_; }

  /// Reads every key of `j` (an object, or null = nothing) into `obj`, which keeps its values for absent keys.
  /// "type" and extras() are skipped. Unknown keys, a setting given twice (under two of its names), bad
  /// values and out-of-range values throw InvalidArgument naming the key as given and the value.
  void read(const nlohmann::json& j, void* obj) const;
  /// Every field (Ignored ones excepted) as a JSON object, under its canonical name.
  nlohmann::json write(const void* obj) const;
  /// Checks every field's range on `obj` (a config built in C++), naming the field and value.
  void check(const void* obj) const;
  /// [{name, type, default, doc, aliases, deprecated, choices?, min?, max?, ...}] with defaults from `defaults`.
  nlohmann::json schema(const void* defaults) const;
  /// The field named `name` (canonical, alias or deprecated), or nullptr.
  const Field* find(const std::string& name) const;

 protected:
  void add(Field f);
  void add_nested(Field f, void* (*via)(void*));  // one level of nesting
  Field& last();
  Field& named(const std::string& name);
  void add_extra(const char* name) { extras_.emplace_back(name); }

 private:
  std::string what_;
  std::vector<Field> fields_;
  std::vector<std::string> extras_;
};

/// One line per setting of a schema(), "name: type = default. doc. Must be >= 1. Also accepted as ...", for
/// docstrings.
std::string schema_doc(const nlohmann::json& schema);

namespace detail {
template <class>
struct member_of;
template <class C, class V>
struct member_of<V C::*> {
  using owner = C;
  using type = V;
};
template <auto M>
void* member_at(void* o) {
  return &(static_cast<typename member_of<decltype(M)>::owner*>(o)->*M);
}
template <class E>
int choice_get(const void* m) {
  return static_cast<int>(*static_cast<const E*>(m));
}
template <class E>
void choice_set(void* m, int i) {
  *static_cast<E*>(m) = static_cast<E>(i);
}
template <auto Parse>
int choice_parse(const std::string& s) {
  return static_cast<int>(Parse(s));
}
template <class V>
constexpr bool is_null_v = std::is_same_v<V, std::nullptr_t>;
// Object members: JSON text through ToJson(v) / FromJson(text), or V's own to_json() / V::from_json(text).
template <class V, auto ToJson, class J>
void object_write(const void* m, J& out) {
  const V& v = *static_cast<const V*>(m);
  if constexpr (is_null_v<decltype(ToJson)>) out = J::parse(v.to_json());
  else out = J::parse(ToJson(v));
}
template <class V, auto FromJson, class J>
void object_read(const J& in, void* m) {
  if constexpr (is_null_v<decltype(FromJson)>) *static_cast<V*>(m) = V::from_json(in.dump());
  else *static_cast<V*>(m) = FromJson(in.dump());
}
template <class V>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<V, bool>) return Kind::Bool;
  else if constexpr (std::is_same_v<V, int>) return Kind::Int;
  else if constexpr (std::is_same_v<V, std::int64_t>) return Kind::Int64;
  else if constexpr (std::is_same_v<V, std::uint64_t> || std::is_same_v<V, unsigned long long> ||
                     std::is_same_v<V, unsigned long>)
    return Kind::UInt64;
  else if constexpr (std::is_same_v<V, std::optional<std::uint64_t>>) return Kind::OptUInt64;
  else if constexpr (std::is_same_v<V, std::optional<int>>) return Kind::OptInt;
  else if constexpr (std::is_same_v<V, std::optional<double>>) return Kind::OptDouble;
  else if constexpr (std::is_same_v<V, double>) return Kind::Double;
  else if constexpr (std::is_same_v<V, std::string>) return Kind::String;
  else if constexpr (std::is_same_v<V, std::map<std::string, std::uint64_t>>) return Kind::CountMap;
  else if constexpr (std::is_same_v<V, std::map<std::string, double>>) return Kind::StepMap;
  else if constexpr (std::is_same_v<V, std::vector<std::string>>) return Kind::StringList;
  else static_assert(sizeof(V) == 0, "unsupported config field type");
}
}  // namespace detail

/// The table of config struct T, declared once in the .cpp that owns T:
///
///   const Fields<TPEConfig>& table() {
///     static const Fields<TPEConfig> t = Fields<TPEConfig>("tpe")
///         .field<&TPEConfig::n_startup_trials>("n_startup_trials", "random draws before the model").alias("n_startup_jobs")
///         .field<&TPEConfig::gamma>("gamma", "fraction of good trials").above(0)
///         .choice<&TPEConfig::gamma_rule>("gamma_rule", {"linear", "sqrt"}, "gamma(n) rule");
///     return t;
///   }
///
/// Defaults are T's own member initializers. Modifiers (alias, range, ...) apply to the field declared last.
template <class T>
class Fields : public FieldTable {
 public:
  explicit Fields(std::string what) : FieldTable(std::move(what)) {}

  template <auto M>
  Fields& field(const char* name, const char* doc) {
    using V = typename detail::member_of<decltype(M)>::type;
    Field f;
    f.name = name;
    f.kind = detail::kind_of<V>();
    f.at = &detail::member_at<M>;
    f.doc = doc;
    add(std::move(f));
    return *this;
  }
  /// An enum (or bool) member written as choices[value]; `Parse` (E(const std::string&)) accepts more spellings.
  template <auto M, auto Parse = nullptr>
  Fields& choice(const char* name, std::vector<std::string> choices, const char* doc) {
    using V = typename detail::member_of<decltype(M)>::type;
    Field f;
    f.name = name;
    f.kind = Kind::Choice;
    f.at = &detail::member_at<M>;
    f.get_choice = &detail::choice_get<V>;
    f.set_choice = &detail::choice_set<V>;
    if constexpr (!std::is_same_v<decltype(Parse), std::nullptr_t>) f.parse_choice = &detail::choice_parse<Parse>;
    f.choices = std::move(choices);
    f.doc = doc;
    add(std::move(f));
    return *this;
  }
  /// A member written as a JSON object of its own: `ToJson` (std::string(const V&)) and `FromJson`
  /// (V(const std::string&)) convert it to and from JSON text; by default V's own `to_json()` and static
  /// `from_json(text)`. FromJson's errors (the sub-config's own messages, its validate()) pass unchanged; it
  /// replaces the whole member. (J: so that json_fwd.hpp suffices where this is not called.)
  template <auto M, auto ToJson = nullptr, auto FromJson = nullptr, class J = nlohmann::json>
  Fields& object(const char* name, const char* doc) {
    using V = typename detail::member_of<decltype(M)>::type;
    Field f;
    f.name = name;
    f.kind = Kind::Object;
    f.at = &detail::member_at<M>;
    f.write_object = &detail::object_write<V, ToJson, J>;
    f.read_object = &detail::object_read<V, FromJson, J>;
    f.doc = doc;
    add(std::move(f));
    return *this;
  }
  /// A key accepted and checked (non-negative integer) but not stored.
  Fields& ignored(const char* name, const char* doc) {
    Field f;
    f.name = name;
    f.kind = Kind::Ignored;
    f.doc = doc;
    add(std::move(f));
    return *this;
  }
  /// Every field of `sub`, stored in member M (a nested struct) of T.
  template <auto M, class Sub>
  Fields& nest(const Fields<Sub>& sub) {
    for (const Field& f : sub.fields()) add_nested(f, &detail::member_at<M>);
    return *this;
  }
  /// A key the owner reads itself before or after the table (listed among the accepted keys).
  Fields& extra(const char* name) {
    add_extra(name);
    return *this;
  }

  Fields& alias(const char* a) {
    last().aliases.emplace_back(a);
    return *this;
  }
  /// An old name: accepted, Python warns (DeprecationWarning).
  Fields& deprecated(const char* a) {
    last().deprecated.emplace_back(a);
    return *this;
  }
  /// Another alias of an already declared (e.g. nested) field.
  Fields& alias_of(const char* name, const char* a) {
    named(name).aliases.emplace_back(a);
    return *this;
  }
  /// Another deprecated name of an already declared field.
  Fields& deprecated_of(const char* name, const char* a) {
    named(name).deprecated.emplace_back(a);
    return *this;
  }
  Fields& at_least(double lo) { return bound(true, lo, false); }
  Fields& above(double lo) { return bound(true, lo, true); }
  Fields& at_most(double hi) { return bound(false, hi, false); }
  Fields& below(double hi) { return bound(false, hi, true); }
  Fields& range(double lo, double hi) { return at_least(lo).at_most(hi); }

  T from_json(const nlohmann::json& j, T start = T{}) const {
    read(j, &start);
    return start;
  }
  // (J: so that json_fwd.hpp suffices where these are not called)
  template <class J = nlohmann::json>
  J to_json(const T& t) const {
    return write(&t);
  }
  void check(const T& t) const { FieldTable::check(&t); }
  template <class J = nlohmann::json>
  J schema() const {
    const T d{};
    return FieldTable::schema(&d);
  }

 private:
  Fields& bound(bool lower, double v, bool open) {
    Field& f = last();
    (lower ? f.has_lo : f.has_hi) = true;
    (lower ? f.lo : f.hi) = v;
    (lower ? f.lo_open : f.hi_open) = open;
    return *this;
  }
};

}  // namespace kubetune::settings
