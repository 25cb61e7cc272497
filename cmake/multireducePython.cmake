# Decides whether the Python module is built (MULTIREDUCE_PYTHON ON/OFF) from
# MULTIREDUCE_BUILD_PYTHON: ON (nanobind must be found), OFF, or AUTO (built when the Python that
# find_package(Python) finds -- an activated virtual environment first -- has nanobind installed).
# Under scikit-build-core (pip install .) it is always ON.
if(SKBUILD)
  set(MULTIREDUCE_BUILD_PYTHON ON)
endif()
set(MULTIREDUCE_PYTHON OFF)
if(MULTIREDUCE_BUILD_PYTHON)  # ON or AUTO
  set(Python_FIND_VIRTUALENV FIRST)
  if(MULTIREDUCE_BUILD_PYTHON STREQUAL "AUTO")
    find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  else()
    find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
  endif()
  if(Python_FOUND)
    execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir OUTPUT_VARIABLE multireduce_nanobind_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE multireduce_nanobind_missing)
  endif()
  if(Python_FOUND AND NOT multireduce_nanobind_missing)
    set(MULTIREDUCE_PYTHON ON)
    list(APPEND CMAKE_PREFIX_PATH "${multireduce_nanobind_dir}")
    find_package(nanobind CONFIG REQUIRED)
  elseif(MULTIREDUCE_BUILD_PYTHON STREQUAL "AUTO")
    message(STATUS "multireduce: no Python module (no Python with nanobind found: "
                   "pip install nanobind numpy pytest into the active environment to build and test it)")
  else()
    message(FATAL_ERROR "MULTIREDUCE_BUILD_PYTHON=ON needs nanobind for ${Python_EXECUTABLE} (pip install nanobind)")
  endif()
endif()
message(STATUS "multireduce: Python module ${MULTIREDUCE_PYTHON}")
