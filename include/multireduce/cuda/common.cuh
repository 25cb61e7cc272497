// multireduce/cuda/common.cuh -- split into <multireduce/cuda/detail/*.cuh>. This forwarding
// header keeps old code compiling for one more release (0.2); include <multireduce/cuda.cuh>.
#pragma once
#pragma message("multireduce: <multireduce/cuda/common.cuh> is deprecated and goes away after 0.2; include <multireduce/cuda.cuh>")
#include "../cuda.cuh"
