// Debian's libzstd (libzstd-dev): the emulator decodes `Content-Encoding: zstd` request bodies, as
// the real Codex CLI sends them (docs/protocol.md §8.3). No listed Swift package does zstd.
#include <zstd.h>
