// The cases of the warp and block layers for a wavefront of Wave lanes (64: gfx90a, 32: gfx1030):
// one list of test bodies (warp_bodies.hpp), compiled by hipcc in kernels with hip_lane
// (tests/hip/compile_layers.hip) and run and checked on the emulator with Wave-lane warps
// (tests/hip/test_wave_cases.cpp), so that the code hipcc compiles for an AMD wavefront is the code
// the emulator checks.
//
// For every logical warp size 1 .. Wave: warp_reduce (reduce, all-reduce, partial),
// warp_multi_reduce with every algorithm (W / 2 + 1 batches, and W + 1: more batches than lanes), the
// online multi-reducer (full and minimal register budget); at width Wave also 64-bit, struct and
// non-commutative values, two streams and the blocked layout. Blocks of Wave, 3 x Wave and 1024
// threads for block_reduce and block_all_reduce; block_multi_reduce with every algorithm on two
// wavefronts (5 batches, and 2 x Wave + 1: more batches than threads).
#pragma once

#include <type_traits>
#include <utility>

#include "warp_bodies.hpp"

namespace mr_test {

template <class... Cases>
struct case_list {
  static constexpr int size = sizeof...(Cases);
};

namespace detail_cases {
template <class... Lists>
struct cat {
  using type = case_list<>;
};
template <class... A>
struct cat<case_list<A...>> {
  using type = case_list<A...>;
};
template <class... A, class... B, class... Rest>
struct cat<case_list<A...>, case_list<B...>, Rest...> : cat<case_list<A..., B...>, Rest...> {};
}  // namespace detail_cases

/// The cases of all the lists, in order.
template <class... Lists>
using cat_t = typename detail_cases::cat<Lists...>::type;

// ---- the list ------------------------------------------------------------------------------------

/// warp_multi_reduce of Batches with every algorithm.
template <class T, class Op, int Batches, int W, result_layout L>
using every_algorithm =
    case_list<warp_multi_reduce_body<T, Op, Batches, W, algo::butterfly, L>,
              warp_multi_reduce_body<T, Op, Batches, W, algo::select_merge, L>,
              warp_multi_reduce_body<T, Op, Batches, W, algo::swap, L>,
              warp_multi_reduce_body<T, Op, Batches, W, algo::order_preserving, L>,
              warp_multi_reduce_body<T, Op, Batches, W, algo::shared_exchange, L>>;

/// The warp layer at logical warp size W.
template <int W>
using warp_cases_of_width =
    cat_t<case_list<warp_reduce_body<int, sum, W, 0>, warp_reduce_body<int, sum, W, 1>,
                    warp_reduce_body<int, sum, W, 2>, online_body<int, sum, W, detail::log2_of<W> + 1, 1>>,
          std::conditional_t<(W > 1), case_list<online_body<int, sum, W, 1, 1>>, case_list<>>,  // the minimal budget
          every_algorithm<int, sum, W / 2 + 1, W, result_layout::striped>,
          every_algorithm<int, sum, W + 1, W, result_layout::striped>>;

/// The warp layer at the full width, for the other kinds of values and the other layout.
template <int Wave>
using full_width_cases =
    cat_t<case_list<warp_reduce_body<double, minimum, Wave, 0>, warp_reduce_body<double, minimum, Wave, 1>,
                    warp_reduce_body<mat2, mat2_product, Wave, 0>, warp_reduce_body<mat2, mat2_product, Wave, 1>,
                    warp_reduce_body<mat2, mat2_product, Wave, 2>,
                    warp_multi_reduce_body<mat2, mat2_product, 5, Wave, algo::order_preserving, result_layout::striped>,
                    warp_multi_reduce_body<mat2, mat2_product, Wave + 1, Wave, algo::order_preserving,
                                           result_layout::blocked>,
                    online_body<int, sum, Wave, detail::log2_of<Wave> + 1, 2>,
                    online_body<mat2, mat2_product, Wave, detail::log2_of<Wave> + 1, 1>>,
          every_algorithm<double, sum, 5, Wave, result_layout::striped>,
          every_algorithm<key_value<float, int>, argmin, 5, Wave, result_layout::striped>,
          every_algorithm<int, sum, 2 * Wave + 1, Wave, result_layout::blocked>>;

/// block_multi_reduce of Batches on BlockThreads with every algorithm.
template <int Batches, int BlockThreads, int Wave>
using every_block_algorithm =
    case_list<block_multi_reduce_body<int, sum, Batches, BlockThreads, algo::butterfly, Wave>,
              block_multi_reduce_body<int, sum, Batches, BlockThreads, algo::select_merge, Wave>,
              block_multi_reduce_body<int, sum, Batches, BlockThreads, algo::swap, Wave>,
              block_multi_reduce_body<int, sum, Batches, BlockThreads, algo::order_preserving, Wave>,
              block_multi_reduce_body<int, sum, Batches, BlockThreads, algo::shared_exchange, Wave>>;

/// The block layer on wavefronts of Wave lanes.
template <int Wave>
using block_cases =
    cat_t<case_list<block_reduce_body<int, sum, Wave, Wave, false>, block_reduce_body<int, sum, Wave, Wave, true>,
                    block_reduce_body<int, sum, 3 * Wave, Wave, false>,
                    block_reduce_body<int, sum, 3 * Wave, Wave, true>,
                    block_reduce_body<int, sum, 1024, Wave, false>, block_reduce_body<int, sum, 1024, Wave, true>,
                    block_reduce_body<mat2, mat2_product, 3 * Wave, Wave, true>,
                    block_multi_reduce_body<mat2, mat2_product, 7, 3 * Wave, algo::order_preserving, Wave>>,
          every_block_algorithm<5, 2 * Wave, Wave>, every_block_algorithm<2 * Wave + 1, 2 * Wave, Wave>>;

template <int... Log2>
auto warp_cases_up_to(std::integer_sequence<int, Log2...>) -> cat_t<warp_cases_of_width<(1 << Log2)>...>;

/// Every case for a wavefront of Wave (32 or 64) lanes.
template <int Wave>
using wave_cases = cat_t<decltype(warp_cases_up_to(std::make_integer_sequence<int, detail::log2_of<Wave> + 1>{})),
                         full_width_cases<Wave>, block_cases<Wave>>;

}  // namespace mr_test
