// What a memory server needs of its fabric endpoint: its address, and registering memory for
// remote access (read-only or read-write) under a key. FabricServer implements it.
#ifndef FAMPOOL_MEMSERVER_REGISTRAR_H_
#define FAMPOOL_MEMSERVER_REGISTRAR_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace fampool {

class Registrar {
  public:
    struct Registration {
        uint64_t handle = 0;
        uint64_t key = 0;
        uint64_t base = 0;  // a remote address is base + (byte offset from the registered start)
    };
    virtual ~Registrar() = default;
    virtual std::string address() const = 0;
    virtual std::string provider() const = 0;
    virtual Registration Register(void *address, size_t length, bool writable) = 0;
    // Closes the registration: its key stops working at once.
    virtual void Deregister(uint64_t handle) = 0;
};

}  // namespace fampool

#endif  // FAMPOOL_MEMSERVER_REGISTRAR_H_
