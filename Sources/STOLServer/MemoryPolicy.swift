import CMemory
import Glibc

/// How the serving daemons allocate memory, set once at start before any thread
/// (``DaemonMain/run(_:options:server:adjust:prepare:)``).
///
/// **mimalloc, not glibc's malloc.** The daemons link mimalloc (through `CMemory`),
/// which then serves every `malloc` of the process, Swift's runtime and SQLite's
/// included. glibc's malloc shares a few arenas, each behind one lock, between all
/// of a daemon's threads; a user's bulk lane (nice +10) preempted while it held
/// one kept another user's lookup waiting until it ran again. `perf sched` showed
/// the victim's lane thread asleep in `__lll_lock_wait_private` under `malloc` for
/// 25–36 ms at a time, woken by the attacker's lane: a bulk mix on two connections
/// put another user's `taxon` p99 at 27.6 ms (20× quiet; `stol-bench attack
/// --phases bulk-2`), with mimalloc at 2.19 ms (1.8×). mimalloc's heaps are per
/// thread: allocating and freeing on one's own heap takes no lock, and a block
/// freed by another thread goes back through an atomic list. Large blocks (a
/// release's index arrays) get segments of their own, returned when freed.
///
/// **No SQLite memory statistics.** With them (SQLite's default) every allocation
/// of every connection takes one global mutex: each user reads through connections
/// of their own, but they all met there (the same `perf` record: `sqlite3Malloc` and
/// `sqlite3_free` waiting in `pthread_mutex_lock`).
public enum MemoryPolicy {
    /// Whether mimalloc serves this process's `malloc` (a block from it lies in
    /// mimalloc's heap): tests check it, since the dynamic linker binds `malloc` to
    /// whichever of libmimalloc and libc comes first.
    public static var usesMimalloc: Bool {
        guard let block = malloc(16) else { return false }
        defer { free(block) }
        return mi_is_in_heap_region(block)
    }

    /// mimalloc's version (209: 2.0.9).
    public static var mimallocVersion: Int { Int(mi_version()) }

    /// False when SQLite had initialized already (its statistics then stay on).
    @discardableResult
    public static func apply() -> Bool {
        stol_sqlite_disable_memory_statistics() == 0
    }
}
