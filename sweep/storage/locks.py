"""One lock file per job, so that runs sharing an output never compute the same job twice.

A lock is `<dir>/<job id>.lock`, a hard link to the owner's record (atomic on local disks and
on NFS v3+, unlike flock on some cluster file systems; O_CREAT | O_EXCL where links are not
supported), holding the owner's host, pid and a random token. A link that fails with EEXIST
is checked against the owner's record (same inode: ours), as open(2) advises on NFS. The
owner refreshes its locks' mtime every `HEARTBEAT` seconds. A lock is stale, and may be
broken, when its owner is a dead process on this host or when it has not been refreshed for
`STALE_AFTER` seconds (an owner on another host that crashed). One owner's locks share one
inode: a lock file is created, renamed or removed, never written in place.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

HEARTBEAT = 30.0
STALE_AFTER = 600.0
UNWRITTEN_AFTER = 10.0  # writing an owner takes microseconds
HOST = socket.gethostname()


def owner_tag() -> str:
    """host.pid.thread: unique among concurrent writers, and tells whose a temp file is
    (store.remove_abandoned reads it back)."""
    return f"{HOST}.{os.getpid()}.{threading.get_ident()}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def read_owner(path: Path) -> dict | None:
    """The owner recorded in a lock file; {} if unreadable; None if there is no lock."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    try:
        owner = json.loads(text)
    except ValueError:
        return {}  # a lock cut short while being written
    return owner if isinstance(owner, dict) else {}


def is_stale(path: Path, owner: dict) -> bool:
    """Dead owner on this host, or no heartbeat for STALE_AFTER seconds."""
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return True
    if age > STALE_AFTER:
        return True
    if not owner and age > UNWRITTEN_AFTER:
        return True  # empty or unreadable: its writer died between creating and writing it
    if owner.get("host") == HOST and isinstance(owner.get("pid"), int):
        return not pid_alive(owner["pid"])
    return False


class JobLocks:
    """The locks this process holds in one directory; a context manager runs the heartbeat."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        self.held: set[str] = set()  # names of the locks this JobLocks holds
        self.token = uuid.uuid4().hex
        self._owner = json.dumps({"host": HOST, "pid": os.getpid(), "token": self.token,
                                  "since": time.time()}).encode()
        self._record: Path | None = None  # the owner, written once, hard-linked as each lock
        self._links = True  # False once the file system refused a hard link
        self._mutex = threading.Lock()
        self._quit = threading.Event()
        self._beat: threading.Thread | None = None

    def path(self, name: str) -> Path:
        return self.dir / f"{name}.lock"

    def acquire(self, name: str) -> bool:
        """Take the lock for `name`; False if a live owner holds it. Breaks a stale lock.

        OSError if the lock file cannot be created (an unwritable or full directory)."""
        for _ in range(3):
            if self._create(name):
                return True
            path = self.path(name)
            owner = read_owner(path)
            if owner is None:
                continue  # released meanwhile: try again
            if not is_stale(path, owner) or not self._break(path, owner):
                return False
        return False

    def _create(self, name: str) -> bool:
        """Hard-link our owner record into place as the lock: the link is atomic and fails if
        the lock exists, so a lock file is never seen empty or half-written (a kill between
        creating and writing it would otherwise hold the job for STALE_AFTER). The record is
        written once per JobLocks, so a lock costs one link rather than a file creation (which
        is slower, above all on network file systems). Where hard links are not supported,
        O_EXCL then write."""
        try:
            if not (self._link(name) if self._links else self._create_exclusive(name)):
                return False
        except BaseException:
            if not self.held:
                self._drop_record()  # a failed first lock leaves no file behind
            raise
        with self._mutex:
            self.held.add(name)
        return True

    def _link(self, name: str) -> bool:
        for attempt in range(2):  # the second after our record vanished
            record = self._written_record()
            try:
                os.link(record, self.path(name))
                return True
            except FileExistsError:
                return self._linked(record, name)
            except FileNotFoundError:
                if attempt or not self._forget(record):
                    raise  # the directory itself is gone
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                    raise
                self._links = False
                self._drop_record()
                return self._create_exclusive(name)
        raise AssertionError("unreachable")

    def _linked(self, record: Path, name: str) -> bool:
        """Whether the lock that exists is our record after all. Over NFS a link() whose
        reply was lost is sent again, and the retry fails with EEXIST although the first
        one made the link: the NFS-safe rule of open(2) is to look at the files themselves
        rather than trust the error."""
        try:
            return os.path.samestat(os.stat(record), os.stat(self.path(name)))
        except OSError:
            return False

    def _written_record(self) -> Path:
        with self._mutex:
            if self._record is None:
                # unique per JobLocks (store.remove_abandoned clears it once we are gone)
                path = self.dir / f".{self.token}.owner.{owner_tag()}.tmp"
                try:
                    path.write_bytes(self._owner)
                except BaseException:
                    path.unlink(missing_ok=True)
                    raise
                self._record = path
            return self._record

    def _forget(self, record: Path) -> bool:
        """Whether our record vanished (removed as an abandoned temp file after an hour
        without a heartbeat), so that the next lock writes it again."""
        with self._mutex:
            if self._record == record and not record.exists():
                self._record = None
            return self._record != record

    def _drop_record(self) -> None:
        with self._mutex:
            record, self._record = self._record, None
        if record is not None:
            with contextlib.suppress(OSError):
                record.unlink(missing_ok=True)

    def _create_exclusive(self, name: str) -> bool:
        try:
            fd = os.open(self.path(name), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, self._owner)
        except OSError:  # e.g. a full disk: leave no empty lock behind
            os.close(fd)
            self.path(name).unlink(missing_ok=True)
            raise
        os.close(fd)
        return True

    def _break(self, path: Path, owner: dict) -> bool:
        """Remove a stale lock, unless another process replaced it since it was judged."""
        aside = path.with_name(f"{path.name}.{uuid.uuid4().hex}.broken")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return True  # someone else broke it; O_EXCL decides who takes it next
        moved = read_owner(aside)
        if moved == owner:
            aside.unlink(missing_ok=True)
            return True
        # A fresh lock was taken between judging and renaming: put it back if the slot is
        # still free; either way leave the job to that owner.
        with contextlib.suppress(OSError):
            os.link(aside, path)
        aside.unlink(missing_ok=True)
        return False

    def release(self, name: str) -> None:
        """Remove our lock; never raises (on a disk gone read-only it stays, and is stale)."""
        with self._mutex:
            if name not in self.held:
                return
            self.held.discard(name)
        if (read_owner(self.path(name)) or {}).get("token") == self.token:
            with contextlib.suppress(OSError):
                self.path(name).unlink(missing_ok=True)

    def holder(self, name: str) -> dict | None:
        """The live owner of `name`'s lock, None if free or stale."""
        path = self.path(name)
        owner = read_owner(path)
        if owner is None or is_stale(path, owner):
            return None
        return owner

    def describe(self, names: list[str], shown: int = 3) -> str:
        """Who holds the locks `names` and how to clear them, for a run that waits on them:
        `host pid N since 20:31:02 UTC (2 min ago), lock DIR/NAME.lock`."""
        held = []
        for name in names:
            owner = self.holder(name)
            if owner is not None and len(held) < shown:
                since = owner.get("since")
                when = (time.strftime(" since %H:%M:%S UTC", time.gmtime(since)) +
                        f" ({(time.time() - since) / 60:.0f} min ago)"
                        if isinstance(since, (int, float)) else "")
                held.append(f"{owner.get('host')} pid {owner.get('pid')}{when}, lock "
                            f"{self.path(name)}")
        more = f"; {len(names) - len(held)} more" if len(names) > len(held) else ""
        return (f"held by {'; '.join(held) or 'another run'}{more}. If no sweep runs as that "
                f"pid on that host (a reused pid after kill -9, a crashed node), remove the "
                f"lock files to go on now; a lock not refreshed for {STALE_AFTER:.0f} s is "
                "broken by itself")

    def _heartbeat(self) -> None:
        while not self._quit.wait(HEARTBEAT):
            with self._mutex:
                paths = [self.path(name) for name in self.held]
                if self._record is not None:
                    paths.append(self._record)  # remove_abandoned spares it while fresh
            for path in paths:
                with contextlib.suppress(OSError):
                    os.utime(path)

    def __enter__(self) -> JobLocks:
        self._beat = threading.Thread(target=self._heartbeat, name="sweep-lock-heartbeat",
                                      daemon=True)
        self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._quit.set()
        for name in list(self.held):
            self.release(name)
        self._drop_record()
