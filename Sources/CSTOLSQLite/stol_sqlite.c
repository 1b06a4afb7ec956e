#define _GNU_SOURCE
#include "stol_sqlite.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    sqlite3_file base;
    int fd;
    int writable;  // opened by a STOL_WRITABLE_DESCRIPTOR_PREFIX name: a row delta's scratch
} DescriptorFile;

static sqlite3_vfs descriptor_vfs;
static sqlite3_vfs *default_vfs;
static int register_result = SQLITE_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int has_prefix(const char *name, const char *prefix) {
    return name != NULL && strncmp(name, prefix, strlen(prefix)) == 0;
}

static int is_descriptor_name(const char *name) {
    return has_prefix(name, STOL_DESCRIPTOR_PREFIX) || has_prefix(name, STOL_WRITABLE_DESCRIPTOR_PREFIX);
}

// MARK: The file

static int file_close(sqlite3_file *file) {
    close(((DescriptorFile *)file)->fd);
    return SQLITE_OK;
}

static int file_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    int fd = ((DescriptorFile *)file)->fd;
    char *out = buffer;
    int done = 0;
    while (done < amount) {
        ssize_t got = pread(fd, out + done, (size_t)(amount - done), (off_t)(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return SQLITE_IOERR_READ;
        }
        if (got == 0) break;
        done += (int)got;
    }
    if (done < amount) {
        memset(out + done, 0, (size_t)(amount - done));  // SQLite requires the rest zeroed
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

static int file_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    DescriptorFile *descriptor = (DescriptorFile *)file;
    if (!descriptor->writable) return SQLITE_READONLY;
    const char *in = buffer;
    int done = 0;
    while (done < amount) {
        ssize_t put = pwrite(descriptor->fd, in + done, (size_t)(amount - done), (off_t)(offset + done));
        if (put < 0) {
            if (errno == EINTR) continue;
            return errno == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_WRITE;
        }
        done += (int)put;
    }
    return SQLITE_OK;
}

static int file_truncate(sqlite3_file *file, sqlite3_int64 size) {
    DescriptorFile *descriptor = (DescriptorFile *)file;
    if (!descriptor->writable) return SQLITE_READONLY;
    return ftruncate(descriptor->fd, (off_t)size) == 0 ? SQLITE_OK : SQLITE_IOERR_TRUNCATE;
}

static int file_sync(sqlite3_file *file, int flags) {
    (void)file; (void)flags;
    return SQLITE_OK;
}

static int file_size(sqlite3_file *file, sqlite3_int64 *size) {
    struct stat info;
    if (fstat(((DescriptorFile *)file)->fd, &info) != 0) return SQLITE_IOERR_FSTAT;
    *size = info.st_size;
    return SQLITE_OK;
}

static int file_lock(sqlite3_file *file, int level) {
    (void)file; (void)level;
    return SQLITE_OK;
}

static int file_check_reserved_lock(sqlite3_file *file, int *result) {
    (void)file;
    *result = 0;
    return SQLITE_OK;
}

static int file_control(sqlite3_file *file, int op, void *argument) {
    (void)file; (void)op; (void)argument;
    return SQLITE_NOTFOUND;
}

static int file_sector_size(sqlite3_file *file) {
    (void)file;
    return 4096;
}

static int file_device_characteristics(sqlite3_file *file) {
    // Read-only: nobody changes it, so no locks and no hot-journal checks. Writable:
    // one connection of one process owns the unnamed file, which has no journal.
    return ((DescriptorFile *)file)->writable ? 0 : SQLITE_IOCAP_IMMUTABLE;
}

static const sqlite3_io_methods descriptor_methods = {
    1,
    file_close, file_read, file_write, file_truncate, file_sync, file_size,
    file_lock, file_lock, file_check_reserved_lock, file_control,
    file_sector_size, file_device_characteristics,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

// MARK: A journal in memory

/// The journal SQLite keeps beside a writable descriptor's database (VACUUM INTO opens
/// one for its output whatever the journal mode): a buffer, gone when it is closed. The
/// files it journals are scratch, thrown away on any failure, so it need not survive.
typedef struct {
    sqlite3_file base;
    char *data;
    sqlite3_int64 size;
    sqlite3_int64 capacity;
} MemoryFile;

static int memory_close(sqlite3_file *file) {
    free(((MemoryFile *)file)->data);
    return SQLITE_OK;
}

static int memory_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    MemoryFile *memory = (MemoryFile *)file;
    sqlite3_int64 available = offset < memory->size ? memory->size - offset : 0;
    int copied = available < amount ? (int)available : amount;
    if (copied > 0) memcpy(buffer, memory->data + offset, (size_t)copied);
    if (copied < amount) {
        memset((char *)buffer + copied, 0, (size_t)(amount - copied));
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

static int memory_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    MemoryFile *memory = (MemoryFile *)file;
    sqlite3_int64 end = offset + amount;
    if (end > memory->capacity) {
        sqlite3_int64 capacity = memory->capacity > 0 ? memory->capacity : 65536;
        while (capacity < end) capacity *= 2;
        char *grown = realloc(memory->data, (size_t)capacity);
        if (grown == NULL) return SQLITE_NOMEM;
        memory->data = grown;
        memory->capacity = capacity;
    }
    if (offset > memory->size) memset(memory->data + memory->size, 0, (size_t)(offset - memory->size));
    memcpy(memory->data + offset, buffer, (size_t)amount);
    if (end > memory->size) memory->size = end;
    return SQLITE_OK;
}

static int memory_truncate(sqlite3_file *file, sqlite3_int64 size) {
    MemoryFile *memory = (MemoryFile *)file;
    if (size < memory->size) memory->size = size;
    return SQLITE_OK;
}

static int memory_size(sqlite3_file *file, sqlite3_int64 *size) {
    *size = ((MemoryFile *)file)->size;
    return SQLITE_OK;
}

static int memory_device_characteristics(sqlite3_file *file) {
    (void)file;
    return 0;
}

static const sqlite3_io_methods memory_methods = {
    1,
    memory_close, memory_read, memory_write, memory_truncate, file_sync, memory_size,
    file_lock, file_lock, file_check_reserved_lock, file_control,
    file_sector_size, memory_device_characteristics,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

// MARK: The VFS

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    if (!is_descriptor_name(name)) return default_vfs->xOpen(vfs, name, file, flags, out_flags);
    int writable = has_prefix(name, STOL_WRITABLE_DESCRIPTOR_PREFIX);
    if (writable && (flags & SQLITE_OPEN_MAIN_JOURNAL)) {
        MemoryFile *memory = (MemoryFile *)file;
        memset(memory, 0, sizeof(*memory));
        memory->base.pMethods = &memory_methods;
        if (out_flags) *out_flags = flags;
        return SQLITE_OK;
    }
    if (!(flags & SQLITE_OPEN_MAIN_DB) || (!writable && (flags & (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)))) {
        return SQLITE_CANTOPEN;
    }
    char *end = NULL;
    long source = strtol(name + strlen(writable ? STOL_WRITABLE_DESCRIPTOR_PREFIX : STOL_DESCRIPTOR_PREFIX), &end, 10);
    if (end == NULL || *end != '\0' || source < 0) return SQLITE_CANTOPEN;
    int fd = fcntl((int)source, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return SQLITE_CANTOPEN;
    DescriptorFile *descriptor = (DescriptorFile *)file;
    memset(descriptor, 0, sizeof(*descriptor));
    descriptor->base.pMethods = &descriptor_methods;
    descriptor->fd = fd;
    descriptor->writable = writable;
    if (out_flags) *out_flags = (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_MAIN_DB;
    return SQLITE_OK;
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    if (is_descriptor_name(name)) {
        *result = 0;  // no journal or WAL beside a descriptor
        return SQLITE_OK;
    }
    return default_vfs->xAccess(vfs, name, flags, result);
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync) {
    if (is_descriptor_name(name)) return SQLITE_OK;  // a journal in memory, gone when closed
    return default_vfs->xDelete(vfs, name, sync);
}

static int vfs_full_pathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    if (!is_descriptor_name(name)) return default_vfs->xFullPathname(vfs, name, size, out);
    if ((int)strlen(name) >= size) return SQLITE_CANTOPEN;
    strcpy(out, name);
    return SQLITE_OK;
}

static void register_once(void) {
    default_vfs = sqlite3_vfs_find(NULL);
    if (default_vfs == NULL) return;
    // A copy of the default VFS (its pAppData too, which the unix VFS's own
    // xOpen reads for temporary files) with four entry points replaced.
    descriptor_vfs = *default_vfs;
    descriptor_vfs.zName = STOL_DESCRIPTOR_VFS;
    descriptor_vfs.pNext = NULL;
    if (descriptor_vfs.szOsFile < (int)sizeof(DescriptorFile)) descriptor_vfs.szOsFile = (int)sizeof(DescriptorFile);
    if (descriptor_vfs.szOsFile < (int)sizeof(MemoryFile)) descriptor_vfs.szOsFile = (int)sizeof(MemoryFile);
    descriptor_vfs.xOpen = vfs_open;
    descriptor_vfs.xAccess = vfs_access;
    descriptor_vfs.xDelete = vfs_delete;
    descriptor_vfs.xFullPathname = vfs_full_pathname;
    register_result = sqlite3_vfs_register(&descriptor_vfs, 0);
}

int stol_sqlite_register_descriptor_vfs(void) {
    pthread_once(&once, register_once);
    return register_result;
}
