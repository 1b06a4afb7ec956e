// How the serving daemons allocate (MemoryPolicy.swift says why): mimalloc
// (Debian libmimalloc-dev), linked so that it replaces malloc and free for the
// whole process, and SQLite's allocator settings. Header-only: a system module.
#include <mimalloc.h>
#include <sqlite3.h>
#include <stdbool.h>

/// Gives the memory the calling thread's heap and the process's abandoned and
/// cached segments no longer use back to the kernel.
static inline void stol_heap_return_freed(void) { mi_collect(true); }

/// Turns SQLite's memory statistics off (SQLITE_CONFIG_MEMSTATUS): with them,
/// every allocation of every connection takes one global mutex. Must run before
/// SQLite initializes (before the first connection opens). Returns SQLITE_OK, or
/// SQLITE_MISUSE when SQLite had already been initialized. (sqlite3_config is
/// variadic, which Swift cannot call.)
static inline int stol_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
