// echo_limit: the request-rate ceiling of loopback TCP round trips on this machine.
//
// An asio server (C++20 coroutines on an io_context pool, like Tessera's listener) answers each
// framed request with a framed response; T client connections, each on its own blocking thread
// (like a driver's synchronous client), do strict request/response ping-pong. Framing mirrors the
// MongoDB wire protocol: a little-endian int32 total length, then the body. Defaults model a point
// read by _id: a ~100-byte find request and a reply of the document plus ~100 bytes of envelope.
#include <array>
#include <asio.hpp>
#include <atomic>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "flags.h"
#include "phase_runner.h"
#include "value_source.h"

namespace tessera::bench {
namespace {

constexpr const char* kUsage =
    "usage: echo_limit [--threads 16] [--seconds 10] [--doc-size 1024]\n"
    "                  [--request-size 100] [--response-size DOC+100] [--server-threads N]\n"
    "                  [--max-ops N] [--json]\n";
constexpr uint32_t kMaxMessage = 48u << 20;  // MongoDB's maxMessageSizeBytes

uint32_t readLength(const unsigned char* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void writeLength(unsigned char* p, uint32_t v) {
    p[0] = v & 0xff;
    p[1] = (v >> 8) & 0xff;
    p[2] = (v >> 16) & 0xff;
    p[3] = (v >> 24) & 0xff;
}

std::string makeFrame(uint32_t total) {
    ValueSource fill(total);
    std::string frame(fill.slice(0));
    writeLength(reinterpret_cast<unsigned char*>(frame.data()), total);
    return frame;
}

// One connection: read a frame (header, then body), write the fixed response, repeat.
asio::awaitable<void> serveConnection(asio::ip::tcp::socket socket, const std::string* response) {
    std::vector<unsigned char> body;
    std::array<unsigned char, 4> header{};
    try {
        for (;;) {
            co_await asio::async_read(socket, asio::buffer(header), asio::use_awaitable);
            uint32_t len = readLength(header.data());
            if (len < 4 || len > kMaxMessage) {
                co_return;  // framing error: close, as a server would
            }
            body.resize(len - 4);
            co_await asio::async_read(socket, asio::buffer(body), asio::use_awaitable);
            co_await asio::async_write(socket, asio::buffer(*response), asio::use_awaitable);
        }
    } catch (const std::exception&) {
        // Peer closed or reset: the connection ends.
    }
}

asio::awaitable<void> acceptLoop(asio::ip::tcp::acceptor& acceptor, const std::string* response) {
    for (;;) {
        asio::error_code ec;
        asio::ip::tcp::socket socket =
            co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            co_return;  // acceptor closed
        }
        socket.set_option(asio::ip::tcp::no_delay(true), ec);
        auto executor = socket.get_executor();
        asio::co_spawn(executor, serveConnection(std::move(socket), response), asio::detached);
    }
}

int run(int argc, char** argv) {
    Flags flags({"threads", "seconds", "doc-size", "request-size", "response-size",
                 "server-threads", "max-ops"},
                {"json", "help"});
    std::string err;
    if (!flags.parse(argc, argv, &err)) {
        std::cerr << "echo_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (flags.has("help")) {
        std::cout << kUsage;
        return 0;
    }
    uint64_t threads = 0, docSize = 0, requestSize = 0, responseSize = 0, serverThreads = 0,
             maxOps = 0;
    double seconds = 0;
    if (!flags.getUint("threads", 16, &threads, &err) ||
        !flags.getUint("doc-size", 1024, &docSize, &err) ||
        !flags.getUint("request-size", 100, &requestSize, &err) ||
        !flags.getUint("response-size", docSize + 100, &responseSize, &err) ||
        !flags.getUint("server-threads", std::max(1u, std::thread::hardware_concurrency()),
                       &serverThreads, &err) ||
        !flags.getUint("max-ops", 50'000'000, &maxOps, &err) ||
        !flags.getDouble("seconds", 10, &seconds, &err)) {
        std::cerr << "echo_limit: " << err << "\n" << kUsage;
        return 2;
    }
    if (threads == 0 || serverThreads == 0 || requestSize < 16 || responseSize < 16 ||
        requestSize > kMaxMessage || responseSize > kMaxMessage) {
        std::cerr << "echo_limit: need threads >= 1, server-threads >= 1 and message sizes in "
                     "[16, 48 MiB]\n";
        return 2;
    }

    const std::string request = makeFrame(static_cast<uint32_t>(requestSize));
    const std::string response = makeFrame(static_cast<uint32_t>(responseSize));

    asio::io_context server(static_cast<int>(serverThreads));
    asio::ip::tcp::acceptor acceptor(server);
    try {
        asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
        acceptor.open(endpoint.protocol());
        acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
        acceptor.bind(endpoint);
        acceptor.listen();
    } catch (const std::exception& e) {
        std::cerr << "echo_limit: cannot listen on 127.0.0.1: " << e.what() << "\n";
        return 1;
    }
    const uint16_t port = acceptor.local_endpoint().port();
    asio::co_spawn(server, acceptLoop(acceptor, &response), asio::detached);
    auto work = asio::make_work_guard(server);
    std::vector<std::thread> serverPool;
    for (uint64_t i = 0; i < serverThreads; ++i) {
        serverPool.emplace_back([&server] { server.run(); });
    }

    // One blocking client connection per load thread, connected before the clock starts.
    asio::io_context clientContext;
    std::vector<std::optional<asio::ip::tcp::socket>> clients(threads);
    std::string connectError;
    for (auto& c : clients) {
        asio::error_code ec;
        c.emplace(clientContext);
        c->connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
        if (!ec) {
            c->set_option(asio::ip::tcp::no_delay(true), ec);
        }
        if (ec) {
            connectError = ec.message();
            break;
        }
    }

    PhaseResult result;
    if (connectError.empty()) {
        std::vector<std::vector<unsigned char>> buffers(threads,
                                                        std::vector<unsigned char>(responseSize));
        PhaseSpec spec{
            "echo_limit", "echo", threads, seconds, maxOps, requestSize + responseSize, 3};
        result = runPhase(spec, [&](OpContext& ctx) {
            auto& socket = *clients[ctx.thread];
            auto& in = buffers[ctx.thread];
            asio::error_code ec;
            asio::write(socket, asio::buffer(request), ec);
            if (!ec) {
                asio::read(socket, asio::buffer(in.data(), 4), ec);
            }
            if (!ec) {
                uint32_t len = readLength(in.data());
                if (len != responseSize) {
                    ctx.error = "bad response length " + std::to_string(len);
                    return false;
                }
                asio::read(socket, asio::buffer(in.data() + 4, len - 4), ec);
            }
            if (ec) {
                ctx.error = ec.message();
                return false;
            }
            return true;
        });
    }

    for (auto& c : clients) {
        if (c) {
            asio::error_code ignored;
            c->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
            c->close(ignored);
        }
    }
    asio::post(server, [&acceptor] { acceptor.close(); });
    work.reset();
    server.stop();
    for (auto& t : serverPool) {
        t.join();
    }

    if (!connectError.empty()) {
        std::cerr << "echo_limit: connect to 127.0.0.1:" << port << ": " << connectError << "\n";
        return 1;
    }
    std::cout << formatText(result) << "\n";
    std::cout << "  request " << requestSize << " B, response " << responseSize << " B, "
              << serverThreads << " server threads\n";
    if (flags.has("json")) {
        std::cout << formatJson(result) << "\n";
    }
    return result.errors == 0 && result.ops > 0 ? 0 : 1;
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) { return tessera::bench::run(argc, argv); }
