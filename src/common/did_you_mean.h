// Suggestions for a name that is not one of a known set (a misspelt configuration key or
// FAMPOOL_* variable): the closest known name, when it is close enough to be what was meant.
#ifndef FAMPOOL_COMMON_DID_YOU_MEAN_H_
#define FAMPOOL_COMMON_DID_YOU_MEAN_H_

#include <set>
#include <string>

namespace fampool {

// The known name closest to `given` (letters swapped, missing, extra or wrong, case aside),
// or "" when none is within 2 such edits and a third of the name.
std::string ClosestName(const std::string &given, const std::set<std::string> &known);

// "; did you mean \"NAME\"?" for ClosestName, or "" when there is none.
std::string DidYouMean(const std::string &given, const std::set<std::string> &known);

}  // namespace fampool

#endif  // FAMPOOL_COMMON_DID_YOU_MEAN_H_
