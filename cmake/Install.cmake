# Install.cmake - what `cmake --install` puts under the prefix:
#   include/ckpt.h, include/ckpt/*.h, include/ckpt/sys/*.h
#   lib/libckpt.a, lib/libckpt.so (+ soname links: libckpt.so.0.1 while
#   the major version is 0), bin/ckpt (tools/ckpt)
#   lib/pkgconfig/ckpt.pc, ckpt-static.pc (static linking)
#   lib/cmake/ckpt/ckpt{Config,ConfigVersion,Targets}.cmake, so that
#   find_package(ckpt) gives ckpt::ckpt_static and ckpt::ckpt_shared.
# Everything is relocatable: `cmake --install build --prefix X` works for any
# X, whatever CMAKE_INSTALL_PREFIX was at configure time.
include(CMakePackageConfigHelpers)

set(CKPT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/ckpt")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/"
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS ckpt_static ckpt_shared EXPORT ckptTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ckptTargets NAMESPACE ckpt::
        DESTINATION ${CKPT_INSTALL_CMAKEDIR})
configure_package_config_file(
    "${PROJECT_SOURCE_DIR}/cmake/ckptConfig.cmake.in"
    "${PROJECT_BINARY_DIR}/ckptConfig.cmake"
    INSTALL_DESTINATION ${CKPT_INSTALL_CMAKEDIR})
# 0.x releases may break the API at each minor version.
write_basic_package_version_file(
    "${PROJECT_BINARY_DIR}/ckptConfigVersion.cmake"
    COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/ckptConfig.cmake"
              "${PROJECT_BINARY_DIR}/ckptConfigVersion.cmake"
        DESTINATION ${CKPT_INSTALL_CMAKEDIR})

# ckpt.pc: with relative install dirs the paths are written relative to
# ${pcfiledir}, the directory pkg-config found the file in; absolute
# install dirs are written as they are.
set(CKPT_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}"
   OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(CKPT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
    set(CKPT_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
    set(CKPT_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
    # "lib/pkgconfig" -> "../.."; "lib/x86_64-linux-gnu/pkgconfig" -> "../../.."
    file(RELATIVE_PATH _ckpt_pc_up "/_/${CKPT_PC_DIR}" "/_")
    string(REGEX REPLACE "/$" "" _ckpt_pc_up "${_ckpt_pc_up}")
    set(CKPT_PC_PREFIX "\${pcfiledir}/${_ckpt_pc_up}")
    set(CKPT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
    set(CKPT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# ckpt.pc's rpath lets a program linked against a prefix outside the
# loader's path find libckpt.so without LD_LIBRARY_PATH. Where the
# configured libdir is one the toolchain searches anyway (a distribution's
# /usr/lib/<multiarch>), it would only add a RUNPATH to every program built
# with it, which distributions refuse (Debian's lintian:
# custom-library-search-path), so it is left out there.
set(CKPT_PC_RPATH "-Wl,-rpath,\${libdir} ")
list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES "${CMAKE_INSTALL_FULL_LIBDIR}"
     _ckpt_libdir_implicit)
if(_ckpt_libdir_implicit GREATER -1)
    set(CKPT_PC_RPATH "")
endif()
# A sanitizer build (CKPT_SANITIZER) puts its runtime into Libs: a program
# linked without it dies at start ("ASan runtime does not come first").
set(CKPT_PC_SANITIZER "")
if(CKPT_SANITIZER_LINK_FLAG)
    set(CKPT_PC_SANITIZER "${CKPT_SANITIZER_LINK_FLAG} ")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/ckpt.pc.in"
               "${PROJECT_BINARY_DIR}/ckpt.pc" @ONLY)
configure_file("${PROJECT_SOURCE_DIR}/cmake/ckpt-static.pc.in"
               "${PROJECT_BINARY_DIR}/ckpt-static.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/ckpt.pc"
              "${PROJECT_BINARY_DIR}/ckpt-static.pc"
        DESTINATION ${CKPT_PC_DIR})

# ---- the optional MPI library (component "mpi") -----------------------------
# find_package(ckpt COMPONENTS mpi) gives ckpt::ckpt_mpi; pkg-config
# ckpt-mpi gives its flags (the static core and MPI's flags included).
if(TARGET ckpt_mpi)
    install(TARGETS ckpt_mpi EXPORT ckptMpiTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(EXPORT ckptMpiTargets NAMESPACE ckpt::
            DESTINATION ${CKPT_INSTALL_CMAKEDIR})
    # MPI's own pkg-config module when there is one (Debian: mpi-c).
    find_package(PkgConfig QUIET)
    set(CKPT_MPI_PC_REQUIRES "")
    foreach(_m mpi-c ompi-c mpich)
        if(NOT CKPT_MPI_PC_REQUIRES)
            pkg_check_modules(_CKPT_PC_${_m} QUIET ${_m})
            if(_CKPT_PC_${_m}_FOUND)
                set(CKPT_MPI_PC_REQUIRES ${_m})
            endif()
        endif()
    endforeach()
    configure_file("${PROJECT_SOURCE_DIR}/cmake/ckpt-mpi.pc.in"
                   "${PROJECT_BINARY_DIR}/ckpt-mpi.pc" @ONLY)
    install(FILES "${PROJECT_BINARY_DIR}/ckpt-mpi.pc" DESTINATION ${CKPT_PC_DIR})
endif()
