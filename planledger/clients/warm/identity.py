"""Which warm process serves a caller: one per user, Python installation and installed code.

The key hashes the content of every file of the installed packages (not their times: an
upgrade in place, a `git checkout` or a `cp -p` all change it) and the names of the
installation's distributions (a dependency upgraded changes a `*.dist-info` name), so a warm
process never runs code other than what a cold process of this caller would run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import sysconfig
from pathlib import Path

PACKAGES = ("domain", "projections", "planledger")
MAX_SOCKET_PATH = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS
PROTOCOL = 1  # bumped when a request or answer changes shape


def code_key(root: Path | None = None) -> str:
    """A hash of the installed code (the packages under `root`, by default the folder this
    package was imported from), the Python installation and the protocol."""
    digest = hashlib.sha256(f"{PROTOCOL}\0{sys.prefix}\0{sys.version}\0".encode())
    root = root or Path(__file__).resolve().parents[3]
    for package in PACKAGES:
        for folder, subfolders, files in os.walk(root / package):
            subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                digest.update(f"{os.path.relpath(path, root)}\0".encode())
                with contextlib.suppress(OSError), open(path, "rb") as file:
                    digest.update(hashlib.sha256(file.read()).digest())
    site = sysconfig.get_paths()["purelib"]
    with contextlib.suppress(OSError):
        names = sorted(name for name in os.listdir(site) if name.endswith(".dist-info"))
        digest.update("\0".join(names).encode())
    return digest.hexdigest()[:24]


def socket_folder() -> Path:
    """Under the temporary folder (TMPDIR), or /tmp when that is too long a path for a UNIX
    socket."""
    folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"planledger-{os.getuid()}"
    if len(str(folder)) + len("/0123456789abcdef01234567.sock") > MAX_SOCKET_PATH:
        folder = Path("/tmp") / f"planledger-{os.getuid()}"
    return folder


def socket_path(key: str | None = None) -> Path:
    return socket_folder() / f"{key or code_key()}.sock"


def private_folder(folder: Path) -> bool:
    """The socket folder exists (made now if need be), is ours and nobody else's."""
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700)
    try:
        status = folder.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(status.st_mode)
        and status.st_uid == os.getuid()
        and not (status.st_mode & 0o077)
    )
