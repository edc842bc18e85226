#ifndef CHAPPIE_CSODIUM_SHIM_H
#define CHAPPIE_CSODIUM_SHIM_H
// libsodium 1.0.18 from Debian (libsodium-dev). Every function used is non-variadic,
// so Swift calls them directly.
#include <sodium.h>
#endif
