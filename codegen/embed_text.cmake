# embed_text.cmake -- writes the bytes of file IN as a C string array named
# NAME into OUT (cmake -DIN=... -DOUT=... -DNAME=... -P embed_text.cmake).
# codegen embeds runtime/k_fastmath.h and k_ewmath.h into the C and CUDA it
# generates this way, so generated kernels and eager kernels share one
# definition of the elementwise math.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){24})" "\\1\n    " body "${body}")
file(WRITE "${OUT}.tmp" "/* generated from ${IN} by codegen/embed_text.cmake */\nstatic const char ${NAME}[] = {\n    ${body}0};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
