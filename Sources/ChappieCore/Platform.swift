// chappie supports Linux only (Package.swift, README): the daemon's socket checks its peer with
// Linux's SO_PEERCRED, and the file locks, shims and tests run on Debian only.
#if !os(Linux)
    #error("chappie supports Linux only (see Package.swift and the README)")
#endif
