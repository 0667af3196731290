// The autoscale configs' JSON forms come from one settings table each (kubetune/core/config_fields.hpp): this is
// the shared reading rule. Internal to src/sched/autoscale.
#pragma once

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "kubetune/core/config_fields.hpp"
#include "kubetune/core/error.hpp"
#include "kubetune/sched/autoscale/units.hpp"

namespace kubetune::sched::autoscale::config_table {

/// Lists the old names of renamed_fields() for `type` on table `t` as deprecated names of their fields (so that
/// the table describes every accepted key; the renaming itself stays with rename_deprecated_keys).
template <class T>
settings::Fields<T>& with_renamed(settings::Fields<T>& t, const char* type) {
  for (const RenamedField& f : renamed_fields())
    if (std::strcmp(f.type, type) == 0) t.deprecated_of(f.new_name, f.old_name);
  return t;
}

/// `text` (a JSON object) read through table `t` onto T's defaults: parse errors and non-objects are
/// "<type> JSON: ..." / "<type> JSON must be an object", the deprecated names of `type` are renamed first (a field
/// under both names refused), a key the table does not know is "<type> JSON: unknown key 'k'", and bad values
/// name the key and value. The caller runs T::validate().
template <class T>
T read(const settings::Fields<T>& t, const char* type, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    KT_THROW(InvalidArgument, type, " JSON: ", e.what());
  }
  KT_CHECK(j.is_object(), InvalidArgument, type, " JSON must be an object");
  rename_deprecated_keys(type, j);
  // Checked here, not by the table, so that the wording stays "unknown key" and "type" is not skipped.
  for (auto it = j.begin(); it != j.end(); ++it)
    KT_CHECK(t.find(it.key()) != nullptr, InvalidArgument, type, " JSON: unknown key '", it.key(), "'");
  return t.from_json(j);
}

}  // namespace kubetune::sched::autoscale::config_table
