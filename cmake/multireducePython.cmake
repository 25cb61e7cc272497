# Decides whether the Python module is built (MULTIREDUCE_PYTHON ON/OFF) from
# MULTIREDUCE_BUILD_PYTHON: ON (nanobind must be found), OFF, or AUTO (built when the Python that
# find_package(Python) finds -- an activated virtual environment first -- has nanobind installed).
# Under scikit-build-core (pip install .) it is always ON.
if(SKBUILD)
  set(MULTIREDUCE_BUILD_PYTHON ON)
endif()
set(MULTIREDUCE_PYTHON OFF)
set(multireduce_python_off "")
if(NOT SKBUILD)
  set(multireduce_python_off ", or build without the module: -DMULTIREDUCE_BUILD_PYTHON=OFF")
endif()
if(MULTIREDUCE_BUILD_PYTHON)  # ON or AUTO
  set(Python_FIND_VIRTUALENV FIRST)
  find_package(Python 3.9 COMPONENTS Interpreter Development.Module)
  if(NOT Python_FOUND AND NOT MULTIREDUCE_BUILD_PYTHON STREQUAL "AUTO")
    message(FATAL_ERROR "multireduce: the Python module needs Python 3.9 or newer with its headers, which were not "
                        "found. Install them (Debian/Ubuntu: sudo apt-get install python3-dev python3-venv)"
                        "${multireduce_python_off}.")
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
    message(FATAL_ERROR "multireduce: the Python module needs nanobind, which ${Python_EXECUTABLE} does not have. "
                        "Install it: pip install nanobind (into that environment; with pip install . "
                        "--no-build-isolation, pip install nanobind scikit-build-core numpy first)"
                        "${multireduce_python_off}.")
  endif()
endif()
message(STATUS "multireduce: Python module ${MULTIREDUCE_PYTHON}")
