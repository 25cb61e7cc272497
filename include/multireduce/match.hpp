// multireduce/match.hpp -- moved to <multireduce/match/match.hpp> (the types and rules) and
// <multireduce/match/cpu.hpp> (the CPU path). This forwarding header keeps old code compiling for
// one more release (0.2); include the new paths.
#pragma once
#pragma message("multireduce: <multireduce/match.hpp> is deprecated and goes away after 0.2; include <multireduce/match/cpu.hpp>")
#include "match/cpu.hpp"
