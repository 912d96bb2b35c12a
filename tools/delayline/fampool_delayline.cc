// fampool-delayline: a constant delay for the packets netfilter hands to one NFQUEUE: the link
// delays of `fampool up --emulate` (tools/cli/emulate.h), netem's job, done in user space since
// the kernels fampool runs on have no netem.
//
//   fampool-delayline --queue N --delay-us D
//
// It binds queue N of the network namespace it runs in, asks the kernel for each packet's
// metadata only (NFQNL_COPY_META: the payload never crosses into user space), notes when each
// packet arrived and accepts it once D microseconds have passed. The delay is the same for every
// packet, so packets leave in the order they came: one batch verdict releases every packet that
// is due. It prints "fampool-delayline: queue N, delay D us, ...: ready" once the queue is bound
// (what `fampool up` waits for) and runs until SIGTERM or SIGINT, when it releases what it holds
// and prints what it did.
//
// It never lets a packet through undelayed: the queue is not fail-open, so while no delay line
// listens the kernel drops the queue's packets, and an error it cannot recover from ends it
// with a message and exit status 1. Exit status 2: bad options.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

namespace {

// Kernel queue length and socket buffer: at 20,000 packets/s a 100 ms delay holds 2,000
// packets, far below either.
constexpr uint32_t kQueueMaxLen = 65536;
constexpr int kReceiveBuffer = 64 << 20;
// ppoll is asked to wake this long, plus how late its wake-ups have been of late, before a
// packet is due, and the rest is spun: a wake-up here takes 10 to 60 us, and spinning a few
// microseconds costs little CPU.
constexpr int64_t kSpinNs = 3000;
constexpr int64_t kMostWakeLateNs = 200000;
constexpr int kMostReadAtOnce = 256;
// Longest sleep with nothing held (a packet or a signal ends it sooner).
constexpr int64_t kIdleNs = 1000000000;
constexpr const char *kName = "fampool-delayline";

volatile sig_atomic_t stop_signal = 0;

void OnSignal(int signal) { stop_signal = signal; }

[[noreturn]] void Fail(const std::string &message) {
    std::fprintf(stderr, "%s: %s\n", kName, message.c_str());
    std::exit(1);
}

int64_t Now() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

int64_t RealNow() {
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

struct Options {
    uint16_t queue = 0;
    int64_t delay_ns = 0;
};

[[noreturn]] void Usage(const std::string &problem) {
    std::fprintf(stderr,
                 "%s: %s\nusage: %s --queue N --delay-us D\n"
                 "  holds each packet of NFQUEUE N (0 to 65535) for D microseconds (1 to "
                 "10000000), then accepts it\n",
                 kName, problem.c_str(), kName);
    std::exit(2);
}

uint64_t Number(const char *text, uint64_t max, const std::string &option) {
    char *end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || value > max) {
        Usage(option + " \"" + text + "\" is not a whole number from 0 to " + std::to_string(max));
    }
    return value;
}

Options ParseOptions(int argc, char **argv) {
    Options options;
    bool have_queue = false, have_delay = false;
    for (int i = 1; i < argc; ++i) {
        std::string option = argv[i];
        if (option == "-h" || option == "--help") Usage("holds packets for a constant delay");
        if (i + 1 == argc) Usage(option + " needs a value");
        if (option == "--queue") {
            options.queue = static_cast<uint16_t>(Number(argv[++i], 65535, option));
            have_queue = true;
        } else if (option == "--delay-us") {
            options.delay_ns = static_cast<int64_t>(Number(argv[++i], 10000000, option)) * 1000;
            have_delay = true;
        } else {
            Usage("unknown option " + option);
        }
    }
    if (!have_queue || !have_delay) Usage("--queue and --delay-us are both needed");
    if (options.delay_ns == 0) Usage("--delay-us must be at least 1");
    return options;
}

// The packets held, oldest first, and what has been done.
struct Line {
    nfq_q_handle *queue = nullptr;
    int64_t delay_ns = 0;
    int64_t received_ns = 0;       // when the message being read was received (CLOCK_MONOTONIC)
    int64_t received_real_ns = 0;  // the same, CLOCK_REALTIME (the kernel's timestamps')
    int64_t wake_late_ns = 0;      // how late ppoll's timeouts end, averaged over the last few
    struct Held {
        uint32_t id;
        int64_t due_ns;
    };
    std::deque<Held> held;
    uint64_t packets = 0;
    uint64_t verdicts = 0;
    uint64_t overflows = 0;  // ENOBUFS: the kernel could not hand us some packets (dropped)
    size_t most_held = 0;
    int64_t late_total_ns = 0;  // how much later than due the released packets left
    int64_t late_most_ns = 0;
};

int OnPacket(nfq_q_handle *, nfgenmsg *, nfq_data *data, void *context) {
    Line &line = *static_cast<Line *>(context);
    nfqnl_msg_packet_hdr *header = nfq_get_msg_packet_hdr(data);
    if (header == nullptr) return 0;
    // A packet arrived when the kernel queued it: its timestamp, where the kernel gives one
    // (then the time this program took to wake up does not add to the delay), else now.
    int64_t arrived = line.received_ns;
    timeval stamp;
    if (nfq_get_timestamp(data, &stamp) == 0) {
        int64_t age = line.received_real_ns - (stamp.tv_sec * 1000000000LL + stamp.tv_usec * 1000);
        if (age > 0 && age < 1000000000) arrived -= age;
    }
    line.held.push_back({ntohl(header->packet_id), arrived + line.delay_ns});
    line.most_held = std::max(line.most_held, line.held.size());
    ++line.packets;
    return 0;
}

// Accepts every held packet due by `now` (all of them with `all`), with one verdict.
void Release(Line &line, int64_t now, bool all) {
    size_t due = 0;
    while (due < line.held.size() && (all || line.held[due].due_ns <= now)) {
        int64_t late = now - line.held[due].due_ns;
        line.late_total_ns += std::max<int64_t>(late, 0);
        line.late_most_ns = std::max(line.late_most_ns, late);
        ++due;
    }
    if (due == 0) return;
    uint32_t last = line.held[due - 1].id;
    if (nfq_set_verdict_batch(line.queue, last, NF_ACCEPT) < 0) {
        Fail("the verdict for packets up to id " + std::to_string(last) +
             " failed: " + std::strerror(errno));
    }
    line.held.erase(line.held.begin(), line.held.begin() + static_cast<long>(due));
    ++line.verdicts;
}

// Reads the messages waiting on the socket, up to kMostReadAtOnce: under a flood the loop
// still releases packets on time between reads.
void Receive(nfq_handle *handle, int fd, Line &line) {
    alignas(8) static char buffer[1 << 16];
    for (int read = 0; read < kMostReadAtOnce; ++read) {
        ssize_t n = recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (n < 0 && errno == ENOBUFS) {
            ++line.overflows;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) Fail(std::string("reading the queue's socket: ") + std::strerror(errno));
        line.received_ns = Now();
        line.received_real_ns = RealNow();
        nfq_handle_packet(handle, buffer, static_cast<int>(n));
    }
}

// The queue bound, in copy-metadata mode, not fail-open; returns its socket.
int Bind(nfq_handle *handle, const Options &options, Line &line) {
    line.queue = nfq_create_queue(handle, options.queue, &OnPacket, &line);
    if (line.queue == nullptr) {
        Fail("cannot bind NFQUEUE " + std::to_string(options.queue) + ": " + std::strerror(errno) +
             " (another process holds it, or this is not root)");
    }
    if (nfq_set_mode(line.queue, NFQNL_COPY_META, 0) < 0) {
        Fail(std::string("cannot set the queue to copy metadata only: ") + std::strerror(errno));
    }
    if (nfq_set_queue_maxlen(line.queue, kQueueMaxLen) < 0) {
        Fail(std::string("cannot set the queue's length: ") + std::strerror(errno));
    }
    // Not fail-open: a full queue drops, as a real link's full buffer would, instead of passing
    // packets on undelayed. GSO: whole TCP segments are queued as they are, not cut into
    // frames first (the payload is never looked at).
    nfq_set_queue_flags(line.queue, NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
    int fd = nfq_fd(handle);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBuffer, sizeof kReceiveBuffer) != 0) {
        nfnl_rcvbufsiz(nfq_nfnlh(handle), kReceiveBuffer);
    }
    return fd;
}

}  // namespace

int main(int argc, char **argv) {
    const Options options = ParseOptions(argc, argv);
    // Signals arrive only inside ppoll, so the loop never misses one between its checks.
    sigset_t blocked, during_wait;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &during_wait);
    sigdelset(&during_wait, SIGTERM);
    sigdelset(&during_wait, SIGINT);
    struct sigaction action {};
    action.sa_handler = OnSignal;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    prctl(PR_SET_TIMERSLACK, 1UL);  // ppoll wakes when asked, not up to 50 us later

    nfq_handle *handle = nfq_open();
    if (handle == nullptr) {
        Fail(std::string("cannot open a netfilter queue handle: ") + std::strerror(errno) +
             " (the kernel needs CONFIG_NETFILTER_NETLINK_QUEUE)");
    }
    Line line;
    line.delay_ns = options.delay_ns;
    const int fd = Bind(handle, options, line);
    // A socket that asks for receive timestamps turns on the kernel's timestamping of arriving
    // packets, for as long as it is open: the queue then gives each arriving packet the time it
    // came (OnPacket). Without them the delay starts when this program reads the packet.
    int stamps = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int on = 1;
    if (stamps >= 0) setsockopt(stamps, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    // The lowest real-time priority: through a 200 Mbit/s TCP transfer that kept both cores
    // busy, with a normal one the packets left 12 to 22 us late on average (up to 8 ms), with
    // this one 3 to 5 us (up to 2.6 ms). Its spin is short and it sleeps between packets, so it
    // takes little from the rest.
    sched_param priority{};
    priority.sched_priority = 1;
    const bool realtime = sched_setscheduler(0, SCHED_FIFO, &priority) == 0;
    std::printf("%s: queue %u, delay %lld us, %s: ready\n", kName, options.queue,
                static_cast<long long>(options.delay_ns / 1000),
                realtime ? "real-time priority" : "normal priority (SCHED_FIFO refused)");
    std::fflush(stdout);

    while (!stop_signal) {
        int64_t now = Now();
        Release(line, now, false);
        int64_t wait = line.held.empty() ? kIdleNs : line.held.front().due_ns - now;
        // Within kSpinNs of the next packet's time ppoll only looks (timeout 0): that spin
        // still takes new packets and signals.
        int64_t sleep = std::max<int64_t>(wait - kSpinNs - line.wake_late_ns, 0);
        timespec timeout{static_cast<time_t>(sleep / 1000000000),
                         static_cast<long>(sleep % 1000000000)};
        pollfd socket{fd, POLLIN, 0};
        int ready = ppoll(&socket, 1, &timeout, &during_wait);
        if (ready < 0 && errno != EINTR) Fail(std::string("ppoll: ") + std::strerror(errno));
        if (ready > 0) Receive(handle, fd, line);
        if (ready == 0 && sleep > 0 && !line.held.empty()) {
            int64_t late = std::min(Now() - now - sleep, kMostWakeLateNs);
            line.wake_late_ns += (late - line.wake_late_ns) / 8;
        }
    }
    Release(line, Now(), true);
    nfq_destroy_queue(line.queue);
    nfq_close(handle);
    std::printf(
        "%s: signal %d: stopped; %llu packets delayed %lld us (late by %.1f us on average, %.1f "
        "us at most), %llu verdicts, at most %zu held at once, %llu socket overflows (packets "
        "the kernel dropped)\n",
        kName, static_cast<int>(stop_signal), static_cast<unsigned long long>(line.packets),
        static_cast<long long>(options.delay_ns / 1000),
        line.packets ? line.late_total_ns / 1e3 / line.packets : 0.0, line.late_most_ns / 1e3,
        static_cast<unsigned long long>(line.verdicts), line.most_held,
        static_cast<unsigned long long>(line.overflows));
    return 0;
}
