# fuzz/run_fuzzer.cmake - runs one libFuzzer target for SECONDS (CTest's
# fuzz_<target>_short/_long): new inputs go to WORK, crashes to ARTIFACTS;
# the committed corpus and regressions and the generated SEEDS are read
# when they exist, and FUZZ_DIR/<TARGET>.dict is used when there is one. Prints the execution count; fails on any crash.
#   cmake -DFUZZER=... -DTARGET=... -DSECONDS=... -DMAX_LEN=... -DRSS_MB=...
#         -DMALLOC_MB=... -DWORK=... -DARTIFACTS=... -DSEEDS=...
#         -DFUZZ_DIR=... -P run_fuzzer.cmake
foreach(v FUZZER TARGET SECONDS MAX_LEN RSS_MB MALLOC_MB WORK ARTIFACTS SEEDS
          FUZZ_DIR)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "run_fuzzer.cmake: -D${v}=... is required")
    endif()
endforeach()

file(MAKE_DIRECTORY ${WORK} ${ARTIFACTS})
set(corpora ${WORK})
foreach(d ${FUZZ_DIR}/regressions/${TARGET} ${FUZZ_DIR}/corpora/${TARGET}
          ${SEEDS})
    if(IS_DIRECTORY ${d})
        list(APPEND corpora ${d})
    endif()
endforeach()

set(dict)
if(EXISTS ${FUZZ_DIR}/${TARGET}.dict)
    set(dict -dict=${FUZZ_DIR}/${TARGET}.dict)
endif()

message(STATUS "fuzz ${TARGET}: ${SECONDS} s over ${corpora}")
execute_process(
    COMMAND ${FUZZER}
        -max_total_time=${SECONDS}
        -max_len=${MAX_LEN}
        -rss_limit_mb=${RSS_MB}
        -malloc_limit_mb=${MALLOC_MB}
        -timeout=20
        -print_final_stats=1
        -artifact_prefix=${ARTIFACTS}/
        ${dict}
        ${corpora}
    RESULT_VARIABLE rc
    ERROR_VARIABLE log
    OUTPUT_VARIABLE out)
# libFuzzer reports on stderr; keep the start and the end of it
string(LENGTH "${log}" n)
if(n GREATER 6000)
    string(SUBSTRING "${log}" 0 2000 head)
    math(EXPR from "${n} - 4000")
    string(SUBSTRING "${log}" ${from} 4000 tail)
    message("${out}${head}\n[...]\n${tail}")
else()
    message("${out}${log}")
endif()
string(REGEX MATCH "DONE +cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*"
       final "${log}")
string(REGEX REPLACE "^DONE +" "" final "${final}")
string(REGEX MATCH "Done ([0-9]+) runs in ([0-9]+) second" done "${log}")
if(done)
    message(STATUS "fuzz ${TARGET}: ${CMAKE_MATCH_1} executions in "
                   "${CMAKE_MATCH_2} s, no crash (${final})")
endif()
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fuzz ${TARGET}: the fuzzer failed (exit ${rc}); the "
                        "crashing input is in ${ARTIFACTS}/ - copy it to "
                        "fuzz/regressions/${TARGET}/ and fix the bug")
endif()
