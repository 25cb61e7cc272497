// multireduce/block_reduce.hpp -- moved to <multireduce/block/block_reduce.hpp>. This forwarding header keeps old code
// compiling for one more release (0.2); include the new path.
#pragma once
#pragma message("multireduce: <multireduce/block_reduce.hpp> is deprecated and goes away after 0.2; include <multireduce/block/block_reduce.hpp>")
#include "block/block_reduce.hpp"
