# Install.cmake - install headers, both libraries, the CLI, ckpt.pc and the
# CMake package (find_package(ckpt) gives ckpt::ckpt_static/ckpt_shared).
include(CMakePackageConfigHelpers)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS ckpt_static ckpt_shared EXPORT ckptTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ckptTargets NAMESPACE ckpt::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ckpt)
configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/ckptConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/ckptConfig.cmake"
    INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ckpt)
write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/ckptConfigVersion.cmake"
    COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/ckptConfig.cmake"
              "${PROJECT_BINARY_DIR}/ckptConfigVersion.cmake"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ckpt)
configure_file("${PROJECT_SOURCE_DIR}/cmake/ckpt.pc.in"
               "${PROJECT_BINARY_DIR}/ckpt.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/ckpt.pc"
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
