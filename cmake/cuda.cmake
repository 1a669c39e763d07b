# The CUDA backend (src/backend/cuda): UNMASK_CUDA = OFF | ON | AUTO.
#   OFF   no CUDA code is built (the default: a Debian 12 machine has no CUDA toolkit).
#   ON    nvcc and the toolkit's cudart / cuBLAS must be found, else configuring fails.
#   AUTO  built when CMake finds a CUDA compiler (nvcc on PATH, $CUDACXX, or
#         /usr/local/cuda/bin/nvcc), else skipped with a message (presets ci and cuda).
# Device code is built for Hopper (sm_90 SASS) plus compute_90 PTX, which the driver JIT-compiles
# for later GPUs; override with -DCMAKE_CUDA_ARCHITECTURES=... (e.g. "80;90").
# Sets UNMASK_HAVE_CUDA (ON when the backend is built).
set(UNMASK_CUDA OFF CACHE STRING "Build the CUDA backend: OFF, ON or AUTO (when nvcc is found)")
set_property(CACHE UNMASK_CUDA PROPERTY STRINGS OFF ON AUTO)
set(UNMASK_HAVE_CUDA OFF)
string(TOUPPER "${UNMASK_CUDA}" _unmask_cuda)
if(NOT _unmask_cuda STREQUAL "OFF")
  if(NOT _unmask_cuda MATCHES "^(ON|AUTO)$")
    message(FATAL_ERROR "UNMASK_CUDA=${UNMASK_CUDA}: expected OFF, ON or AUTO")
  endif()
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # sm_90 SASS + compute_90 PTX
    endif()
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    enable_language(CUDA)
    find_package(CUDAToolkit)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublas)
    set(UNMASK_HAVE_CUDA ON)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    message(STATUS "unmask: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_unmask_cuda STREQUAL "ON")
    message(FATAL_ERROR "UNMASK_CUDA=ON: no CUDA compiler or toolkit (cudart, cuBLAS) found; "
                        "install the CUDA toolkit or configure with -DUNMASK_CUDA=OFF")
  else()
    message(STATUS "unmask: CUDA backend skipped (UNMASK_CUDA=AUTO and no nvcc / CUDA toolkit)")
  endif()
endif()
