# Sanitizers.cmake - CKPT_SANITIZER=address builds everything with ASan and
# UBSan (aborting on the first report); =thread builds with TSan.
if(CKPT_SANITIZER STREQUAL "address")
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer -g)
    add_link_options(-fsanitize=address,undefined)
elseif(CKPT_SANITIZER STREQUAL "thread")
    add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g)
    add_link_options(-fsanitize=thread)
elseif(NOT CKPT_SANITIZER STREQUAL "")
    message(FATAL_ERROR "CKPT_SANITIZER must be '', 'address' or 'thread'")
endif()
