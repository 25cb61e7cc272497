// multireduce/multireduce.hpp -- everything that compiles with a plain C++20 compiler.
// CUDA code also includes <multireduce/cuda_lane.cuh>.
#pragma once

#include "array.hpp"
#include "block/block_reduce.hpp"
#include "config.hpp"
#include "lane.hpp"
#include "warp/online_multi_reduce.hpp"
#include "operators.hpp"
#include "warp/warp_multi_reduce.hpp"
#include "warp/warp_reduce.hpp"
