// multireduce/multireduce.hpp -- everything that compiles with a plain C++20 compiler.
// CUDA code also includes <multireduce/cuda_lane.cuh>.
#pragma once

#include "array.hpp"
#include "block_reduce.hpp"
#include "config.hpp"
#include "lane.hpp"
#include "online_multi_reduce.hpp"
#include "operators.hpp"
#include "warp_multi_reduce.hpp"
#include "warp_reduce.hpp"
