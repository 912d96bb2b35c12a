// openfam::Fam_Exception's members, out of line as in OpenFAM's library: its virtual table and
// type information live here (fam_error_msg is its key function), and programs built against
// OpenFAM's header find the constructors they call.
#include "fam/fam_exception.h"

namespace openfam {

Fam_Exception::Fam_Exception() : error_(FAM_ERR_UNKNOWN), message_("unknown fam error") {}
Fam_Exception::Fam_Exception(const char *msg) : error_(FAM_ERR_UNKNOWN), message_(msg ? msg : "") {}
Fam_Exception::Fam_Exception(Fam_Error fErr, const char *msg)
    : error_(fErr), message_(msg ? msg : "") {}
Fam_Exception::Fam_Exception(const Fam_Exception &other) = default;
Fam_Exception &Fam_Exception::operator=(const Fam_Exception &other) = default;
Fam_Exception::~Fam_Exception() noexcept = default;

const char *Fam_Exception::what() const noexcept { return message_.c_str(); }
const char *Fam_Exception::fam_error_msg() { return message_.c_str(); }
int Fam_Exception::fam_error() { return static_cast<int>(error_); }

}  // namespace openfam
