// runtime/backend_table.cpp -- the table of backends (backend.hpp): the built-in ones, and those
// registered at run time. A call reads the table as it stands without a lock (a shared snapshot);
// a registration replaces it whole.
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backend.hpp"

namespace multireduce::runtime {

// ---- the built-in backends, in the order "auto" tries them ----------------------------------------
// Each is defined in its own folder (src/runtime/NAME/); a build without a backend's toolkit
// defines it there too, with no devices and the reason in every answer.
const backend& cuda_backend();
const backend& cpu_backend();
const backend& opencl_backend();

namespace {

using table = std::vector<const backend*>;

/// The table as it stands: replaced whole (under a mutex) by a registration, read without a lock.
struct table_holder {
  std::mutex registering;
  std::atomic<std::shared_ptr<const table>> current{std::make_shared<const table>(table{&cuda_backend(), &cpu_backend(), &opencl_backend()})};
};

table_holder& holder() {
  static table_holder h;
  return h;
}

std::shared_ptr<const table> snapshot() { return holder().current.load(); }

std::string names_of(const table& t, std::string_view separator) {
  std::string names = "auto";
  for (const backend* b : t) names += std::string(separator) + std::string(b->name());
  return names;
}

[[noreturn]] void no_device_memory(const backend& b) {
  throw unsupported_error(b.name(), "the " + std::string(b.name()) + " backend reads no device memory");
}

}  // namespace

void backend::reduce(const reduce_job&, const output_view&, const execution&, report&) const { no_device_memory(*this); }
void backend::statistics(const array_view&, const output_view&, const execution&, report&) const {
  no_device_memory(*this);
}
void backend::knn(const knn_device_job&, const execution&, report&) const { no_device_memory(*this); }

std::vector<const backend*> backends() { return *snapshot(); }

void register_backend(const backend& b, std::size_t position) {
  table_holder& h = holder();
  const std::lock_guard<std::mutex> lock(h.registering);
  const std::shared_ptr<const table> old = snapshot();
  if (b.name().empty() || b.name() == "auto")
    throw std::invalid_argument("a backend cannot be named '" + std::string(b.name()) + "'");
  for (const backend* other : *old)
    if (other->name() == b.name())
      throw std::invalid_argument("a backend named '" + std::string(b.name()) + "' is registered already");
  auto grown = std::make_shared<table>(*old);
  grown->insert(grown->begin() + std::ptrdiff_t(std::min(position, grown->size())), &b);
  h.current.store(std::shared_ptr<const table>(std::move(grown)));
}

const backend& find_backend(std::string_view name) {
  const std::shared_ptr<const table> t = snapshot();
  for (const backend* b : *t)
    if (b->name() == name) return *b;
  throw std::invalid_argument("unknown backend '" + std::string(name) + "': the backends are " + names_of(*t, ", "));
}

const backend* numbering_devices_for(std::string_view name) {
  if (name != "auto") {
    const backend& named = find_backend(name);
    if (!named.device_noun().empty()) return &named;
  }
  for (const backend* b : *snapshot())
    if (!b->device_noun().empty() && b->automatic_for_host_data()) return b;
  return nullptr;
}

const backend* splitting_devices_for(std::string_view name) {
  if (name != "auto") {
    const backend& named = find_backend(name);
    if (named.splits_over_devices()) return &named;
  }
  for (const backend* b : *snapshot())
    if (b->splits_over_devices()) return b;
  return nullptr;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names{"auto"};
  for (const backend* b : *snapshot()) names.emplace_back(b->name());
  return names;
}

std::shared_ptr<const std::vector<const backend*>> backend_table() { return snapshot(); }

std::string backend_list(std::string_view separator) { return names_of(*snapshot(), separator); }

void check_backend_name(std::string_view name) {
  if (name != "auto") find_backend(name);
}

int device_count(std::string_view backend_name) { return find_backend(backend_name).device_count(); }
int device_of_stream(std::string_view backend_name, void* stream) {
  return find_backend(backend_name).device_of_stream(stream);
}

std::string unsupported_reason(std::string_view backend_name, const reduce_job& job, const device_set& devices) {
  return find_backend(backend_name).unsupported(job, devices).why;
}
std::string unsupported_reason_for_statistics(std::string_view backend_name, dtype type, const device_set& devices) {
  return find_backend(backend_name).unsupported_statistics(type, devices).why;
}
std::string unsupported_reason_for_knn(std::string_view backend_name, int bytes, const device_set& devices) {
  return find_backend(backend_name).unsupported_knn(bytes, devices).why;
}

int cuda_device_count() { return device_count("cuda"); }

std::string describe_device(const report& r) {
  const backend& b = find_backend(r.backend);
  if (r.devices.size() <= 1) return b.describe_device(r.device >= 0 ? r.device : 0);
  std::string all;
  for (int d : r.devices) all += (all.empty() ? "" : " + ") + b.describe_device(d);
  return std::to_string(r.devices.size()) + " devices: " + all;
}

}  // namespace multireduce::runtime
