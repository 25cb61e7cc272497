// multireduce/warp_multi_reduce.hpp -- moved to <multireduce/warp/warp_multi_reduce.hpp>. This forwarding header keeps old code
// compiling for one more release (0.2); include the new path.
#pragma once
#pragma message("multireduce: <multireduce/warp_multi_reduce.hpp> is deprecated and goes away after 0.2; include <multireduce/warp/warp_multi_reduce.hpp>")
#include "warp/warp_multi_reduce.hpp"
