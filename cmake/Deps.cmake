# Deps.cmake - ckpt_require_module(): the pkg-config modules the optional
# parts need (the tool's json-c, the tests' cmocka and Snappy). The library
# itself needs only libc and pthreads, so a module that is missing names
# the Debian package that brings it and the option that builds without the
# part needing it, instead of FindPkgConfig's bare "A required package was
# not found".
find_package(PkgConfig QUIET)

# ckpt_require_module(PREFIX MODULE DEBIAN_PACKAGE PART OPTION): as
# pkg_check_modules(PREFIX REQUIRED IMPORTED_TARGET MODULE), failing with a
# message that names PART ("the ckpt tool"), DEBIAN_PACKAGE and OPTION.
function(ckpt_require_module prefix module debian part option)
    if(PKG_CONFIG_FOUND)
        pkg_check_modules(${prefix} QUIET IMPORTED_TARGET GLOBAL ${module})
    endif()
    if(NOT ${prefix}_FOUND)
        if(PKG_CONFIG_FOUND)
            set(_why "pkg-config finds no module '${module}'")
        else()
            set(_why "pkg-config is not installed (Debian: pkg-config)")
        endif()
        message(FATAL_ERROR
            "ckpt: ${part} needs ${module}: ${_why}. Install it (Debian: "
            "${debian}; scripts/deps.sh installs everything), or configure "
            "with -D${option}=OFF: the library itself needs only libc and "
            "pthreads.")
    endif()
endfunction()
