"""Whether a job's written outputs are still those of its results: a rerun with nothing to compute skips rewriting them.

    DIR/.<job>.outputs.json = {"identity": sha256(canonical identity), "files": {name: sha256(file)}}

Any difference of the identity (the tasks' keys, the presenting code's version) or of a file writes everything
again. The manifest is written last, atomically.  :func:`json_value` makes the JSON the outputs hold, for every
layer (the commands' records, the validation reports' summaries).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from attnphase.execution.tasks import canonical


def _manifest(out: Path, job: str) -> Path:
    return out / f".{job}.outputs.json"


def _identity_hash(identity: Any) -> str:
    return hashlib.sha256(json.dumps(canonical(identity), sort_keys=True).encode()).hexdigest()


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def outputs_current(out: str | Path, job: str, identity: Any, files: Sequence[str]) -> bool:
    """True when ``out`` holds every one of ``files`` exactly as the run of ``identity`` wrote them."""
    out = Path(out)
    try:
        rec = json.loads(_manifest(out, job).read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(rec, dict) or rec.get("identity") != _identity_hash(identity):
        return False
    recorded = rec.get("files") or {}
    return set(recorded) == set(files) and all(_file_hash(out / f) == recorded[f] for f in files)


def record_outputs(out: str | Path, job: str, identity: Any, files: Sequence[str]) -> None:
    """Record ``files`` of ``out`` (all written) as the outputs of ``identity`` (atomic write)."""
    out = Path(out)
    hashes = {f: _file_hash(out / f) for f in files}
    write_json(_manifest(out, job), {"identity": _identity_hash(identity), "files": hashes})


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` complete or not at all (:func:`write_text`)."""
    write_text(path, json.dumps(data, indent=1, default=str))


#: The process's umask, read once at import (reading it sets it for an instant: not done while threads write).
UMASK = os.umask(0)
os.umask(UMASK)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` complete or not at all: a temporary ``.<name>.<random>.tmp`` in its folder,
    readable as an ordinary file of :data:`UMASK` (mkstemp makes it private), renamed over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_value(v: Any) -> Any:
    """A JSON-ready copy of ``v``: non-finite floats -> null, tuples -> lists, numpy scalars -> Python."""
    if isinstance(v, dict):
        return {str(k): json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", None) == 0:
        v = v.item()
    if hasattr(v, "tolist") and callable(v.tolist):
        return json_value(v.tolist())
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
