#define _GNU_SOURCE
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include "stol_row_delta.h"
#include "stol_sqlite.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static int fail(int code, char *error, size_t error_size, const char *format, ...) {
    if (error != NULL && error_size > 0) {
        va_list arguments;
        va_start(arguments, format);
        vsnprintf(error, error_size, format, arguments);
        va_end(arguments);
    }
    return code == SQLITE_OK ? SQLITE_ERROR : code;
}

// MARK: Making one

/// Whether the two schemas are the same statements in the same order (sqlite_master's
/// rowid order is the order VACUUM INTO lays the tables out in).
static int same_schema(sqlite3 *db, char *error, size_t error_size) {
    sqlite3_stmt *statement = NULL;
    const char *sql =
        "SELECT coalesce(m.name, b.name) FROM "
        "(SELECT row_number() OVER (ORDER BY rowid) AS n, type, name, tbl_name, sql FROM main.sqlite_master) AS m "
        "FULL JOIN (SELECT row_number() OVER (ORDER BY rowid) AS n, type, name, tbl_name, sql FROM base.sqlite_master) AS b "
        "ON m.n = b.n WHERE m.type IS NOT b.type OR m.name IS NOT b.name OR m.tbl_name IS NOT b.tbl_name "
        "OR m.sql IS NOT b.sql LIMIT 1";
    int rc = sqlite3_prepare_v2(db, sql, -1, &statement, NULL);
    if (rc != SQLITE_OK) return fail(rc, error, error_size, "comparing the schemas: %s", sqlite3_errmsg(db));
    rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) {
        fail(SQLITE_SCHEMA, error, error_size,
             "the two databases' schemas differ (first at %s): a row delta carries rows, not tables",
             (const char *)sqlite3_column_text(statement, 0));
        sqlite3_finalize(statement);
        return SQLITE_SCHEMA;
    }
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) return fail(rc, error, error_size, "comparing the schemas: %s", sqlite3_errmsg(db));
    return SQLITE_OK;
}

int stol_row_delta_diff(const char *base_path, const char *target_path, void **patchset, long long *size,
                        char *error, size_t error_size) {
    *patchset = NULL;
    *size = 0;
    sqlite3 *db = NULL;
    sqlite3_session *session = NULL;
    sqlite3_stmt *tables = NULL;
    int rc = sqlite3_open_v2(target_path, &db, SQLITE_OPEN_READONLY, NULL);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "%s: %s", target_path, db ? sqlite3_errmsg(db) : "cannot open");
        goto done;
    }
    sqlite3_stmt *attach = NULL;
    rc = sqlite3_prepare_v2(db, "ATTACH ? AS base", -1, &attach, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(attach, 1, base_path, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_step(attach) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_finalize(attach);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "%s: %s", base_path, sqlite3_errmsg(db));
        goto done;
    }
    if ((rc = same_schema(db, error, error_size)) != SQLITE_OK) goto done;
    if ((rc = sqlite3session_create(db, "main", &session)) != SQLITE_OK) {
        fail(rc, error, error_size, "sqlite3session_create: %s", sqlite3_errmsg(db));
        goto done;
    }
    // Ordinary tables only: a virtual table's rows live in its shadow tables, which are listed.
    rc = sqlite3_prepare_v2(db,
        "SELECT m.name, (SELECT count(*) FROM pragma_table_info(m.name, 'main') WHERE pk > 0) FROM main.sqlite_master AS m "
        "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND m.sql NOT LIKE 'CREATE VIRTUAL TABLE%' "
        "ORDER BY m.rowid", -1, &tables, NULL);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "listing the tables: %s", sqlite3_errmsg(db));
        goto done;
    }
    while ((rc = sqlite3_step(tables)) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        if (sqlite3_column_int(tables, 1) == 0) {
            rc = fail(SQLITE_CONSTRAINT, error, error_size,
                      "table %s has no primary key: a patchset cannot name its rows", table);
            goto done;
        }
        char *message = NULL;
        if ((rc = sqlite3session_attach(session, table)) != SQLITE_OK
            || (rc = sqlite3session_diff(session, "base", table, &message)) != SQLITE_OK) {
            fail(rc, error, error_size, "table %s: %s", table, message ? message : sqlite3_errmsg(db));
            sqlite3_free(message);
            goto done;
        }
    }
    if (rc != SQLITE_DONE) {
        fail(rc, error, error_size, "listing the tables: %s", sqlite3_errmsg(db));
        goto done;
    }
    int bytes = 0;
    void *buffer = NULL;
    // A patchset: no old values for changed and deleted rows (only their keys). The base's
    // digest, checked before anything is applied, already pins what those values are.
    if ((rc = sqlite3session_patchset(session, &bytes, &buffer)) != SQLITE_OK) {
        fail(rc, error, error_size, "sqlite3session_patchset: %s", sqlite3_errstr(rc));
        goto done;
    }
    *patchset = buffer;
    *size = bytes;
done:
    sqlite3_finalize(tables);
    if (session) sqlite3session_delete(session);
    sqlite3_close_v2(db);
    return rc;
}

void stol_row_delta_free(void *patchset) { sqlite3_free(patchset); }

// MARK: Applying one

int stol_row_delta_copy_base(int base_fd, int work_fd, const void *base, size_t size) {
    if (ftruncate(work_fd, 0) != 0) return errno;
    off64_t from = 0, to = 0;
    while ((size_t)from < size) {
        ssize_t copied = copy_file_range(base_fd, &from, work_fd, &to, size - (size_t)from, 0);
        if (copied > 0) continue;
        if (copied < 0 && errno == EINTR) continue;
        break;  // not between these files (EXDEV, EPERM under a filter, …): the rest from the mapping
    }
    size_t done = (size_t)to;
    while (done < size) {
        size_t chunk = size - done < (1u << 24) ? size - done : (1u << 24);
        ssize_t written = pwrite(work_fd, (const char *)base + done, chunk, (off_t)done);
        if (written < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        done += (size_t)written;
    }
    return 0;
}

typedef struct {
    ZSTD_DCtx *context;
    ZSTD_inBuffer input;
    unsigned long long produced;
    unsigned long long maximum;
    int finished;
    int corrupt;
    char message[200];
    int conflicts;
} Stream;

/// sqlite3changeset_apply_strm's input: the next piece of the decompressed patchset.
static int next_piece(void *context, void *data, int *size) {
    Stream *stream = context;
    if (stream->finished || *size <= 0) {
        *size = 0;
        return SQLITE_OK;
    }
    ZSTD_outBuffer output = {data, (size_t)*size, 0};
    while (output.pos == 0) {
        size_t left = ZSTD_decompressStream(stream->context, &output, &stream->input);
        if (ZSTD_isError(left)) {
            snprintf(stream->message, sizeof stream->message, "the delta does not apply: %s", ZSTD_getErrorName(left));
            stream->corrupt = 1;
            return SQLITE_CORRUPT;
        }
        if (left == 0) {
            stream->finished = 1;
            break;
        }
        if (stream->input.pos == stream->input.size && output.pos == 0) {
            snprintf(stream->message, sizeof stream->message, "the delta's zstd frame is cut short");
            stream->corrupt = 1;
            return SQLITE_CORRUPT;
        }
    }
    stream->produced += output.pos;
    if (stream->produced > stream->maximum) {
        snprintf(stream->message, sizeof stream->message, "the delta's patchset is over %llu bytes", stream->maximum);
        stream->corrupt = 1;
        return SQLITE_TOOBIG;
    }
    *size = (int)output.pos;
    return SQLITE_OK;
}

/// Any conflict means the rows are not those the delta was made from: give up.
static int on_conflict(void *context, int kind, sqlite3_changeset_iter *iterator) {
    (void)iterator;
    Stream *stream = context;
    if (stream->conflicts++ == 0) {
        const char *what = kind == SQLITE_CHANGESET_DATA ? "a changed row differs from the base's"
            : kind == SQLITE_CHANGESET_NOTFOUND ? "a changed or deleted row is not in the base"
            : kind == SQLITE_CHANGESET_CONFLICT ? "an inserted row is already in the base"
            : kind == SQLITE_CHANGESET_CONSTRAINT ? "a change breaks a constraint"
            : "a change cannot be applied";
        snprintf(stream->message, sizeof stream->message, "the delta does not apply to its base: %s", what);
    }
    stream->corrupt = 1;
    return SQLITE_CHANGESET_ABORT;
}

int stol_row_delta_apply(int work_fd, int output_fd, const void *payload, size_t payload_size,
                         const void *base, size_t base_size, unsigned long long maximum_patchset, int schema_cookie,
                         int *corrupt, char *error, size_t error_size) {
    *corrupt = 0;
    int rc = stol_sqlite_register_descriptor_vfs();
    if (rc != SQLITE_OK) return fail(rc, error, error_size, "cannot register the SQLite VFS (%d)", rc);
    Stream stream = {0};
    stream.input = (ZSTD_inBuffer){payload, payload_size, 0};
    stream.maximum = maximum_patchset;
    stream.context = ZSTD_createDCtx();
    if (stream.context == NULL) return fail(SQLITE_NOMEM, error, error_size, "zstd: out of memory");
    sqlite3 *db = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s%d", STOL_WRITABLE_DESCRIPTOR_PREFIX, work_fd);
    if (ZSTD_isError(ZSTD_DCtx_setParameter(stream.context, ZSTD_d_windowLogMax, 31))
        || (base_size > 0 && ZSTD_isError(ZSTD_DCtx_refPrefix(stream.context, base, base_size)))) {
        rc = fail(SQLITE_NOMEM, error, error_size, "zstd: cannot take the base as the reference prefix");
        goto done;
    }
    rc = sqlite3_open_v2(name, &db, SQLITE_OPEN_READWRITE, STOL_DESCRIPTOR_VFS);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "the base's copy: %s", db ? sqlite3_errmsg(db) : "cannot open");
        goto done;
    }
    // No journal (the copy is thrown away on any failure), temporary b-trees in memory
    // (the verifier has no directory to write in), foreign keys as the pipeline writes them.
    rc = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY; "
                          "PRAGMA foreign_keys = OFF; PRAGMA cache_size = -65536", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "the base's copy: %s", sqlite3_errmsg(db));
        goto done;
    }
    rc = sqlite3changeset_apply_strm(db, next_piece, &stream, NULL, on_conflict, &stream);
    if (rc == SQLITE_OK && !stream.finished) {
        // The patchset ended before its frame did: the rest would be ignored.
        snprintf(stream.message, sizeof stream.message, "the delta's patchset ends before its zstd frame");
        stream.corrupt = 1;
        rc = SQLITE_CORRUPT;
    }
    if (rc == SQLITE_OK && stream.input.pos != stream.input.size) {
        snprintf(stream.message, sizeof stream.message, "bytes after the delta's zstd frame");
        stream.corrupt = 1;
        rc = SQLITE_CORRUPT;
    }
    if (rc != SQLITE_OK) {
        if (stream.message[0] == '\0') {
            // sqlite3changeset_apply's own parse of the patchset (its bytes are the payload's).
            snprintf(stream.message, sizeof stream.message, "the delta's patchset is not one: %s", sqlite3_errmsg(db));
            stream.corrupt = rc == SQLITE_CORRUPT || rc == SQLITE_MISUSE || rc == SQLITE_ERROR || rc == SQLITE_SCHEMA;
        }
        fail(rc, error, error_size, "%s", stream.message);
        goto done;
    }
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA schema_version = %d; VACUUM INTO '%s%d'", schema_cookie,
             STOL_WRITABLE_DESCRIPTOR_PREFIX, output_fd);
    rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fail(rc, error, error_size, "writing the result: %s", sqlite3_errmsg(db));
        goto done;
    }
done:
    *corrupt = stream.corrupt;
    sqlite3_close_v2(db);
    ZSTD_freeDCtx(stream.context);
    return rc;
}
