// Errors inside fampool and their translation into Fam_Exception at the API boundary.
//
// Internal layers throw Failure with a message that names the object and the cause
// (`item "x" not found in region "r"`); the API facade runs each call under Guard, which puts
// the call's name in front (`fam_lookup: item "x" not found in region "r"`) and rethrows it as
// the Fam_Exception the user catches.
#ifndef FAMPOOL_COMMON_ERROR_H_
#define FAMPOOL_COMMON_ERROR_H_

#include <fmt/format.h>

#include <string>
#include <utility>

#include "fam/fam_exception.h"

namespace fampool {

using openfam::Fam_Error;
using openfam::Fam_Exception;

// An error raised below the API, whose message does not yet name the call.
class Failure : public Fam_Exception {
  public:
    Failure(Fam_Error error, const std::string &message) : Fam_Exception(error, message.c_str()) {}
};

// A memory server refused to make an extent for a caller that knew an earlier life of it (the
// server restarted since): the caller must handle the restart first (the metadata service
// releases the regions the earlier life held), then make the call again.
class LifeChanged : public Failure {
  public:
    explicit LifeChanged(const std::string &message)
        : Failure(openfam::FAM_ERR_RESOURCE, message) {}
};

template <typename... Args>
[[noreturn]] void Fail(Fam_Error error, fmt::format_string<Args...> format, Args &&...args) {
    throw Failure(error, fmt::format(format, std::forward<Args>(args)...));
}

// Runs body() on behalf of the API call `call`; a Failure escapes as a Fam_Exception whose
// message starts with the call's name.
template <typename Body>
auto Guard(const char *call, Body &&body) -> decltype(body()) {
    try {
        return body();
    } catch (const Failure &failure) {
        std::string message = std::string(call) + ": " + failure.fam_error_msg();
        throw Fam_Exception(static_cast<Fam_Error>(failure.fam_error()), message.c_str());
    }
    __builtin_unreachable();
}

}  // namespace fampool

#endif  // FAMPOOL_COMMON_ERROR_H_
