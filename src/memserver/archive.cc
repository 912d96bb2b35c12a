#include "memserver/archive.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include "common/crc32c.h"
#include "common/error.h"

namespace fampool {
namespace {

constexpr size_t kHeaderSize = 4096;
constexpr size_t kChunk = 4 << 20;
constexpr const char *kSuffix = ".fambackup";
// Version 2 escapes the text fields (name, item): a value can no longer hold a line of its own.
// Version 1 headers (earlier releases) are still read, each field's first line winning.
constexpr const char *kMagic = "FAMPOOL-BACKUP 2";
constexpr const char *kMagicV1 = "FAMPOOL-BACKUP 1";

class File {
  public:
    explicit File(int fd) : fd_(fd) {}
    ~File() {
        if (fd_ >= 0) close(fd_);
    }
    int fd() const { return fd_; }

  private:
    int fd_;
};

// Backup names may hold any byte but '/' and NUL would break paths: escape all but a safe set.
std::string Escape(const std::string &name) {
    std::string out;
    for (unsigned char c : name) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
            out += static_cast<char>(c);
        } else {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        }
    }
    if (!out.empty() && out[0] == '.') out.replace(0, 1, "%2E");  // no hidden files
    return out;
}

void WriteAll(int fd, const char *data, size_t n, off_t at, const std::string &path) {
    while (n > 0) {
        ssize_t done = pwrite(fd, data, std::min(n, kChunk), at);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) {
            Fail(errno == ENOSPC ? openfam::FAM_ERR_NO_SPACE : openfam::FAM_BACKUP_NOT_CREATED,
                 "cannot write backup file {}: {}", path, std::strerror(errno));
        }
        data += done;
        at += done;
        n -= static_cast<size_t>(done);
    }
}

void ReadAll(int fd, char *data, size_t n, off_t at, const std::string &path) {
    while (n > 0) {
        ssize_t done = pread(fd, data, std::min(n, kChunk), at);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) {
            Fail(openfam::FAM_ERR_RESOURCE, "backup file {} is truncated or unreadable", path);
        }
        data += done;
        at += done;
        n -= static_cast<size_t>(done);
    }
}

// A text field as the header holds it: '%', control characters and DEL as %XX, so that no
// value can end its line or hide in the padding.
std::string EscapeField(const std::string &value) {
    std::string out;
    for (unsigned char c : value) {
        if (c < 0x20 || c == 0x7f || c == '%') {
            char hex[4];
            std::snprintf(hex, sizeof hex, "%%%02X", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string UnescapeField(const std::string &value, const std::string &path) {
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '%') {
            out += value[i];
            continue;
        }
        unsigned int byte = 0;
        bool good = i + 2 < value.size();
        if (good) {
            auto read = std::from_chars(value.data() + i + 1, value.data() + i + 3, byte, 16);
            good = read.ec == std::errc() && read.ptr == value.data() + i + 3;
        }
        if (!good) {
            Fail(openfam::FAM_ERR_RESOURCE, "backup file {} is damaged: a bad escape in \"{}\"",
                 path, value);
        }
        out += static_cast<char>(byte);
        i += 2;
    }
    return out;
}

std::string Header(const BackupInfo &info) {
    std::ostringstream out;
    out << kMagic << "\n"
        << "size " << info.size << "\n"
        << "uid " << info.uid << "\n"
        << "gid " << info.gid << "\n"
        << "mode " << info.mode << "\n"
        << "time " << info.time << "\n"
        << "crc32c " << info.checksum << "\n"
        << "item " << EscapeField(info.item_name) << "\n"
        << "name " << EscapeField(info.name) << "\n";
    std::string text = out.str();
    if (text.size() >= kHeaderSize) {
        Fail(openfam::FAM_BACKUP_NOT_CREATED, "backup header of \"{}\" too long", info.name);
    }
    text.resize(kHeaderSize, '\0');
    return text;
}

// A header field's number: decimal digits only, at most `largest`; a damaged header (found by
// tests/fuzz/archive_fuzz: stoul threw std::invalid_argument) is refused with its file named.
uint64_t HeaderNumber(const std::string &value, uint64_t largest, const std::string &key,
                      const std::string &path) {
    uint64_t number = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (value.empty() || error != std::errc() || end != value.data() + value.size() ||
        number > largest) {
        Fail(openfam::FAM_ERR_RESOURCE, "backup file {} is damaged: header field {} is \"{}\"",
             path, key, value);
    }
    return number;
}

BackupInfo ParseHeader(const std::string &bytes, const std::string &path) {
    std::string text(bytes.c_str());  // up to the padding
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || (line != kMagic && line != kMagicV1)) {
        Fail(openfam::FAM_BACKUP_INFO_NOTFOUND, "{} is not a fampool backup", path);
    }
    bool escaped = line == kMagic;
    BackupInfo info;
    std::set<std::string> seen;
    while (std::getline(in, line)) {
        auto space = line.find(' ');
        std::string key = line.substr(0, space);
        std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        if (!seen.insert(key).second) {
            // A field twice: in a version 2 header only damage does that; in a version 1
            // header, a name with a newline did (the name came last): the first one is real.
            if (escaped) {
                Fail(openfam::FAM_ERR_RESOURCE,
                     "backup file {} is damaged: header field {} appears twice", path, key);
            }
            continue;
        }
        if (escaped && (key == "item" || key == "name")) value = UnescapeField(value, path);
        auto number = [&](uint64_t largest) { return HeaderNumber(value, largest, key, path); };
        if (key == "size")
            info.size = number(UINT64_MAX);
        else if (key == "uid")
            info.uid = static_cast<uint32_t>(number(UINT32_MAX));
        else if (key == "gid")
            info.gid = static_cast<uint32_t>(number(UINT32_MAX));
        else if (key == "mode")
            info.mode = static_cast<uint32_t>(number(UINT32_MAX));
        else if (key == "time")
            info.time = number(UINT64_MAX);
        else if (key == "crc32c")
            info.checksum = static_cast<uint32_t>(number(UINT32_MAX));
        else if (key == "item")
            info.item_name = value;
        else if (key == "name")
            info.name = value;
    }
    return info;
}

}  // namespace

void Archive::CheckName(const std::string &name) {
    if (name.empty()) Fail(openfam::FAM_ERR_INVALID, "backup name is empty");
    if (name.size() > 255) {
        Fail(openfam::FAM_ERR_NAME_TOO_LONG, "backup name of {} bytes exceeds 255", name.size());
    }
    // Names are shown in listings and other users' terminals, and read as paths by people:
    // no control characters, DEL or path separators.
    for (size_t i = 0; i < name.size(); ++i) {
        auto c = static_cast<unsigned char>(name[i]);
        if (c < 0x20 || c == 0x7f || c == '/') {
            Fail(openfam::FAM_ERR_INVALID,
                 "backup name holds {} at byte {}: names may not hold control characters, DEL "
                 "or '/'",
                 c == '/' ? std::string("'/'") : fmt::format("the byte 0x{:02x}", c), i);
        }
    }
}

std::string Archive::PathOf(const std::string &name) const {
    return dir_ + "/" + Escape(name) + kSuffix;
}

bool Archive::Exists(const std::string &name) const {
    return access(PathOf(name).c_str(), F_OK) == 0;
}

BackupInfo Archive::Write(const BackupInfo &request, const Source &source) {
    CheckName(request.name);  // whoever sent it: the client library checks it too
    access_.MakeDirectory(dir_, FileAccess::Dir::kOwn, false, openfam::FAM_BACKUP_NOT_CREATED);
    BackupInfo info = request;
    info.time = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
    std::string final_path = PathOf(info.name);
    std::string temp_path =
        dir_ + "/.tmp." + std::to_string(getpid()) + "." + std::to_string(std::random_device{}());
    File file(open(temp_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (file.fd() < 0) {
        Fail(openfam::FAM_BACKUP_NOT_CREATED, "cannot create {}: {}", temp_path,
             std::strerror(errno));
    }
    try {
        access_.Apply(file.fd(), temp_path);
        std::string buffer(std::min<uint64_t>(kChunk, info.size), '\0');
        uint32_t crc = 0;
        for (uint64_t done = 0; done < info.size;) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, info.size - done));
            source(done, buffer.data(), n);
            crc = Crc32c(crc, buffer.data(), n);
            WriteAll(file.fd(), buffer.data(), n, static_cast<off_t>(kHeaderSize + done),
                     temp_path);
            done += n;
        }
        info.checksum = crc;
        std::string header = Header(info);
        WriteAll(file.fd(), header.data(), header.size(), 0, temp_path);
        if (link(temp_path.c_str(), final_path.c_str()) != 0) {
            if (errno == EEXIST) {
                Fail(openfam::FAM_BACKUP_NOT_CREATED, "backup \"{}\" already exists", info.name);
            }
            Fail(openfam::FAM_BACKUP_NOT_CREATED, "cannot create backup {}: {}", final_path,
                 std::strerror(errno));
        }
    } catch (...) {
        unlink(temp_path.c_str());
        throw;
    }
    unlink(temp_path.c_str());
    return info;
}

BackupInfo Archive::Describe(const std::string &name) const {
    std::string path = PathOf(name);
    File file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd() < 0) Fail(openfam::FAM_BACKUP_NOTFOUND, "backup \"{}\" not found", name);
    std::string header(kHeaderSize, '\0');
    ReadAll(file.fd(), header.data(), kHeaderSize, 0, path);
    return ParseHeader(header, path);
}

void Archive::Read(const std::string &name, const Sink &sink) const {
    std::string path = PathOf(name);
    BackupInfo info = Describe(name);
    File file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.fd() < 0) Fail(openfam::FAM_BACKUP_NOTFOUND, "backup \"{}\" not found", name);
    struct stat st;
    if (fstat(file.fd(), &st) != 0 ||
        static_cast<uint64_t>(st.st_size) != kHeaderSize + info.size) {
        Fail(openfam::FAM_ERR_RESOURCE, "backup \"{}\" is damaged: file size does not match", name);
    }
    // First pass: verify, so that a damaged backup never overwrites the destination.
    std::string buffer(std::min<uint64_t>(kChunk, info.size), '\0');
    uint32_t crc = 0;
    for (uint64_t done = 0; done < info.size;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, info.size - done));
        ReadAll(file.fd(), buffer.data(), n, static_cast<off_t>(kHeaderSize + done), path);
        crc = Crc32c(crc, buffer.data(), n);
        done += n;
    }
    if (crc != info.checksum) {
        Fail(openfam::FAM_ERR_RESOURCE,
             "backup \"{}\" is damaged: checksum {:08x} does not match the recorded {:08x}", name,
             crc, info.checksum);
    }
    for (uint64_t done = 0; done < info.size;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, info.size - done));
        ReadAll(file.fd(), buffer.data(), n, static_cast<off_t>(kHeaderSize + done), path);
        sink(done, buffer.data(), n);
        done += n;
    }
}

void Archive::Delete(const std::string &name) {
    if (unlink(PathOf(name).c_str()) != 0) {
        Fail(openfam::FAM_BACKUP_NOTFOUND, "backup \"{}\" not found", name);
    }
}

std::vector<BackupInfo> Archive::List() const {
    std::vector<BackupInfo> list;
    DIR *dir = opendir(dir_.c_str());
    if (!dir) return list;
    while (struct dirent *entry = readdir(dir)) {
        std::string file = entry->d_name;
        if (file.size() <= std::strlen(kSuffix) || file[0] == '.' ||
            file.compare(file.size() - std::strlen(kSuffix), std::string::npos, kSuffix) != 0) {
            continue;
        }
        try {
            std::string path = dir_ + "/" + file;
            File fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
            if (fd.fd() < 0) continue;
            std::string header(kHeaderSize, '\0');
            ReadAll(fd.fd(), header.data(), kHeaderSize, 0, path);
            list.push_back(ParseHeader(header, path));
        } catch (const Failure &) {
            // Not a backup (or being deleted): not listed.
        }
    }
    closedir(dir);
    std::sort(list.begin(), list.end(),
              [](const BackupInfo &a, const BackupInfo &b) { return a.name < b.name; });
    return list;
}

}  // namespace fampool
