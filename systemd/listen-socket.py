#!/usr/bin/env python3
"""Binds a listening Unix socket with its final mode, then execs a command with
it as the one socket-activation descriptor (fd 3, LISTEN_FDS=1).

    listen-socket.py PATH MODE COMMAND [ARGUMENT...]

`systemd/stack.sh` (and the integration tests' harness) run
`listen-socket.py PATH 0666 systemd-socket-activate --fdname=NAME DAEMON`: why not
`systemd-socket-activate --listen=PATH` alone? It binds every socket 0644,
whatever the umask, so the units' `SocketMode=` had to be applied with chmod
once the socket existed, and until then other users got EACCES (or, for a
narrower mode, the socket was briefly wider than it should be). Here the umask
is set to the complement of MODE around bind(2), so the socket is created with
exactly MODE: there is no moment at which PATH exists with another mode.
systemd-socket-activate takes descriptors passed to it this way (it prints
"Received 1 descriptors via the environment") and hands them on, named by
--fdname, exactly as it would its own. exec keeps the process id, so the pid
of this script is the activator's and, once activated, the daemon's.

Like the daemons' own fallback binding (`stol_bind_unix`), a stale socket file
at PATH is replaced and anything else there is left alone (exit 1).
"""
import os
import socket
import stat
import sys

SD_LISTEN_FDS_START = 3


def main(argv):
    if len(argv) < 4:
        sys.stderr.write("usage: listen-socket.py PATH MODE COMMAND [ARGUMENT...]\n")
        return 64
    path, mode_text, command = argv[1], argv[2], argv[3:]
    try:
        mode = int(mode_text, 8)
    except ValueError:
        sys.stderr.write(f"listen-socket.py: MODE must be octal, like 0666, not {mode_text!r}\n")
        return 64
    if mode & ~0o777:
        sys.stderr.write(f"listen-socket.py: MODE {mode_text} has bits beyond 0777\n")
        return 64
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # left by a daemon that died; nothing listens on it
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o777 & ~mode)
    try:
        listener.bind(path)
    except OSError as error:
        sys.stderr.write(f"listen-socket.py: cannot bind {path}: {error.strerror}\n")
        return 1
    finally:
        os.umask(previous)  # the command runs with the caller's umask
    listener.listen(socket.SOMAXCONN)
    if listener.fileno() == SD_LISTEN_FDS_START:
        os.set_inheritable(SD_LISTEN_FDS_START, True)
    else:
        os.dup2(listener.fileno(), SD_LISTEN_FDS_START, inheritable=True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ.pop("LISTEN_FDNAMES", None)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"listen-socket.py: cannot run {command[0]}: {error.strerror}\n")
        os.unlink(path)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
