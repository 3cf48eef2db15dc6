# Turns a binary file into a C++ source defining a byte array:
#   cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DSYMBOL=<name> -DNAMESPACE=<ns> -P embed_binary.cmake
file(READ "${INPUT}" content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${content}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed_binary.cmake; do not edit.\n#include <cstddef>\n\nnamespace ${NAMESPACE} {\nalignas(16) extern const unsigned char ${SYMBOL}[] = {\n  ${bytes}\n};\nextern const std::size_t ${SYMBOL}_size = ${size};\n}  // namespace ${NAMESPACE}\n")
