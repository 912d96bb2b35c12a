#include "transport/redundant/raid5_stripes.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <random>

#include "common/error.h"
#include "common/parity.h"
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

std::vector<StripePiece> RedundantChannel::Raid5LeasedStripes(const RedundantBinding::View &view,
                                                              uint64_t offset, const char *local,
                                                              std::vector<StripePiece> pieces) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    for (uint64_t m = 0; m < n; ++m) {
        if (!MemberHealthy(item, m)) return pieces;
    }
    // Whole stripes: under leases; parts of stripes to their parity servers (returned). A part
    // written here that failed part-way would leave its stripe torn with nothing but this
    // client knowing what it meant, and with a member missing before the stripe is written
    // again, the other units' bytes outside the part would be rebuilt wrong; the parity server
    // keeps what a write meant (stripe_gate.h). A whole stripe's units are all the write's.
    std::vector<StripePiece> rest;
    std::vector<StripeRun> runs;
    for (size_t i = 0; i < pieces.size();) {
        size_t j = i;
        uint64_t bytes = 0;
        while (j < pieces.size() && pieces[j].stripe == pieces[i].stripe)
            bytes += pieces[j++].length;
        if (bytes == (n - 1) * unit) {
            runs.push_back({i, j - i});
        } else {
            rest.insert(rest.end(), pieces.begin() + static_cast<ptrdiff_t>(i),
                        pieces.begin() + static_cast<ptrdiff_t>(j));
        }
        i = j;
    }
    size_t per_batch = std::max<uint64_t>(1, kStripeRequestBytes / ((n - 1) * unit));
    for (size_t b = 0; b < runs.size(); b += per_batch) {
        std::vector<StripeRun> batch(
            runs.begin() + static_cast<ptrdiff_t>(b),
            runs.begin() + static_cast<ptrdiff_t>(std::min(runs.size(), b + per_batch)));
        for (const StripeRun &run : WriteLeasedStripes(view, offset, local, pieces, batch)) {
            rest.insert(rest.end(), pieces.begin() + static_cast<ptrdiff_t>(run.first),
                        pieces.begin() + static_cast<ptrdiff_t>(run.first + run.count));
        }
    }
    return rest;
}

std::vector<StripeRun> RedundantChannel::WriteLeasedStripes(const RedundantBinding::View &view,
                                                            uint64_t offset, const char *local,
                                                            const std::vector<StripePiece> &pieces,
                                                            const std::vector<StripeRun> &runs) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    // The leases, from the stripes' parity servers at once.
    uint64_t owner = NextLeaseOwner();
    std::map<uint64_t, StripeCall> leases;              // parity member -> its stripes
    std::map<uint64_t, std::vector<StripeRun>> leased;  // parity member -> its stripes' pieces
    for (const StripeRun &run : runs) {
        uint64_t s = pieces[run.first].stripe, p = Raid5ParityMember(s, n);
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
        leased[p].push_back(run);
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
    std::vector<StripeRun> again, mine;
    std::vector<std::pair<uint64_t, StripeCall>> releases;
    size_t i = 0;
    for (auto &[p, held] : leased) {
        if (taken[i++] != "\1") {
            again.insert(again.end(), held.begin(), held.end());
            continue;
        }
        StripeCall release = leases[p];
        release.op = StripeCall::Op::kRelease;
        releases.emplace_back(MemberServer(item.region, p), std::move(release));
        mine.insert(mine.end(), held.begin(), held.end());
    }
    if (releases.empty()) return again;
    try {
        WriteUnderLeases(view, offset, local, pieces, mine);
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
        const std::vector<StripeRun> &held_runs = leased[releases[r].second.self];
        again.insert(again.end(), held_runs.begin(), held_runs.end());
    }
    return again;
}

void RedundantChannel::WriteUnderLeases(const RedundantBinding::View &view, uint64_t offset,
                                        const char *local, const std::vector<StripePiece> &pieces,
                                        const std::vector<StripeRun> &runs) {
    const ItemInfo &item = view.item;
    uint64_t n = MemberCount(item.region), unit = item.region.interleave_size;
    auto from = [&](const StripePiece &piece) { return local + (piece.at - offset); };
    auto column = [&](const StripePiece &piece) {
        return view.columns[Raid5DataMember(piece.stripe, piece.column, n)];
    };
    auto parity = [&](uint64_t stripe) { return view.columns[Raid5ParityMember(stripe, n)]; };
    // The data units, then each stripe's parity, computed while they travel.
    for (const StripeRun &run : runs) {
        for (size_t k = run.first; k < run.first + run.count; ++k) {
            const StripePiece &piece = pieces[k];
            Raid().Write(column(piece), piece.stripe * unit, from(piece), unit, false);
        }
    }
    std::vector<std::vector<char>> sums(runs.size(), std::vector<char>(unit, 0));
    for (size_t w = 0; w < runs.size(); ++w) {
        for (size_t k = runs[w].first; k < runs[w].first + runs[w].count; ++k) {
            XorInto(sums[w].data(), from(pieces[k]), unit);
        }
        Raid().Write(parity(pieces[runs[w].first].stripe), pieces[runs[w].first].stripe * unit,
                     sums[w].data(), unit, false);
    }
    Raid().Quiet();  // before the buffers go
}

}  // namespace fampool
