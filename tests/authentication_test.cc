// authentication_test.cc: callers proven with MUNGE (authentication: munge) on a cluster of
// fampool-server processes with a munged of the test's own. The metadata service takes the
// uid and gid of the caller's session, not the ones it states: another user (uid 65534) is
// refused a 0600 region through the API, and also when it sends uid 0 with its own token over
// gRPC or the fabric; fabric calls without a live session's seal are dropped. Credentials from a
// munged with another key, replayed ones and ones meant for another service are refused with the
// reason; a call without a session is refused naming MUNGE; a client cannot grant itself a fabric
// key at a memory server. Clients carry on when the services restart. Without authentication, the
// stated uid is believed (the control).
#include <unistd.h>

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "common/cluster_config.h"
#include "common/data_path.h"
#include "messages/message_client.h"
#include "meta/client/metadata_client.h"
#include "raw_endpoint.h"
#include "rpc/convert.h"
#include "rpc/memory_server_client.h"
#include "rpc/munge.h"
#include "test_munged.h"
#include "test_support.h"

namespace fampool_test {
namespace {

using namespace openfam;
using fampool::Caller;
namespace rpc = fampool::rpc;

constexpr std::chrono::milliseconds kTimeout(10000);

// What a gRPC call returned: its status code, its message, and the Fam_Error in its details.
struct Answer {
    grpc::StatusCode code = grpc::StatusCode::OK;
    std::string message;
    int fam_error = 0;
};

template <typename Stub, typename Request, typename Reply>
Answer Ask(Stub &stub,
           grpc::Status (Stub::*method)(grpc::ClientContext *, const Request &, Reply *),
           const Request &request, Reply *reply, const std::string &token = "") {
    auto context = fampool::CallContext(kTimeout);
    if (!token.empty()) context->AddMetadata(fampool::kTokenHeader, token);
    grpc::Status status = (stub.*method)(context.get(), request, reply);
    Answer answer{status.error_code(), status.error_message(), 0};
    if (!status.error_details().empty()) answer.fam_error = std::stoi(status.error_details());
    return answer;
}

bool Names(const Answer &answer, const std::string &text) {
    return answer.message.find(text) != std::string::npos;
}

// On a cluster whose servers authenticate callers with its own munged.
class AuthenticationTest : public FamTest {
  protected:
    virtual std::string Spec() const { return "1:0:tcp:authentication=munge"; }
    void PrepareEnvironment() override { SetEnv("FAMPOOL_TEST_CLUSTER", Spec()); }
    void SetUp() override {
        FamTest::SetUp();
        if (HasFatalFailure()) return;
        cluster_file_ = fampool::LoadClusterConfig(cluster()->config_path());
        metadata_ = rpc::Metadata::NewStub(fampool::OpenChannel(cluster_file_.metadata_address));
    }
    void TearDown() override {
        // Before the cluster stops: a server with a client still connected takes its whole
        // shutdown deadline (5 s) to stop.
        metadata_.reset();
        FamTest::TearDown();
    }

    const std::string &MetadataAddress() const { return cluster_file_.metadata_address; }
    std::unique_ptr<rpc::MemoryServer::Stub> MemoryServer(size_t id) {
        return rpc::MemoryServer::NewStub(
            fampool::OpenChannel(cluster_file_.memservers.at(id).rpc_address));
    }
    // A session of nobody's with memory server `id`, as its fabric calls are sealed with.
    fampool::SessionSeal MemoryServerSeal(size_t id) {
        rpc::Credential credential;
        credential.set_munge(CredentialOf(kNobodyUid, kNobodyGid, cluster()->munge_socket(),
                                          fampool::MemoryServerAudience(id)));
        rpc::Session session;
        auto memory = MemoryServer(id);
        EXPECT_EQ(Ask(*memory, &rpc::MemoryServer::Stub::Authenticate, credential, &session).code,
                  grpc::StatusCode::OK);
        return fampool::SessionSeal::Of(session.token());
    }
    // An atomic on item_ with a made-up key, as a fabric call (the server refuses the key).
    rpc::FabricCall AtomicCall() const {
        rpc::FabricCall call;
        rpc::AtomicRequest *atomic = call.mutable_atomic();
        atomic->mutable_extent()->set_region_id(item_->get_global_descriptor().regionId);
        atomic->set_offset(0);
        atomic->set_op(0);
        atomic->set_type(static_cast<int>(fampool::DataType::kUint64));
        atomic->set_operand(std::string(8, '\0'));
        atomic->set_key(12345);
        return call;
    }
    // Opens a metadata session with `credential`.
    Answer Authenticate(const std::string &credential, rpc::Session *session) {
        rpc::Credential request;
        request.set_munge(credential);
        return Ask(*metadata_, &rpc::Metadata::Stub::Authenticate, request, session);
    }
    // A metadata session of uid/gid, opened with a credential that user made.
    rpc::Session SessionOf(uid_t uid, gid_t gid) {
        rpc::Session session;
        Answer answer = Authenticate(
            CredentialOf(uid, gid, cluster()->munge_socket(), fampool::kMetadataAudience),
            &session);
        EXPECT_EQ(answer.code, grpc::StatusCode::OK) << answer.message;
        return session;
    }
    // Region "secret" (0600, root's) with item "i" (0600) holding a pattern.
    void MakeSecret() {
        region_ = CreateRegion("secret", 4 << 20, 0600);
        item_ = Allocate("i", 4096, region_.get(), 0600);
        PutBytes(item_.get(), 0, Pattern(4096, 7));
    }
    // The access_worker program as uid/gid 65534: each operation's Fam_Error by name.
    std::map<std::string, int> AccessAsNobody(ProgramSpec spec = {}) {
        spec.argv = {WorkerPath("access_worker"), "secret", "i"};
        spec.uid = kNobodyUid;
        spec.gid = kNobodyGid;
        last_ = RunProgram(spec, 60);
        std::map<std::string, int> codes;
        std::istringstream lines(last_.out);
        std::string operation;
        int code;
        while (lines >> operation >> code) codes[operation] = code;
        return codes;
    }

    fampool::ClusterConfig cluster_file_;
    std::unique_ptr<rpc::Metadata::Stub> metadata_;
    std::unique_ptr<Fam_Region_Descriptor> region_;
    std::unique_ptr<Fam_Descriptor> item_;
    ProcessResult last_;
};

TEST_F(AuthenticationTest, OtherUserIsRefusedA0600RegionThroughTheApi) {
    MakeSecret();
    std::map<std::string, int> codes = AccessAsNobody();
    ASSERT_TRUE(last_.ok()) << last_.err;
    EXPECT_EQ(codes["lookup_region"], FAM_ERR_NOPERM);
    EXPECT_EQ(codes["lookup_item"], FAM_ERR_NOPERM);
    EXPECT_EQ(GetBytes(item_.get(), 0, 4096), Pattern(4096, 7)) << "the owner still reads it";
}

TEST_F(AuthenticationTest, OtherUserClaimingUidZeroIsRefusedOverGrpc) {
    MakeSecret();
    rpc::Session nobody = SessionOf(kNobodyUid, kNobodyGid);
    EXPECT_EQ(nobody.uid(), kNobodyUid) << "the session is the credential's user";
    EXPECT_EQ(nobody.gid(), kNobodyGid);

    rpc::LookupRequest lookup;  // "I am root", with nobody's token
    lookup.mutable_caller()->set_uid(0);
    lookup.mutable_caller()->set_gid(0);
    lookup.mutable_caller()->set_token(nobody.token());
    lookup.set_name("secret");
    rpc::Region region;
    Answer refused = Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region);
    EXPECT_EQ(refused.code, grpc::StatusCode::FAILED_PRECONDITION) << refused.message;
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;
    lookup.set_name("i");
    lookup.set_region("secret");
    rpc::Item item;
    refused = Ask(*metadata_, &rpc::Metadata::Stub::LookupItem, lookup, &item);
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;
    rpc::ItemRequest get;  // a read by the item's global descriptor
    *get.mutable_caller() = lookup.caller();
    get.set_region_id(item_->get_global_descriptor().regionId);
    get.set_offset(item_->get_global_descriptor().offset);
    refused = Ask(*metadata_, &rpc::Metadata::Stub::GetItem, get, &item);
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;

    // The token decides both ways: root's session stating uid 65534 is root.
    rpc::Session root = SessionOf(0, 0);
    lookup.mutable_caller()->set_uid(kNobodyUid);
    lookup.mutable_caller()->set_token(root.token());
    Answer allowed = Ask(*metadata_, &rpc::Metadata::Stub::LookupItem, lookup, &item);
    EXPECT_EQ(allowed.code, grpc::StatusCode::OK) << allowed.message;
}

TEST_F(AuthenticationTest, OtherUserClaimingUidZeroIsRefusedOverTheFabric) {
    MakeSecret();
    rpc::Session nobody = SessionOf(kNobodyUid, kNobodyGid);
    rpc::FabricEndpoint endpoint;
    rpc::Caller asking;
    asking.set_token(nobody.token());
    ASSERT_EQ(Ask(*metadata_, &rpc::Metadata::Stub::MetadataEndpoint, asking, &endpoint).code,
              grpc::StatusCode::OK);
    ASSERT_FALSE(endpoint.address().empty()) << "the service takes calls over the fabric";
    EXPECT_TRUE(endpoint.session_known());
    fampool::FabricConfig fabric;
    fabric.provider = "tcp";
    fampool::FabricMessageClient client(fabric, endpoint.address(), endpoint.incarnation(),
                                        kTimeout, "metadata service");
    rpc::FabricCall call;
    rpc::LookupRequest *lookup = call.mutable_lookup_item();
    lookup->mutable_caller()->set_uid(0);
    lookup->mutable_caller()->set_gid(0);
    lookup->set_name("i");
    lookup->set_region("secret");
    fampool::SessionSeal seal = fampool::SessionSeal::Of(nobody.token());
    rpc::FabricReply reply;
    ASSERT_TRUE(client.Call(
        call, &reply, "LookupItem", true, [] { return true; }, &seal));
    EXPECT_EQ(reply.code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION))
        << reply.message();
    EXPECT_EQ(reply.details(), std::to_string(FAM_ERR_NOPERM)) << reply.message();
    EXPECT_FALSE(reply.has_item());
}

TEST_F(AuthenticationTest, CallWithoutASessionIsRefusedNamingMunge) {
    MakeSecret();
    rpc::LookupRequest lookup;
    lookup.set_name("secret");
    rpc::Region region;
    Answer none = Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region);
    EXPECT_EQ(none.code, grpc::StatusCode::UNAUTHENTICATED) << none.message;
    EXPECT_EQ(none.fam_error, FAM_ERR_NOPERM);
    EXPECT_TRUE(Names(none, "Metadata.LookupRegion")) << none.message;
    EXPECT_TRUE(Names(none, "MUNGE")) << none.message;
    lookup.mutable_caller()->set_token(std::string(16, 'x'));
    Answer unknown = Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region);
    EXPECT_EQ(unknown.code, grpc::StatusCode::UNAUTHENTICATED) << unknown.message;
    EXPECT_TRUE(Names(unknown, "does not know this caller's session")) << unknown.message;
    // Through the client library, without UseMunge: FAM_ERR_NOPERM with that message.
    fampool::MetadataClient client(MetadataAddress(), kTimeout);
    CaughtError caught = CatchFamError([&] { client.LookupRegion("secret", Caller{0, 0}); });
    EXPECT_EQ(caught.code, FAM_ERR_NOPERM) << caught.message;
    EXPECT_NE(caught.message.find("MUNGE"), std::string::npos) << caught.message;
}

TEST_F(AuthenticationTest, CredentialOfAnotherMungeKeyIsRefused) {
    TestMunged other;  // another key
    rpc::Session session;
    Answer refused = Authenticate(
        fampool::MakeCredential(other.socket(), fampool::kMetadataAudience, "test"), &session);
    EXPECT_EQ(refused.code, grpc::StatusCode::FAILED_PRECONDITION) << refused.message;
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM);
    EXPECT_TRUE(Names(refused, "Metadata.Authenticate")) << refused.message;
    EXPECT_TRUE(Names(refused, "invalid MUNGE credential")) << refused.message;
    EXPECT_TRUE(Names(refused, "another key")) << refused.message;
    EXPECT_TRUE(session.token().empty());

    // A program whose munged has the other key fails at fam_initialize, saying why.
    ProgramSpec spec;
    spec.env = {{"FAMPOOL_MUNGE_SOCKET", other.socket()}};
    AccessAsNobody(spec);
    EXPECT_EQ(last_.exit_code, 2) << last_.out << last_.err;
    EXPECT_NE(last_.err.find("fam_initialize"), std::string::npos) << last_.err;
    EXPECT_NE(last_.err.find("another key"), std::string::npos) << last_.err;
}

TEST_F(AuthenticationTest, ReplayedCredentialIsRefused) {
    std::string credential =
        fampool::MakeCredential(cluster()->munge_socket(), fampool::kMetadataAudience, "test");
    rpc::Session first, second;
    ASSERT_EQ(Authenticate(credential, &first).code, grpc::StatusCode::OK);
    EXPECT_EQ(first.token().size(), 16u);
    Answer replayed = Authenticate(credential, &second);
    EXPECT_EQ(replayed.fam_error, FAM_ERR_NOPERM) << replayed.message;
    EXPECT_TRUE(Names(replayed, "replayed MUNGE credential")) << replayed.message;
    EXPECT_TRUE(second.token().empty());
}

TEST_F(AuthenticationTest, CredentialForAnotherServiceIsRefused) {
    rpc::Session session;
    Answer refused = Authenticate(fampool::MakeCredential(cluster()->munge_socket(),
                                                          fampool::MemoryServerAudience(0), "test"),
                                  &session);
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;
    EXPECT_TRUE(Names(refused, "meant for \"memory 0\"")) << refused.message;
}

TEST_F(AuthenticationTest, ClientCannotGrantItselfAKeyOrManageExtents) {
    MakeSecret();
    auto memory = MemoryServer(0);
    rpc::ExtentRequest request;
    request.mutable_extent()->set_region_id(item_->get_global_descriptor().regionId);
    request.set_offset(item_->get_global_descriptor().offset);
    request.set_size(4096);
    request.set_writable(true);
    rpc::KeyGrant grant;
    Answer none = Ask(*memory, &rpc::MemoryServer::Stub::GrantKey, request, &grant);
    EXPECT_EQ(none.code, grpc::StatusCode::UNAUTHENTICATED) << none.message;
    EXPECT_TRUE(Names(none, "MemoryServer.GrantKey")) << none.message;
    EXPECT_EQ(grant.key(), 0u);
    Answer forged =
        Ask(*memory, &rpc::MemoryServer::Stub::GrantKey, request, &grant, std::string(16, 'k'));
    EXPECT_EQ(forged.code, grpc::StatusCode::UNAUTHENTICATED) << forged.message;
    rpc::Empty empty;
    Answer destroy = Ask(*memory, &rpc::MemoryServer::Stub::DestroyExtent, request, &empty);
    EXPECT_EQ(destroy.code, grpc::StatusCode::UNAUTHENTICATED) << destroy.message;

    // Another user's session (clients open one for copies, backups and RAID calls) is refused
    // every extent and key call: only the servers' own uid may make them.
    rpc::Credential credential;
    credential.set_munge(CredentialOf(kNobodyUid, kNobodyGid, cluster()->munge_socket(),
                                      fampool::MemoryServerAudience(0)));
    rpc::Session session;
    Answer opened = Ask(*memory, &rpc::MemoryServer::Stub::Authenticate, credential, &session);
    ASSERT_EQ(opened.code, grpc::StatusCode::OK) << opened.message;
    EXPECT_EQ(session.uid(), kNobodyUid);
    Answer refused =
        Ask(*memory, &rpc::MemoryServer::Stub::GrantKey, request, &grant, session.token());
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;
    EXPECT_TRUE(Names(refused, "only from uid 0")) << refused.message;
    EXPECT_EQ(grant.key(), 0u);
    refused =
        Ask(*memory, &rpc::MemoryServer::Stub::DestroyExtent, request, &empty, session.token());
    EXPECT_EQ(refused.fam_error, FAM_ERR_NOPERM) << refused.message;
    EXPECT_EQ(GetBytes(item_.get(), 0, 4096), Pattern(4096, 7)) << "the item is intact";
}

// A memory server's calls over the fabric (atomics of redundant regions) need a session as
// their gRPC twins do: without a token or with a forged one they are refused unauthenticated;
// with another user's session, the call is judged by its fabric key (here a wrong one).
// A fabric call is run only when it names a live session and its seal holds under that
// session's key (messages/message_seal.h); any other is dropped unanswered, and its caller
// gives up after its timeout.
TEST_F(AuthenticationTest, MemoryServerFabricCallsNeedASealedSession) {
    MakeSecret();
    fampool::MemoryServerClient server(0, cluster_file_.memservers.at(0).rpc_address, kTimeout);
    fampool::MemoryServerInfo info = server.Info();
    ASSERT_FALSE(info.messages_address.empty()) << "memory server 0 takes calls over the fabric";
    fampool::FabricConfig fabric;
    fabric.provider = "tcp";
    auto atomic_call = [&] { return AtomicCall(); };
    // Each on a client of its own: a call given up breaks its client.
    auto call_with = [&](const fampool::SessionSeal *seal, rpc::FabricReply *reply) {
        fampool::FabricMessageClient client(fabric, info.messages_address,
                                            info.messages_incarnation,
                                            std::chrono::milliseconds(300), "memory server 0");
        rpc::FabricCall call = atomic_call();
        return client.Call(
            call, reply, "Atomic", /*idempotent=*/true, [] { return true; }, seal);
    };
    fampool::SessionSeal seal = MemoryServerSeal(0);
    fampool::SessionSeal unknown = fampool::SessionSeal::Of(std::string(16, 'k'));
    fampool::SessionSeal forged{seal.id, unknown.key};  // the session's id, another key
    rpc::FabricReply reply;
    EXPECT_FALSE(call_with(nullptr, &reply)) << "a call without a session was answered";
    EXPECT_FALSE(call_with(&unknown, &reply)) << "a call naming no live session was answered";
    EXPECT_FALSE(call_with(&forged, &reply)) << "a call with a forged seal was answered";
    ASSERT_TRUE(call_with(&seal, &reply)) << "the session's own sealed call was not answered";
    EXPECT_EQ(reply.code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION))
        << reply.message();
    EXPECT_EQ(reply.details(), std::to_string(FAM_ERR_NOPERM)) << reply.message();
    // Calls sent without waiting for their replies (Send, as a RAID5 lease's release goes),
    // sealed or not: the next call gets its own reply, not theirs.
    fampool::FabricMessageClient client(fabric, info.messages_address, info.messages_incarnation,
                                        kTimeout, "memory server 0");
    rpc::FabricCall first = atomic_call();
    rpc::FabricReply first_reply;
    ASSERT_TRUE(client.Call(
        first, &first_reply, "Atomic", false, [] { return true; }, &seal))
        << "the client learns its reply proof at its first call";
    for (int i = 0; i < 4; ++i) {
        rpc::FabricCall release;
        release.mutable_stripe()->set_op(rpc::StripeRequest::RELEASE);
        EXPECT_TRUE(client.Send(release, i % 2 ? &seal : nullptr));
    }
    rpc::FabricCall call = atomic_call();
    rpc::FabricReply after;
    ASSERT_TRUE(client.Call(
        call, &after, "Atomic", false, [] { return true; }, &seal));
    EXPECT_EQ(after.code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION))
        << after.message();
    EXPECT_NE(after.message().find("for an atomic"), std::string::npos) << after.message();
    EXPECT_EQ(GetBytes(item_.get(), 0, 4096), Pattern(4096, 7)) << "the item is intact";
}

// A sealed call is run only with the proof that its session's owner receives at its reply_to,
// which the service sends there alone: a user who names another's endpoint as reply_to in
// calls of their own session makes the service send that endpoint one proof, never a reply.
TEST_F(AuthenticationTest, ASealedCallIsRunOnlyWithTheProofOfItsReplyEndpoint) {
    MakeSecret();
    fampool::MemoryServerClient server(0, cluster_file_.memservers.at(0).rpc_address, kTimeout);
    fampool::MemoryServerInfo info = server.Info();
    fampool::SessionSeal seal = MemoryServerSeal(0);
    rpc::FabricCall call = AtomicCall();
    const std::chrono::milliseconds wait(2000);

    RawEndpoint mine, other;
    mine.Send(info.messages_address, call, seal, mine.address());
    std::optional<rpc::FabricReply> first = mine.Receive(seal, wait);
    ASSERT_TRUE(first) << "no answer at all";
    EXPECT_FALSE(first->reply_proof().empty()) << "a call without a proof was answered";
    EXPECT_EQ(first->reply_case(), rpc::FabricReply::REPLY_NOT_SET);
    EXPECT_EQ(first->code(), 0) << "a call without a proof was run: " << first->message();

    call.set_reply_proof(first->reply_proof());
    mine.Send(info.messages_address, call, seal, mine.address());
    std::optional<rpc::FabricReply> run = mine.Receive(seal, wait);
    ASSERT_TRUE(run);
    EXPECT_TRUE(run->reply_proof().empty());
    EXPECT_EQ(run->code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION))
        << "the call with its proof was run (and refused the made-up key): " << run->message();

    // The same proof with another endpoint as reply_to: that endpoint gets a proof of its own,
    // not a reply, and nothing comes back here.
    mine.Send(info.messages_address, call, seal, other.address());
    std::optional<rpc::FabricReply> elsewhere = other.Receive(seal, wait);
    ASSERT_TRUE(elsewhere);
    EXPECT_FALSE(elsewhere->reply_proof().empty());
    EXPECT_NE(elsewhere->reply_proof(), first->reply_proof());
    EXPECT_EQ(elsewhere->code(), 0) << "the call naming another endpoint was run";
    EXPECT_EQ(elsewhere->reply_case(), rpc::FabricReply::REPLY_NOT_SET);
    EXPECT_FALSE(mine.Receive(seal, std::chrono::milliseconds(200)));
}

TEST_F(AuthenticationTest, TokenOfAnEndedSessionIsRefused) {
    MakeSecret();
    rpc::Session root = SessionOf(0, 0);
    rpc::LookupRequest lookup;
    lookup.mutable_caller()->set_token(root.token());
    lookup.set_name("secret");
    rpc::Region region;
    ASSERT_EQ(Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region).code,
              grpc::StatusCode::OK);
    rpc::Caller end;
    end.set_token(root.token());
    rpc::Empty empty;
    ASSERT_EQ(Ask(*metadata_, &rpc::Metadata::Stub::EndSession, end, &empty).code,
              grpc::StatusCode::OK);
    Answer after = Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region);
    EXPECT_EQ(after.code, grpc::StatusCode::UNAUTHENTICATED) << after.message;
    EXPECT_EQ(after.fam_error, FAM_ERR_NOPERM) << after.message;
}

TEST_F(AuthenticationTest, SessionUnusedForItsIdleLimitEnds) {
    fampool::SessionTable sessions(cluster()->munge_socket(), "test", "test service",
                                   std::chrono::seconds(1));
    fampool::SessionTable::Opened opened =
        sessions.Open(fampool::MakeCredential(cluster()->munge_socket(), "test", "test"), "Open");
    EXPECT_EQ(sessions.Resolve(opened.token, "Resolve").uid, getuid());
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));
    EXPECT_THROW(sessions.Resolve(opened.token, "Resolve"), fampool::Unauthenticated);
}

// Two interleaved memory servers: every region has an extent on memory server 1, which the
// metadata service reaches over gRPC (memory server 0 runs inside it).
class AuthenticationRestartTest : public AuthenticationTest {
  protected:
    std::string Spec() const override { return "2:4096:tcp:authentication=munge"; }
};

TEST_F(AuthenticationRestartTest, ClientsCarryOnAfterTheServicesRestart) {
    fampool::MetadataClient client(MetadataAddress(), kTimeout);
    client.UseMunge(cluster()->munge_socket());
    Caller me{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid())};
    Fam_Region_Attributes persistent{};  // regions that outlive their servers' restarts
    persistent.memoryType = PERSISTENT;
    auto first = CreateRegion("first", 1 << 20, 0600, &persistent);
    EXPECT_EQ(client.LookupRegion("first", me).name, "first");

    // Memory server 1 forgets the metadata service's session: it opens a new one.
    cluster()->Kill(1, SIGKILL);
    cluster()->Restart(1);
    ASSERT_NO_THROW(cluster()->WaitReady());
    auto second = CreateRegion("second", 1 << 20, 0600, &persistent);
    EXPECT_EQ(client.LookupRegion("second", me).memory_servers.size(), 2u);

    // The metadata service forgets every client's session: they open new ones.
    cluster()->Kill(0, SIGKILL);
    cluster()->Restart(0);
    ASSERT_NO_THROW(cluster()->WaitReady());
    EXPECT_EQ(client.LookupRegion("first", me).name, "first");
    std::unique_ptr<Fam_Region_Descriptor> again(fam()->fam_lookup_region("second"));
    EXPECT_NE(again, nullptr);
    auto third = CreateRegion("third", 1 << 20, 0600, &persistent);
    EXPECT_EQ(client.LookupRegion("third", me).name, "third");
}

// The control: without authentication the service believes the uid a caller states.
class NoAuthenticationTest : public AuthenticationTest {
  protected:
    std::string Spec() const override { return "1:0:tcp"; }
};

TEST_F(NoAuthenticationTest, StatedUidIsBelievedAndNoSessionIsNeeded) {
    MakeSecret();
    rpc::ServerList servers;
    rpc::Empty empty;
    ASSERT_EQ(Ask(*metadata_, &rpc::Metadata::Stub::Servers, empty, &servers).code,
              grpc::StatusCode::OK);
    EXPECT_EQ(servers.authentication(), "none");
    rpc::LookupRequest lookup;  // what any process may send
    lookup.mutable_caller()->set_uid(0);
    lookup.set_name("secret");
    rpc::Region region;
    Answer believed = Ask(*metadata_, &rpc::Metadata::Stub::LookupRegion, lookup, &region);
    EXPECT_EQ(believed.code, grpc::StatusCode::OK) << believed.message;
}

TEST_F(NoAuthenticationTest, ClientThatRequiresMungeRefusesTheService) {
    ProgramSpec spec;
    spec.env = {{"FAMPOOL_AUTHENTICATION", "munge"}};
    AccessAsNobody(spec);
    EXPECT_EQ(last_.exit_code, 2) << last_.out << last_.err;
    EXPECT_NE(last_.err.find("does not authenticate its callers"), std::string::npos) << last_.err;
}

}  // namespace
}  // namespace fampool_test
