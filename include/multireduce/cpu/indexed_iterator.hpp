// multireduce/cpu/indexed_iterator.hpp -- moved to <multireduce/cpu/transform_iterator.hpp>. This
// forwarding header keeps old code compiling for one more release (0.2); include the new path.
#pragma once
#pragma message("multireduce: <multireduce/cpu/indexed_iterator.hpp> is deprecated and goes away after 0.2; include <multireduce/cpu/transform_iterator.hpp>")
#include "transform_iterator.hpp"
