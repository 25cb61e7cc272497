# Installs multireduce into a scratch prefix, then configures, builds and runs tests/consumer.
file(REMOVE_RECURSE ${WORK})
foreach(step IN ITEMS
    "${CMAKE_COMMAND};-S;${SOURCE};-B;${WORK}/lib;-G;${GENERATOR};-DMULTIREDUCE_ENABLE_CUDA=OFF;-DMULTIREDUCE_BUILD_TESTS=OFF;-DMULTIREDUCE_BUILD_TOOLS=OFF;-DCMAKE_INSTALL_PREFIX=${WORK}/prefix"
    "${CMAKE_COMMAND};--install;${WORK}/lib"
    "${CMAKE_COMMAND};-S;${SOURCE}/tests/consumer;-B;${WORK}/app;-G;${GENERATOR};-DCMAKE_PREFIX_PATH=${WORK}/prefix"
    "${CMAKE_COMMAND};--build;${WORK}/app"
    "${WORK}/app/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer step failed (${rc}): ${step}")
  endif()
endforeach()
