#include "transport/redundant/raid5_stripes.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <random>

#include "common/error.h"
#include "transport/redundant/redundant_channel.h"

namespace fampool {
namespace {

// A lease lasts the data path's bound on a transfer, at most the 5 s the server accepts (the
// writes under it end within kMemberTimeoutMs of no progress; a lease that ends first makes
// the client write its stripes again through their parity servers).
uint32_t LeaseMs(std::chrono::milliseconds patience) {
    return static_cast<uint32_t>(std::clamp<int64_t>(patience.count(), 1000, 5000));
}
// Writes that ended this long before their leases could have are known to have ended under
// them: the releases are sent without waiting for the servers' word.
constexpr std::chrono::milliseconds kLeaseMargin{500};

uint64_t NextLeaseOwner() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return random() | uint64_t{1} << 63;
}

// Sends releases after a failure; a server that does not answer lets its leases end by time.
void GiveBack(RedundantTransport &transport,
              const std::vector<std::pair<uint64_t, StripeCall>> &releases) {
    for (const auto &[server, call] : releases) {
        try {
            transport.services().server(server).Stripe(call);
        } catch (const Failure &) {
            // ends by time (at most 5 s)
        }
    }
}

void XorUnit(char *to, const char *from, uint64_t n) {
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t a, b;
        std::memcpy(&a, to + i, 8);
        std::memcpy(&b, from + i, 8);
        a ^= b;
        std::memcpy(to + i, &a, 8);
    }
    for (; i < n; ++i) to[i] ^= from[i];
}

}  // namespace

std::vector<StripePiece> Raid5Pieces(const ItemInfo &item, uint64_t offset, uint64_t nbytes) {
    std::vector<StripePiece> pieces;
    uint64_t unit = item.region.interleave_size, k = DataColumns(item.region);
    for (uint64_t at = offset; at < offset + nbytes;) {
        uint64_t v = item.offset + at, block = v / unit, within = v % unit;
        uint64_t length = std::min(unit - within, offset + nbytes - at);
        pieces.push_back({at, block / k, block % k, within, length});
        at += length;
    }
    return pieces;
}

std::vector<std::string> SendStripes(RedundantTransport &transport,
                                     const std::vector<std::pair<uint64_t, StripeCall>> &calls) {
    // The first in this thread (deferred: it runs when its answer is asked for, first), the
    // others in threads of their own meanwhile; one server's call starts no thread.
    std::vector<std::future<std::string>> answers;
    for (const auto &[server, call] : calls) {
        auto policy = answers.empty() ? std::launch::deferred : std::launch::async;
        // (call = call: clang 14 cannot capture a structured binding)
        answers.push_back(std::async(policy, [&transport, server = server, &call = call] {
            return transport.services().server(server).Stripe(call);
        }));
    }
    std::vector<std::string> replies;
    std::optional<Failure> failure;
    for (auto &answer : answers) {
        try {
            replies.push_back(answer.get());
        } catch (const Failure &error) {
            if (!failure) failure = error;
            replies.emplace_back();
        }
    }
    if (failure) throw *failure;
    return replies;
}

std::vector<StripePiece> RedundantChannel::Raid5WholeStripes(const RedundantBinding::View &view,
                                                             uint64_t offset, const char *local,
                                                             std::vector<StripePiece> pieces) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    for (uint64_t m = 0; m < n; ++m) {
        if (!MemberHealthy(item, m)) return pieces;
    }
    // Whole stripes: n - 1 pieces in a row of one stripe, each a whole unit.
    std::vector<StripePiece> rest;
    std::vector<size_t> whole;  // the index in `pieces` of each whole stripe's first piece
    for (size_t i = 0; i < pieces.size();) {
        size_t j = i;
        while (j < pieces.size() && pieces[j].stripe == pieces[i].stripe) ++j;
        bool full = j - i == n - 1;
        for (size_t k = i; full && k < j; ++k) {
            full = pieces[k].within == 0 && pieces[k].length == unit;
        }
        if (full) {
            whole.push_back(i);
        } else {
            rest.insert(rest.end(), pieces.begin() + static_cast<ptrdiff_t>(i),
                        pieces.begin() + static_cast<ptrdiff_t>(j));
        }
        i = j;
    }
    size_t per_batch = std::max<uint64_t>(1, kStripeRequestBytes / ((n - 1) * unit));
    for (size_t b = 0; b < whole.size(); b += per_batch) {
        std::vector<size_t> batch(
            whole.begin() + static_cast<ptrdiff_t>(b),
            whole.begin() + static_cast<ptrdiff_t>(std::min(whole.size(), b + per_batch)));
        for (size_t first : WriteWholeStripes(view, offset, local, pieces, batch)) {
            rest.insert(rest.end(), pieces.begin() + static_cast<ptrdiff_t>(first),
                        pieces.begin() + static_cast<ptrdiff_t>(first + n - 1));
        }
    }
    return rest;
}

std::vector<size_t> RedundantChannel::WriteWholeStripes(const RedundantBinding::View &view,
                                                        uint64_t offset, const char *local,
                                                        const std::vector<StripePiece> &pieces,
                                                        const std::vector<size_t> &stripes) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    // The leases, from the stripes' parity servers at once.
    uint64_t owner = NextLeaseOwner();
    std::map<uint64_t, StripeCall> leases;           // parity member -> its stripes
    std::map<uint64_t, std::vector<size_t>> leased;  // parity member -> first pieces
    for (size_t first : stripes) {
        uint64_t s = pieces[first].stripe, p = Raid5ParityMember(s, n);
        auto [call, fresh] = leases.try_emplace(p);
        if (fresh) {
            call->second = StripeCallOf(item, StripeCall::Op::kLease, p);
            call->second.lease_owner = owner;
            call->second.lease_ms = LeaseMs(transport_.services().patience);
            // No wait: stripes another writer holds go through their parity servers, which
            // wait for them (and the server's message thread, which grants leases, never waits).
            call->second.wait_ms = 0;
        }
        call->second.pieces.push_back({s, 0, 0, unit});
        leased[p].push_back(first);
    }
    std::vector<std::pair<uint64_t, StripeCall>> calls;
    for (auto &[p, call] : leases) calls.emplace_back(MemberServer(item.region, p), call);
    std::vector<std::string> taken;
    auto asked = std::chrono::steady_clock::now();  // no lease began before this
    try {
        taken = SendStripes(transport_, calls);
    } catch (const Failure &) {
        // A server did not answer: the leases the others granted are given back at once, or
        // the redo through the parity servers would wait for them to end.
        for (auto &[server, call] : calls) call.op = StripeCall::Op::kRelease;
        GiveBack(transport_, calls);
        throw;
    }
    // Stripes whose lease was not had: through their parity servers (returned).
    std::vector<size_t> again, mine;
    std::vector<std::pair<uint64_t, StripeCall>> releases;
    size_t i = 0;
    for (auto &[p, firsts] : leased) {
        if (taken[i++] != "\1") {
            again.insert(again.end(), firsts.begin(), firsts.end());
            continue;
        }
        StripeCall release = leases[p];
        release.op = StripeCall::Op::kRelease;
        releases.emplace_back(MemberServer(item.region, p), std::move(release));
        mine.insert(mine.end(), firsts.begin(), firsts.end());
    }
    if (releases.empty()) return again;
    // The data units first, then each stripe's parity, computed while they travel.
    for (size_t first : mine) {
        uint64_t s = pieces[first].stripe;
        for (uint64_t c = 0; c + 1 < n; ++c) {
            Raid().Write(view.columns[Raid5DataMember(s, c, n)], s * unit,
                         local + (pieces[first + c].at - offset), unit, false);
        }
    }
    std::vector<std::vector<char>> sums(mine.size(), std::vector<char>(unit, 0));
    for (size_t k = 0; k < mine.size(); ++k) {
        uint64_t s = pieces[mine[k]].stripe;
        for (uint64_t c = 0; c + 1 < n; ++c) {
            XorUnit(sums[k].data(), local + (pieces[mine[k] + c].at - offset), unit);
        }
        Raid().Write(view.columns[Raid5ParityMember(s, n)], s * unit, sums[k].data(), unit, false);
    }
    try {
        Raid().Quiet();
    } catch (const Failure &) {
        // The stripes may hold some of the new units and not others: suspect to their servers
        // until written again (the redo after recovery does).
        for (auto &[server, call] : releases) call.incomplete = true;
        GiveBack(transport_, releases);
        throw;
    }
    // Done well within the leases (they began after `asked`): given back without waiting.
    auto lease = std::chrono::milliseconds(LeaseMs(transport_.services().patience));
    if (std::chrono::steady_clock::now() - asked < lease - kLeaseMargin) {
        for (const auto &[server, call] : releases) {
            transport_.services().server(server).StripeUnanswered(call);
        }
        return again;
    }
    std::vector<std::string> held = SendStripes(transport_, releases);
    // A lease that ended before the writes did: other writers may have changed the stripes
    // meanwhile, so they are written again through their parity servers.
    for (size_t r = 0; r < releases.size(); ++r) {
        if (held[r] == "\1") continue;
        const std::vector<size_t> &firsts = leased[releases[r].second.self];
        again.insert(again.end(), firsts.begin(), firsts.end());
    }
    return again;
}

}  // namespace fampool
