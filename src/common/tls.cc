#include "common/tls.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace fampool {

std::string ReadPemFile(const std::string &path, const char *what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        Fail(openfam::FAM_ERR_INVALID, "{} {}: cannot read it: {}", what, path,
             std::strerror(errno));
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::string pem = text.str();
    if (pem.find("-----BEGIN ") == std::string::npos) {
        Fail(openfam::FAM_ERR_INVALID, "{} {} holds no PEM block (-----BEGIN ...)", what, path);
    }
    return pem;
}

}  // namespace fampool
