#include "common/at_once.h"

#include <system_error>
#include <thread>

namespace fampool {

std::vector<std::exception_ptr> AtOnce(size_t count, const std::function<void(size_t)> &call,
                                       bool together) {
    std::vector<std::exception_ptr> failures(count);
    auto run = [&](size_t i) {
        try {
            call(i);
        } catch (...) {
            failures[i] = std::current_exception();
        }
    };
    if (!together || count < 2) {
        for (size_t i = 0; i < count; ++i) run(i);
        return failures;
    }
    std::vector<std::thread> others;
    others.reserve(count - 1);
    for (size_t i = 1; i < count; ++i) {
        try {
            others.emplace_back(run, i);
        } catch (const std::system_error &) {
            run(i);
        }
    }
    run(0);
    for (std::thread &thread : others) thread.join();
    return failures;
}

void RethrowFirst(const std::vector<std::exception_ptr> &failures) {
    for (const std::exception_ptr &failure : failures) {
        if (failure) std::rethrow_exception(failure);
    }
}

}  // namespace fampool
