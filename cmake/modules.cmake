# One declaration per module: kubetune_module(...) below. Everything a module adds follows from it: its static
# library kt_<name>, its GoogleTest binary, its searchers in register_builtins(), its Python bindings, its part
# of the C library and its CUDA sources. docs/architecture.md ("Adding a module") walks through one.
#
# kubetune_module(<name> <dir>
#   [DEPS <targets>...]           linked PUBLIC; a kt_<module> of a declared module that this build leaves out
#                                 leaves this module out too (with a message)
#   [OPTIONAL_DEPS <targets>...]  linked PUBLIC when the target exists
#   [REGISTER <ns::function>...]  void ns::function(); register_builtins() calls them (src/registry.cpp)
#   [BIND <function>...]          void kubetune::python::function(pybind11::module_&); PYBIND11_MODULE calls them
#                                 (python/src/module.cpp), modules in declaration order
#   [BIND_SOURCES <files>...]     the bindings' sources (relative: to python/src); default python/src/<function>.cpp
#                                 for each BIND function that has one
#   [CAPI <files>...]             the module's part of the C library (relative: to src/), built only with it
#   [CUDA_DEPS <targets>...]      linked PUBLIC in a CUDA build; X_static falls back to X when the toolkit lacks it
#   [TESTS <dir>]                 GoogleTest sources (*.cpp); default tests/cpp/<name>
#   [TEST_DEPS <targets>...])     also linked into kubetune_test_<name>, each when it exists
#
# <dir> is relative to src/ or absolute. The library is every .cpp under it except cuda/; with KUBETUNE_ENABLE_CUDA
# the *_nocuda.cpp CPU stubs are dropped and <dir>/cuda/*.cu and *.cpp are compiled in instead. Globs are
# CONFIGURE_DEPENDS, so a new .cpp in a module's folder needs no CMake edit. KT_HAVE_<NAME>=1 is defined for
# everything linking kt_all. KUBETUNE_MODULES (default "all") picks a subset of the declared modules; core is always
# built. The generated registry and binding lists are written by kubetune_finish_modules() once all are declared.
set_property(GLOBAL PROPERTY KT_MODULES "")
set_property(GLOBAL PROPERTY KT_DECLARED_MODULES "")
set_property(GLOBAL PROPERTY KT_MODULE_DEFS "")
set_property(GLOBAL PROPERTY KT_REGISTER_FUNCTIONS "")
set_property(GLOBAL PROPERTY KT_BIND_FUNCTIONS "")
set_property(GLOBAL PROPERTY KT_CUDA_MODULES "")  # built modules with <dir>/cuda/*.cu (KT_MODULE_<name>_DIR: <dir>)
foreach(kind BIND CAPI)
  set_property(GLOBAL PROPERTY KT_${kind}_SOURCES "")           # of the modules built
  set_property(GLOBAL PROPERTY KT_${kind}_SOURCES_DECLARED "")  # of every declared module
endforeach()

# <out> = whether KUBETUNE_MODULES asks for module <name> (core always).
function(kubetune_module_wanted name out)
  if(name STREQUAL "core" OR KUBETUNE_MODULES STREQUAL "all" OR name IN_LIST KUBETUNE_MODULES)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

function(kubetune_module name dir)
  cmake_parse_arguments(PARSE_ARGV 2 M "" "TESTS"
    "DEPS;OPTIONAL_DEPS;REGISTER;BIND;BIND_SOURCES;CAPI;CUDA_DEPS;TEST_DEPS")
  if(M_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kubetune_module(${name}): unknown arguments '${M_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT name MATCHES "^[a-z][a-z0-9_]*$")
    message(FATAL_ERROR "kubetune_module: name '${name}' must be lower-case letters, digits and _")
  endif()
  get_property(declared GLOBAL PROPERTY KT_DECLARED_MODULES)
  if(name IN_LIST declared)
    message(FATAL_ERROR "kubetune_module(${name}): declared twice")
  endif()
  set_property(GLOBAL APPEND PROPERTY KT_DECLARED_MODULES ${name})
  if(IS_ABSOLUTE "${dir}")
    set(src_dir "${dir}")
  else()
    set(src_dir "${PROJECT_SOURCE_DIR}/src/${dir}")
  endif()
  if(NOT IS_DIRECTORY "${src_dir}")
    message(FATAL_ERROR "kubetune_module(${name}): source folder '${src_dir}' does not exist")
  endif()

  # The parts outside the library, known even when the module is left out (so that a left-out module's bindings
  # and C API files are left out of the Python module and the C library as well).
  set(bind_sources "")
  foreach(f IN LISTS M_BIND_SOURCES)
    if(NOT IS_ABSOLUTE "${f}")
      set(f "${PROJECT_SOURCE_DIR}/python/src/${f}")
    endif()
    list(APPEND bind_sources "${f}")
  endforeach()
  if(NOT M_BIND_SOURCES)
    foreach(fn IN LISTS M_BIND)
      if(EXISTS "${PROJECT_SOURCE_DIR}/python/src/${fn}.cpp")
        list(APPEND bind_sources "${PROJECT_SOURCE_DIR}/python/src/${fn}.cpp")
      endif()
    endforeach()
  endif()
  set(capi_sources "")
  foreach(f IN LISTS M_CAPI)
    if(NOT IS_ABSOLUTE "${f}")
      set(f "${PROJECT_SOURCE_DIR}/src/${f}")
    endif()
    list(APPEND capi_sources "${f}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY KT_BIND_SOURCES_DECLARED ${bind_sources})
  set_property(GLOBAL APPEND PROPERTY KT_CAPI_SOURCES_DECLARED ${capi_sources})

  kubetune_module_wanted(${name} wanted)
  if(NOT wanted)
    return()
  endif()
  # A dependency on a declared module this build leaves out leaves this one out as well.
  foreach(dep IN LISTS M_DEPS)
    if(dep MATCHES "^kt_(.+)$" AND NOT TARGET ${dep})
      if(CMAKE_MATCH_1 IN_LIST declared)
        message(STATUS "kubetune: module ${name} left out: it needs ${CMAKE_MATCH_1}, which KUBETUNE_MODULES leaves out")
        return()
      endif()
      message(FATAL_ERROR "kubetune_module(${name}): DEPS names ${dep}, but no module '${CMAKE_MATCH_1}' is declared before it")
    endif()
  endforeach()

  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS RELATIVE "${src_dir}" "${src_dir}/*.cpp")
  list(FILTER srcs EXCLUDE REGEX "(^|/)cuda/")
  if(KUBETUNE_ENABLE_CUDA)
    # foo_nocuda.cpp holds the CPU stubs ("built without CUDA") of what cuda/foo.cu implements.
    list(FILTER srcs EXCLUDE REGEX "_nocuda\\.cpp$")
  endif()
  list(TRANSFORM srcs PREPEND "${src_dir}/")
  if(NOT srcs)
    set(srcs ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
  endif()
  add_library(kt_${name} STATIC ${srcs})
  target_include_directories(kt_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_link_libraries(kt_${name} PUBLIC ${M_DEPS})
  foreach(dep IN LISTS M_OPTIONAL_DEPS)
    if(TARGET ${dep})
      target_link_libraries(kt_${name} PUBLIC ${dep})
    endif()
  endforeach()
  target_compile_features(kt_${name} PUBLIC cxx_std_20)
  kubetune_warnings(kt_${name})
  if(KUBETUNE_ENABLE_CUDA)
    kubetune_module_cuda(${name} "${src_dir}" "${M_CUDA_DEPS}")  # cmake/cuda.cmake
  endif()

  string(TOUPPER ${name} NAME_UPPER)
  set_property(GLOBAL APPEND PROPERTY KT_MODULE_DEFS KT_HAVE_${NAME_UPPER}=1)
  set_property(GLOBAL APPEND PROPERTY KT_MODULES ${name})
  set_property(GLOBAL PROPERTY KT_MODULE_${name}_DIR "${src_dir}")
  file(GLOB cu CONFIGURE_DEPENDS "${src_dir}/cuda/*.cu")
  if(cu)  # whatever the build: tests/cuda_emu compiles these against its emulator in CPU builds
    set_property(GLOBAL APPEND PROPERTY KT_CUDA_MODULES ${name})
  endif()
  set_property(GLOBAL APPEND PROPERTY KT_REGISTER_FUNCTIONS ${M_REGISTER})
  set_property(GLOBAL APPEND PROPERTY KT_BIND_FUNCTIONS ${M_BIND})
  set_property(GLOBAL APPEND PROPERTY KT_BIND_SOURCES ${bind_sources})
  set_property(GLOBAL APPEND PROPERTY KT_CAPI_SOURCES ${capi_sources})
  if(M_TESTS)
    if(NOT IS_ABSOLUTE "${M_TESTS}")
      set(M_TESTS "${PROJECT_SOURCE_DIR}/${M_TESTS}")
    endif()
  else()
    set(M_TESTS "${PROJECT_SOURCE_DIR}/tests/cpp/${name}")
  endif()
  set_property(GLOBAL PROPERTY KT_MODULE_${name}_TESTS "${M_TESTS}")
  set_property(GLOBAL PROPERTY KT_MODULE_${name}_TEST_DEPS "${M_TEST_DEPS}")
endfunction()

# Modules outside the tree: each folder of KUBETUNE_EXTRA_MODULE_DIRS holds a module.cmake with its declaration.
function(kubetune_include_extra_modules)
  foreach(d IN LISTS KUBETUNE_EXTRA_MODULE_DIRS)
    get_filename_component(d "${d}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
    if(NOT EXISTS "${d}/module.cmake")
      message(FATAL_ERROR "KUBETUNE_EXTRA_MODULE_DIRS: '${d}' holds no module.cmake")
    endif()
    include("${d}/module.cmake")
  endforeach()
endfunction()

# <out> = <glob> without the sources of declared modules this build leaves out, plus those of the modules built
# that the glob does not hold (their order kept): python/src/bind_<m>.cpp, src/c_api/<m>.cpp.
function(kubetune_select_sources kind glob out)
  get_property(built GLOBAL PROPERTY KT_${kind}_SOURCES)
  get_property(left_out GLOBAL PROPERTY KT_${kind}_SOURCES_DECLARED)
  if(built)
    list(REMOVE_ITEM left_out ${built})
  endif()
  set(result ${glob})
  if(left_out)
    list(REMOVE_ITEM result ${left_out})
  endif()
  foreach(f IN LISTS built)
    if(NOT f IN_LIST result)
      list(APPEND result "${f}")
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Writes <path> only when <content> differs, so an unchanged list recompiles nothing.
function(kubetune_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()

# After the last declaration: checks KUBETUNE_MODULES and writes the lists the registry and the Python module
# include, into ${KT_GENERATED_DIR} (kt_registry_modules.inc, kt_python_modules.inc).
function(kubetune_finish_modules)
  get_property(declared GLOBAL PROPERTY KT_DECLARED_MODULES)
  if(NOT KUBETUNE_MODULES STREQUAL "all")
    foreach(m IN LISTS KUBETUNE_MODULES)
      if(NOT m IN_LIST declared)
        string(REPLACE ";" ", " names "${declared}")
        message(FATAL_ERROR "KUBETUNE_MODULES: unknown module '${m}' (declared: all, ${names})")
      endif()
    endforeach()
  endif()
  get_property(mods GLOBAL PROPERTY KT_MODULES)
  string(REPLACE ";" " " mods_text "${mods}")
  set(head "// Generated by cmake/modules.cmake from the kubetune_module() declarations; do not edit.\n// Modules: ${mods_text}\n")

  get_property(regs GLOBAL PROPERTY KT_REGISTER_FUNCTIONS)
  set(decls "")
  set(calls "")
  foreach(fn IN LISTS regs)
    string(REGEX REPLACE "^::" "" fn "${fn}")
    if(NOT fn MATCHES "^(([A-Za-z_][A-Za-z0-9_]*::)*)([A-Za-z_][A-Za-z0-9_]*)$")
      message(FATAL_ERROR "kubetune_module: REGISTER '${fn}' is not a qualified function name")
    endif()
    set(ns "${CMAKE_MATCH_1}")
    set(base "${CMAKE_MATCH_3}")
    string(REGEX REPLACE "::$" "" ns "${ns}")
    if(ns)
      string(APPEND decls "namespace ${ns} {\nvoid ${base}();\n}\n")
    else()
      string(APPEND decls "void ${base}();\n")
    endif()
    string(APPEND calls "  ::${fn}();\n")
  endforeach()
  kubetune_write_if_changed("${KT_GENERATED_DIR}/kt_registry_modules.inc"
    "${head}${decls}\nnamespace kubetune::detail {\ninline void register_modules() {\n${calls}}\n}  // namespace kubetune::detail\n")

  get_property(binds GLOBAL PROPERTY KT_BIND_FUNCTIONS)
  set(decls "")
  set(calls "")
  foreach(fn IN LISTS binds)
    if(NOT fn MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "kubetune_module: BIND '${fn}' must be a plain name in namespace kubetune::python")
    endif()
    string(APPEND decls "void ${fn}(pybind11::module_& m);\n")
    string(APPEND calls "  ${fn}(m);\n")
  endforeach()
  kubetune_write_if_changed("${KT_GENERATED_DIR}/kt_python_modules.inc"
    "${head}namespace kubetune::python {\n${decls}\ninline void bind_modules(pybind11::module_& m) {\n${calls}}\n}  // namespace kubetune::python\n")
endfunction()

function(kubetune_add_all_tests)
  get_property(mods GLOBAL PROPERTY KT_MODULES)
  foreach(name IN LISTS mods)
    get_property(tdir GLOBAL PROPERTY KT_MODULE_${name}_TESTS)
    get_property(tdeps GLOBAL PROPERTY KT_MODULE_${name}_TEST_DEPS)
    file(GLOB tsrcs CONFIGURE_DEPENDS ${tdir}/*.cpp)
    if(tsrcs)
      add_executable(kubetune_test_${name} ${tsrcs})
      # Each suite links only its own module (and its TEST_DEPS), so a module builds and tests on its own.
      if(NOT "kt_all" IN_LIST tdeps)  # kt_all holds every module built
        target_link_libraries(kubetune_test_${name} PRIVATE kt_${name})
      endif()
      foreach(dep IN LISTS tdeps)
        if(TARGET ${dep})
          target_link_libraries(kubetune_test_${name} PRIVATE ${dep})
        endif()
      endforeach()
      target_link_libraries(kubetune_test_${name} PRIVATE GTest::gtest GTest::gtest_main)
      target_compile_definitions(kubetune_test_${name} PRIVATE
        KT_SHARED_DATA_DIR="${PROJECT_SOURCE_DIR}/../shared/data" KT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
      kubetune_warnings(kubetune_test_${name})
      gtest_discover_tests(kubetune_test_${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
        PROPERTIES LABELS ${name})  # one label: PRE_TEST discovery (CMake 3.25) keeps only the first of a list
    endif()
  endforeach()
  # The C API from plain C99: tests/c/test_<module>.c (test_c_api.c covers studies).
  file(GLOB ctests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/c/test_*.c)
  foreach(src IN LISTS ctests)
    get_filename_component(stem ${src} NAME_WE)
    string(REPLACE "test_" "" cname ${stem})
    if(NOT cname STREQUAL "c_api" AND NOT cname IN_LIST mods)
      continue()
    endif()
    set(target kubetune_test_c_${cname})
    if(cname STREQUAL "c_api")
      set(target kubetune_test_c)
    endif()
    add_executable(${target} ${src})
    set_target_properties(${target} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON)
    target_link_libraries(${target} PRIVATE kubetune_c m)
    add_test(NAME c_${cname} COMMAND ${target} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
    set_tests_properties(c_${cname} PROPERTIES LABELS "c")
  endforeach()
endfunction()
