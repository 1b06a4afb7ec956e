// A SQLite VFS that reads a database from an open file descriptor, for the
// verifier's unnamed scratch file.
#ifndef STOL_SQLITE_H
#define STOL_SQLITE_H

/// The name of the VFS registered by stol_sqlite_register_descriptor_vfs().
#define STOL_DESCRIPTOR_VFS "stol-descriptor"
/// Database names this VFS serves from a descriptor: the prefix, then the fd in decimal.
#define STOL_DESCRIPTOR_PREFIX "/stol-descriptor/"
/// The same, read-write (pwrite, ftruncate; still no locks and no journal): only the
/// scratch files a row delta is applied in (stol_row_delta.h) are opened this way.
#define STOL_WRITABLE_DESCRIPTOR_PREFIX "/stol-descriptor-rw/"

/// Registers (once; not as the default) a VFS that opens the main database named
/// `/stol-descriptor/<fd>` by reading descriptor `fd` (a duplicate of it) with
/// pread, read-only and immutable (no locks, no journal), `/stol-descriptor-rw/<fd>`
/// read-write the same way, and hands every other
/// file to SQLite's default VFS. The verifier's scratch file has no name (it is
/// unlinked, so a killed verifier leaves nothing), and SQLite's unix VFS opens
/// paths with O_NOFOLLOW, so `/proc/self/fd/N` cannot reach it.
/// Returns SQLITE_OK or an SQLite error code.
int stol_sqlite_register_descriptor_vfs(void);

#endif
