# CUDA support: explicit architecture list; each module's <dir>/cuda/*.cu (and *.cpp) compiled into it
# (kubetune_module calls kubetune_module_cuda when KUBETUNE_ENABLE_CUDA is on).
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_ARCHITECTURES ${KUBETUNE_CUDA_ARCHITECTURES})

# The CUDA part of module <name>: the sources in <src_dir>/cuda/ and the module's CUDA_DEPS (a CUDA::X_static
# that this toolkit does not ship falls back to CUDA::X, e.g. cuBLAS from pip or Debian's nvcc 13).
function(kubetune_module_cuda name src_dir cuda_deps)
  file(GLOB cu CONFIGURE_DEPENDS ${src_dir}/cuda/*.cu ${src_dir}/cuda/*.cpp)
  if(cu)
    target_sources(kt_${name} PRIVATE ${cu})
  endif()
  set_target_properties(kt_${name} PROPERTIES CUDA_ARCHITECTURES "${KUBETUNE_CUDA_ARCHITECTURES}"
    CUDA_SEPARABLE_COMPILATION OFF)
  foreach(dep IN LISTS cuda_deps)
    if(NOT TARGET ${dep} AND dep MATCHES "^(.+)_static$")
      if(TARGET ${CMAKE_MATCH_1})
        set(dep ${CMAKE_MATCH_1})
      endif()
    endif()
    target_link_libraries(kt_${name} PUBLIC ${dep})
  endforeach()
endfunction()
