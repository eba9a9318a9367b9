# Turns a text file into a C string definition: config_default_yaml[].
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE ${OUT} "/* Generated from policy/default.yaml; do not edit. */\n"
	"const char config_default_yaml[] = {${content} 0x00};\n")
