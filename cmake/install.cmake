# Install rules: headers, module static libraries, the shared C library and a CMake package config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(DIRECTORY include/kubetune DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
get_property(_kt_mods GLOBAL PROPERTY KT_MODULES)
set(_kt_targets kt_all kubetune kubetune_c)
foreach(m IN LISTS _kt_mods)
  list(APPEND _kt_targets kt_${m})
endforeach()
install(TARGETS ${_kt_targets} EXPORT kubetuneTargets COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kubetuneTargets NAMESPACE kubetune:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kubetune COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kubetuneConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kubetuneConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kubetune)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kubetuneConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kubetuneConfig.cmake ${PROJECT_BINARY_DIR}/kubetuneConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kubetune COMPONENT dev)
