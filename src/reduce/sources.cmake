# SPDX-License-Identifier: Apache-2.0
# CPU reduction kernels with runtime ISA dispatch. The kernels are written once (kernels.h) and
# compiled once per ISA (baseline, AVX2, AVX-512, AVX-512 + BF16), each file with its own flags;
# never -march=native. Non-x86 targets build only the baseline. Kernel files also get -O3 (GCC's -O2 vectorizer cost model is too timid) and
# -fno-trapping-math: nothing reads FP exception flags, and without it GCC will not if-convert the
# float add in the software float16 rounding, leaving the baseline fp16 loop scalar (20x slower).
# -ffp-contract=off keeps every ISA's complex product (ac - bd) free of fused multiply-adds, so all
# tables round alike. None of these flags changes IEEE results: rounding mode, NaN and signed zero.
include(CheckCXXCompilerFlag)
set(_smddp_kernel_flags -O3 -fno-trapping-math -ffp-contract=off)

set(_smddp_reduce_sources reduce/reducer.cc reduce/kernels_baseline.cc)
set(_smddp_reduce_defs "")
set_source_files_properties(reduce/kernels_baseline.cc PROPERTIES
  COMPILE_OPTIONS "${_smddp_kernel_flags}")

# One ISA's kernel file, kernels_<isa>.cc: compiled with _smddp_<isa>_flags when the compiler
# takes them, and announced to reducer.cc's dispatch as SMDDP_REDUCE_HAVE_<ISA>. (A macro: it
# appends to this file's lists.)
macro(_smddp_kernel_isa isa)
  string(TOUPPER "${isa}" _smddp_isa_upper)
  string(REPLACE ";" " " _smddp_isa_str "${_smddp_${isa}_flags}")
  check_cxx_compiler_flag("${_smddp_isa_str}" SMDDP_CXX_HAS_${_smddp_isa_upper})
  if(SMDDP_CXX_HAS_${_smddp_isa_upper})
    list(APPEND _smddp_reduce_sources reduce/kernels_${isa}.cc)
    list(APPEND _smddp_reduce_defs SMDDP_REDUCE_HAVE_${_smddp_isa_upper})
    set_source_files_properties(reduce/kernels_${isa}.cc PROPERTIES
      COMPILE_OPTIONS "${_smddp_kernel_flags};${_smddp_${isa}_flags}")
  endif()
endmacro()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i[3-6]86)$")
  set(_smddp_avx2_flags -mavx2 -mf16c -mfma)
  set(_smddp_avx512_flags ${_smddp_avx2_flags} -mavx512f -mavx512bw -mavx512vl
      -mprefer-vector-width=512)
  set(_smddp_avx512bf16_flags ${_smddp_avx512_flags} -mavx512bf16 -mavx512dq)
  _smddp_kernel_isa(avx2)
  _smddp_kernel_isa(avx512)
  _smddp_kernel_isa(avx512bf16)
endif()

smddp_layer(smddp_reduce ${_smddp_reduce_sources})
target_link_libraries(smddp_reduce PUBLIC smddp_common)
set_source_files_properties(reduce/reducer.cc PROPERTIES
  COMPILE_DEFINITIONS "${_smddp_reduce_defs}")

# CUDA kernels (when nvcc is found) and the pure CUDA launch/staging planning (always).
include(reduce/cuda/sources.cmake)
