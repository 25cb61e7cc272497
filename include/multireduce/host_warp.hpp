// multireduce/host_warp.hpp -- moved to <multireduce/emulator/host_warp.hpp>. This forwarding header keeps old code
// compiling for one more release (0.2); include the new path.
#pragma once
#pragma message("multireduce: <multireduce/host_warp.hpp> is deprecated and goes away after 0.2; include <multireduce/emulator/host_warp.hpp>")
#include "emulator/host_warp.hpp"
