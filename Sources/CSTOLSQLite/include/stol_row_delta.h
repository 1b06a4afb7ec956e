// Row deltas (protocol/STOL-FORMAT.md §10.2): the rows that turn one release's
// database into the next, as an SQLite patchset (the session extension's changeset
// without the old values of changed and deleted rows), and
// their application to a copy of the base followed by VACUUM INTO, which lays the
// result out exactly as the pipeline lays out a database it builds.
#ifndef STOL_ROW_DELTA_H
#define STOL_ROW_DELTA_H

#include <stddef.h>

/// The patchset that turns the database at `base_path` into the one at
/// `target_path` (both opened read-only): every row inserted, deleted or changed in
/// every ordinary table (the FTS index's shadow tables included). Refused, with a
/// reason in `error`, when the two schemas differ (a patchset carries no DDL) or
/// a table has no primary key (the session extension cannot name its rows).
/// On SQLITE_OK `*patchset` is an sqlite3_malloc'd buffer of `*size` bytes (free
/// it with stol_row_delta_free).
int stol_row_delta_diff(const char *base_path, const char *target_path, void **patchset, long long *size,
                        char *error, size_t error_size);

void stol_row_delta_free(void *patchset);

/// Empties `work_fd` and copies the base into it: by the kernel (copy_file_range, which
/// shares blocks where the file system can), the rest from `base` (its mapping, `size`
/// bytes). Returns 0, or an errno.
int stol_row_delta_copy_base(int base_fd, int work_fd, const void *base, size_t size);

/// Applies a row delta: `work_fd` holds a byte copy of the base (it is changed);
/// `payload` is the delta's zstd frame, decompressed with the base's bytes as its
/// reference prefix into a patchset, streamed (never more than zstd's buffers in
/// memory), at most `maximum_patchset` bytes; the patchset is applied to the work
/// copy (any conflict aborts: the base was not what the delta was made against),
/// the schema cookie set to `schema_cookie` (TaxonomySchema.fileSchemaCookie), and the
/// result written with VACUUM INTO to `output_fd`
/// (an empty file). Opens both through the stol-descriptor VFS (registered here).
/// Returns SQLITE_OK, or an SQLite error code with a reason in `error`;
/// `*corrupt` is set when the fault is the payload's (not the machine's).
int stol_row_delta_apply(int work_fd, int output_fd, const void *payload, size_t payload_size,
                         const void *base, size_t base_size, unsigned long long maximum_patchset, int schema_cookie,
                         int *corrupt, char *error, size_t error_size);

#endif
