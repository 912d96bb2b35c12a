// FamImpl: regions and items (the control path). Descriptors are resolved by descriptors_
// (descriptor_resolver.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>

#include "client/fam_impl.h"
#include "common/region_attributes.h"
#include "meta/intent_placement.h"

namespace fampool {
namespace {

void CheckNameArgument(const char *what, const char *name) {
    if (!name) Fail(openfam::FAM_ERR_NULLPTR, "{} name is NULL", what);
}

Fam_Region_Descriptor *NewRegionDescriptor(const RegionInfo &region) {
    auto *descriptor = new Fam_Region_Descriptor(Fam_Global_Descriptor{region.id, 0}, region.size);
    RegionDescriptorState *state = descriptor->state();
    state->region = region;
    state->status = DESC_INIT_DONE;
    return descriptor;
}

// A descriptor of the item, bound to the data path: what fam_lookup and fam_allocate return.
Fam_Descriptor *NewItemDescriptor(Session &session, ItemInfo info) {
    auto *descriptor =
        new Fam_Descriptor(Fam_Global_Descriptor{info.region_id, info.offset}, info.size);
    DescriptorState *state = descriptor->state();
    state->set_binding(session.transport->Attach(info));
    state->set_item(std::move(info));
    state->status = DESC_INIT_DONE;
    return descriptor;
}

// `servers`: how many of region.memory_servers, from `first`, hold what is described.
void FillStat(Fam_Stat *info, uint64_t size, uint32_t perm, const std::string &name, uint32_t uid,
              uint32_t gid, const RegionInfo &region, size_t first, size_t servers) {
    std::memset(info, 0, sizeof *info);
    info->size = size;
    info->perm = perm;
    info->name = const_cast<char *>(name.c_str());
    info->uid = uid;
    info->gid = gid;
    info->region_attributes = region.attributes;
    info->interleaveSize = region.interleave_size;
    info->num_memservers = servers;
    for (size_t i = 0; i < servers && i < FAM_MAX_MEMORY_SERVERS; ++i) {
        info->memory_servers[i] = region.memory_servers[first + i];
    }
}

}  // namespace

std::string Describe(const ItemInfo &item) {
    if (!item.name.empty()) return fmt::format("item \"{}\"", item.name);
    return fmt::format("unnamed item at offset {} of region \"{}\"", item.offset, item.region.name);
}

RegionInfo FamImpl::DefaultRegion(Session &session) {
    const std::string &name = session.config.default_region_name;
    for (int attempt = 0;; ++attempt) {
        try {
            return session.metadata->LookupRegion(name, session.caller);
        } catch (const Failure &failure) {
            if (failure.fam_error() != openfam::FAM_ERR_NOTFOUND || attempt > 0) throw;
        }
        try {
            Fam_Region_Attributes attributes{};
            attributes.memoryType =
                session.config.default_memory_type == "persistent" ? PERSISTENT : VOLATILE;
            return session.metadata->CreateRegion(name, session.config.default_region_size, 0777,
                                                  attributes, session.caller);
        } catch (const Failure &failure) {
            // Another process created it first: look it up again.
            if (failure.fam_error() != openfam::FAM_ERR_ALREADYEXIST) throw;
        }
    }
}

Fam_Region_Descriptor *FamImpl::LookupRegion(const char *name) {
    Session &session = Control();
    CheckNameArgument("region", name);
    return NewRegionDescriptor(session.metadata->LookupRegion(name, session.caller));
}

Fam_Region_Descriptor *FamImpl::CreateRegion(const char *name, uint64_t size, mode_t perm,
                                             Fam_Region_Attributes *attributes) {
    return CreateRegion(name, size, perm, attributes, nullptr);
}

namespace {

// The intent as the metadata service takes it; FAM_ERR_INVALID for what cannot be one.
RegionIntent IntentOf(const Fam_Region_Intent &in, const std::string &region,
                      const std::string &host) {
    RegionIntent intent;
    intent.hints = in.hints;
    intent.kind = KindName(RawValue(in.kind), region);  // a C caller may store any int
    if (in.server_count > FAM_INTENT_MAX_SERVERS) {
        Fail(openfam::FAM_ERR_INVALID,
             "region \"{}\": intent server_count {} exceeds FAM_INTENT_MAX_SERVERS ({})", region,
             in.server_count, FAM_INTENT_MAX_SERVERS);
    }
    intent.servers.assign(in.servers, in.servers + in.server_count);
    size_t length = strnlen(in.failure_domain, sizeof in.failure_domain);
    if (length == sizeof in.failure_domain) {
        Fail(openfam::FAM_ERR_INVALID,
             "region \"{}\": intent failure_domain is not a NUL-terminated string of at most {} "
             "characters",
             region, sizeof in.failure_domain - 1);
    }
    intent.failure_domain.assign(in.failure_domain, length);
    intent.host = host;
    return intent;
}

}  // namespace

Fam_Region_Descriptor *FamImpl::CreateRegion(const char *name, uint64_t size, mode_t perm,
                                             Fam_Region_Attributes *attributes,
                                             const Fam_Region_Intent *intent) {
    Session &session = Control();
    CheckNameArgument("region", name);
    Fam_Region_Attributes resolved{};
    if (attributes) resolved = CheckedAttributes(*attributes, name);
    RegionIntent wanted;
    if (intent) wanted = IntentOf(*intent, name, session.host);
    // The configured default memory type, unless resilience or accessibility hints choose it.
    const uint32_t choosing = FAM_HINT_VOLATILE | FAM_HINT_PERSISTENT | FAM_HINT_JOB |
                              FAM_HINT_ACROSS_JOBS | FAM_HINT_SURVIVE_FAILURE;
    if (resolved.memoryType == MEMORY_TYPE_DEFAULT && !(wanted.hints & choosing) &&
        wanted.kind != "persistent") {
        resolved.memoryType =
            session.config.default_memory_type == "persistent" ? PERSISTENT : VOLATILE;
    }
    return NewRegionDescriptor(
        session.metadata->CreateRegion(name, size, perm, resolved, wanted, session.caller));
}

void FamImpl::DestroyRegion(Fam_Region_Descriptor *region) {
    Session &session = Control();
    RegionDescriptorState &state = descriptors_.ResolveRegion(session, region);
    session.metadata->DestroyRegion(state.region.id, session.caller);
    session.transport->Forget(state.region.id);
    state.status = DESC_INVALID;
}

void FamImpl::ResizeRegion(Fam_Region_Descriptor *region, uint64_t nbytes) {
    Session &session = Control();
    RegionDescriptorState &state = descriptors_.ResolveRegion(session, region);
    state.region = session.metadata->ResizeRegion(state.region.id, nbytes, session.caller);
}

void FamImpl::ChangePermissions(Fam_Region_Descriptor *region, mode_t perm) {
    Session &session = Control();
    RegionDescriptorState &state = descriptors_.ResolveRegion(session, region);
    session.metadata->ChangeRegionPermissions(state.region.id, perm, session.caller);
    state.region.perm = perm;
}

void FamImpl::Stat(Fam_Region_Descriptor *region, Fam_Stat *info, Fam_Placement *placement) {
    Session &session = Control();
    RegionDescriptorState &state = descriptors_.ResolveRegion(session, region);
    if (!info) Fail(openfam::FAM_ERR_NULLPTR, "Fam_Stat pointer is NULL");
    state.region = session.metadata->GetRegion(state.region.id, session.caller);
    const RegionInfo &r = state.region;
    FillStat(info, r.size, r.perm, r.name, r.uid, r.gid, r, 0, r.memory_servers.size());
    if (!placement) return;
    *placement = Fam_Placement{};
    placement->intent.hints = r.intent.hints;
    placement->intent.kind = static_cast<Fam_Memory_Kind>(KindValue(r.intent.kind));
    placement->intent.server_count =
        static_cast<uint32_t>(std::min<size_t>(r.intent.servers.size(), FAM_INTENT_MAX_SERVERS));
    std::copy_n(r.intent.servers.begin(), placement->intent.server_count,
                placement->intent.servers);
    std::snprintf(placement->intent.failure_domain, sizeof placement->intent.failure_domain, "%s",
                  r.intent.failure_domain.c_str());
    std::string reason = r.placement.empty() ? PlainPlacement(r) : r.placement;
    std::snprintf(placement->reason, sizeof placement->reason, "%s", reason.c_str());
}

Fam_Descriptor *FamImpl::Lookup(const char *item, const char *region) {
    Session &session = Control();
    CheckNameArgument("item", item);
    CheckNameArgument("region", region);
    // Embedded: MetadataStore::LookupItem (meta/metadata_items.cc). On a cluster, the region's
    // shard (ShardedMetadata, one line) then MetadataClient::LookupItem in meta/client/
    // metadata_fabric_client.cc, which sends it as a fabric message through
    // MetadataFabricClient::Call there (fi_send) when the service has an endpoint, else over
    // gRPC.
    return NewItemDescriptor(session, session.metadata->LookupItem(item, region, session.caller));
}

Fam_Descriptor *FamImpl::Allocate(const char *name, uint64_t nbytes, mode_t perm,
                                  Fam_Region_Descriptor *region) {
    Session &session = Control();
    uint64_t region_id =
        region ? descriptors_.ResolveRegion(session, region).region.id : DefaultRegion(session).id;
    return NewItemDescriptor(session, session.metadata->AllocateItem(region_id, name ? name : "",
                                                                     nbytes, perm, session.caller));
}

void FamImpl::Deallocate(Fam_Descriptor *item) {
    Session &session = Control();
    DescriptorState &state = descriptors_.Resolve(session, item);
    const ItemInfo &held = state.item();
    session.metadata->DeallocateItem(held.region_id, held.offset, session.caller);
    // Element operations queued for the item have nothing left to apply to.
    queues_.Drop({held.region_id, held.offset});
    state.status = DESC_INVALID;
    state.set_binding(nullptr);
}

void FamImpl::Close(Fam_Descriptor *item) {
    Session &session = Control();
    DescriptorState &state = descriptors_.Resolve(session, item);
    // The item stays: what was queued for it reaches it first. A failed flush is reported,
    // and the descriptor is closed all the same.
    std::exception_ptr unflushed;
    try {
        AggregateFlush(item);
    } catch (...) {
        unflushed = std::current_exception();
    }
    descriptors_.Close(state);
    if (unflushed) std::rethrow_exception(unflushed);
}

void FamImpl::ChangePermissions(Fam_Descriptor *item, mode_t perm) {
    Session &session = Control();
    DescriptorState &state = descriptors_.Resolve(session, item);
    const ItemInfo &held = state.item();
    session.metadata->ChangeItemPermissions(held.region_id, held.offset, perm, session.caller);
    // The change revoked the keys behind this descriptor: bind it again with new ones, unless
    // the new mode leaves the owner no access at all (0, 01, ...): the descriptor then refuses
    // every transfer until it is given access back through this call (or looked up again).
    descriptors_.Replace(session, state,
                         session.metadata->GetItem(held.region_id, held.offset, session.caller));
}

void FamImpl::Stat(Fam_Descriptor *item, Fam_Stat *info) {
    Session &session = Control();
    DescriptorState &state = descriptors_.Resolve(session, item);
    if (!info) Fail(openfam::FAM_ERR_NULLPTR, "Fam_Stat pointer is NULL");
    const ItemInfo &held = state.item();
    // The descriptor shows what fam_stat saw (its getters).
    descriptors_.Restat(state,
                        session.metadata->GetItem(held.region_id, held.offset, session.caller));
    const ItemInfo &i = state.item();
    FillStat(info, i.size, i.perm, i.name, i.uid, i.gid, i.region, i.first_server(),
             i.server_count());
}

void *FamImpl::Map(Fam_Descriptor *item) {
    Session &session = Control();
    DescriptorState &state = descriptors_.Access(session, item, kRead, 0, 0);
    return session.transport->Map(*state.binding(), state.item().can_write);
}

void FamImpl::Unmap(void *local, Fam_Descriptor *item) {
    Session &session = Control();
    descriptors_.Resolve(session, item);
    if (!local) Fail(openfam::FAM_ERR_NULLPTR, "address to unmap is NULL");
    session.transport->Unmap(local);
}

}  // namespace fampool
