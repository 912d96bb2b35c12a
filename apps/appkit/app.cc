#include "appkit/app.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace apps {

Args::Args(int argc, char **argv, const char *usage) : usage_(usage) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "-h" || arg == "--help") {
            std::printf("%s\n", usage);
            std::exit(0);
        }
        if (arg.rfind("--", 0) != 0) {
            std::fprintf(stderr, "%s: unexpected argument \"%s\"\n%s\n", argv[0], arg.c_str(),
                         usage);
            std::exit(2);
        }
        std::string name = arg.substr(2);
        if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
            values_[name] = argv[++i];
        } else {
            values_[name] = "";
        }
    }
}

uint64_t Args::Count(const std::string &name, uint64_t fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char *end = nullptr;
    unsigned long long value = std::strtoull(it->second.c_str(), &end, 0);
    if (it->second.empty() || *end != '\0') {
        std::fprintf(stderr, "--%s \"%s\" is not a whole number\n%s\n", name.c_str(),
                     it->second.c_str(), usage_);
        std::exit(2);
    }
    return value;
}

double Args::Real(const std::string &name, double fallback) const {
    auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    char *end = nullptr;
    double value = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0') {
        std::fprintf(stderr, "--%s \"%s\" is not a number\n%s\n", name.c_str(), it->second.c_str(),
                     usage_);
        std::exit(2);
    }
    return value;
}

std::string Args::Text(const std::string &name, const std::string &fallback) const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
}

bool Args::Flag(const std::string &name) const { return values_.count(name) > 0; }

namespace {

// An integer option of fam_get_option (the caller frees the copy it returns).
uint64_t IntOption(openfam::fam &fam, const char *name) {
    const void *value = fam.fam_get_option(name);
    uint64_t result = static_cast<uint64_t>(*static_cast<const int *>(value));
    std::free(const_cast<void *>(value));
    return result;
}

}  // namespace

Pe PeOf(openfam::fam &fam) {
    Pe pe;
    pe.rank = IntOption(fam, "PE_ID");
    pe.count = IntOption(fam, "PE_COUNT");
    return pe;
}

int RunJob(const char *app, const std::function<int(openfam::fam &, const Pe &)> &body) {
    openfam::fam fam;
    Fam_Options options{};
    Pe pe;
    bool initialized = false;
    try {
        fam.fam_initialize("default", &options);
        initialized = true;
        pe = PeOf(fam);
        int status = body(fam, pe);
        fam.fam_finalize("default");
        return status;
    } catch (const openfam::Fam_Exception &e) {
        std::fprintf(stderr, "%s: %s\n", app, e.fam_error_msg());
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: %s\n", app, e.what());
    }
    if (initialized && pe.count > 1) fam.fam_abort(1);
    return 1;
}

std::string ModelOf(openfam::fam &fam) {
    const void *value = fam.fam_get_option("OPENFAM_MODEL");
    std::string model = static_cast<const char *>(value);
    std::free(const_cast<void *>(value));
    return model == "shared_memory" ? "embedded" : "cluster";
}

void Result(const char *app, const std::string &fields) {
    std::printf("RESULT app=%s %s\n", app, fields.c_str());
    std::fflush(stdout);
}

int Check(const char *app, bool passed, const std::string &detail) {
    std::printf("CHECK app=%s %s %s\n", app, passed ? "passed" : "FAILED", detail.c_str());
    std::fflush(stdout);
    return passed ? 0 : 1;
}

uint64_t PeakRss() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10) << 10;
    }
    return 0;
}

openfam::Fam_Region_Descriptor *FreshRegion(openfam::fam &fam, const Pe &pe, const char *name,
                                            uint64_t size, Fam_Region_Attributes *attributes) {
    openfam::Fam_Region_Descriptor *region = nullptr;
    if (pe.first()) {
        try {
            openfam::Fam_Region_Descriptor *old = fam.fam_lookup_region(name);
            fam.fam_destroy_region(old);
            delete old;
        } catch (const openfam::Fam_Exception &) {
            // none left behind
        }
        region = fam.fam_create_region(name, size, 0777, attributes);
    }
    fam.fam_barrier_all();
    if (!pe.first()) region = fam.fam_lookup_region(name);
    return region;
}

openfam::Fam_Descriptor *SharedItem(openfam::fam &fam, const Pe &pe,
                                    openfam::Fam_Region_Descriptor *region, const char *name,
                                    uint64_t size) {
    openfam::Fam_Descriptor *item = nullptr;
    if (pe.first()) item = fam.fam_allocate(name, size, 0777, region);
    fam.fam_barrier_all();
    if (!pe.first()) item = fam.fam_lookup(name, region->get_name());
    return item;
}

}  // namespace apps
