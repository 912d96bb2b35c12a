#include "common/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace fampool {
namespace {

char Folded(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Edits (insert, delete, replace, swap of neighbours) from a to b, ignoring case.
size_t Edits(const std::string &a, const std::string &b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = Folded(a[i - 1]) == Folded(b[j - 1]) ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && Folded(a[i - 1]) == Folded(b[j - 2]) &&
                Folded(a[i - 2]) == Folded(b[j - 1])) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

}  // namespace

std::string ClosestName(const std::string &given, const std::set<std::string> &known) {
    std::string best;
    size_t best_edits = std::min<size_t>(2, std::max<size_t>(given.size() / 3, 1)) + 1;
    for (const std::string &name : known) {
        size_t edits = Edits(given, name);
        if (edits < best_edits) {
            best = name;
            best_edits = edits;
        }
    }
    return best;
}

std::string DidYouMean(const std::string &given, const std::set<std::string> &known) {
    std::string closest = ClosestName(given, known);
    return closest.empty() ? "" : "; did you mean \"" + closest + "\"?";
}

}  // namespace fampool
