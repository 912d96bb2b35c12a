// Calls to several servers made at the same time, so that a step that touches S servers costs
// one round trip, not S (the metadata service creating, resizing and destroying a region's
// extents).
#ifndef FAMPOOL_COMMON_AT_ONCE_H_
#define FAMPOOL_COMMON_AT_ONCE_H_

#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace fampool {

// Runs call(0) .. call(count - 1) and returns when all have returned: at the same time, each
// beyond the first on a thread of its own, when `together` (calls that wait on a network);
// one after the other on the caller's thread otherwise (calls in this process, where a thread
// costs more than the call). Element i of the result is what call(i) threw, null when it
// returned. A thread the system refuses is replaced by a call on the caller's thread.
std::vector<std::exception_ptr> AtOnce(size_t count, const std::function<void(size_t)> &call,
                                       bool together);

// The failure of the lowest index, rethrown; nothing when there is none.
void RethrowFirst(const std::vector<std::exception_ptr> &failures);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_AT_ONCE_H_
