# Sanitizers.cmake - CKPT_SANITIZER=address builds everything with ASan and
# UBSan (aborting on the first report); =thread builds with TSan. A
# program linking such a library needs the sanitizer's runtime first:
# CKPT_SANITIZER_LINK_FLAG reaches it through the targets' link interface
# (CMakeLists.txt) and the installed .pc files (Install.cmake).
if(CKPT_SANITIZER STREQUAL "address")
    add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                        -fno-omit-frame-pointer -g)
    add_link_options(-fsanitize=address,undefined)
    set(CKPT_SANITIZER_LINK_FLAG "-fsanitize=address,undefined")
elseif(CKPT_SANITIZER STREQUAL "thread")
    add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -g)
    add_link_options(-fsanitize=thread)
    set(CKPT_SANITIZER_LINK_FLAG "-fsanitize=thread")
elseif(NOT CKPT_SANITIZER STREQUAL "")
    message(FATAL_ERROR "CKPT_SANITIZER must be '', 'address' or 'thread'")
endif()
