// Fam_Descriptor and Fam_Region_Descriptor: caller-owned handles over fampool's descriptor state.
#include "client/descriptor_state.h"
#include "fam/fam.h"

namespace openfam {

using fampool::DescriptorState;
using fampool::RegionDescriptorState;

Fam_Descriptor::Fam_Descriptor() : state_(new DescriptorState()) {}

Fam_Descriptor::Fam_Descriptor(Fam_Global_Descriptor gDescriptor) : Fam_Descriptor() {
    state_->global = gDescriptor;
}

Fam_Descriptor::Fam_Descriptor(Fam_Global_Descriptor gDescriptor, uint64_t itemSize)
    : Fam_Descriptor(gDescriptor) {
    state_->item.size = itemSize;
    state_->size_known = true;
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
uint64_t Fam_Descriptor::get_size() { return state_->item.size; }
void Fam_Descriptor::set_size(uint64_t itemSize) {
    state_->item.size = itemSize;
    state_->size_known = true;
}
const char *Fam_Descriptor::get_name() { return state_->item.name.c_str(); }
mode_t Fam_Descriptor::get_perm() { return state_->item.perm; }
uint32_t Fam_Descriptor::get_uid() { return state_->item.uid; }
uint32_t Fam_Descriptor::get_gid() { return state_->item.gid; }
uint64_t Fam_Descriptor::get_interleave_size() { return state_->item.region.interleave_size; }
uint64_t Fam_Descriptor::get_used_memsrv_cnt() { return state_->item.server_count(); }
uint64_t *Fam_Descriptor::get_memserver_ids() {
    return state_->item.region.memory_servers.data() + state_->item.first_server();
}
Fam_Descriptor_Status Fam_Descriptor::get_desc_status() { return state_->status; }
void Fam_Descriptor::set_desc_status(Fam_Descriptor_Status status) { state_->status = status; }

Fam_Region_Descriptor::Fam_Region_Descriptor() : state_(new RegionDescriptorState()) {}

Fam_Region_Descriptor::Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor)
    : Fam_Region_Descriptor() {
    state_->global = gDescriptor;
}

Fam_Region_Descriptor::Fam_Region_Descriptor(Fam_Global_Descriptor gDescriptor,
                                             uint64_t regionSize)
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
const char *Fam_Region_Descriptor::get_name() { return state_->region.name.c_str(); }
mode_t Fam_Region_Descriptor::get_perm() { return state_->region.perm; }
uint32_t Fam_Region_Descriptor::get_uid() { return state_->region.uid; }
uint32_t Fam_Region_Descriptor::get_gid() { return state_->region.gid; }
Fam_Redundancy_Level Fam_Region_Descriptor::get_redundancyLevel() {
    return state_->region.attributes.redundancyLevel;
}
Fam_Memory_Type Fam_Region_Descriptor::get_memoryType() {
    return state_->region.attributes.memoryType;
}
Fam_Interleave_Enable Fam_Region_Descriptor::get_interleaveEnable() {
    return state_->region.attributes.interleaveEnable;
}
Fam_Permission_Level Fam_Region_Descriptor::get_permissionLevel() {
    return state_->region.attributes.permissionLevel;
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

}  // namespace openfam
