#ifndef CHAPPIE_CSQLITE_SHIM_H
#define CHAPPIE_CSQLITE_SHIM_H
// The system SQLite (libsqlite3-dev), for the front binary's read-only path. Every function used
// is non-variadic, so Swift calls them directly.
#include <sqlite3.h>
#endif
