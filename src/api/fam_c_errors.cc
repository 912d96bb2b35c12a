// fam/fam_c.h's C_FAM_* error constants, checked at compile time against openfam::Fam_Error
// (fam/fam_exception.h): C callers compare c_fam_error() with them.
#include <fam/fam.h>
#include <fam/fam_c.h>

// The C constants must stay the values of the C++ enum.
static_assert(C_FAM_NO_ERROR == openfam::FAM_NO_ERROR);
static_assert(C_FAM_ERR_UNKNOWN == openfam::FAM_ERR_UNKNOWN);
static_assert(C_FAM_ERR_NOPERM == openfam::FAM_ERR_NOPERM);
static_assert(C_FAM_ERR_TIMEOUT == openfam::FAM_ERR_TIMEOUT);
static_assert(C_FAM_ERR_INVALID == openfam::FAM_ERR_INVALID);
static_assert(C_FAM_ERR_LIBFABRIC == openfam::FAM_ERR_LIBFABRIC);
static_assert(C_FAM_ERR_SHM == openfam::FAM_ERR_SHM);
static_assert(C_FAM_ERR_NOT_CREATED == openfam::FAM_ERR_NOT_CREATED);
static_assert(C_FAM_ERR_NOTFOUND == openfam::FAM_ERR_NOTFOUND);
static_assert(C_FAM_ERR_ALREADYEXIST == openfam::FAM_ERR_ALREADYEXIST);
static_assert(C_FAM_ERR_ALLOCATOR == openfam::FAM_ERR_ALLOCATOR);
static_assert(C_FAM_ERR_RPC == openfam::FAM_ERR_RPC);
static_assert(C_FAM_ERR_PMI == openfam::FAM_ERR_PMI);
static_assert(C_FAM_ERR_OUTOFRANGE == openfam::FAM_ERR_OUTOFRANGE);
static_assert(C_FAM_ERR_NO_SPACE == openfam::FAM_ERR_NO_SPACE);
static_assert(C_FAM_ERR_NULLPTR == openfam::FAM_ERR_NULLPTR);
static_assert(C_FAM_ERR_UNIMPL == openfam::FAM_ERR_UNIMPL);
static_assert(C_FAM_ERR_RESOURCE == openfam::FAM_ERR_RESOURCE);
static_assert(C_FAM_ERR_INVALIDOP == openfam::FAM_ERR_INVALIDOP);
static_assert(C_FAM_ERR_RPC_CLIENT_NOTFOUND == openfam::FAM_ERR_RPC_CLIENT_NOTFOUND);
static_assert(C_FAM_ERR_MEMSERV_LIST_EMPTY == openfam::FAM_ERR_MEMSERV_LIST_EMPTY);
static_assert(C_FAM_ERR_METADATA == openfam::FAM_ERR_METADATA);
static_assert(C_FAM_ERR_MEMORY == openfam::FAM_ERR_MEMORY);
static_assert(C_FAM_ERR_NAME_TOO_LONG == openfam::FAM_ERR_NAME_TOO_LONG);
static_assert(C_FAM_ERR_ATL_QUEUE_FULL == openfam::FAM_ERR_ATL_QUEUE_FULL);
static_assert(C_FAM_ERR_ATL_QUEUE_INSERT == openfam::FAM_ERR_ATL_QUEUE_INSERT);
static_assert(C_FAM_ERR_ATL_NOT_ENABLED == openfam::FAM_ERR_ATL_NOT_ENABLED);
static_assert(C_FAM_ERR_ATL == openfam::FAM_ERR_ATL);
static_assert(C_FAM_BACKUP_NOT_CREATED == openfam::FAM_BACKUP_NOT_CREATED);
static_assert(C_FAM_BACKUP_NOTFOUND == openfam::FAM_BACKUP_NOTFOUND);
static_assert(C_FAM_BACKUP_INFO_NOTFOUND == openfam::FAM_BACKUP_INFO_NOTFOUND);
static_assert(C_FAM_ERR_NOT_PWR_TWO == openfam::FAM_ERR_NOT_PWR_TWO);
