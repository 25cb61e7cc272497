# `cmake --install` of a configured and built tree into a scratch prefix, then checks that what a
# user needs is there: the headers, the package files and the tool.
#   cmake -DBUILD=<build dir> -DPREFIX=<scratch prefix> -P run_install.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD}" --prefix "${PREFIX}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}")
endif()
file(GLOB_RECURSE config "${PREFIX}/*/multireduceConfig.cmake")
foreach(needed IN ITEMS "${PREFIX}/include/multireduce/cuda.cuh" "${PREFIX}/include/multireduce/warp/warp_reduce.hpp"
                        "${PREFIX}/bin/multireduce" "${PREFIX}/share/doc/multireduce/LICENSE")
  if(NOT EXISTS "${needed}")
    message(FATAL_ERROR "cmake --install did not install ${needed}")
  endif()
endforeach()
if(NOT config)
  message(FATAL_ERROR "cmake --install did not install multireduceConfig.cmake")
endif()
