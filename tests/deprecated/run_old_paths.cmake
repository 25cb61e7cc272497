# Compiles a file that includes the moved headers (warnings as errors) and checks that it builds
# and that the compiler showed the deprecation message.
#   cmake -DCOMPILER=... -DFLAGS=a|b|c -DSOURCE=file -DOUT=object -P run_old_paths.cmake
string(REPLACE "|" ";" flags "${FLAGS}")
execute_process(COMMAND ${COMPILER} ${flags} -c ${SOURCE} -o ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the old include paths no longer compile:\n${out}")
endif()
if(NOT out MATCHES "is deprecated and goes away after 0.2")
  message(FATAL_ERROR "the old include paths compiled without the deprecation message:\n${out}")
endif()
