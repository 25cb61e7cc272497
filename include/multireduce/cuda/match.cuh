// multireduce/cuda/match.cuh -- moved to <multireduce/match/cuda.cuh>. This forwarding header keeps
// old code compiling for one more release (0.2); include the new path.
#pragma once
#pragma message("multireduce: <multireduce/cuda/match.cuh> is deprecated and goes away after 0.2; include <multireduce/match/cuda.cuh>")
#include "../match/cuda.cuh"
