# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P EmbedText.cmake
# Writes OUT defining `const char NAME[]` with the text of IN, one C string
# literal per line (so the file stays readable and diffs of IN stay small).
# Refuses text that would end an HTML <script> element early.
file(READ "${IN}" text)
string(FIND "${text}" "</script" bad)
if(NOT bad EQUAL -1)
  message(FATAL_ERROR "${IN}: contains </script, which would end the page's script element")
endif()
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "??" "?\\?" text "${text}")
string(REPLACE "\t" "\\t" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}" "/* generated from ${src} by cmake/EmbedText.cmake: do not edit */\n"
     "const char ${NAME}[] =\n\"${text}\";\n")
