"""The record a job leaves in its ``--out DIR`` (``.attnphase-job-<job>.json``: its model and the files it wrote), so
that a rerun with another model or grid removes the earlier run's files it does not write again. Written
as :mod:`attnphase.execution.outputs` writes its records (:func:`~attnphase.execution.outputs.write_json`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from attnphase.execution.outputs import write_json


def _differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """``key=old -> new`` for every key whose value differs (the JSON forms compared, each shown in 60 characters);
    where both values are objects, their differing keys, as ``key.subkey`` (the change a long object hides)."""
    out = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{k}.")
            continue
        pair = [json.dumps(v, sort_keys=True, default=str) for v in (a, b)]
        if pair[0] != pair[1]:
            out.append(f"{prefix}{k}=" + " -> ".join(t if len(t) <= 60 else t[:57] + "..." for t in pair))
    return out


def replace_job(out: Path, job: str, model: dict[str, Any] | None, written: list[str], shown: str) -> None:
    """``out`` now holds ``written`` of ``job`` (of ``model``): where an earlier run of ``job`` there had another
    model, the files it wrote and this run did not are removed (said on stderr), and the job's record names this
    run's files (a run of the same model: both runs' files). ``shown``: ``out`` as the note names it."""
    record = out / f".attnphase-job-{job}.json"
    try:
        old = json.loads(record.read_text())
    except (OSError, ValueError):
        old = None
    if isinstance(old, dict) and isinstance(old.get("files"), list):
        kept = [f for f in old["files"] if isinstance(f, str) and os.path.lexists(out / f)]
        diff = _differences(old.get("model") or {}, json.loads(json.dumps(model or {}, default=str)))
        if not diff:
            written = sorted(set(written) | set(kept))
        else:
            stale = [f for f in kept if f not in written and f not in ("tasks", "") and "/" not in f
                     and not f.startswith(".")]
            for f in stale:
                target = out / f
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    target.unlink(missing_ok=True)
            differ = "; ".join(diff[:4]) + (f"; {len(diff) - 4} more differences" if len(diff) > 4 else "")
            tasks = (out / "tasks").is_dir()  # a job of tasks (a check, a census have none)
            if stale:
                said = (f"its files this run does not write were removed: {', '.join(stale[:6])}"
                        + (f" and {len(stale) - 6} more" if len(stale) > 6 else "")
                        + (" (its finished tasks stay in tasks/: rerunning its command writes them again)"
                           if tasks else ""))
            else:  # the same file names: every one of them now holds this run's model
                said = "this run's files replace its files" + (" (its finished tasks stay in tasks/)" if tasks else "")
            print(f"attnphase: note: {shown} held an earlier {job} job ({differ}); {said}", file=sys.stderr)
    write_json(record, {"job": job, "model": model or {}, "files": sorted(written)})
