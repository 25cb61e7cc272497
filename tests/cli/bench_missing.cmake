# `multireduce bench` where multireduce-bench is not beside the tool (a build of the tool alone, as
# scripts/demo.sh makes): exit 1, naming the missing program and how to build it.
# Usage: cmake -DCLI=path/to/multireduce -DWORK=dir -P bench_missing.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${CLI}" DESTINATION "${WORK}")  # the tool alone
get_filename_component(name "${CLI}" NAME)
execute_process(COMMAND "${WORK}/${name}" bench --list RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(expected "^multireduce bench: the benchmarks are a separate program, multireduce-bench, not built here \\(there is no ")
if(NOT status EQUAL 1 OR NOT err MATCHES "${expected}" OR NOT err MATCHES "cmake --build .* --target multireduce_bench")
  message(FATAL_ERROR "bench without multireduce-bench: exit ${status}\nstdout: ${out}\nstderr: ${err}")
endif()
message(STATUS "${err}")
