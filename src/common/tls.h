// TLS on the control path: what a gRPC channel or server needs to encrypt its calls and
// authenticate the other end with certificates (rpc/convert.h opens channels with it; the
// servers listen with it). Files, not their contents: they are read when a channel opens.
#ifndef FAMPOOL_COMMON_TLS_H_
#define FAMPOOL_COMMON_TLS_H_

#include <string>

namespace fampool {

struct TlsSettings {
    // The CA certificate(s), PEM: a client trusts servers whose certificate it signed; a
    // server that requires client certificates trusts those it signed. Empty: no TLS.
    std::string ca;
    // This end's certificate and private key, PEM: a server's (required to serve TLS), or a
    // client's (sent when a server asks; required where servers require one).
    std::string certificate;
    std::string private_key;
    // Server side: refuse a client without a certificate signed by `ca`.
    bool require_client_certificates = false;
    // Client side: the name the server's certificate must carry; empty: the host of the address
    // called (an IP address matches an IP subjectAltName).
    std::string server_name;

    bool enabled() const { return !ca.empty(); }
};

// The contents of `path` (a certificate or key in PEM). Throws Failure(FAM_ERR_INVALID) naming
// `what` and the path when it cannot be read or holds no PEM block.
std::string ReadPemFile(const std::string &path, const char *what);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_TLS_H_
