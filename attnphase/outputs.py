"""The output options every ``attnphase`` command shares, and how a command writes its outputs.

* One rule per output option: ``--json`` prints exactly one JSON object on stdout
  (:func:`add_json_option`; :func:`json_value` makes a result plain JSON), ``--quiet`` hides the
  progress bars (:func:`add_quiet_option`), ``--out DIR`` is always a folder, created if missing
  (:func:`add_out_option`, :func:`out_dir_from_args`; :data:`OUT_RULE`).
* Paths are checked before any work (:func:`check_out_dir`, :func:`check_out_file` for ``derive -o``).
* Nothing is half-written: one file through a temporary file and a rename (:func:`write_text_atomic`),
  several files through a staging folder moved into ``--out DIR`` at the end (:func:`staged_output`;
  :class:`Rewriting` prints the final folder's name for the staging folder's).

This module imports the standard library only (the top-level parser imports it).  Bad paths raise
``ValueError`` naming the option (the top-level CLI prints it as one line, exit code 2).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
from pathlib import Path
from typing import Any

OUT_RULE = "--out is always a folder, created if missing"


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print the result as exactly one JSON object on stdout (messages go to stderr)")


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars or progress lines (results, warnings and notes are always printed)")


def add_out_option(p: argparse.ArgumentParser, default: str, writes: str) -> None:
    p.add_argument("--out", default=default, metavar="DIR",
                   help=f"output folder: writes {writes} there ({OUT_RULE}; default {default})")


_FILE_SUFFIXES = (".csv", ".json", ".png", ".md", ".txt", ".pdf", ".svg")


def out_dir_from_args(args: argparse.Namespace) -> Path:
    """``--out`` as a folder path; a path that is a file, or names one (``.csv`` ...), is a ValueError."""
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out must be a folder ({OUT_RULE}); {str(out)!r} is a file")
    if not out.exists() and out.suffix.lower() in _FILE_SUFFIXES:
        raise ValueError(f"--out must be a folder ({OUT_RULE}), got the file name {str(out)!r}")
    return check_out_dir(out)


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_writable_folder(folder: Path, option: str, shown: Path) -> None:
    """The folder that will receive the output (or its nearest existing ancestor) is a writable folder."""
    base = _nearest_existing(folder)
    if not base.is_dir():
        raise ValueError(f"{option}: cannot create {str(shown)!r}: {str(base)!r} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ValueError(f"{option}: cannot write in {str(base)!r} (permission denied)")


def check_out_dir(out: Path, option: str = "--out") -> Path:
    """``--out DIR`` ready to receive files: not a file, under a writable folder; checked before any work."""
    _check_writable_folder(out, option, out)
    return out


def check_out_file(path: str | Path, option: str) -> Path:
    """An output FILE (``derive -o``): not a folder, its folder exists and is writable; before any work."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{option} must name a file, {str(path)!r} is a folder")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise ValueError(f"{option}: the folder {str(parent)!r} of {str(path)!r} does not exist")
    if not parent.is_dir():
        raise ValueError(f"{option}: {str(parent)!r} is a file, not a folder")
    if not os.access(parent.absolute(), os.W_OK | os.X_OK):
        raise ValueError(f"{option}: cannot write in {str(parent)!r} (permission denied)")
    return path


def write_text_atomic(path: str | Path, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    tmp = None
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent or ".", prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False) as fh:
            tmp = fh.name
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # a temporary file is private; the result is an ordinary file
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise ValueError(f"{option}: cannot write {str(path)!r} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def staged_output(out: Path, option: str = "--out"):
    """Yield a hidden staging folder beside ``out``; on success its files move into ``out`` (created if
    missing), on any failure or interrupt it is removed: a multi-file output is complete or absent.

    The staging folder is created in ``out``'s nearest existing ancestor (same file system: the moves
    are renames), so creating it is also the real test that the output can be written.
    """
    import shutil

    base = _nearest_existing(out)
    try:
        stage = Path(tempfile.mkdtemp(prefix=".attnphase-", dir=base))
    except OSError as exc:
        raise ValueError(f"{option}: cannot write in {str(base)!r} ({exc.strerror or exc})") from None
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    created: list[Path] = []
    try:
        missing = [p for p in reversed(out.absolute().parents) if not p.exists()] + ([] if out.exists() else [out])
        for folder in missing:
            try:
                folder.mkdir()
                created.append(folder)
            except FileExistsError:  # a concurrent run made it: share it
                if not folder.is_dir():
                    raise
        for item in sorted(stage.iterdir()):
            target = out / item.name
            if target.is_dir() and item.is_dir():
                shutil.rmtree(target)
            os.replace(item, target)
    except OSError as exc:
        for folder in reversed(created):
            shutil.rmtree(folder, ignore_errors=True)
        raise ValueError(f"{option}: cannot write into {str(out)!r} ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


class Rewriting:
    """A text stream that writes through to ``stream`` with every ``old`` of ``replace`` put as its ``new``
    (a job writing into a staging folder prints the final folder's name)."""

    def __init__(self, stream: Any, replace: dict[str, str]) -> None:
        self._stream, self._replace = stream, replace

    def write(self, text: str) -> int:
        for old, new in self._replace.items():
            text = text.replace(old, new)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


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
