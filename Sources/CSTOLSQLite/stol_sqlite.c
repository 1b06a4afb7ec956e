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
} DescriptorFile;

static sqlite3_vfs descriptor_vfs;
static sqlite3_vfs *default_vfs;
static int register_result = SQLITE_ERROR;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int is_descriptor_name(const char *name) {
    return name != NULL && strncmp(name, STOL_DESCRIPTOR_PREFIX, strlen(STOL_DESCRIPTOR_PREFIX)) == 0;
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
    (void)file; (void)buffer; (void)amount; (void)offset;
    return SQLITE_READONLY;
}

static int file_truncate(sqlite3_file *file, sqlite3_int64 size) {
    (void)file; (void)size;
    return SQLITE_READONLY;
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
    (void)file;
    return SQLITE_IOCAP_IMMUTABLE;  // nobody changes it: no locks, no hot-journal checks
}

static const sqlite3_io_methods descriptor_methods = {
    1,
    file_close, file_read, file_write, file_truncate, file_sync, file_size,
    file_lock, file_lock, file_check_reserved_lock, file_control,
    file_sector_size, file_device_characteristics,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

// MARK: The VFS

static int vfs_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    if (!is_descriptor_name(name)) return default_vfs->xOpen(vfs, name, file, flags, out_flags);
    if (!(flags & SQLITE_OPEN_MAIN_DB) || (flags & (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))) {
        return SQLITE_CANTOPEN;
    }
    char *end = NULL;
    long source = strtol(name + strlen(STOL_DESCRIPTOR_PREFIX), &end, 10);
    if (end == NULL || *end != '\0' || source < 0) return SQLITE_CANTOPEN;
    int fd = fcntl((int)source, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return SQLITE_CANTOPEN;
    DescriptorFile *descriptor = (DescriptorFile *)file;
    memset(descriptor, 0, sizeof(*descriptor));
    descriptor->base.pMethods = &descriptor_methods;
    descriptor->fd = fd;
    if (out_flags) *out_flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_MAIN_DB;
    return SQLITE_OK;
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    if (is_descriptor_name(name)) {
        *result = 0;  // no journal or WAL beside a descriptor
        return SQLITE_OK;
    }
    return default_vfs->xAccess(vfs, name, flags, result);
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
    // xOpen reads for temporary files) with three entry points replaced.
    descriptor_vfs = *default_vfs;
    descriptor_vfs.zName = STOL_DESCRIPTOR_VFS;
    descriptor_vfs.pNext = NULL;
    if (descriptor_vfs.szOsFile < (int)sizeof(DescriptorFile)) descriptor_vfs.szOsFile = (int)sizeof(DescriptorFile);
    descriptor_vfs.xOpen = vfs_open;
    descriptor_vfs.xAccess = vfs_access;
    descriptor_vfs.xFullPathname = vfs_full_pathname;
    register_result = sqlite3_vfs_register(&descriptor_vfs, 0);
}

int stol_sqlite_register_descriptor_vfs(void) {
    pthread_once(&once, register_once);
    return register_result;
}
