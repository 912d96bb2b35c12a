#include "famsort/burst_trie.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace famsort {

// A slot whose capacity is kChild holds a Node in `data` instead of a bucket.
struct BurstTrie::Slot {
    void *data = nullptr;
    uint32_t count = 0;
    uint32_t capacity = 0;
    static constexpr uint32_t kChild = UINT32_MAX;
    bool IsChild() const { return capacity == kChild; }
    Entry *Entries() const { return static_cast<Entry *>(data); }
    Node *Child() const { return static_cast<Node *>(data); }
};

struct BurstTrie::Node {
    Slot slots[256];
};

namespace {

// The bucket capacity that holds `count` entries: a power of two, at least kMinBucket.
uint32_t CapacityFor(uint64_t count) {
    uint32_t capacity = BurstTrie::kMinBucket;
    while (capacity < count) capacity *= 2;
    return capacity;
}

Entry *AllocateEntries(uint64_t count) {
    void *p = std::malloc(count * sizeof(Entry));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<Entry *>(p);
}

}  // namespace

uint64_t BurstTrie::NodeBytes() { return sizeof(Node); }

BurstTrie::BurstTrie(Budget *budget, uint64_t bucket_capacity)
    : budget_(budget), bucket_capacity_(bucket_capacity) {
    budget_->Take(sizeof(Node));
    root_ = new Node();
}

BurstTrie::~BurstTrie() {
    FreeNode(root_);
    delete root_;
    budget_->Give(sizeof(Node));
}

void BurstTrie::FreeNode(Node *node) {
    for (Slot &slot : node->slots) {
        if (slot.IsChild()) {
            FreeNode(slot.Child());
            budget_->Give(sizeof(Node));
        } else if (slot.data != nullptr) {
            std::free(slot.data);
            budget_->Give(uint64_t{slot.capacity} * sizeof(Entry));
        }
    }
    if (node != root_) delete node;
}

bool BurstTrie::Insert(const Entry &e) {
    Node *node = root_;
    int depth = 0;
    for (;;) {
        Slot &slot = node->slots[e.b[depth]];
        if (slot.IsChild()) {
            node = slot.Child();
            ++depth;
            continue;
        }
        if (slot.count < slot.capacity) {
            slot.Entries()[slot.count++] = e;
            ++size_;
            return true;
        }
        // Full (or not yet allocated): grow it, or burst it one byte deeper. A bucket at the
        // last byte cannot burst; entries are distinct, so it never holds more than one.
        bool grow = slot.capacity < bucket_capacity_ || depth + 1 >= kEntryBytes;
        if (!(grow ? Grow(slot) : Burst(slot, depth + 1))) return false;
    }
}

bool BurstTrie::Grow(Slot &slot) {
    uint64_t capacity = slot.capacity == 0 ? kMinBucket : uint64_t{slot.capacity} * 2;
    if (slot.capacity < bucket_capacity_) capacity = std::min(capacity, bucket_capacity_);
    // Old and new arrays both exist while the entries move.
    if (!budget_->Fits(capacity * sizeof(Entry))) return false;
    budget_->Take(capacity * sizeof(Entry));
    Entry *entries = AllocateEntries(capacity);
    if (slot.count > 0) std::copy(slot.Entries(), slot.Entries() + slot.count, entries);
    std::free(slot.data);
    budget_->Give(uint64_t{slot.capacity} * sizeof(Entry));
    slot.data = entries;
    slot.capacity = static_cast<uint32_t>(capacity);
    return true;
}

bool BurstTrie::Burst(Slot &slot, int depth) {
    uint64_t counts[256] = {};
    const Entry *old = slot.Entries();
    for (uint32_t k = 0; k < slot.count; ++k) ++counts[old[k].b[depth]];
    uint64_t bytes = sizeof(Node);
    for (uint64_t count : counts) {
        if (count > 0) bytes += uint64_t{CapacityFor(count)} * sizeof(Entry);
    }
    if (!budget_->Fits(bytes)) return false;
    budget_->Take(bytes);
    Node *child = new Node();
    for (int c = 0; c < 256; ++c) {
        if (counts[c] == 0) continue;
        Slot &to = child->slots[c];
        to.capacity = CapacityFor(counts[c]);
        to.data = AllocateEntries(to.capacity);
    }
    for (uint32_t k = 0; k < slot.count; ++k) {
        Slot &to = child->slots[old[k].b[depth]];
        to.Entries()[to.count++] = old[k];
    }
    std::free(slot.data);
    budget_->Give(uint64_t{slot.capacity} * sizeof(Entry));
    slot.data = child;
    slot.count = 0;
    slot.capacity = Slot::kChild;
    return true;
}

void BurstTrie::Drain(const Visitor &visit) {
    unsigned char prefix[kEntryBytes] = {};
    DrainNode(root_, 0, prefix, visit);
    size_ = 0;
}

void BurstTrie::DrainNode(Node *node, int depth, unsigned char *prefix, const Visitor &visit) {
    for (int c = 0; c < 256; ++c) {
        Slot &slot = node->slots[c];
        prefix[depth] = static_cast<unsigned char>(c);
        if (slot.IsChild()) {
            DrainNode(slot.Child(), depth + 1, prefix, visit);
            delete slot.Child();
            budget_->Give(sizeof(Node));
        } else if (slot.data != nullptr) {
            if (slot.count > 0) {
                std::sort(slot.Entries(), slot.Entries() + slot.count);
                visit(prefix, depth + 1, slot.Entries(), slot.count);
            }
            std::free(slot.data);
            budget_->Give(uint64_t{slot.capacity} * sizeof(Entry));
        }
        slot = Slot();
    }
}

}  // namespace famsort
