// Fuzz target: the backup archive reader (memserver/archive.h). The input is a backup file as
// found in the archive directory: damaged, truncated, or written by someone else. Describe,
// Read and List must refuse a damaged backup with a Failure (and Read must hand the sink no
// byte of it); a backup they accept must give exactly the size its header states, and the
// bytes behind the header.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "fuzz_support.h"
#include "memserver/archive.h"

namespace fampool::fuzz {
namespace {

constexpr size_t kHeader = 4096;  // the archive's header size (archive.cc)

void Finding(const char *what) {
    std::fprintf(stderr, "fuzz: %s\n", what);
    std::abort();
}

ScratchDir *scratch = nullptr;
std::string backup_path;  // where the archive keeps the backup named "b"

// A real backup of `size` bytes, as Archive::Write makes it, in `dir`; returns its file.
std::string WriteBackup(const std::string &dir, uint64_t size, const std::string &item) {
    Archive archive(dir, FileAccess());
    BackupInfo info;
    info.name = "b";
    info.size = size;
    info.uid = 1000;
    info.gid = 1000;
    info.mode = 0640;
    info.item_name = item;
    archive.Write(info, [](uint64_t at, char *buffer, size_t n) {
        for (size_t i = 0; i < n; ++i) buffer[i] = static_cast<char>((at + i) * 7);
    });
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        return entry.path().string();
    }
    Finding("Archive::Write left no file");
    return {};
}

std::vector<std::string> Seeds() {
    std::vector<std::string> seeds;
    for (auto [size, item] : {std::pair<uint64_t, const char *>{0, ""},
                              {1, "x"},
                              {100, "item with spaces"},
                              {5000, "\"quoted\"\n"}}) {
        ScratchDir dir("archive-seed");
        std::ifstream file(WriteBackup(dir.path(), size, item), std::ios::binary);
        std::stringstream bytes;
        bytes << file.rdbuf();
        seeds.push_back(bytes.str());
    }
    return seeds;
}

}  // namespace
}  // namespace fampool::fuzz

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    using namespace fampool::fuzz;
    WriteSeedsIfAsked(Seeds);
    scratch = &ProgramScratch("archive");
    backup_path = WriteBackup(scratch->path(), 1, "x");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace fampool;
    using namespace fampool::fuzz;
    std::ofstream(backup_path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
    Archive archive(scratch->path(), FileAccess());
    BackupInfo info;
    bool described = false;
    try {
        info = archive.Describe("b");
        described = true;
    } catch (const Failure &) {
    }
    try {
        archive.List();
    } catch (const Failure &) {
    }
    uint64_t delivered = 0;
    bool read = false;
    try {
        archive.Read("b", [&](uint64_t at, const char *bytes, size_t n) {
            if (at != delivered) Finding("Read handed the sink bytes out of order");
            if (kHeader + at + n > size || std::memcmp(bytes, data + kHeader + at, n) != 0) {
                Finding("Read handed the sink bytes that are not the backup's");
            }
            delivered += n;
        });
        read = true;
    } catch (const Failure &) {
        if (delivered != 0) Finding("Read refused a backup after handing the sink some of it");
    }
    if (read && (!described || delivered != info.size || kHeader + info.size != size)) {
        Finding("Read accepted a backup whose size is not the one its header states");
    }
    return 0;
}
