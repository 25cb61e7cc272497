# Builds tests/fuzz/fuzz_npy.cpp with clang's libFuzzer, ASan and UBSan, then fuzzes npy::parse for
# 60 seconds from a corpus seeded with tests/data/npy/*.npy. Fails on any crash, sanitizer report,
# leak, timeout or memory blow-up; the input that did it is kept in ${WORK}/artifacts.
#   cmake -DSOURCE=<repo> -DWORK=<scratch dir> [-DCLANGXX=<clang++>] [-DSECONDS=60] -P run_fuzz.cmake
# Without clang or its libFuzzer runtime it prints "fuzz_npy_reader: SKIPPED" (and exits 77 on
# CMake >= 3.29); the test's SKIP_REGULAR_EXPRESSION / SKIP_RETURN_CODE report it as skipped.
if(NOT DEFINED SECONDS)
  set(SECONDS 60)
endif()

function(skip why)
  message("fuzz_npy_reader: SKIPPED: ${why}")
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.29)
    cmake_language(EXIT 77)
  endif()
  # Older CMake cannot choose its exit code: stop here with 0, the output marks the skip.
endfunction()

# ---- a clang++: plain clang++ first, else the newest clang++-NN on PATH ----------------------------
if(NOT CLANGXX)
  find_program(CLANGXX clang++)
endif()
if(NOT CLANGXX)
  string(REPLACE ":" ";" path_dirs "$ENV{PATH}")
  set(best_version 0)
  foreach(dir IN LISTS path_dirs)
    file(GLOB candidates "${dir}/clang++-[0-9]*")
    foreach(candidate IN LISTS candidates)
      get_filename_component(candidate_name "${candidate}" NAME)
      if(candidate_name MATCHES "^clang\\+\\+-([0-9]+)$" AND CMAKE_MATCH_1 GREATER best_version)
        set(best_version ${CMAKE_MATCH_1})
        set(CLANGXX "${candidate}")
      endif()
    endforeach()
  endforeach()
endif()
if(NOT CLANGXX)
  skip("no clang++ or clang++-NN on PATH (Debian: apt-get install clang libclang-rt-dev)")
  return()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
set(flags -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)

# ---- can this clang link a fuzzer at all? (the runtime is a separate package on Debian) ---------
file(WRITE "${WORK}/probe.cpp"
     "#include <cstddef>\n#include <cstdint>\n"
     "extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }\n")
execute_process(COMMAND "${CLANGXX}" ${flags} "${WORK}/probe.cpp" -o "${WORK}/probe"
                RESULT_VARIABLE rc OUTPUT_VARIABLE probe_out ERROR_VARIABLE probe_out)
if(NOT rc EQUAL 0)
  set(why "${CLANGXX} cannot link -fsanitize=fuzzer,address,undefined")
  skip("${why} (libFuzzer runtime missing? Debian: libclang-rt-dev):\n${probe_out}")
  return()
endif()

# ---- build the target: npy.cpp has no dependencies, so compile it right in ------------------------
message("fuzz_npy_reader: building with ${CLANGXX}")
execute_process(COMMAND "${CLANGXX}" ${flags} -Wall -Wextra -I${SOURCE}/src ${SOURCE}/src/npy/npy.cpp
                        ${SOURCE}/tests/fuzz/fuzz_npy.cpp -o "${WORK}/fuzz_npy"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz_npy_reader: building the fuzz target failed (${rc})")
endif()

# ---- seeds and a dictionary of the format's tokens ------------------------------------------------
file(GLOB seeds "${SOURCE}/tests/data/npy/*.npy")
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
set(tokens "\\x93NUMPY" "\\x01\\x00" "\\x02\\x00" "\\x03\\x00" "{" "}" "(" ")" "[" "]" "," ", " ": " "'" "\""
           "'descr'" "'fortran_order'" "'shape'" "True" "False" "None" "'<f4'" "'>f8'" "'|u1'" "'<f2'" "'>i2'"
           "'|O'" "'|b1'" "<" ">" "|" "=" "i1" "i8" "u2" "u4" "f2" "f4" "f8" "b1" "-1" "0" "9223372036854775807"
           "9223372036854775808" "4294967296" "(0,)" "()" "\\x0a")
set(dict_text "")
foreach(token IN LISTS tokens)
  string(REPLACE "\"" "\\\"" token "${token}")
  string(APPEND dict_text "\"${token}\"\n")
endforeach()
file(WRITE "${WORK}/npy.dict" "${dict_text}")

# ---- fuzz ------------------------------------------------------------------------------------------
message("fuzz_npy_reader: fuzzing npy::parse for ${SECONDS} s")
execute_process(COMMAND "${WORK}/fuzz_npy" "${WORK}/corpus" -dict=${WORK}/npy.dict -max_total_time=${SECONDS}
                        -rss_limit_mb=2048 -timeout=10 -max_len=8192 -print_final_stats=1
                        -artifact_prefix=${WORK}/artifacts/
                WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc)
file(GLOB findings "${WORK}/artifacts/*")
if(NOT rc EQUAL 0 OR findings)
  message(FATAL_ERROR "fuzz_npy_reader: the fuzzer found a bug (exit ${rc}); reproduce with\n"
                      "  ${WORK}/fuzz_npy <input>\nfor each input in:\n  ${findings}")
endif()
message("fuzz_npy_reader: no crashes")
