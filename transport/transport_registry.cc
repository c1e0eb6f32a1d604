// The table of transport factories, filled at load time by the transport libraries linked in.
#include <array>
#include <mutex>

#include "base/log.h"
#include "transport/transport.h"

namespace softdat::transport {
namespace {

struct Factories {
  std::mutex mutex;
  std::array<TransportFactory, 3> by_kind;  // indexed by TransportKind
};

Factories& GetFactories() {
  static Factories* factories = new Factories;  // used from static initializers
  return *factories;
}

const char* KindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kTcp: return "tcp";
    case TransportKind::kVerbs: return "verbs";
    case TransportKind::kFake: return "fake";
  }
  return "?";
}

}  // namespace

void RegisterTransport(TransportKind kind, TransportFactory factory) {
  Factories& factories = GetFactories();
  std::lock_guard lock(factories.mutex);
  factories.by_kind[static_cast<std::size_t>(kind)] = std::move(factory);
}

Status CreateTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out) {
  TransportFactory factory;
  {
    Factories& factories = GetFactories();
    std::lock_guard lock(factories.mutex);
    factory = factories.by_kind[static_cast<std::size_t>(params.kind)];
  }
  if (!factory) {
    SOFTDAT_LOG(kError, "the %s transport is not built into this library", KindName(params.kind));
    return Status(Code::kNotImplemented);
  }
  return factory(params, why, out);
}

}  // namespace softdat::transport
