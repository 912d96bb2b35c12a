// Helpers shared by the fampool subcommands: finding the cluster file, addresses, sizes, tables.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cli.h"
#include "common/error.h"
#include "common/hash.h"

namespace fampool::cli {

std::string DefaultRunDir() {
    const char *env = std::getenv("FAMPOOL_RUN_DIR");
    return std::filesystem::absolute(env && *env ? env : "fampool-run").lexically_normal().string();
}

std::string RunDirOf(const std::string &dir) {
    if (dir.empty()) return DefaultRunDir();
    std::string path = std::filesystem::absolute(dir).lexically_normal().string();
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    return path;
}

std::string ClusterFileOf(const ClusterChoice &choice) {
    if (!choice.config.empty()) return std::filesystem::absolute(choice.config).string();
    if (choice.run_dir.empty()) {
        const char *env = std::getenv("FAMPOOL_CONFIG");
        if (env && *env) return std::filesystem::absolute(env).string();
    }
    return RunDirOf(choice.run_dir) + "/cluster.yaml";
}

std::string RunDirOfClusterFile(const std::string &path) {
    const std::string name = "/cluster.yaml";
    if (path.size() <= name.size() || !path.ends_with(name)) return "";
    return path.substr(0, path.size() - name.size());
}

ClusterConfig LoadCluster(const std::string &command, const std::string &path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        std::string hint = "start a cluster with `fampool up`, or name its file with --config";
        if (std::string dir = RunDirOfClusterFile(path); !dir.empty()) {
            hint = fmt::format(
                "start a cluster with `fampool up --run-dir {}`, or name its "
                "file with --config",
                ShellQuote(dir));
        }
        Die(1, "fampool {}: no cluster file {} ({})", command, path, hint);
    }
    try {
        return LoadClusterConfig(path);
    } catch (const Fam_Exception &e) {
        Die(1, "fampool {}: {}", command, e.fam_error_msg());
    }
}

uint64_t RunDirHash(const std::string &run_dir) { return Fnv1a(run_dir); }

std::string ShmBase(const std::string &run_dir) {
    return fmt::format("/dev/shm/fampool-{}-{:012x}", getuid(),
                       RunDirHash(run_dir) & 0xffffffffffffull);
}

std::string Bytes(uint64_t bytes, bool exact) {
    if (exact) return std::to_string(bytes);
    if (bytes < 1024) return std::to_string(bytes) + " B";
    static const char *const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes) / 1024;
    int unit = 0;
    while (value >= 1024 && unit < 5) {
        value /= 1024;
        ++unit;
    }
    return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string ShellQuote(const std::string &word) {
    bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
    });
    if (plain) return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

void Table::Print(const std::string &indent) const {
    std::vector<size_t> width;
    for (const auto &row : rows_) {
        if (width.size() < row.size()) width.resize(row.size(), 0);
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    for (const auto &row : rows_) {
        std::string line = indent;
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
        }
        std::printf("%s\n", line.c_str());
    }
}

}  // namespace fampool::cli
