# multireduce_sanitized_copy(TARGET [O0] [EXTRA_SOURCES file...] [EXCLUDE regex])
#
# Defines TARGET_sanitized: the same executable or static library -- its sources (CUDA sources left
# out: the copy is host code only), include directories, definitions and options -- built with
# AddressSanitizer and UndefinedBehaviorSanitizer (-fno-sanitize-recover: the first report fails
# the run), and linked to the _sanitized copy of every library that has one. EXCLUDE: sources
# (matched on the full path) left out of the copy, as stand-ins in EXTRA_SOURCES replace them. Without the project's
# -Werror: GCC's flow warnings see false positives in sanitized code (the plain build keeps them).
# At -O1 (the original's -O0 stays), or at -O0 with O0. The host tests run
# twice: as built for users, and as these copies (tests/CMakeLists.txt). The copy has the target
# property MULTIREDUCE_SANITIZED_COPY set, for source options that are the original's alone.
add_library(multireduce_sanitize INTERFACE)
target_compile_options(multireduce_sanitize INTERFACE -fsanitize=address,undefined -fno-sanitize-recover=all
                                                      -fno-omit-frame-pointer)
target_link_options(multireduce_sanitize INTERFACE -fsanitize=address,undefined)

function(multireduce_sanitized_copy target)
  cmake_parse_arguments(arg "O0" "EXCLUDE" "EXTRA_SOURCES" ${ARGN})
  get_target_property(type ${target} TYPE)
  get_target_property(dir ${target} SOURCE_DIR)
  get_target_property(sources ${target} SOURCES)
  set(copy_sources ${arg_EXTRA_SOURCES})
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.cu$")
      continue()
    endif()
    if(NOT IS_ABSOLUTE "${source}")
      set(source "${dir}/${source}")
    endif()
    if(arg_EXCLUDE AND source MATCHES "${arg_EXCLUDE}")
      continue()
    endif()
    list(APPEND copy_sources "${source}")
  endforeach()
  set(copy ${target}_sanitized)
  if(type STREQUAL "EXECUTABLE")
    add_executable(${copy} ${copy_sources} ${PROJECT_SOURCE_DIR}/tests/common/sanitizer_options.cpp)
  else()
    add_library(${copy} STATIC ${copy_sources})
  endif()
  # (UNITY_BUILD too: the tool's copy compiles as one file, as the tool does -- 130 s of CPU less)
  foreach(property INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS
                   COMPILE_FEATURES INTERFACE_COMPILE_FEATURES UNITY_BUILD)
    get_target_property(value ${target} ${property})
    if(value)
      set_property(TARGET ${copy} PROPERTY ${property} "${value}")
    endif()
  endforeach()
  # -O1, the sanitizers' usual level (it halves their compile time against -O3), unless the
  # original or the caller (O0) asks for less. At -O0 the sanitizers check every access the
  # source makes (none optimised away); the code only runs slower.
  get_target_property(options ${target} COMPILE_OPTIONS)
  if(arg_O0 AND NOT "-O0" IN_LIST options)
    target_compile_options(${copy} PRIVATE -O0)
  elseif(NOT "-O0" IN_LIST options)
    target_compile_options(${copy} PRIVATE -O1)
  endif()
  set_target_properties(${copy} PROPERTIES MULTIREDUCE_SANITIZED_COPY ON)
  # The libraries, each by its sanitized copy where there is one.
  foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(libraries ${target} ${property})
    set(mapped "")
    foreach(library IN LISTS libraries)
      if(library AND TARGET ${library}_sanitized)
        set(library ${library}_sanitized)
      endif()
      if(library MATCHES "multireduce_warnings" OR (arg_EXCLUDE AND library MATCHES "OpenCL::"))
        continue()
      endif()
      if(library)
        list(APPEND mapped "${library}")
      endif()
    endforeach()
    set_property(TARGET ${copy} PROPERTY ${property} "${mapped}")
  endforeach()
  target_link_libraries(${copy} PUBLIC multireduce_sanitize)
endfunction()
