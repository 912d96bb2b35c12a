// Fam_Descriptor and Fam_Region_Descriptor: caller-owned handles over fampool's descriptor state.
// In the client layer, beside that state, since the client makes the descriptors it returns
// (fam_control.cc); the api layer only passes them through.
#include "client/descriptor_state.h"
#include "common/error.h"
#include "fam/fam.h"

namespace openfam {

using fampool::DescriptorState;
using fampool::RegionDescriptorState;

namespace {

template <typename T>
T Shown(const std::optional<T> &set, T told) {
    return set ? *set : told;
}

// OpenFAM's getter returns char *: the caller reads it, never writes through it.
char *ShownName(std::optional<std::string> &set, const std::string &told) {
    return set ? set->data() : const_cast<char *>(told.c_str());
}

// A size the program gives: on a copy of the record, published (other threads may be reading
// the one it replaces).
void SetKnownSize(DescriptorState *state, uint64_t size) {
    fampool::ItemInfo item = state->item();
    item.size = size;
    state->PublishItem(std::move(item));
    state->size_known = true;
}

// The setters that would point the data path elsewhere than the metadata service said.
[[noreturn]] void RefuseLayoutSetter(const char *call) {
    fampool::Fail(FAM_ERR_INVALIDOP,
                  "Fam_Descriptor::{}: fampool takes an item's keys, addresses, interleave and "
                  "memory servers from the metadata service; a program cannot set them",
                  call);
}

}  // namespace

Fam_Descriptor::Fam_Descriptor() : state_(new DescriptorState()) {}

Fam_Descriptor::Fam_Descriptor(Fam_Global_Descriptor gDescriptor) : Fam_Descriptor() {
    state_->global = gDescriptor;
}

Fam_Descriptor::Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize)
    : Fam_Descriptor(gDescriptor) {
    SetKnownSize(state_, itemSize);
}

Fam_Descriptor::Fam_Descriptor(const Fam_Descriptor &other)
    : state_(new DescriptorState(*other.state_)) {}

Fam_Descriptor &Fam_Descriptor::operator=(const Fam_Descriptor &other) {
    if (this != &other) *state_ = *other.state_;
    return *this;
}

Fam_Descriptor::~Fam_Descriptor() { delete state_; }

Fam_Global_Descriptor Fam_Descriptor::get_global_descriptor() { return state_->global; }
void Fam_Descriptor::set_global_descriptor(Fam_Global_Descriptor gDescriptor) {
    state_->global = gDescriptor;
    state_->status = DESC_UNINITIALIZED;
    state_->set_binding(nullptr);
}
uint64_t Fam_Descriptor::get_size() { return state_->item().size; }
void Fam_Descriptor::set_size(uint64_t itemSize) { SetKnownSize(state_, itemSize); }
char *Fam_Descriptor::get_name() { return ShownName(state_->shown.name, state_->item().name); }
mode_t Fam_Descriptor::get_perm() { return Shown(state_->shown.perm, state_->item().perm); }
uint32_t Fam_Descriptor::get_uid() { return Shown(state_->shown.uid, state_->item().uid); }
uint32_t Fam_Descriptor::get_gid() { return Shown(state_->shown.gid, state_->item().gid); }
Fam_Permission_Level Fam_Descriptor::get_permissionLevel() {
    return Shown(state_->shown.permission_level, state_->item().region.attributes.permissionLevel);
}
void Fam_Descriptor::set_perm(mode_t perm) { state_->shown.perm = perm; }
void Fam_Descriptor::set_name(char *name) { state_->shown.name = std::string(name ? name : ""); }
void Fam_Descriptor::set_uid(uint32_t uid) { state_->shown.uid = uid; }
void Fam_Descriptor::set_gid(uint32_t gid) { state_->shown.gid = gid; }
void Fam_Descriptor::set_permissionLevel(Fam_Permission_Level level) {
    state_->shown.permission_level = level;
}
void *Fam_Descriptor::get_context() { return state_->shown.context; }
void Fam_Descriptor::set_context(void *context) { state_->shown.context = context; }
uint64_t Fam_Descriptor::get_first_memserver_id() {
    const fampool::ItemInfo &item = state_->item();
    size_t first = item.first_server();
    return first < item.region.memory_servers.size() ? item.region.memory_servers[first] : 0;
}
// One field of each server access holding the item's bytes, in get_memserver_ids order, kept
// in `out`; NULL where fampool granted no fabric access (embedded model, RAID members).
static uint64_t *AccessList(const fampool::ItemInfo &item, std::vector<uint64_t> &out,
                            uint64_t fampool::ServerAccess::*field) {
    out.clear();
    for (size_t i = 0; i < item.server_count(); ++i) {
        size_t at = item.first_server() + i;
        if (at < item.access.size()) out.push_back(item.access[at].*field);
    }
    return out.empty() ? nullptr : out.data();
}
uint64_t *Fam_Descriptor::get_keys() {
    return AccessList(state_->item(), state_->shown.keys, &fampool::ServerAccess::key);
}
uint64_t *Fam_Descriptor::get_base_address_list() {
    return AccessList(state_->item(), state_->shown.bases, &fampool::ServerAccess::base);
}
void Fam_Descriptor::bind_keys(uint64_t *, uint64_t) { RefuseLayoutSetter("bind_keys"); }
void Fam_Descriptor::set_base_address_list(uint64_t *, uint64_t) {
    RefuseLayoutSetter("set_base_address_list");
}
void Fam_Descriptor::set_interleave_size(uint64_t) { RefuseLayoutSetter("set_interleave_size"); }
void Fam_Descriptor::set_used_memsrv_cnt(uint64_t) { RefuseLayoutSetter("set_used_memsrv_cnt"); }
void Fam_Descriptor::set_memserver_ids(uint64_t *) { RefuseLayoutSetter("set_memserver_ids"); }
uint64_t Fam_Descriptor::get_interleave_size() { return state_->item().region.interleave_size; }
uint64_t Fam_Descriptor::get_used_memsrv_cnt() { return state_->item().server_count(); }
// OpenFAM's getter returns uint64_t *: the caller reads the list, never writes through it.
uint64_t *Fam_Descriptor::get_memserver_ids() {
    const fampool::ItemInfo &item = state_->item();
    return const_cast<uint64_t *>(item.region.memory_servers.data()) + item.first_server();
}
Fam_Descriptor_Status Fam_Descriptor::get_desc_status() { return state_->status; }
void Fam_Descriptor::set_desc_status(Fam_Descriptor_Status status) { state_->status = status; }
void Fam_Descriptor::set_desc_status(int status) {
    set_desc_status(static_cast<Fam_Descriptor_Status>(status));
}

Fam_Region_Descriptor::Fam_Region_Descriptor() : state_(new RegionDescriptorState()) {}

Fam_Region_Descriptor::Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor)
    : Fam_Region_Descriptor() {
    state_->global = gDescriptor;
}

Fam_Region_Descriptor::Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t regionSize)
    : Fam_Region_Descriptor(gDescriptor) {
    state_->region.size = regionSize;
    state_->size_known = true;
}

Fam_Region_Descriptor::Fam_Region_Descriptor(const Fam_Region_Descriptor &other)
    : state_(new RegionDescriptorState(*other.state_)) {}

Fam_Region_Descriptor &Fam_Region_Descriptor::operator=(const Fam_Region_Descriptor &other) {
    if (this != &other) *state_ = *other.state_;
    return *this;
}

Fam_Region_Descriptor::~Fam_Region_Descriptor() { delete state_; }

Fam_Global_Descriptor Fam_Region_Descriptor::get_global_descriptor() { return state_->global; }
void Fam_Region_Descriptor::set_global_descriptor(Fam_Global_Descriptor gDescriptor) {
    state_->global = gDescriptor;
    state_->status = DESC_UNINITIALIZED;
}
uint64_t Fam_Region_Descriptor::get_size() { return state_->region.size; }
void Fam_Region_Descriptor::set_size(uint64_t regionSize) {
    state_->region.size = regionSize;
    state_->size_known = true;
}
char *Fam_Region_Descriptor::get_name() {
    return ShownName(state_->shown.name, state_->region.name);
}
mode_t Fam_Region_Descriptor::get_perm() { return Shown(state_->shown.perm, state_->region.perm); }
uint32_t Fam_Region_Descriptor::get_uid() { return state_->region.uid; }
uint32_t Fam_Region_Descriptor::get_gid() { return state_->region.gid; }
Fam_Redundancy_Level Fam_Region_Descriptor::get_redundancyLevel() {
    return Shown(state_->shown.redundancy_level, state_->region.attributes.redundancyLevel);
}
Fam_Memory_Type Fam_Region_Descriptor::get_memoryType() {
    return Shown(state_->shown.memory_type, state_->region.attributes.memoryType);
}
Fam_Interleave_Enable Fam_Region_Descriptor::get_interleaveEnable() {
    return Shown(state_->shown.interleave_enable, state_->region.attributes.interleaveEnable);
}
Fam_Permission_Level Fam_Region_Descriptor::get_permissionLevel() {
    return Shown(state_->shown.permission_level, state_->region.attributes.permissionLevel);
}
void Fam_Region_Descriptor::set_perm(mode_t perm) { state_->shown.perm = perm; }
void Fam_Region_Descriptor::set_name(char *name) {
    state_->shown.name = std::string(name ? name : "");
}
void Fam_Region_Descriptor::set_redundancyLevel(Fam_Redundancy_Level level) {
    state_->shown.redundancy_level = level;
}
void Fam_Region_Descriptor::set_memoryType(Fam_Memory_Type type) {
    state_->shown.memory_type = type;
}
void Fam_Region_Descriptor::set_interleaveEnable(Fam_Interleave_Enable enable) {
    state_->shown.interleave_enable = enable;
}
void Fam_Region_Descriptor::set_permissionLevel(Fam_Permission_Level level) {
    state_->shown.permission_level = level;
}
void *Fam_Region_Descriptor::get_context() { return state_->shown.context; }
void Fam_Region_Descriptor::set_context(void *context) { state_->shown.context = context; }
uint64_t Fam_Region_Descriptor::get_memserver_id() {
    const std::vector<uint64_t> &servers = state_->region.memory_servers;
    return servers.empty() ? 0 : servers.front();
}
uint64_t Fam_Region_Descriptor::get_interleave_size() { return state_->region.interleave_size; }
uint64_t Fam_Region_Descriptor::get_used_memsrv_cnt() {
    return state_->region.memory_servers.size();
}
uint64_t *Fam_Region_Descriptor::get_memserver_ids() {
    return state_->region.memory_servers.data();
}
Fam_Descriptor_Status Fam_Region_Descriptor::get_desc_status() { return state_->status; }
void Fam_Region_Descriptor::set_desc_status(Fam_Descriptor_Status status) {
    state_->status = status;
}
void Fam_Region_Descriptor::set_desc_status(int status) {
    set_desc_status(static_cast<Fam_Descriptor_Status>(status));
}

}  // namespace openfam
