// fam/fam_exception.h: the error codes and the exception type of the OpenFAM API.
//
// Every error of the C++ API is reported by throwing openfam::Fam_Exception. Its message names
// the call, the object and the cause; fam_error() gives the Fam_Error code as an int.
#ifndef FAM_FAM_EXCEPTION_H_
#define FAM_FAM_EXCEPTION_H_

#include <exception>
#include <string>

namespace openfam {

enum Fam_Error {
    FAM_NO_ERROR = 0,
    FAM_ERR_UNKNOWN,
    FAM_ERR_NOPERM,
    FAM_ERR_TIMEOUT,
    FAM_ERR_INVALID,
    FAM_ERR_LIBFABRIC,
    FAM_ERR_SHM,
    FAM_ERR_NOT_CREATED,
    FAM_ERR_NOTFOUND,
    FAM_ERR_ALREADYEXIST,
    FAM_ERR_ALLOCATOR,
    FAM_ERR_RPC,
    FAM_ERR_PMI,
    FAM_ERR_OUTOFRANGE,
    FAM_ERR_NO_SPACE,
    FAM_ERR_NULLPTR,
    FAM_ERR_UNIMPL,
    FAM_ERR_RESOURCE,
    FAM_ERR_INVALIDOP,
    FAM_ERR_RPC_CLIENT_NOTFOUND,
    FAM_ERR_MEMSERV_LIST_EMPTY,
    FAM_ERR_METADATA,
    FAM_ERR_MEMORY,
    FAM_ERR_NAME_TOO_LONG,
    FAM_ERR_ATL_QUEUE_FULL,
    FAM_ERR_ATL_QUEUE_INSERT,
    FAM_ERR_ATL_NOT_ENABLED,
    FAM_ERR_ATL,
    FAM_BACKUP_NOT_CREATED,
    FAM_BACKUP_NOTFOUND,
    FAM_BACKUP_INFO_NOTFOUND,
    FAM_ERR_NOT_PWR_TWO
};

// The exception every openfam::fam method throws on failure. Its members and virtual table are
// OpenFAM 3.2's (fam_error_msg and fam_error virtual, after what), defined in the library, so
// that a program built against OpenFAM's header catches fampool's exceptions and reads them;
// the const overloads serve const references.
class Fam_Exception : public std::exception {
  public:
    Fam_Exception();
    Fam_Exception(const char *msg);
    Fam_Exception(Fam_Error fErr, const char *msg);
    Fam_Exception(const Fam_Exception &other);
    Fam_Exception &operator=(const Fam_Exception &other);
    ~Fam_Exception() noexcept override;

    const char *what() const noexcept override;
    virtual const char *fam_error_msg();
    virtual int fam_error();
    const char *fam_error_msg() const noexcept { return message_.c_str(); }
    int fam_error() const noexcept { return static_cast<int>(error_); }

  private:
    Fam_Error error_;
    std::string message_;
};

}  // namespace openfam

#endif  // FAM_FAM_EXCEPTION_H_
