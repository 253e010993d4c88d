# SPDX-License-Identifier: Apache-2.0
# The fuzz build (SMDDP_FUZZ=ON, scripts/fuzz.sh): every object gets libFuzzer's coverage
# instrumentation and ASan+UBSan, so a fault in a library the fuzz targets link is found as surely
# as one in the targets themselves. UBSan does not recover: undefined behaviour is a crash the
# fuzzer reports. Only the targets link libFuzzer's main (tests/fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SMDDP_FUZZ=ON needs clang (libFuzzer); configure with CC=clang "
                      "CXX=clang++ (this is ${CMAKE_CXX_COMPILER_ID})")
endif()
set(SMDDP_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=undefined
                   -fno-omit-frame-pointer)
add_compile_options(-fsanitize=fuzzer-no-link ${SMDDP_SANITIZE})
add_link_options(${SMDDP_SANITIZE})
