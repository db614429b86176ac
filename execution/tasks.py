"""A task: one independent computation of a job, and the key its result is stored under.

    key = sha256(function name, canonical JSON of the task's identity, code version)[:20]

The identity is what determines the result (the model, the solver settings, the grid) and the code version
hashes the source the function runs (:func:`code_version`): a stored result is never reused for a
computation it does not answer.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from attnphase import __version__


@dataclass(frozen=True)
class Task:
    """One independent computation: ``fn(arg)`` (``fn`` module-level, ``arg`` picklable), stored under ``key``
    (:func:`task_key`); ``label``: what the task is, for people (``omega=0.3``)."""

    key: str
    label: str
    fn: Callable[[Any], Any]
    arg: Any


def canonical(value: Any) -> Any:
    """A JSON-ready copy of ``value`` with floats as their repr (so 0.1 and 0.1000000001 differ and
    NaN has one spelling), tuples as lists, dict keys as strings."""
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):
        return canonical(value.tolist())
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value) if isinstance(value, float) and not math.isfinite(value) else repr(value)


def task_key(fn: Callable[..., Any], identity: Any, version: str) -> str:
    """sha256 of (``fn``'s module and name, the canonical JSON of ``identity``, ``version``), 20 hex digits."""
    blob = json.dumps({"fn": f"{fn.__module__}.{fn.__qualname__}", "identity": canonical(identity),
                       "code": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def code_version(*packages: str, exclude: tuple[str, ...] = (),
                 closure: tuple[str | tuple[str, ...], str] | None = None) -> str:
    """``<package version>+<hash>``: the hash of every ``.py`` file under ``packages`` (sorted by path, found without
    importing them) but those whose path in their package starts with one of ``exclude`` (the command-line and
    presentation modules: they compute nothing a task returns); with ``closure`` = (module or modules, package), also
    the files of ``package`` that the modules run (:func:`import_closure`; the whole package where that is not known).
    An edit of the code a task runs changes it, and with it every key; about 10 ms, computed once per job."""
    h = hashlib.sha256()
    for name in sorted(packages):
        root = _package_root(name)
        for path in sorted(root.rglob("*.py")):
            rel = str(path.relative_to(root))
            if not rel.startswith(exclude):
                h.update(rel.encode() + path.read_bytes())
    if closure is not None:
        entry, package = closure
        root = _package_root(package)
        files = import_closure(entry, package)
        for path in files if files is not None else sorted(root.rglob("*.py")):
            h.update(f"{package}/{path.relative_to(root)}".encode() + path.read_bytes())
    return f"{__version__}+{h.hexdigest()[:12]}"


#: A module that names one of these may import what no import statement names.
DYNAMIC_IMPORTS = ("importlib", "__import__")


def import_closure(entry: str | Sequence[str], package: str) -> list[Path] | None:
    """The source files of module ``entry`` (or of each module of a sequence; of ``package``), of ``package``'s
    ``__init__`` and of every module of ``package`` these import, directly or through each other, at module level or
    inside a function (``import a.b``, ``from a import b``, relative imports; parsed with ast, not imported), sorted;
    None where one of them may import dynamically (it names :data:`DYNAMIC_IMPORTS`)."""
    root = _package_root(package)
    seen: dict[str, Path] = {}
    todo = [package] + ([entry] if isinstance(entry, str) else list(entry))
    while todo:
        name = todo.pop()
        inside = name == package or name.startswith(package + ".")
        path = _module_file(root, name[len(package) + 1:]) if inside and name not in seen else None
        if path is None:
            continue
        seen[name] = path
        text = path.read_text(encoding="utf-8")
        if any(word in text for word in DYNAMIC_IMPORTS):
            return None
        here = (name if path.name == "__init__.py" else name.rpartition(".")[0]).split(".")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                todo += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return sorted(seen.values())


def _package_root(name: str) -> Path:
    """The folder of package ``name`` (found without importing it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"code_version: {name!r} is not an importable package")
    return Path(list(spec.submodule_search_locations)[0])


def _module_file(root: Path, rel: str) -> Path | None:
    """The source file of the module ``rel`` (dotted, "" for the package itself) of the package at ``root``."""
    base = root.joinpath(*rel.split(".")) if rel else root
    for path in ((base.with_suffix(".py"),) if rel else ()) + (base / "__init__.py",):
        if path.is_file():
            return path
    return None
