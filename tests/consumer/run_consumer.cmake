# Installs multireduce into a scratch prefix, then configures, builds and runs tests/consumer: a
# plain C++ consumer, the CPU backend through multireduce::cpu (OpenMP required when EXPECT_OPENMP),
# and a .cu consumer when CUDA=ON (run on a GPU when there is one).
#   cmake -DSOURCE=<repo> -DWORK=<scratch> -DGENERATOR=<gen> [-DCUDA=ON] [-DEXPECT_OPENMP=ON] -P run_consumer.cmake
file(REMOVE_RECURSE ${WORK})
if(NOT DEFINED CUDA)
  set(CUDA OFF)
endif()
if(NOT DEFINED EXPECT_OPENMP)
  set(EXPECT_OPENMP OFF)
endif()
# Steps separated by ";", the words of a step by "|".
set(steps
    "${CMAKE_COMMAND}|-S|${SOURCE}|-B|${WORK}/lib|-G|${GENERATOR}|-DMULTIREDUCE_ENABLE_CUDA=OFF|-DMULTIREDUCE_BUILD_TESTS=OFF|-DMULTIREDUCE_BUILD_TOOLS=OFF|-DMULTIREDUCE_BUILD_PYTHON=OFF|-DCMAKE_INSTALL_PREFIX=${WORK}/prefix"
    "${CMAKE_COMMAND}|--install|${WORK}/lib"
    "${CMAKE_COMMAND}|-S|${SOURCE}/tests/consumer|-B|${WORK}/app|-G|${GENERATOR}|-DCMAKE_PREFIX_PATH=${WORK}/prefix|-DCONSUMER_CUDA=${CUDA}|-DCONSUMER_EXPECT_OPENMP=${EXPECT_OPENMP}|-DCMAKE_CUDA_ARCHITECTURES=90a"
    "${CMAKE_COMMAND}|--build|${WORK}/app"
    "${WORK}/app/consumer"
    "${WORK}/app/consumer_cpu")
if(CUDA)
  list(APPEND steps "${WORK}/app/consumer_cuda")
endif()
foreach(step IN LISTS steps)
  string(REPLACE "|" ";" command "${step}")
  string(REPLACE "|" " " shown "${step}")
  execute_process(COMMAND ${command} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer step failed (${rc}): ${shown}")
  endif()
endforeach()
