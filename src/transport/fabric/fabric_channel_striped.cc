// FabricChannel: transfers of items striped over several memory servers: gathered pieces by
// the provider's iov (TransferStriped), or, for blocking transfers that span several blocks of
// each server, through a staging buffer with one operation per server (StagedTransfer).
#include <algorithm>
#include <cstring>
#include <vector>

#include "transport/fabric/fabric_channel.h"

namespace fampool {

void FabricChannel::TransferStriped(const FabricBinding &item, uint64_t offset, char *local,
                                    uint64_t nbytes, void *desc, bool write,
                                    Clock::time_point deadline) {
    // Consecutive blocks of one server are contiguous in its extent but K blocks apart in the
    // caller's buffer: up to the provider's iov limit of them go as one operation, which
    // gathers (or scatters) them (4 KiB blocks over 3 servers: one operation per block was
    // 0.45 GB/s over tcp). Everything is posted before anyone waits, so the servers work in
    // parallel.
    const uint64_t largest = LargestOperation();
    const size_t most = domain_.iov_limit();
    struct Gathered {
        uint64_t physical = 0, length = 0;
        size_t count = 0;
        iovec pieces[FabricDomain::kMostPieces];
        void *descs[FabricDomain::kMostPieces];
    };
    std::vector<Gathered> open(item.servers.size());
    auto flush = [&](size_t index) {
        Gathered &gathered = open[index];
        if (gathered.count == 0) return;
        PostPieces(item, index, gathered.physical, gathered.length, gathered.pieces, gathered.descs,
                   gathered.count, write, deadline);
        gathered.count = 0;
        gathered.length = 0;
    };
    while (nbytes > 0) {
        FabricBinding::Place place = item.Locate(offset);
        uint64_t length = std::min({nbytes, place.contiguous, largest});
        Gathered &gathered = open[place.server];
        bool continues = gathered.count > 0 && gathered.count < most &&
                         gathered.physical + gathered.length == place.physical &&
                         gathered.length + length <= largest;
        if (!continues) {
            flush(place.server);
            gathered.physical = place.physical;
        }
        gathered.pieces[gathered.count] = {local, length};
        gathered.descs[gathered.count] = desc;
        ++gathered.count;
        gathered.length += length;
        offset += length;
        local += length;
        nbytes -= length;
    }
    for (size_t index = 0; index < open.size(); ++index) flush(index);
}

bool FabricChannel::Stages(const FabricBinding &item, uint64_t nbytes) const {
    // RAID5 members' layout puts parity blocks between a server's data blocks: not contiguous.
    if (item.interleave == 0 || item.servers.size() < 2 || item.raid5_members != 0) return false;
    // Staging costs a copy of the bytes, paid back by the operations it saves. Per chunk of
    // the staging buffer: one operation per server staged, against one per iov limit of each
    // server's blocks. Over tcp here an operation cost about what copying 64 KiB does
    // (10-20 us), and measured with 3 servers: 4 KiB blocks staged moved 0.45 -> 1.5 GB/s
    // (64 operations per MiB, 3 staged); 64 KiB blocks staged lost (1 MiB get 0.76-0.79x of one
    // server staged, 1.20-1.28x by iov: 6 operations per MiB against 3 and a copy).
    const uint64_t chunk = std::min<uint64_t>(nbytes, kStageBytes);
    const uint64_t servers = item.servers.size();
    const uint64_t blocks = (chunk + item.interleave - 1) / item.interleave;
    const uint64_t per_server = (blocks + servers - 1) / servers;
    const uint64_t by_iov =
        servers * ((per_server + domain_.iov_limit() - 1) / domain_.iov_limit());
    return by_iov > servers && (by_iov - servers) * kOperationBytes > chunk;
}

void FabricChannel::StagedTransfer(const FabricBinding &item, uint64_t offset, char *local,
                                   uint64_t nbytes, bool write, Clock::time_point deadline) {
    // A server's consecutive blocks of the item are contiguous in its extent: a chunk of the
    // item is one range on each server. Each range moves as one operation (of
    // LargestOperation bytes at most) between the server and its part of the staging buffer, and
    // the caller's bytes are gathered into it before a write, scattered from it after a read. 4 KiB
    // blocks over 3 servers took 64 operations per MiB by iov (4 pieces each), 3 this way.
    if (!stage_) stage_ = std::make_unique<char[]>(kStageBytes);
    char *stage = stage_.get();
    const uint64_t largest = LargestOperation();
    struct Range {
        uint64_t first = UINT64_MAX, end = 0, at = 0;
    };
    std::vector<Range> ranges(item.servers.size());
    while (nbytes > 0) {
        uint64_t chunk = std::min(nbytes, kStageBytes);
        std::fill(ranges.begin(), ranges.end(), Range{});
        for (uint64_t done = 0; done < chunk;) {
            FabricBinding::Place place = item.Locate(offset + done);
            uint64_t length = std::min(place.contiguous, chunk - done);
            Range &range = ranges[place.server];
            range.first = std::min(range.first, place.physical);
            range.end = std::max(range.end, place.physical + length);
            done += length;
        }
        uint64_t staged = 0;
        for (Range &range : ranges) {
            if (range.end == 0) continue;
            range.at = staged;
            staged += range.end - range.first;
        }
        if (staged != chunk) {  // not one range per server: pieces by iov instead
            Transfer(item, offset, local, chunk, LocalDescriptor(local, chunk, deadline), write,
                     deadline);
        } else {
            auto each_piece = [&](bool to_stage) {
                for (uint64_t done = 0; done < chunk;) {
                    FabricBinding::Place place = item.Locate(offset + done);
                    uint64_t length = std::min(place.contiguous, chunk - done);
                    const Range &range = ranges[place.server];
                    char *there = stage + range.at + (place.physical - range.first);
                    to_stage ? std::memcpy(there, local + done, length)
                             : std::memcpy(local + done, there, length);
                    done += length;
                }
            };
            if (write) each_piece(true);
            void *desc = LocalDescriptor(stage, kStageBytes, deadline);
            for (size_t index = 0; index < ranges.size(); ++index) {
                const Range &range = ranges[index];
                for (uint64_t at = range.first; at < range.end;) {
                    uint64_t length = std::min(largest, range.end - at);
                    iovec piece{stage + range.at + (at - range.first), length};
                    PostPieces(item, index, at, length, &piece, &desc, 1, write, deadline);
                    at += length;
                }
            }
            Finish(deadline);
            if (!write) each_piece(false);
        }
        offset += chunk;
        local += chunk;
        nbytes -= chunk;
    }
    Finish(deadline);
}

}  // namespace fampool
