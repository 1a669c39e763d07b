# Embeds a text file in the binary as a C++ raw string (no build step for the file itself).
# cmake -DIN=file -DOUT=file.cc -DINCLUDE=header.h -DNAMESPACE=unmask::x -DSYMBOL=kName
#       -P embed_text.cmake
# defines `const char* const NAMESPACE::SYMBOL` (declared in INCLUDE).
file(READ ${IN} text)
string(FIND "${text}" ")UNMASK_EMBED\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )UNMASK_EMBED\"")
endif()
file(WRITE ${OUT} "// Generated from ${IN} by cmake/embed_text.cmake.\n"
                  "#include \"${INCLUDE}\"\n"
                  "namespace ${NAMESPACE} {\n"
                  "const char* const ${SYMBOL} = R\"UNMASK_EMBED(${text})UNMASK_EMBED\";\n"
                  "}  // namespace ${NAMESPACE}\n")
