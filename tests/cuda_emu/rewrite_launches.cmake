# Turns a .cu file into C++ for the CUDA emulator (tests/cuda_emu/include/cuda_runtime.h). Run as
#   cmake -DIN=<file.cu> -DOUT=<file.cpp> -P rewrite_launches.cmake
#
#  * `kernel<<<grid, block[, shared[, stream]]>>>(args)`, with any kernel expression before `<<<` (a name,
#    ns::name, name<T>) and any configuration up to the next `>>>`, becomes
#    `kernel * ::kt_emu::launch("kernel", __FILE__, __LINE__, grid, block[, shared[, stream]])(args)`;
#  * `extern __shared__ [__align__(n)] T name[];` becomes `static ::kt_emu::DynamicShared<T> name;`
#    (a handle that converts to T* and indexes the launch's dynamic shared memory);
#  * a `#line 1` directive keeps diagnostics and __FILE__ on the original file; no line is added or removed.
# A "<<<" that is not followed by "config>>>(" with neither "<<<" nor ";" in the config (in a comment, say) is
# left alone.
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED IN OR NOT DEFINED OUT)
  message(FATAL_ERROR "usage: cmake -DIN=<file.cu> -DOUT=<file.cpp> -P rewrite_launches.cmake")
endif()
file(READ "${IN}" rest)

set(out "#line 1 \"${IN}\"\n")
while(TRUE)
  string(FIND "${rest}" "<<<" open)
  if(open EQUAL -1)
    break()
  endif()
  string(SUBSTRING "${rest}" 0 ${open} before)
  math(EXPR config_start "${open} + 3")
  string(SUBSTRING "${rest}" ${config_start} -1 rest)
  string(FIND "${rest}" ">>>" close)
  set(is_launch FALSE)
  if(NOT close EQUAL -1)
    string(SUBSTRING "${rest}" 0 ${close} config)
    math(EXPR after "${close} + 3")
    string(SUBSTRING "${rest}" ${after} -1 tail)
    string(FIND "${config}" "<<<" nested)
    string(FIND "${config}" ";" semicolon)
    if(tail MATCHES "^[ \t\r\n]*\\(" AND nested EQUAL -1 AND semicolon EQUAL -1)
      set(is_launch TRUE)
    endif()
  endif()
  if(NOT is_launch)  # "<<<" in a comment or string, not a launch: keep it
    string(APPEND out "${before}<<<")
    continue()
  endif()
  set(rest "${tail}")
  # The kernel's name for messages: the identifier (and template arguments) that ends the text before '<<<'.
  set(name "kernel")
  if(before MATCHES "([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n]*(<[^;{}()<>]*>)?[ \t\r\n]*$")
    set(name "${CMAKE_MATCH_1}")
  endif()
  string(APPEND out "${before} * ::kt_emu::launch(\"${name}\", __FILE__, __LINE__, ${config})")
endwhile()
string(APPEND out "${rest}")

string(REGEX REPLACE
  "extern[ \t]+__shared__[ \t]+((__align__|alignas)[ \t]*\\([^)]*\\)[ \t]+)?([A-Za-z_][A-Za-z0-9_:<>, ]*[A-Za-z0-9_>])[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\\[[ \t]*\\][ \t]*;"
  "static ::kt_emu::DynamicShared<\\3> \\4;" out "${out}")
if(out MATCHES "extern[ \t]+__shared__")
  message(FATAL_ERROR "${IN}: an 'extern __shared__' declaration this script does not understand "
                      "(expected: extern __shared__ [__align__(n)] Type name[];)")
endif()

file(WRITE "${OUT}" "${out}")
