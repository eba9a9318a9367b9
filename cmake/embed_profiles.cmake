# Turns image/profiles/*.yaml into providers_profiles[]: each profile's name
# (the file name) and text, for opencode-sandbox's provider allowlisting.
file(GLOB files ${DIR}/*.yaml)
list(SORT files)
set(body "")
set(count 0)
foreach(f ${files})
	get_filename_component(name ${f} NAME_WE)
	file(READ ${f} content HEX)
	string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
	string(APPEND body "static const char profile_${count}[] = {${content} 0x00};\n")
	string(APPEND table "\t{\"${name}\", profile_${count}},\n")
	math(EXPR count "${count} + 1")
endforeach()
file(WRITE ${OUT} "/* Generated from the YAML files of image/profiles; do not edit. */\n"
	"#include <stddef.h>\n#include \"host.h\"\n${body}"
	"const struct providers_profile providers_profiles[] = {\n${table}};\n"
	"const size_t providers_nprofiles = ${count};\n")
