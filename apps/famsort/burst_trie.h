// A burst trie of sort entries in DRAM, under a byte budget (FAMSort phase 1; Sinha and
// Zobel's BurstSort, the paper's Fig. 15).
//
// Each node has 256 slots, one per value of the entry byte at its depth; a slot holds either a
// bucket (an unsorted array of entries that share the slot's prefix) or a child node. A
// bucket grows by doubling up to `bucket_capacity` entries; a full bucket bursts: its entries
// move into a new node one byte deeper. Every byte the trie allocates is taken from the
// Budget first; Insert says no (and changes nothing) when the budget cannot hold what the
// entry needs, and the caller spills the trie with Drain and tries again.
#ifndef FAMPOOL_APPS_FAMSORT_BURST_TRIE_H_
#define FAMPOOL_APPS_FAMSORT_BURST_TRIE_H_

#include <cstdint>
#include <functional>

#include "famsort/famsort.h"

namespace famsort {

class BurstTrie {
  public:
    // Called by Drain for every non-empty bucket in key order: its prefix (entry bytes
    // [0, depth)) and its entries, sorted.
    using Visitor = std::function<void(const unsigned char *prefix, int depth, const Entry *entries,
                                       uint64_t count)>;

    BurstTrie(Budget *budget, uint64_t bucket_capacity);
    ~BurstTrie();
    BurstTrie(const BurstTrie &) = delete;
    BurstTrie &operator=(const BurstTrie &) = delete;

    // Adds `e`; false, with nothing changed, when the budget cannot hold the memory it takes.
    bool Insert(const Entry &e);
    // Visits the buckets depth first, then empties the trie and gives its memory back.
    void Drain(const Visitor &visit);

    uint64_t size() const { return size_; }
    static uint64_t NodeBytes();
    static constexpr uint32_t kMinBucket = 4;

  private:
    struct Node;
    struct Slot;

    bool Grow(Slot &slot);
    bool Burst(Slot &slot, int depth);
    void DrainNode(Node *node, int depth, unsigned char *prefix, const Visitor &visit);
    void FreeNode(Node *node);

    Budget *budget_;
    uint64_t bucket_capacity_;
    uint64_t size_ = 0;
    Node *root_;
};

}  // namespace famsort

#endif  // FAMPOOL_APPS_FAMSORT_BURST_TRIE_H_
