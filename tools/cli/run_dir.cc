// The run directory of `fampool up`: its directories and their modes, the cluster file.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli.h"
#include "common/error.h"
#include "common/file_access.h"
#include "process.h"

namespace fampool::cli {
namespace fs = std::filesystem;

void PrepareRunDir(const std::string &dir) {
    try {
        const FileAccess mine;  // private to the user running `up`
        mine.MakeDirectory(dir, FileAccess::Dir::kOwn, /*reachable=*/true);
        mine.MakeDirectory(dir + "/logs");
        mine.MakeDirectory(dir + "/pids");
        mine.MakeDirectory(ShmBase(dir), FileAccess::Dir::kOwn, /*reachable=*/true);
    } catch (const Fam_Exception &e) {
        Die(1, "fampool up: {}", e.fam_error_msg());
    }
}

std::string ReadFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) Die(1, "fampool up: cannot read {}", path);
    return text.str();
}

namespace {

// Writes `text` to a new temporary beside `path` with `mode`, then renames it into place.
void WriteWithMode(const std::string &path, const std::string &text, mode_t mode) {
    std::string temporary = path + ".new";
    unlink(temporary.c_str());
    int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) Die(1, "fampool up: cannot write {}: {}", temporary, std::strerror(errno));
    bool written = fchmod(fd, mode) == 0;
    for (size_t done = 0; written && done < text.size();) {
        ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        written = n > 0;
        if (written) done += static_cast<size_t>(n);
    }
    int write_errno = errno;
    if (close(fd) != 0 && written) {
        written = false;
        write_errno = errno;
    }
    std::error_code ec;
    if (written) fs::rename(temporary, path, ec);
    if (!written || ec) {
        unlink(temporary.c_str());
        Die(1, "fampool up: cannot write {}: {}", path,
            ec ? ec.message() : std::string(std::strerror(write_errno)));
    }
}

}  // namespace

namespace {

// Runs openssl; throws CliError with its output when it fails.
void Openssl(const std::vector<std::string> &arguments, const std::string &step) {
    std::vector<std::string> argv = {"openssl"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    ToolResult result = RunTool(argv, 30000);
    if (result.status == 0) return;
    Die(1, "fampool up --tls: {}: openssl failed: {}", step,
        result.output.empty() ? "(no output)" : result.output);
}

// A key and a certificate for `subject` signed by the CA in `tls`, with `extensions`.
void SignedCertificate(const std::string &tls, const std::string &name, const std::string &subject,
                       const std::string &extensions) {
    const std::string key = tls + "/" + name + ".key", request = tls + "/" + name + ".csr",
                      extension_file = tls + "/" + name + ".ext";
    WriteFile(extension_file, extensions);
    Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key, "-out", request, "-subj", subject},
            "the " + name + " key");
    chmod(key.c_str(), 0600);
    Openssl({"x509", "-req", "-in", request, "-CA", tls + "/ca.pem", "-CAkey", tls + "/ca.key",
             "-CAcreateserial", "-days", "365", "-out", tls + "/" + name + ".pem", "-extfile",
             extension_file},
            "the " + name + " certificate");
    fs::remove(request);
    fs::remove(extension_file);
}

}  // namespace

TlsFiles MakeThrowawayTls(const std::string &dir, const std::vector<std::string> &hosts,
                          bool client) {
    if (ToolPath("openssl").empty()) {
        Die(1,
            "fampool up --tls: openssl is not installed (Debian package openssl; "
            "scripts/setup installs it)");
    }
    const std::string tls = dir + "/tls";
    try {
        FileAccess().MakeDirectory(tls, FileAccess::Dir::kOwn, /*reachable=*/true);
    } catch (const Fam_Exception &e) {
        Die(1, "fampool up --tls: {}", e.fam_error_msg());
    }
    const std::string subject =
        fmt::format("/CN=fampool up CA {:012x}", RunDirHash(dir) & 0xffffffffffffull);
    Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", tls + "/ca.key", "-out", tls + "/ca.pem", "-days", "365", "-subj", subject,
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
             "keyUsage=critical,keyCertSign,cRLSign"},
            "the CA");
    chmod((tls + "/ca.key").c_str(), 0600);
    chmod((tls + "/ca.pem").c_str(), 0644);
    // Each address once: an IP address as IP:, a host name as DNS:.
    std::set<std::string> seen = {"DNS:localhost", "IP:127.0.0.1"};
    std::string names = "DNS:localhost,IP:127.0.0.1";
    for (const std::string &host : hosts) {
        in6_addr any;
        bool ip = inet_pton(AF_INET, host.c_str(), &any) == 1 ||
                  inet_pton(AF_INET6, host.c_str(), &any) == 1;
        std::string name = (ip ? "IP:" : "DNS:") + host;
        if (seen.insert(name).second) names += "," + name;
    }
    SignedCertificate(tls, "server", "/CN=fampool servers",
                      "basicConstraints=CA:FALSE\nsubjectAltName=" + names +
                          "\nextendedKeyUsage=serverAuth,clientAuth\n");
    TlsFiles files{tls + "/ca.pem", tls + "/server.pem", tls + "/server.key", "", ""};
    if (client) {
        SignedCertificate(tls, "client", "/CN=fampool client uid " + std::to_string(getuid()),
                          "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
        chmod((tls + "/client.pem").c_str(), 0600);
        files.client_certificate = tls + "/client.pem";
        files.client_key = tls + "/client.key";
    }
    return files;
}

std::string AddThrowawayTls(const std::string &dir, ClusterConfig *cluster,
                            bool require_client_certificates) {
    std::vector<std::string> hosts;
    for (const std::string &shard : MetadataShards(*cluster)) hosts.push_back(HostOf(shard));
    for (const MemoryServerConfig &server : cluster->memservers) {
        hosts.push_back(HostOf(server.rpc_address));
    }
    TlsFiles files = MakeThrowawayTls(dir, hosts, require_client_certificates);
    cluster->tls_ca = files.ca;
    cluster->tls_certificate = files.certificate;
    cluster->tls_private_key = files.private_key;
    cluster->tls_client_certificates = require_client_certificates ? "require" : "none";
    return fmt::format(
        "# TLS on the control path with a throw-away CA made by `fampool up --tls`\n"
        "tls_ca: {}\ntls_certificate: {}\ntls_private_key: {}\ntls_client_certificates: {}\n",
        YamlQuoted(files.ca), YamlQuoted(files.certificate), YamlQuoted(files.private_key),
        cluster->tls_client_certificates);
}

void WriteClusterFile(const std::string &path, const std::string &text) {
    WriteWithMode(path, text, 0644);
}

void WriteFile(const std::string &path, const std::string &text) {
    WriteWithMode(path, text, 0600);
}

}  // namespace fampool::cli
