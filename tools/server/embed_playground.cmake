# cmake -DIN=index.html -DOUT=playground_html.cc -P embed_playground.cmake
file(READ ${IN} html)
string(FIND "${html}" ")UNMASK_HTML\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )UNMASK_HTML\"")
endif()
file(WRITE ${OUT} "// Generated from tools/server/playground/index.html by embed_playground.cmake.\n"
                  "#include \"server/server.h\"\n"
                  "namespace unmask::server {\n"
                  "const char* const kPlaygroundHtml = R\"UNMASK_HTML(${html})UNMASK_HTML\";\n"
                  "}  // namespace unmask::server\n")
