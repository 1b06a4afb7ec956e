"""One user's private stack from Python: ``stol.Taxonomy(database=PATH)`` uses the
user's running private stack for that file, or starts one (``stol-client serve
--detach``), which the user's later processes on this machine share, as one
``ete4.NCBITaxa()`` line would, but with the tree loaded once per machine and user.

The stack itself is stol-client's (docs/private-stack.md): this module only finds
``stol-client`` and asks it, so that where the sockets are and how the stack starts
is defined once."""

import os
import shutil
import subprocess
import sys
from typing import Optional

from . import _transport, errors


def client_path() -> str:
    """``stol-client``: beside this Python (a virtual environment the wheel installed
    into), else on ``PATH``."""
    beside = os.path.join(os.path.dirname(sys.executable), "stol-client")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("stol-client")
    if found is None:
        raise errors.ServiceNotRunningError(
            "stol-client is not installed (pip install the STOL wheel, or apt-get install stol): "
            "it starts the private stack")
    return found


def serve(database: Optional[str] = None, timeout: float = 120.0) -> str:
    """Makes sure the user's private stack runs on ``database`` (None: the bundled
    one installed beside stol-client) and returns its sockets' directory. Starting
    it takes about as long as binding four sockets: each daemon starts on its first
    request. A private stack running on another file is an error (one per user and
    machine: stop it first with ``stol-client serve --stop``)."""
    command = [client_path(), "serve", "--detach"]
    if database is not None:
        command += ["--database", os.path.abspath(database)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise errors.ServiceNotRunningError("cannot start your private stack: " + result.stderr.strip())
    return _transport.private_runtime_dir()


def stop(timeout: float = 60.0) -> None:
    """Stops the user's private stack (nothing when none runs)."""
    subprocess.run([client_path(), "serve", "--stop"], capture_output=True, text=True, timeout=timeout,
                   stdin=subprocess.DEVNULL, check=True)
