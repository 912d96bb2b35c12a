// A munged for one test (or one test cluster): a key the test makes, a socket in a directory of
// its own under /tmp, stopped by PID when the object goes. Clusters with `authentication:
// munge` use it as `munge_socket`; two of them (two keys) make credentials the other refuses.
#ifndef FAMPOOL_TESTS_SUPPORT_TEST_MUNGED_H_
#define FAMPOOL_TESTS_SUPPORT_TEST_MUNGED_H_

#include <sys/types.h>

#include <string>

class TestMunged {
  public:
    // Makes the key and starts munged in the foreground; returns when it makes credentials
    // (at most 10 s). Throws std::runtime_error with munged's log when it does not.
    TestMunged();
    ~TestMunged();  // SIGTERM, SIGKILL after 5 s, by PID; removes its directory
    TestMunged(const TestMunged &) = delete;
    TestMunged &operator=(const TestMunged &) = delete;

    const std::string &socket() const { return socket_; }
    pid_t pid() const { return pid_; }

  private:
    void Stop();

    std::string dir_, socket_, log_;
    pid_t pid_ = 0;
};

// A credential for fampool's service `audience` ("metadata", "memory 0") made by the munged on
// `socket` for uid/gid: the munge program, run as that user. Throws std::runtime_error with
// its output when it fails.
std::string CredentialOf(uid_t uid, gid_t gid, const std::string &socket,
                         const std::string &audience);

#endif  // FAMPOOL_TESTS_SUPPORT_TEST_MUNGED_H_
