# The hand-written cases of the tool (cases.cmake holds the generated ones): the matcher against
# OpenCV, files that are not plain files, hostile usage. Included once per variant of the tool
# (CMakeLists.txt): `cli_target` names it, `cli_prefix` starts its tests' names.

# `multireduce match`: OpenCV's BFMatcher k = 2 results on real ORB and BRISK descriptors (exactly,
# both files), its ratio-test counts (tests/data/match/README.md), small edge cases against a
# plain-Python brute force (tests/data/match/make_small.py), and bad input. --backend auto: the
# GPU where there is one.
# One k-NN output (--knn-idx or --knn-dist, `what`) of `match ARGS` against EXPECTED; the other
# output goes next to it.
function(multireduce_match_knn_case name what expected)
  if(what STREQUAL "idx")
    set(other dist)
  else()
    set(other idx)
  endif()
  multireduce_cli_case(${name} npy ${expected} 0 0 0 "" match ${ARGN} --knn-${what} @OUT@ --knn-${other} @OUT@.other.npy)
endfunction()
foreach(kind orb256 brisk512)
  foreach(what idx dist)
    foreach(backend auto cpu)
      multireduce_match_knn_case(match_${kind}_knn_${what}_${backend} ${what}
                                 ../../data/match/astronaut_warp/knn_${kind}_${what}.npy
                                 @MATCH@/astronaut_warp/query_${kind}.npy @MATCH@/astronaut_warp/train_${kind}.npy
                                 --backend ${backend})
    endforeach()
    # The training set streamed through the GPU 1000 rows at a time (the CPU backend ignores it).
    multireduce_match_knn_case(match_${kind}_knn_${what}_streamed ${what}
                               ../../data/match/astronaut_warp/knn_${kind}_${what}.npy
                               @MATCH@/astronaut_warp/query_${kind}.npy @MATCH@/astronaut_warp/train_${kind}.npy
                               --train-chunk 1000)
  endforeach()
endforeach()
multireduce_cli_case(match_orb256_ratio_count exit "" 0 0 0 "5627 matches kept of 13488 queries"
                     match @MATCH@/astronaut_warp/query_orb256.npy @MATCH@/astronaut_warp/train_orb256.npy
                     --ratio 0.8 -o @OUT@.csv)
multireduce_cli_case(match_brisk512_ratio_count exit "" 0 0 0 "1563 matches kept of 3198 queries"
                     match @MATCH@/astronaut_warp/query_brisk512.npy @MATCH@/astronaut_warp/train_brisk512.npy
                     --ratio 0.8 -o @OUT@)
foreach(case "train_1x32;3" "train_0x32;2" "train_40x32;8")
  list(GET case 0 train)
  list(GET case 1 k)
  foreach(what idx dist)
    multireduce_match_knn_case(match_small_${train}_k${k}_${what} ${what} match_query_5x32_${train}_k${k}_${what}.npy
                               @MATCH@/small/query_5x32.npy @MATCH@/small/${train}.npy --k ${k})
  endforeach()
endforeach()
multireduce_cli_case(match_orb256_homography exit "" 0 0 0 "5021 of them \\(89.2%\\) agree with the homography"
                     match @MATCH@/astronaut_warp/query_orb256.npy @MATCH@/astronaut_warp/train_orb256.npy --ratio 0.8
                     --homography @MATCH@/astronaut_warp/H.npy --query-xy @MATCH@/astronaut_warp/query_orb256_xy.npy
                     --train-xy @MATCH@/astronaut_warp/train_orb256_xy.npy -o @OUT@.csv)
multireduce_cli_case(match_keypoints_do_not_fit exit "" 0 0 1 "the query keypoints must be .* of shape \\(3198, 2\\)"
                     match @MATCH@/astronaut_warp/query_brisk512.npy @MATCH@/astronaut_warp/train_brisk512.npy
                     --homography @MATCH@/astronaut_warp/H.npy --query-xy @MATCH@/astronaut_warp/query_orb256_xy.npy
                     --train-xy @MATCH@/astronaut_warp/train_brisk512_xy.npy -o @OUT@)
multireduce_cli_case(match_standard_input_twice exit "" 0 0 2 "standard input given twice" match - -)
multireduce_cli_case(match_empty_query exit "" 0 0 0 "0 matches kept of 0 queries"
                     match @MATCH@/small/query_0x32.npy @MATCH@/small/train_40x32.npy --ratio 0.7 -o @OUT@)
multireduce_cli_case(match_one_train_passes_ratio exit "" 0 0 0 "5 matches kept of 5 queries"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_1x32.npy --ratio 0.5 -o @OUT@)
multireduce_cli_case(match_not_uint8 exit "" 0 0 1 "descriptors must be a 2-d uint8 array"
                     match @MATCH@/astronaut_warp/query_orb256_xy.npy @MATCH@/astronaut_warp/train_orb256.npy -o @OUT@)
multireduce_cli_case(match_widths_differ exit "" 0 0 1 "the descriptor widths differ"
                     match @MATCH@/astronaut_warp/query_brisk512.npy @MATCH@/astronaut_warp/train_orb256.npy -o @OUT@)
multireduce_cli_case(match_ratio_out_of_range exit "" 0 0 2 "--ratio: 1.5 is out of range: a ratio is a number above 0"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_40x32.npy --ratio 1.5 -o @OUT@)
multireduce_cli_case(match_negative_margin exit "" 0 0 2 "--margin: -2 is out of range"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_40x32.npy --margin -2 -o @OUT@)
multireduce_cli_case(match_k_too_large exit "" 0 0 2 "--k"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_40x32.npy --k 9 -o @OUT@)
multireduce_cli_case(match_bad_output_extension exit "" 0 0 1 "written as .csv or .npy"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_40x32.npy -o @OUT@.txt)
multireduce_cli_case(match_output_is_an_input exit "" 0 0 1 "--knn-idx .*query_5x32.npy: that is the query set"
                     match @MATCH@/small/query_5x32.npy @MATCH@/small/train_40x32.npy --knn-idx @MATCH@/small/query_5x32.npy
                     --knn-dist @OUT@)
multireduce_cli_case(match_missing_file exit "" 0 0 1 "no such file"
                     match @MATCH@/small/nothing.npy @MATCH@/small/train_40x32.npy -o @OUT@)

# Files that are not plain files (standard output, devices, FIFOs, links, pipes), outputs checked
# before anything is written, hostile numbers and usage, faults from outside (a full disk, an input
# cut short while it is read, a signal mid-write): special_files.cmake, one check each.
foreach(case stdout_dash dev_stdout dev_null symlink stdin_input fifo_input fifo_output endless_inputs
             match_outputs_checked_first match_cross_check_empty_sets match_usage version_and_subcommands
             bench_outputs_and_exits stats_same_digits float16_prints_as_numpy stdout_full input_shrinks
             signal_mid_write)
  add_test(NAME ${cli_prefix}cli_files_${case}
           COMMAND ${CMAKE_COMMAND} "-DCLI=$<TARGET_FILE:${cli_target}>" "-DCHECK=$<TARGET_FILE:multireduce_cli_check>"
                   "-DDATA=${CMAKE_CURRENT_SOURCE_DIR}/data" "-DEXPECTED=${CMAKE_CURRENT_SOURCE_DIR}/expected"
                   "-DMATCH=${CMAKE_CURRENT_SOURCE_DIR}/../data/match" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/${cli_prefix}files_${case}"
                   "-DCASE=${case}" -P ${CMAKE_CURRENT_SOURCE_DIR}/special_files.cmake)
  set_tests_properties(${cli_prefix}cli_files_${case} PROPERTIES LABELS cli TIMEOUT 900)
endforeach()

# Without CUDA, --backend cuda stops with the reason; with CUDA it would run.
if(NOT MULTIREDUCE_ENABLE_CUDA)
  multireduce_cli_case(reduce_backend_cuda_without_cuda exit "" 0 0 1 "--backend cuda: this build has no CUDA support"
                       reduce @DATA@/float32_100.npy --op sum --backend cuda -o @OUT@)
  multireduce_cli_case(stats_backend_cuda_without_cuda exit "" 0 0 1 "--backend cuda: this build has no CUDA support"
                       stats @DATA@/float32_100.npy --backend cuda)
  multireduce_cli_case(reduce_auto_says_why_not_gpu exit "" 0 0 0 "backend cpu .*not the GPU: this build has no CUDA"
                       reduce @DATA@/float32_100.npy --op sum --timing)
endif()

# --devices: a list of GPUs or "all"; an empty list, a word, a missing GPU and --device beside it
# are usage errors naming the option (with or without a GPU here).
multireduce_cli_case("fail_devices_empty" "exit" "" "0.0" "0.0" "2" "--devices" "stats" "@DATA@/float32_100.npy" "--devices" ",")
multireduce_cli_case("fail_devices_word" "exit" "" "0.0" "0.0" "2" "--devices" "stats" "@DATA@/float32_100.npy" "--devices" "first")
multireduce_cli_case("fail_devices_missing" "exit" "" "0.0" "0.0" "2" "--devices" "stats" "@DATA@/float32_100.npy" "--devices" "0,99")
multireduce_cli_case("fail_devices_and_device" "exit" "" "0.0" "0.0" "2" "--device" "stats" "@DATA@/float32_100.npy" "--devices" "0" "--device" "0")
