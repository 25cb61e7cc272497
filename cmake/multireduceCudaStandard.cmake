# multireduce_cuda_standard(TARGET [BUILD_INTERFACE]): CUDA sources that use TARGET compile as C++20
# (the headers use concepts). Where the CMake in use knows the CUDA compiler's C++20 flag, as the
# compile feature cuda_std_20; where it does not (CMake before 3.30 with nvcc 13), as -std=c++20 on
# CUDA sources only. Used by the build tree (BUILD_INTERFACE) and by multireduceConfig.cmake for an
# installed package, so that a consumer's project with nothing but find_package(multireduce) and
# target_link_libraries(app multireduce::multireduce) builds its .cu files.
function(multireduce_cuda_standard target)
  set(wrap "${ARGN}")
  if(CMAKE_CUDA_COMPILE_FEATURES AND "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
    set(option "")
    set(feature cuda_std_20)
  else()
    set(option "$<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>")
    set(feature "")
  endif()
  if(wrap STREQUAL "BUILD_INTERFACE")
    if(option)
      target_compile_options(${target} INTERFACE "$<BUILD_INTERFACE:${option}>")
    endif()
    if(feature)
      target_compile_features(${target} INTERFACE ${feature})
    endif()
  else()
    if(option)
      set_property(TARGET ${target} APPEND PROPERTY INTERFACE_COMPILE_OPTIONS "${option}")
    endif()
    if(feature)
      set_property(TARGET ${target} APPEND PROPERTY INTERFACE_COMPILE_FEATURES ${feature})
    endif()
  endif()
endfunction()
