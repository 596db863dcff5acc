# Warnings.cmake - the project's warning flags; CKPT_WERROR makes them fatal.
function(ckpt_set_warnings target)
    if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
        target_compile_options(${target} PRIVATE
            -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Wvla -Wundef
            -Wstrict-prototypes -Wmissing-prototypes -Wcast-align
            -Wno-format-nonliteral)
        if(CKPT_WERROR)
            target_compile_options(${target} PRIVATE -Werror)
        endif()
    endif()
endfunction()
