// FampoolVersion, UnixTimeMicros and OpenFilesLimit (version.h).
#include "rpc/version.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.pb.h>
#include <sys/resource.h>

#include <chrono>

#include "common/hash.h"
#include "rpc/fampool.pb.h"

namespace fampool {

const std::string &FampoolVersion() {
    static const std::string version = [] {
        // The protocol as compiled into this process: its messages, fields and services.
        google::protobuf::FileDescriptorProto file;
        rpc::Empty::descriptor()->file()->CopyTo(&file);
        uint64_t fingerprint = Fnv1a(file.SerializeAsString());
        return fmt::format("{} (protocol {:08x})", FAMPOOL_RELEASE,
                           static_cast<uint32_t>(fingerprint ^ (fingerprint >> 32)));
    }();
    return version;
}

int64_t UnixTimeMicros() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

uint64_t OpenFilesLimit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    return limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : uint64_t{limit.rlim_cur};
}

}  // namespace fampool
