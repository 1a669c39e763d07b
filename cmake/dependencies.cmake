# Third-party dependencies, all from Debian packages (scripts/install-deps.sh installs them).
# Nothing is downloaded at build time.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# ICU (libicu-dev): Unicode NFC for Hugging Face tokenizers whose normalizer asks for it.
pkg_check_modules(ICU REQUIRED IMPORTED_TARGET icu-uc)

# oneDNN (libdnnl-dev): f32 GEMM with prepacked weights. Debian ships headers + .so without a
# CMake package config in some versions, so look for the pieces directly.
find_path(DNNL_INCLUDE_DIR dnnl.hpp REQUIRED)
find_library(DNNL_LIBRARY dnnl REQUIRED)
add_library(unmask_dnnl INTERFACE)
target_include_directories(unmask_dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
target_link_libraries(unmask_dnnl INTERFACE ${DNNL_LIBRARY})

# OpenBLAS is loaded at run time with dlopen (src/backend/cpu/blas_openblas.cc) so that its
# core type can be corrected before the library initialises; only the header is needed here.
find_path(OPENBLAS_CBLAS_INCLUDE_DIR cblas.h
          PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
                /usr/include/x86_64-linux-gnu/openblas64-pthread)

if(UNMASK_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(UNMASK_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
