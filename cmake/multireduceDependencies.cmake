# multireduce_find_dependency(PACKAGE [DEBIAN debian-package] [PIP pip-package] FOR "what needs it"
#                             [WITHOUT "how to build without it"] [ARGS find_package arguments...])
#
# find_package(PACKAGE) quietly; when it is not found, stops configure with a message that names
# what to install (the Debian package, or the pip one) instead of CMake's generic "Could not find
# PACKAGEConfig.cmake".
function(multireduce_find_dependency package)
  cmake_parse_arguments(arg "" "DEBIAN;PIP;FOR;WITHOUT" "ARGS" ${ARGN})
  find_package(${package} ${arg_ARGS} QUIET)
  if(${package}_FOUND)
    return()
  endif()
  set(install "")
  if(arg_DEBIAN)
    string(APPEND install "\n  Debian/Ubuntu: sudo apt-get install ${arg_DEBIAN}")
  endif()
  if(arg_PIP)
    string(APPEND install "\n  pip: pip install ${arg_PIP}  (into the Python environment this build uses)")
  endif()
  set(without "")
  if(arg_WITHOUT)
    set(without "\nOr build without ${arg_FOR}: ${arg_WITHOUT}.")
  endif()
  message(FATAL_ERROR "multireduce: ${package}, needed by ${arg_FOR}, was not found. Install it:${install}\n"
                      "(or point CMAKE_PREFIX_PATH at an installed copy), then configure again.${without}")
endfunction()
