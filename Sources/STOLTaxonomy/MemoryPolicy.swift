import CMalloc

/// How the taxonomy server asks glibc to manage its heap, set once at start.
///
/// A release's indexes are a few hundred large arrays (ids, parents, offsets, name
/// bytes) besides many small objects. glibc serves an allocation above its mmap
/// threshold (128 KiB) with a mapping of its own, returned to the kernel when freed,
/// but it raises that threshold to the size of every such block freed (up to 32 MiB)
/// — so after the first database is closed, the next one's arrays come from the
/// heaps instead, where a few small objects allocated meanwhile keep the freed pages
/// from going back. Measured with `stol-bench soak` (a switch to the full NCBI release
/// and back under load): the daemon's RSS stayed 60–110 MiB above where it started.
/// A fixed threshold keeps every large array in a mapping of its own.
public enum MemoryPolicy {
    /// Allocations of at least this many bytes get their own mapping.
    public static let mmapThreshold: Int32 = 256 * 1024

    public static func apply() {
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
    }
}
