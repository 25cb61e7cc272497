// A CPU reduction with an operator that cannot combine two accumulators: the first error is the
// library's message (the test compiles with -fmax-errors=1), not template noise.
#include <multireduce/cpu.hpp>
struct not_a_reduction {
  int operator()(int a) const { return a; }
};
int f(const int* in) { return multireduce::cpu::reduce(in, 10, not_a_reduction{}, 0); }
