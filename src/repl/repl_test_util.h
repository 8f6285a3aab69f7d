#pragma once

// Helpers shared by the replication tests.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace tessera::repl::testing {

// How long a test waits for a group to reach what it expects (an election, a catch-up).
constexpr std::chrono::milliseconds kDeadline{20000};

// A loopback port nobody listens on now (the kernel's choice for an ephemeral bind).
// A loopback port nothing listens on, never the same twice in this process: the kernel may hand
// a just-closed ephemeral port out again, and two members on one port made a CI run fail
// ("server address already in use").
inline int unusedPort() {
    static std::mutex mutex;
    static std::set<int> given;
    for (int attempt = 0; attempt < 100; ++attempt) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
        socklen_t len = sizeof(addr);
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        ::close(fd);
        const int port = ntohs(addr.sin_port);
        std::lock_guard lk(mutex);
        if (given.insert(port).second) return port;
    }
    ADD_FAILURE() << "no unused loopback port in 100 attempts";
    return 0;
}

// Polls `pred` until it holds or `limit` passes; its last answer.
template <typename Pred>
bool waitFor(Pred pred, std::chrono::milliseconds limit = kDeadline) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
}

}  // namespace tessera::repl::testing
