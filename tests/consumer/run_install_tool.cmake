# `cmake --install BUILD --component tool`: the tool and multireduce-bench beside it and the licence,
# nothing else (no headers, no CMake package); `multireduce bench` of the installed tool runs the installed
# benchmarks; with CUDA, the tool needs no libcudart.so (the CUDA runtime is linked in).
#   cmake -DBUILD=<build dir> -DPREFIX=<scratch prefix> -DCUDA=ON|OFF -P run_install_tool.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --component tool --prefix "${PREFIX}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install --component tool failed (${rc}):\n${out}")
endif()
foreach(needed IN ITEMS "${PREFIX}/bin/multireduce" "${PREFIX}/bin/multireduce-bench"
                        "${PREFIX}/share/doc/multireduce/LICENSE")
  if(NOT EXISTS "${needed}")
    message(FATAL_ERROR "cmake --install --component tool did not install ${needed}:\n${out}")
  endif()
endforeach()
file(GLOB_RECURSE extra LIST_DIRECTORIES false RELATIVE "${PREFIX}" "${PREFIX}/*")
list(REMOVE_ITEM extra bin/multireduce bin/multireduce-bench share/doc/multireduce/LICENSE)
if(extra)
  message(FATAL_ERROR "cmake --install --component tool installed more than the tool: ${extra}")
endif()
execute_process(COMMAND "${PREFIX}/bin/multireduce" bench --list RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "cpu +the CPU backend")
  message(FATAL_ERROR "the installed tool's bench --list: exit ${rc}\n${out}\n${err}")
endif()
find_program(ldd ldd)
if(CUDA AND ldd)
  foreach(program IN ITEMS multireduce multireduce-bench)
    execute_process(COMMAND "${ldd}" "${PREFIX}/bin/${program}" OUTPUT_VARIABLE libraries ERROR_VARIABLE libraries)
    if(libraries MATCHES "libcudart")
      message(FATAL_ERROR "${program} needs the CUDA runtime library (it should be linked in):\n${libraries}")
    endif()
  endforeach()
endif()
