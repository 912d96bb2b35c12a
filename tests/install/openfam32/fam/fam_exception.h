// The exception class as OpenFAM 3.2 declares it, for tests/install's ABI check (a program
// built against these declarations, as an OpenFAM binary is, then run on libfampool).
// Written for fampool from OpenFAM 3.2's documented interface; not OpenFAM's file.
#ifndef OPENFAM32_FAM_EXCEPTION_H_
#define OPENFAM32_FAM_EXCEPTION_H_

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

class Fam_Exception : public std::exception {
  public:
    Fam_Exception();
    Fam_Exception(const char *msg);
    Fam_Exception(enum Fam_Error fErr, const char *msg);
    Fam_Exception(const Fam_Exception &other);
    Fam_Exception &operator=(const Fam_Exception &other);
    virtual const char *fam_error_msg();
    virtual int fam_error();
    virtual const char *what() const noexcept;

  protected:
    std::string famErrMsg;
    enum Fam_Error famErr;
};

}  // namespace openfam

#endif  // OPENFAM32_FAM_EXCEPTION_H_
