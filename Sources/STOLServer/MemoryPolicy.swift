import CMalloc

/// How the serving daemons ask glibc to manage their heaps, set once at start,
/// before any thread (``DaemonMain/run(_:options:server:prepare:)``).
///
/// A release's indexes are a few hundred large arrays (ids, parents, offsets, name
/// bytes) besides many small objects. glibc serves an allocation above its mmap
/// threshold (128 KiB) with a mapping of its own, returned to the kernel when freed,
/// but it raises that threshold to the size of every such block freed (up to 32 MiB)
/// — so after the first database is closed, the next one's arrays come from the
/// heaps instead, where a few small objects allocated meanwhile keep the freed pages
/// from going back. Measured with `stol-bench soak` (a switch to the full NCBI release
/// and back under load): the daemon's RSS stayed 60–110 MiB above where it started.
/// A fixed threshold keeps every large array in a mapping of its own; so it keeps a
/// list of favourites or an encoded answer, freed whole when sent.
///
/// The arenas are capped too: glibc creates up to eight per core, one for each
/// thread that finds the others locked, and each keeps its own free memory; a
/// hundred lane threads would each keep one.
public enum MemoryPolicy {
    /// Allocations of at least this many bytes get their own mapping.
    public static let mmapThreshold: Int32 = 256 * 1024
    /// Arenas glibc may create (`M_ARENA_MAX`).
    public static let maximumArenas: Int32 = 4

    public static func apply() {
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        _ = mallopt(M_ARENA_MAX, maximumArenas)
    }
}
