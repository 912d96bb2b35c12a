// fampool._fampool: the OpenFAM API for Python (python/fampool/__init__.py wraps it). Data
// moves through Python's buffer protocol, so numpy arrays, bytearrays and memoryviews are read
// and written in place (no copy); the GIL is released while a call waits on FAM. A
// Fam_Exception becomes fampool.FamError carrying the Fam_Error code and the message.
#include <fam/fam.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "intent.h"

namespace py = pybind11;
using openfam::fam;
using openfam::Fam_Descriptor;
using openfam::Fam_Region_Descriptor;

namespace {

// A region or an item handle; the descriptor is freed with it.
struct Region {
    std::unique_ptr<Fam_Region_Descriptor> descriptor;
};
struct Item {
    std::unique_ptr<Fam_Descriptor> descriptor;
};

// A contiguous buffer of the caller's, held for the call; `writable` for what FAM writes into.
struct Bytes {
    py::buffer_info info;
    // `call` names the method and `what` the argument, for the error.
    Bytes(const py::buffer &buffer, bool writable, const char *call, const char *what)
        : info(buffer.request(writable)) {
        if (!Contiguous()) {
            throw py::value_error(std::string("fampool: ") + call + ": " + what +
                                  " must be C-contiguous (numpy: np.ascontiguousarray)");
        }
    }
    bool Contiguous() const {
        py::ssize_t expected = info.itemsize;
        for (py::ssize_t dim = info.ndim - 1; dim >= 0; --dim) {
            if (info.strides[dim] != expected) return false;
            expected *= info.shape[dim];
        }
        return true;
    }
    void *data() const { return info.ptr; }
    uint64_t size() const { return static_cast<uint64_t>(info.size * info.itemsize); }
};

// Fam_Options from keyword strings (their C field names: runtime, openFamModel, ...).
class Options {
  public:
    explicit Options(const std::map<std::string, std::string> &values) {
        static const std::map<std::string, char *Fam_Options::*> kFields = {
            {"defaultRegionName", &Fam_Options::defaultRegionName},
            {"cisServer", &Fam_Options::cisServer},
            {"grpcPort", &Fam_Options::grpcPort},
            {"libfabricProvider", &Fam_Options::libfabricProvider},
            {"famThreadModel", &Fam_Options::famThreadModel},
            {"cisInterfaceType", &Fam_Options::cisInterfaceType},
            {"openFamModel", &Fam_Options::openFamModel},
            {"famContextModel", &Fam_Options::famContextModel},
            {"numConsumer", &Fam_Options::numConsumer},
            {"runtime", &Fam_Options::runtime},
            {"fam_default_memory_type", &Fam_Options::fam_default_memory_type},
            {"if_device", &Fam_Options::if_device}};
        std::memset(&options_, 0, sizeof options_);
        for (const auto &[key, value] : values) {
            auto field = kFields.find(key);
            if (field == kFields.end()) {
                throw py::value_error("fampool: unknown option \"" + key +
                                      "\" (Fam_Options' "
                                      "fields: runtime, openFamModel, libfabricProvider, ...)");
            }
            kept_.push_back(std::make_unique<std::string>(value));
            options_.*(field->second) = kept_.back()->data();
        }
    }
    Fam_Options *get() { return &options_; }

  private:
    Fam_Options options_;
    std::vector<std::unique_ptr<std::string>> kept_;
};

template <typename T>
T Enum(const std::optional<std::string> &name, const std::map<std::string, T> &values,
       const char *what) {
    if (!name) return static_cast<T>(0);
    auto found = values.find(*name);
    if (found == values.end())
        throw py::value_error(std::string("fampool: bad ") + what + " \"" + *name + "\"");
    return found->second;
}

Fam_Region_Attributes Attributes(const std::optional<std::string> &memory_type,
                                 const std::optional<std::string> &redundancy,
                                 const std::optional<bool> &interleave,
                                 const std::optional<std::string> &permission_level) {
    Fam_Region_Attributes attributes{};
    attributes.memoryType = Enum<Fam_Memory_Type>(
        memory_type, {{"volatile", VOLATILE}, {"persistent", PERSISTENT}}, "memory_type");
    attributes.redundancyLevel = Enum<Fam_Redundancy_Level>(
        redundancy, {{"none", NONE}, {"raid1", RAID1}, {"raid5", RAID5}}, "redundancy");
    attributes.interleaveEnable =
        interleave ? (*interleave ? ENABLE : DISABLE) : INTERLEAVE_DEFAULT;
    attributes.permissionLevel = Enum<Fam_Permission_Level>(
        permission_level, {{"region", REGION}, {"dataitem", DATAITEM}}, "permission_level");
    return attributes;
}

// The atomics by element type: "int32", "int64", "uint32", "uint64", "float", "double".
template <typename Body>
py::object ByType(const std::string &dtype, Body &&body) {
    if (dtype == "int32") return body(int32_t{});
    if (dtype == "int64") return body(int64_t{});
    if (dtype == "uint32") return body(uint32_t{});
    if (dtype == "uint64") return body(uint64_t{});
    if (dtype == "float" || dtype == "float32") return body(float{});
    if (dtype == "double" || dtype == "float64") return body(double{});
    throw py::value_error("fampool: dtype \"" + dtype +
                          "\" is not int32, int64, uint32, uint64, float32 or float64");
}

// A blocking gather (into `data`) or scatter (from it) of the elements at `indexes` (uint64).
// The number of elements of `element_size` bytes `indexes` (uint64) names, after checking that
// `local` holds as many.
uint64_t Count(const Bytes &local, const Bytes &index, uint64_t element_size, bool into_local,
               const char *call) {
    // Integers of 8 bytes: struct codes Q, L, q, l (a leading byte-order mark aside).
    std::string format = index.info.format;
    if (index.info.itemsize != 8 || format.empty() ||
        std::string("QLql").find(format.back()) == std::string::npos) {
        throw py::value_error(std::string("fampool: ") + call +
                              ": indexes must be 8-byte integers (uint64), not format \"" + format +
                              "\"");
    }
    uint64_t n = index.size() / 8;
    if (local.size() < n * element_size) {
        throw py::value_error(
            std::string("fampool: ") + call + ": the " + (into_local ? "target" : "source") +
            " holds " + std::to_string(local.size()) + " bytes, fewer than the " +
            std::to_string(n) + " indexes x " + std::to_string(element_size) + " bytes");
    }
    return n;
}

void Indexed(fam &f, Item &i, const py::buffer &data, const py::buffer &indexes,
             uint64_t element_size, bool gather) {
    const char *call = gather ? "gather_into" : "scatter";
    Bytes local(data, gather, call, gather ? "target" : "source");
    Bytes index(indexes, false, call, "indexes");
    uint64_t n = Count(local, index, element_size, gather, call);
    auto *offsets = static_cast<uint64_t *>(index.data());
    py::gil_scoped_release release;
    if (gather) {
        f.fam_gather_blocking(local.data(), i.descriptor.get(), n, offsets, element_size);
    } else {
        f.fam_scatter_blocking(local.data(), i.descriptor.get(), n, offsets, element_size);
    }
}

// A blocking strided gather (into `data`) or scatter: as many elements as `data` holds, the
// first at element `first`, then every `stride` elements.
void Strided(fam &f, Item &i, const py::buffer &data, uint64_t first, uint64_t stride,
             uint64_t element_size, bool gather) {
    const char *call = gather ? "gather_stride_into" : "scatter_stride";
    Bytes local(data, gather, call, gather ? "target" : "source");
    if (element_size == 0 || local.size() % element_size != 0) {
        throw py::value_error(std::string("fampool: ") + call + ": the buffer's " +
                              std::to_string(local.size()) + " bytes are not whole elements of " +
                              std::to_string(element_size) + " bytes");
    }
    uint64_t n = local.size() / element_size;
    py::gil_scoped_release release;
    if (gather) {
        f.fam_gather_blocking(local.data(), i.descriptor.get(), n, first, stride, element_size);
    } else {
        f.fam_scatter_blocking(local.data(), i.descriptor.get(), n, first, stride, element_size);
    }
}

// fam_get_option's answer as a Python value: an int for the PE's id and count and the local
// buffer's address and size, a str for the others (the memory it returns is freed here).
py::object Option(fam &f, const std::string &name) {
    const void *value;
    {
        py::gil_scoped_release release;
        value = f.fam_get_option(name.c_str());
    }
    std::unique_ptr<void, decltype(&std::free)> owned(const_cast<void *>(value), &std::free);
    if (name == "PE_ID" || name == "PE_COUNT") return py::int_(*static_cast<const int *>(value));
    if (name == "LOC_BUF_SIZE") return py::int_(*static_cast<const uint64_t *>(value));
    if (name == "LOC_BUF_ADDR") {
        return py::int_(reinterpret_cast<uintptr_t>(*static_cast<void *const *>(value)));
    }
    return py::str(static_cast<const char *>(value));
}

// fam_stat of an item or a region, as a dict.
template <typename Descriptor>
py::dict StatOf(fam &f, Descriptor *descriptor) {
    Fam_Stat info{};
    {
        py::gil_scoped_release release;
        f.fam_stat(descriptor, &info);
    }
    py::dict out;
    out["size"] = info.size;
    out["perm"] = static_cast<uint32_t>(info.perm);
    out["name"] = info.name ? std::string(info.name) : std::string();
    out["uid"] = info.uid;
    out["gid"] = info.gid;
    out["memory_type"] =
        info.region_attributes.memoryType == PERSISTENT ? "persistent" : "volatile";
    out["interleave_size"] = info.interleaveSize;
    std::vector<uint64_t> servers(info.memory_servers, info.memory_servers + info.num_memservers);
    out["memory_servers"] = servers;
    return out;
}

}  // namespace

PYBIND11_MODULE(_fampool, m) {
    m.doc() = "fampool's OpenFAM API (see the fampool package)";
    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const openfam::Fam_Exception &e) {
            py::object error = py::module_::import("fampool").attr("FamError");
            py::object raised = error(e.fam_error(), std::string(e.fam_error_msg()));
            PyErr_SetObject(error.ptr(), raised.ptr());
        }
    });
    using Release = py::call_guard<py::gil_scoped_release>;

    py::class_<Region>(m, "Region")
        .def_property_readonly("name",
                               [](Region &r) { return std::string(r.descriptor->get_name()); })
        .def_property_readonly("size", [](Region &r) { return r.descriptor->get_size(); })
        .def_property_readonly(
            "id", [](Region &r) { return r.descriptor->get_global_descriptor().regionId; });
    py::class_<Item>(m, "Item")
        .def_property_readonly("name",
                               [](Item &i) { return std::string(i.descriptor->get_name()); })
        .def_property_readonly("size", [](Item &i) { return i.descriptor->get_size(); })
        .def_property_readonly("global_descriptor", [](Item &i) {
            Fam_Global_Descriptor g = i.descriptor->get_global_descriptor();
            return py::make_tuple(g.regionId, g.offset);
        });

    py::class_<fam>(m, "Fam")
        .def(py::init<>())
        .def(
            "initialize",
            [](fam &f, const std::string &group, const std::map<std::string, std::string> &o) {
                Options options(o);
                py::gil_scoped_release release;
                f.fam_initialize(group.c_str(), options.get());
            },
            py::arg("group") = "default", py::arg("options") = std::map<std::string, std::string>{})
        .def(
            "finalize", [](fam &f, const std::string &group) { f.fam_finalize(group.c_str()); },
            py::arg("group") = "default", Release())
        .def(
            "create_region",
            [](fam &f, const std::string &name, uint64_t size, uint32_t perm,
               std::optional<std::string> memory_type, std::optional<std::string> redundancy,
               std::optional<bool> interleave, std::optional<std::string> permission_level) {
                Fam_Region_Attributes a =
                    Attributes(memory_type, redundancy, interleave, permission_level);
                py::gil_scoped_release release;
                return Region{std::unique_ptr<Fam_Region_Descriptor>(
                    f.fam_create_region(name.c_str(), size, perm, &a))};
            },
            py::arg("name"), py::arg("size"), py::arg("perm") = 0777,
            py::arg("memory_type") = py::none(), py::arg("redundancy") = py::none(),
            py::arg("interleave") = py::none(), py::arg("permission_level") = py::none())
        // fampool's intent-based placement (docs/intent.md): fam_create_region_intent.
        .def(
            "create_region_intent",
            [](fam &f, const std::string &name, uint64_t size, uint32_t perm,
               const std::vector<std::string> &hints, std::optional<std::string> kind,
               const std::vector<uint64_t> &servers, std::optional<std::string> failure_domain,
               std::optional<std::string> memory_type, std::optional<std::string> redundancy,
               std::optional<bool> interleave, std::optional<std::string> permission_level) {
                Fam_Region_Intent_Attributes a;
                a.attributes = Attributes(memory_type, redundancy, interleave, permission_level);
                a.intent = fampool_python::IntentOf(hints, kind, servers, failure_domain);
                py::gil_scoped_release release;
                return Region{std::unique_ptr<Fam_Region_Descriptor>(
                    f.fam_create_region_intent(name.c_str(), size, perm, &a))};
            },
            py::arg("name"), py::arg("size"), py::arg("perm") = 0777,
            py::arg("hints") = std::vector<std::string>{}, py::arg("kind") = py::none(),
            py::arg("servers") = std::vector<uint64_t>{}, py::arg("failure_domain") = py::none(),
            py::arg("memory_type") = py::none(), py::arg("redundancy") = py::none(),
            py::arg("interleave") = py::none(), py::arg("permission_level") = py::none())
        .def("placement",
             [](fam &f, Region &r) {
                 Fam_Stat info{};
                 Fam_Placement placement{};
                 {
                     py::gil_scoped_release release;
                     f.fam_stat(r.descriptor.get(), &info, &placement);
                 }
                 return fampool_python::PlacementOf(placement);
             })
        .def(
            "lookup_region",
            [](fam &f, const std::string &name) {
                return Region{
                    std::unique_ptr<Fam_Region_Descriptor>(f.fam_lookup_region(name.c_str()))};
            },
            Release())
        .def(
            "destroy_region", [](fam &f, Region &r) { f.fam_destroy_region(r.descriptor.get()); },
            Release())
        .def(
            "resize_region",
            [](fam &f, Region &r, uint64_t size) { f.fam_resize_region(r.descriptor.get(), size); },
            Release())
        .def(
            "allocate",
            [](fam &f, Region &r, const std::string &name, uint64_t size, uint32_t perm) {
                return Item{std::unique_ptr<Fam_Descriptor>(f.fam_allocate(
                    name.empty() ? nullptr : name.c_str(), size, perm, r.descriptor.get()))};
            },
            py::arg("region"), py::arg("name"), py::arg("size"), py::arg("perm") = 0600, Release())
        .def(
            "lookup",
            [](fam &f, const std::string &item, const std::string &region) {
                return Item{
                    std::unique_ptr<Fam_Descriptor>(f.fam_lookup(item.c_str(), region.c_str()))};
            },
            py::arg("item"), py::arg("region"), Release())
        .def(
            "deallocate", [](fam &f, Item &i) { f.fam_deallocate(i.descriptor.get()); }, Release())
        .def(
            "put",
            [](fam &f, Item &i, const py::buffer &source, uint64_t offset) {
                Bytes bytes(source, false, "put", "source");
                py::gil_scoped_release release;
                f.fam_put_blocking(bytes.data(), i.descriptor.get(), offset, bytes.size());
            },
            py::arg("item"), py::arg("source"), py::arg("offset") = 0)
        .def(
            "get_into",
            [](fam &f, Item &i, const py::buffer &target, uint64_t offset) {
                Bytes bytes(target, true, "get_into", "target");
                py::gil_scoped_release release;
                f.fam_get_blocking(bytes.data(), i.descriptor.get(), offset, bytes.size());
            },
            py::arg("item"), py::arg("target"), py::arg("offset") = 0)
        .def(
            "gather_into",
            [](fam &f, Item &i, const py::buffer &target, const py::buffer &indexes,
               uint64_t element_size) { Indexed(f, i, target, indexes, element_size, true); },
            py::arg("item"), py::arg("target"), py::arg("indexes"), py::arg("element_size"))
        .def(
            "scatter",
            [](fam &f, Item &i, const py::buffer &source, const py::buffer &indexes,
               uint64_t element_size) { Indexed(f, i, source, indexes, element_size, false); },
            py::arg("item"), py::arg("source"), py::arg("indexes"), py::arg("element_size"))
        .def(
            "fetch_add",
            [](fam &f, Item &i, uint64_t offset, py::object value, const std::string &dtype) {
                return ByType(dtype, [&](auto zero) {
                    auto v = value.cast<decltype(zero)>();
                    decltype(zero) old;
                    {
                        py::gil_scoped_release release;
                        old = f.fam_fetch_add(i.descriptor.get(), offset, v);
                    }
                    return py::object(py::cast(old));
                });
            },
            py::arg("item"), py::arg("offset"), py::arg("value"), py::arg("dtype") = "int64")
        .def(
            "set",
            [](fam &f, Item &i, uint64_t offset, py::object value, const std::string &dtype) {
                ByType(dtype, [&](auto zero) {
                    auto v = value.cast<decltype(zero)>();
                    {
                        py::gil_scoped_release release;
                        f.fam_set(i.descriptor.get(), offset, v);
                        f.fam_quiet();
                    }
                    return py::object(py::none());
                });
            },
            py::arg("item"), py::arg("offset"), py::arg("value"), py::arg("dtype") = "int64")
        .def(
            "compare_swap",
            [](fam &f, Item &i, uint64_t offset, py::object expected, py::object desired,
               const std::string &dtype) {
                if (dtype == "float" || dtype == "float32" || dtype == "double" ||
                    dtype == "float64") {
                    throw py::value_error("fampool: compare_swap takes integer dtypes");
                }
                return ByType(dtype, [&](auto zero) {
                    using T = decltype(zero);
                    if constexpr (std::is_integral_v<T>) {
                        T e = expected.cast<T>(), d = desired.cast<T>(), old;
                        {
                            py::gil_scoped_release release;
                            old = f.fam_compare_swap(i.descriptor.get(), offset, e, d);
                        }
                        return py::object(py::cast(old));
                    } else {
                        return py::object(py::none());
                    }
                });
            },
            py::arg("item"), py::arg("offset"), py::arg("expected"), py::arg("desired"),
            py::arg("dtype") = "int64")
        .def(
            "copy",
            [](fam &f, Item &src, uint64_t src_offset, Item &dest, uint64_t dest_offset,
               uint64_t nbytes) {
                f.fam_copy_wait(f.fam_copy(src.descriptor.get(), src_offset, dest.descriptor.get(),
                                           dest_offset, nbytes));
            },
            Release())
        .def(
            "backup",
            [](fam &f, Item &i, const std::string &name) {
                Fam_Backup_Options options{};
                f.fam_backup_wait(f.fam_backup(i.descriptor.get(), name.c_str(), &options));
            },
            Release())
        .def(
            "restore",
            [](fam &f, const std::string &name, Item &dest) {
                f.fam_restore_wait(f.fam_restore(name.c_str(), dest.descriptor.get()));
            },
            Release())
        .def(
            "delete_backup",
            [](fam &f, const std::string &name) {
                f.fam_delete_backup_wait(f.fam_delete_backup(name.c_str()));
            },
            Release())
        .def(
            "quiet", [](fam &f) { f.fam_quiet(); }, Release())
        .def("stat", [](fam &f, Item &i) { return StatOf(f, i.descriptor.get()); })
        // The baseline of bench/python_bench.py: `repeats` blocking puts or gets ("put",
        // "get") of `nbytes` at offset 0, from and into a C++ buffer, timed in C++; seconds.
        .def(
            "_time_native",
            [](fam &f, Item &i, const std::string &op, uint64_t nbytes, int repeats) {
                if (op != "put" && op != "get") throw py::value_error("fampool: op is put or get");
                std::vector<char> buffer(nbytes, 1);
                auto start = std::chrono::steady_clock::now();
                for (int k = 0; k < repeats; ++k) {
                    if (op == "put") {
                        f.fam_put_blocking(buffer.data(), i.descriptor.get(), 0, nbytes);
                    } else {
                        f.fam_get_blocking(buffer.data(), i.descriptor.get(), 0, nbytes);
                    }
                }
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                    .count();
            },
            Release())
        .def("stat_region", [](fam &f, Region &r) { return StatOf(f, r.descriptor.get()); })
        .def(
            "gather_stride_into",
            [](fam &f, Item &i, const py::buffer &target, uint64_t first, uint64_t stride,
               uint64_t element_size) { Strided(f, i, target, first, stride, element_size, true); },
            py::arg("item"), py::arg("target"), py::arg("first"), py::arg("stride"),
            py::arg("element_size"))
        .def(
            "scatter_stride",
            [](fam &f, Item &i, const py::buffer &source, uint64_t first, uint64_t stride,
               uint64_t element_size) {
                Strided(f, i, source, first, stride, element_size, false);
            },
            py::arg("item"), py::arg("source"), py::arg("first"), py::arg("stride"),
            py::arg("element_size"))
        // Memory-side aggregation: the caller (fampool.Fam) keeps `data` and `indexes` alive
        // until aggregate_flush, since an OP_GATHER writes into `data` then.
        .def(
            "queue_operation",
            [](fam &f, Item &i, const std::string &op, const py::buffer &data,
               const py::buffer &indexes, uint64_t element_size) {
                static const std::map<std::string, FAM_QUEUE_OP> kOps = {
                    {"add", OP_ADD_INDEXED}, {"scatter", OP_SCATTER}, {"gather", OP_GATHER}};
                auto found = kOps.find(op);
                if (found == kOps.end())
                    throw py::value_error("fampool: op \"" + op +
                                          "\" is not add, scatter or gather");
                bool writes_local = found->second == OP_GATHER;
                Bytes local(data, writes_local, "queue_operation", "data");
                Bytes index(indexes, false, "queue_operation", "indexes");
                uint64_t n = Count(local, index, element_size, writes_local, "queue_operation");
                py::gil_scoped_release release;
                f.fam_queue_operation(found->second, local.data(), i.descriptor.get(), n,
                                      static_cast<uint64_t *>(index.data()), element_size);
            },
            py::arg("item"), py::arg("op"), py::arg("data"), py::arg("indexes"),
            py::arg("element_size"))
        .def(
            "aggregate_flush", [](fam &f, Item &i) { f.fam_aggregate_flush(i.descriptor.get()); },
            Release())
        .def(
            "barrier_all", [](fam &f) { f.fam_barrier_all(); }, Release())
        .def("get_option", [](fam &f, const std::string &name) { return Option(f, name); })
        .def_property_readonly("pe_id", [](fam &f) { return Option(f, "PE_ID").cast<int>(); })
        .def_property_readonly("pe_count",
                               [](fam &f) { return Option(f, "PE_COUNT").cast<int>(); });
}
