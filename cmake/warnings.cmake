# Compiler warnings for all project targets. UNMASK_FATAL_WARNINGS turns them into errors.
function(unmask_set_warnings target)
  target_compile_options(${target} INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                             -Wcast-align -Wunused -Wnull-dereference -Wformat=2
                                             -Wimplicit-fallthrough)
  # GCC 12 reports false -Wrestrict/-Warray-bounds positives inside libstdc++'s std::string at -O3
  # (GCC bugs 105329, 105651); they are not in unmask's code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} INTERFACE -Wno-restrict)
  endif()
  if(UNMASK_FATAL_WARNINGS)
    target_compile_options(${target} INTERFACE -Werror)
  endif()
endfunction()
