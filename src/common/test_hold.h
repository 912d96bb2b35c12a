// Test holds: named points of the redundancy protocol (the metadata service's rebuild steps, a
// memory server's stripe and mirror work, a client's operation between its view and its
// transfers) where a process waits when FAMPOOL_TEST_HOLD asks it to, so that a test can hold
// a rebuild or a failover at each of its steps while writes and atomics arrive. Unset (every
// production run), HoldAt costs one load of a flag.
//
//   FAMPOOL_TEST_HOLD="POINT=MS[xCOUNT][,POINT=MS[xCOUNT]...]"
//     waits MS milliseconds each time POINT is reached (the first COUNT times only, with
//     xCOUNT). POINT=fail[xCOUNT] makes the point fail instead (a Failure, FAM_ERR_RESOURCE
//     "test failure at POINT"), as if the work it stands in had failed there. The points are
//     listed in docs/robustness.md, "Test holds"; a point this process never reaches is
//     ignored, an entry that is neither is refused (the process stops with a message at its
//     first hold).
#ifndef FAMPOOL_COMMON_TEST_HOLD_H_
#define FAMPOOL_COMMON_TEST_HOLD_H_

namespace fampool {

void HoldAt(const char *point);
// Reads FAMPOOL_TEST_HOLD again (the holds are read at the first HoldAt otherwise), with every
// count anew: for a process that runs several tests, each with holds of its own.
void ReloadTestHolds();

}  // namespace fampool

#endif  // FAMPOOL_COMMON_TEST_HOLD_H_
