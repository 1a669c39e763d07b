# Compiler warnings for all project targets. UNMASK_FATAL_WARNINGS turns them into errors.
function(unmask_set_warnings target)
  target_compile_options(${target} INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                             -Wcast-align -Wunused -Wnull-dereference -Wformat=2
                                             -Wimplicit-fallthrough)
  if(UNMASK_FATAL_WARNINGS)
    target_compile_options(${target} INTERFACE -Werror)
  endif()
endfunction()
