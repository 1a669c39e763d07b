# Code-generation flags for the whole program: one portable x86-64 baseline, never -march=native by
# default, so that a binary built on one machine runs, with the same code of its own, on every
# x86-64-v3 or newer CPU. Wider instruction sets are used at run time where the libraries dispatch:
# oneDNN JIT-compiles its GEMM kernels for the CPU it finds (AVX-512, AVX512-BF16/VNNI, AMX).
# unmask's own kernels run their AVX2 tier; their AVX-512 tier is built only with
# UNMASK_CPU_BASELINE=x86-64-v4 (measured in docs/benchmarks.md, "Build flags and threads").
#
# GCC 12 wrong-code bug (seen with GCC 12.2, Debian 12): when the tuning allows 256-bit
# "by pieces" moves and stores, a non-uniform constant (e.g. the 32-byte initializer of
# std::vector<int64_t>{1, 1, 0, 0}) is stored as a vpbroadcastq of its first element. Every
# -march/-mtune with AVX-512-era tuning enables those moves: -march=native on Zen 4/5 and on Intel
# Xeons (which GCC 12 names rocketlake), -march=x86-64-v4, and even -march=x86-64-v3 with
# -mtune=icelake-server or -mstore-max=256; -mno-avx512f alone does not help on Intel. Limiting
# by-pieces moves and stores to 128 bits avoids the faulty path in every case tried
# (tests/core/compiler_test.cc and tests/core/compiler_avx512_test.cc check it in each build).
include(CheckCXXCompilerFlag)

set(UNMASK_CPU_BASELINE "x86-64-v3" CACHE STRING
    "-march for the whole program (x86-64-v3: AVX2, FMA, F16C, BMI2; the minimum supported CPU)")
option(UNMASK_NATIVE "Compile for the build machine's CPU (-march=native; the binary then needs it)"
       OFF)

set(UNMASK_CPU_FLAGS "")
set(UNMASK_GCC12_GUARD_FLAGS "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  if(UNMASK_NATIVE)
    if(NOT UNMASK_CPU_BASELINE STREQUAL "x86-64-v3")
      message(STATUS "UNMASK_NATIVE=ON: -march=native replaces UNMASK_CPU_BASELINE=${UNMASK_CPU_BASELINE}")
    endif()
    list(APPEND UNMASK_CPU_FLAGS -march=native)
  else()
    check_cxx_compiler_flag("-march=${UNMASK_CPU_BASELINE}" UNMASK_BASELINE_KNOWN_${UNMASK_CPU_BASELINE})
    if(NOT UNMASK_BASELINE_KNOWN_${UNMASK_CPU_BASELINE})
      message(FATAL_ERROR "UNMASK_CPU_BASELINE=${UNMASK_CPU_BASELINE}: the compiler does not know "
                          "-march=${UNMASK_CPU_BASELINE} (use x86-64-v3, x86-64-v4 or a CPU name)")
    endif()
    if(UNMASK_CPU_BASELINE MATCHES "^x86-64(-v2)?$")
      message(WARNING "UNMASK_CPU_BASELINE=${UNMASK_CPU_BASELINE} has no AVX2/FMA: unmask's kernels "
                      "fall back to scalar loops (several times slower); x86-64-v3 is the minimum "
                      "the project measures")
    endif()
    list(APPEND UNMASK_CPU_FLAGS -march=${UNMASK_CPU_BASELINE} -mtune=generic)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    check_cxx_compiler_flag("-mmove-max=128 -mstore-max=128" UNMASK_HAVE_MOVE_MAX)
    if(UNMASK_HAVE_MOVE_MAX)
      set(UNMASK_GCC12_GUARD_FLAGS -mmove-max=128 -mstore-max=128)
      list(APPEND UNMASK_CPU_FLAGS ${UNMASK_GCC12_GUARD_FLAGS})
    endif()
  endif()
endif()

# Flags for translation units of AVX-512 kernels that are to be selected at run time (CPUID,
# src/backend/cpu/cpu_isa.h), never called on a CPU without AVX-512 F/BW/DQ/VL: x86-64-v4's
# features with generic tuning, plus the guard. tests/core/compiler_avx512_test.cc is built with them
# so that they are known to be safe. UNMASK_AVX512_VNNI_FLAGS adds AVX512_VNNI for the VNNI tier of
# the Q8_0, Q4_0 and Q4_1 int8 kernels (src/ops/linear_q8_vnni_cpu.cc, linear_q4_vnni_cpu.cc;
# empty when the compiler lacks the flag, and the AVX2 tier then runs everywhere).
set(UNMASK_AVX512_FLAGS "")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(UNMASK_AVX512_FLAGS -mavx512f -mavx512bw -mavx512dq -mavx512vl -mtune=generic
                          ${UNMASK_GCC12_GUARD_FLAGS})
endif()
set(UNMASK_AVX512_VNNI_FLAGS "")
if(UNMASK_AVX512_FLAGS)
  check_cxx_compiler_flag("-mavx512vnni" UNMASK_HAVE_AVX512VNNI_FLAG)
  if(UNMASK_HAVE_AVX512VNNI_FLAG)
    set(UNMASK_AVX512_VNNI_FLAGS ${UNMASK_AVX512_FLAGS} -mavx512vnni)
  endif()
endif()
message(STATUS "unmask CPU flags: ${UNMASK_CPU_FLAGS} (AVX-512 test code: ${UNMASK_AVX512_FLAGS})")
