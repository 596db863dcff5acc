# Mpi.cmake - the optional library ckpt_mpi (src/mpi/, include/ckpt/mpi.h):
# distributed checkpoints over MPI. CKPT_WITH_MPI: AUTO builds it when
# CMake's FindMPI finds MPI for C, ON requires MPI, OFF never builds it.
#
# ckpt_mpi is a static library on top of ckpt_static (it uses the core's
# internal bundle and directory-state functions, which libckpt.so does not
# export); users link ckpt::ckpt_mpi, which brings ckpt::ckpt_static and
# MPI::MPI_C. Defines CKPT_HAVE_MPI and, for tests, CKPT_MPIEXEC_PREFLAGS.
set(CKPT_HAVE_MPI OFF)
string(TOUPPER "${CKPT_WITH_MPI}" _ckpt_with_mpi)
if(NOT _ckpt_with_mpi MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "CKPT_WITH_MPI must be AUTO, ON or OFF (got ${CKPT_WITH_MPI})")
endif()
if(NOT _ckpt_with_mpi STREQUAL "OFF")
    if(_ckpt_with_mpi STREQUAL "ON")
        find_package(MPI REQUIRED COMPONENTS C)
    else()
        find_package(MPI QUIET COMPONENTS C)
    endif()
    if(MPI_C_FOUND)
        set(CKPT_HAVE_MPI ON)
    else()
        message(STATUS "MPI not found: ckpt_mpi is not built")
    endif()
endif()

if(CKPT_HAVE_MPI)
    file(GLOB CKPT_MPI_SOURCES CONFIGURE_DEPENDS
         "${PROJECT_SOURCE_DIR}/src/mpi/*.c")
    add_library(ckpt_mpi STATIC ${CKPT_MPI_SOURCES})
    set_target_properties(ckpt_mpi PROPERTIES
        OUTPUT_NAME ckpt_mpi EXPORT_NAME ckpt_mpi
        POSITION_INDEPENDENT_CODE ON)
    target_include_directories(ckpt_mpi
        PUBLIC
            $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
            $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
        PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(ckpt_mpi PRIVATE _GNU_SOURCE)
    target_link_libraries(ckpt_mpi PUBLIC ckpt_static MPI::MPI_C Threads::Threads)
    ckpt_set_warnings(ckpt_mpi)
    add_library(ckpt::ckpt_mpi ALIAS ckpt_mpi)

    # Open MPI refuses to run as root unless told; CI runs as root, so the
    # tests' command lines allow it (never the environment).
    set(CKPT_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
    execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
                    OUTPUT_VARIABLE _ckpt_mpiexec_version ERROR_QUIET)
    if(_ckpt_mpiexec_version MATCHES "Open MPI|OpenRTE")
        list(APPEND CKPT_MPIEXEC_PREFLAGS --allow-run-as-root --oversubscribe)
    endif()
endif()
