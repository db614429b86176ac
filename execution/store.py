"""The result store: one file per finished task under the job's folder, complete or absent.

    DIR/tasks/<key>.task  =  b"attnphase-task 1\\n" + sha256(payload) hex + b"\\n" + payload

``payload`` is the pickled record ``{"key", "label", "status": "done" | "failed", "value" | "error",
"seconds", "code_version", "finished"}``, written through a temporary file and a rename; a file that fails
the checksum is reported as corrupted and the task computed again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnphase.execution.outputs import UMASK

MAGIC = b"attnphase-task 1\n"
SUFFIX = ".task"


class StoreUnusable(ValueError):
    """The task store's folder is a file, a dangling link or not writable: bad input (the ``--out`` folder), a
    one-line error with exit code 2 wherever it is found (``input_error``)."""

    input_error = True


@dataclass(frozen=True)
class Outcome:
    """One task's result: ``status`` is "done" (computed now, or as stored), "stored" (read back by the executor)
    or "failed" (``error``)."""

    key: str
    label: str
    status: str
    value: Any = None
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    @property
    def reason(self) -> str:
        """The error's first line (``Type: message``)."""
        return self.error.splitlines()[0] if self.error else ""


class ResultStore:
    """Finished tasks of one job, one checksummed file each under ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        """The store in ``folder``, created with the first record; a ``folder`` that is a file (or a dangling
        link) or not writable is a ValueError here, before any task runs."""
        self.folder = Path(folder)
        if os.path.lexists(self.folder) and not self.folder.is_dir():
            raise StoreUnusable(f"{self.folder}: the task store must be a folder; it is a file or a symbolic link that "
                             f"leads nowhere (move it away)")
        if self.folder.is_dir() and not os.access(self.folder, os.W_OK | os.X_OK):
            raise StoreUnusable(f"{self.folder}: cannot write the task store there (permission denied)")
        for stale in self.folder.glob(f".*{SUFFIX}.tmp"):  # a killed writer's temporary file
            stale.unlink(missing_ok=True)
        self.corrupted: list[str] = []

    def path(self, key: str) -> Path:
        return self.folder / f"{key}{SUFFIX}"

    def load(self, key: str) -> Outcome | None:
        """The record of ``key``; None when absent or corrupted (then removed and listed in ``self.corrupted``)."""
        path = self.path(key)
        try:
            record = _decode(path.read_bytes())
        except FileNotFoundError:
            return None
        if record is None or record.get("key") != key:
            self.corrupted.append(key)
            path.unlink(missing_ok=True)
            return None
        return Outcome(key=key, label=record.get("label", ""), status=record["status"], value=record.get("value"),
                       error=record.get("error", ""), seconds=float(record.get("seconds", 0.0)))

    def save(self, record: Outcome, version: str = "") -> None:
        """Write ``record`` atomically (temporary file, fsync, rename), readable as an ordinary file of the umask (a
        store is shared or copied to resume elsewhere; mkstemp makes the file private)."""
        payload = pickle.dumps({**vars(record), "code_version": version,
                                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, protocol=pickle.HIGHEST_PROTOCOL)
        blob = MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{record.key}", suffix=f"{SUFFIX}.tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~UMASK)
            os.replace(tmp, self.path(record.key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def keys(self) -> list[str]:
        """Keys of the task files present (not checked)."""
        return sorted(p.name[: -len(SUFFIX)] for p in self.folder.glob(f"*{SUFFIX}"))


def _decode(blob: bytes) -> dict[str, Any] | None:
    digest, sep, payload = blob[len(MAGIC):].partition(b"\n")
    if not blob.startswith(MAGIC) or not sep or hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    try:
        record = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a payload that passed the checksum but not unpickling is corrupted too
        return None
    return record if isinstance(record, dict) and record.get("status") in ("done", "failed") else None
