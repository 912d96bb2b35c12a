#include "common/memory_server.h"

#include "common/error.h"

namespace fampool {

namespace {

[[noreturn]] void NoRedundancy(uint64_t server, const char *call) {
    Fail(openfam::FAM_ERR_INVALIDOP,
         "memory server {} keeps no redundant regions ({} is a RAID call; the embedded model "
         "places no RAID1 or RAID5 region)",
         server, call);
}

}  // namespace

MirroredAtomicResult MemoryServer::MirroredAtomic(const MirroredAtomicCall &) {
    NoRedundancy(id(), "a mirrored atomic");
}

void MemoryServer::Mirror(const MirrorWrite &) { NoRedundancy(id(), "Mirror"); }

std::string MemoryServer::Stripe(const StripeCall &, std::chrono::milliseconds) {
    NoRedundancy(id(), "Stripe");
}

void MemoryServer::Resync(const ResyncCall &, std::chrono::milliseconds) {
    NoRedundancy(id(), "Resync");
}
void MemoryServer::Populate(ExtentRef, uint64_t,
                            const std::vector<std::pair<uint64_t, uint64_t>> &) {
    NoRedundancy(id(), "Populate");
}

}  // namespace fampool
