// python/src/records.hpp -- what the core's bindings share (core.cpp defines them; match.cpp, the
// matcher's bindings, uses them): reading the front's records (operands as named tuples whose
// fields core.cpp names) and running a job without the GIL.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/runtime.hpp"

namespace multireduce::python_core {

namespace nb = nanobind;
namespace rt = multireduce::runtime;

std::string_view text_of(nb::handle h);
/// An int field of a record (the front makes them Python ints; anything else is a TypeError).
std::int64_t int_of(nb::handle h);
std::uintptr_t address_of(nb::handle h);
/// The operand's array (its memory's name must outlive the view: the operand holds it).
rt::array_view array_of(const nb::tuple& x);
/// An output of `type` and `count` at `address`, in the operand's memory.
rt::output_view output_like(const rt::array_view& x, std::uintptr_t address, rt::dtype type, std::int64_t count);
/// The execution of a call on `backend` for the operand x: its device (or `devices`) and stream.
/// `devices`: the GPUs of a devices= call (empty: the operand's device).
rt::execution execution_of(std::string_view backend, const rt::array_view& x, const nb::tuple& operand,
                           const std::vector<int>& devices = {});

/// (the backend that ran the call, why "auto" passed the ones before it over: "" if none)
using outcome = std::pair<std::string, std::string>;
outcome outcome_of(const rt::report& r);

/// Runs job() with the GIL released (the arrays are addresses; the records were read before).
template <class F>
decltype(auto) without_gil(F&& job) {
  nb::gil_scoped_release release;
  return job();
}

/// Adds the matcher's functions to the module: knn, accept, check_match_rule, match_all.
void bind_matcher(nb::module_& m);

}  // namespace multireduce::python_core
