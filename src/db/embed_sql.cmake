# Turns an SQL file into a C string constant at build time, so the lantern binary carries its
# own schema (no file to find at run time). Invoked as: cmake -DIN=x.sql -DOUT=x.c -DNAME=sym -P
file(READ ${IN} sql)
string(REPLACE "\\" "\\\\" sql "${sql}")
string(REPLACE "\"" "\\\"" sql "${sql}")
string(REPLACE "\n" "\\n\"\n\"" sql "${sql}")
file(WRITE ${OUT} "/* Generated from ${IN} by embed_sql.cmake: do not edit. */\nconst char ${NAME}[] = \"${sql}\";\n")
