#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::wire {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by OP_MSG's checksum.
// crc32c("123456789") == 0xE3069283. `crc` is a previous result to continue from (0 to start).
// Uses the SSE4.2 crc32 instruction when the CPU has it, else a slicing-by-8 table.
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

// The portable implementation, exposed so tests can compare it with the hardware path.
uint32_t crc32cSoftware(const void* data, size_t len, uint32_t crc = 0);
// True when crc32c() uses the hardware instruction.
bool crc32cHardwareAvailable();

}  // namespace tessera::wire
