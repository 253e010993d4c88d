# CPU reduction kernels with runtime ISA dispatch. The kernels are written once (kernels.h) and
# compiled once per ISA (baseline, AVX2, AVX-512, AVX-512 + BF16), each file with its own flags; never -march=native. Non-x86 targets build
# only the baseline. Kernel files also get -O3 (GCC's -O2 vectorizer cost model is too timid) and
# -fno-trapping-math: nothing reads FP exception flags, and without it GCC will not if-convert the
# float add in the software float16 rounding, leaving the baseline fp16 loop scalar (20x slower).
# Neither flag changes results: rounding mode, NaN and signed-zero semantics stay IEEE.
include(CheckCXXCompilerFlag)
set(_smddp_kernel_flags -O3 -fno-trapping-math)

set(_smddp_reduce_sources reduce/reducer.cc reduce/kernels_baseline.cc)
set(_smddp_reduce_defs "")
set_source_files_properties(reduce/kernels_baseline.cc PROPERTIES
  COMPILE_OPTIONS "${_smddp_kernel_flags}")

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i[3-6]86)$")
  set(_smddp_avx2_flags -mavx2 -mf16c -mfma)
  set(_smddp_avx512_flags ${_smddp_avx2_flags} -mavx512f -mavx512bw -mavx512vl
      -mprefer-vector-width=512)
  set(_smddp_avx512bf16_flags ${_smddp_avx512_flags} -mavx512bf16 -mavx512dq)
  string(REPLACE ";" " " _smddp_avx2_str "${_smddp_avx2_flags}")
  string(REPLACE ";" " " _smddp_avx512_str "${_smddp_avx512_flags}")
  string(REPLACE ";" " " _smddp_avx512bf16_str "${_smddp_avx512bf16_flags}")
  check_cxx_compiler_flag("${_smddp_avx2_str}" SMDDP_CXX_HAS_AVX2)
  check_cxx_compiler_flag("${_smddp_avx512_str}" SMDDP_CXX_HAS_AVX512)
  check_cxx_compiler_flag("${_smddp_avx512bf16_str}" SMDDP_CXX_HAS_AVX512BF16)
  if(SMDDP_CXX_HAS_AVX2)
    list(APPEND _smddp_reduce_sources reduce/kernels_avx2.cc)
    list(APPEND _smddp_reduce_defs SMDDP_REDUCE_HAVE_AVX2)
    set_source_files_properties(reduce/kernels_avx2.cc PROPERTIES
      COMPILE_OPTIONS "${_smddp_kernel_flags};${_smddp_avx2_flags}")
  endif()
  if(SMDDP_CXX_HAS_AVX512)
    list(APPEND _smddp_reduce_sources reduce/kernels_avx512.cc)
    list(APPEND _smddp_reduce_defs SMDDP_REDUCE_HAVE_AVX512)
    set_source_files_properties(reduce/kernels_avx512.cc PROPERTIES
      COMPILE_OPTIONS "${_smddp_kernel_flags};${_smddp_avx512_flags}")
  endif()
  if(SMDDP_CXX_HAS_AVX512BF16)
    list(APPEND _smddp_reduce_sources reduce/kernels_avx512bf16.cc)
    list(APPEND _smddp_reduce_defs SMDDP_REDUCE_HAVE_AVX512BF16)
    set_source_files_properties(reduce/kernels_avx512bf16.cc PROPERTIES
      COMPILE_OPTIONS "${_smddp_kernel_flags};${_smddp_avx512bf16_flags}")
  endif()
endif()

smddp_layer(smddp_reduce ${_smddp_reduce_sources})
target_link_libraries(smddp_reduce PUBLIC smddp_common)
set_source_files_properties(reduce/reducer.cc PROPERTIES
  COMPILE_DEFINITIONS "${_smddp_reduce_defs}")

# CUDA kernels (when nvcc is found) and the pure CUDA launch/staging planning (always).
include(reduce/cuda/sources.cmake OPTIONAL)
