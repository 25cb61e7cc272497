// multireduce/cpu/detail.hpp -- split into <multireduce/cpu/detail/*.hpp>. This forwarding header
// keeps old code compiling for one more release (0.2); include <multireduce/cpu.hpp>.
#pragma once
#pragma message("multireduce: <multireduce/cpu/detail.hpp> is deprecated and goes away after 0.2; include <multireduce/cpu.hpp>")
#include "../cpu.hpp"
