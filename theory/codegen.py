"""Code generation: sympy expressions -> numpy source with a fixed, documented argument order.

Each sympy symbol lives in a fixed slot of an array argument (``h[..., 0]`` is ``h_1``), stated in the generated
docstring; outputs are a flat tuple. The source is cached on disk (:func:`cache_dir`) under a key of (kind,
L, r, cse, version, fingerprint of the theory sources), checked with a SHA-256 before use, and imported once per
process (:func:`load_module`). Sympy is imported lazily (only :func:`render_module` needs it).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

#: Theory sources whose content enters the cache key (change one -> regenerate).
_FINGERPRINT_FILES = ("codegen.py", "symbols.py", "attention.py", "loss.py", "prox.py", "channel.py", "priors/ridge.py",
                      "free_entropy.py", "baseline.py", "kernels.py", "kernel_specs.py", "correlated_kernels.py")


@dataclass(frozen=True)
class Argument:
    """One array argument of a generated function: its Python ``name``, its sympy ``symbols`` (nested
    sequence or Matrix, whose shape is the argument's trailing shape; one symbol for a scalar) and a
    ``description`` in the words of docs/model.md."""

    name: str
    symbols: Any
    description: str


@dataclass(frozen=True)
class FunctionSpec:
    """A function to generate: its arguments, its outputs (label, sympy expression), its doc, and the
    ``optimizations`` of ``sympy.cse`` (``"basic"``: fewer operations, slow on large expressions)."""

    name: str
    arguments: tuple[Argument, ...]
    outputs: tuple[tuple[str, Any], ...]
    doc: str
    cse_optimizations: str | None = "basic"


def _slots(symbols: Any) -> tuple[tuple[int, ...], list[tuple[tuple[int, ...], Any]]]:
    """(trailing shape, [(index, symbol), ...]) of an argument's symbols."""
    import sympy as sp

    if isinstance(symbols, sp.MatrixBase):
        symbols = symbols.tolist()
    elif isinstance(symbols, sp.Basic):
        return (), [((), symbols)]
    arr = np.array(symbols, dtype=object)
    return arr.shape, [(idx, arr[idx]) for idx in np.ndindex(arr.shape)]


def render_function(spec: FunctionSpec, cse: bool, scalar: bool = False) -> str:
    """Python source of one generated function: numpy (batched, slots ``h[..., 0]``) or, with ``scalar``, one
    point (slots ``h[0]``, a tuple of floats only, so that ``numba.njit`` compiles it)."""
    import sympy as sp
    from sympy.printing.numpy import NumPyPrinter

    printer = NumPyPrinter({"fully_qualified_modules": True})
    lines = [f"def {spec.name}({', '.join(a.name for a in spec.arguments)}):"]
    doc = [spec.doc.strip(), "", "Arguments (symbol -> slot):"]
    if scalar:
        doc[1:1] = ["", "Scalar variant: one point per call; every output is a float."]
    unpack: list[str] = []
    replace: dict[Any, Any] = {}
    for arg in spec.arguments:
        shape, slots = _slots(arg.symbols)
        doc.append(f"    {arg.name}: {arg.description}; trailing shape {shape}")
        for idx, sym in slots:
            if shape == ():
                ident = slot = arg.name
            else:
                ident = f"_{arg.name}_{'_'.join(map(str, idx))}"
                slot = f"{arg.name}[{'' if scalar else '..., '}{', '.join(map(str, idx))}]"
                unpack.append(f"    {ident} = {slot}")
            doc.append(f"        {slot} -> {sym}")
            replace[sym] = sp.Symbol(ident)
    doc += ["", "Returns a tuple, in this order:", *(f"    [{i}] {label}" for i, (label, _) in enumerate(spec.outputs))]
    doc.append(f"Generated with cse={cse}" + (f" (optimizations={spec.cse_optimizations!r})." if cse else "."))
    body = "\n".join(("    " + row).rstrip() for row in doc).replace('"""', "'''")
    lines.append('    """' + body.lstrip() + '\n    """')
    exprs = [sp.sympify(e).xreplace(replace) for _, e in spec.outputs]
    lines.extend(unpack)
    if cse:
        subs, exprs = sp.cse(exprs, symbols=sp.numbered_symbols("_c"), optimizations=spec.cse_optimizations)
        lines += [f"    {sym} = {printer.doprint(sub)}" for sym, sub in subs]
    lines.append("    return (")
    for e in exprs:
        text = repr(float(e)) if scalar and sp.sympify(e).is_number else printer.doprint(e)
        lines.append(f"        {text},")
    lines.append("    )")
    return "\n".join(lines) + "\n"


#: The first line of a generated module: its cache key and the SHA-256 of the text after that line.
HEADER = "# attnphase generated kernels; key: {key}; sha256: {digest}"


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()


def render_module(key: str, specs: Sequence[FunctionSpec], cse: bool, scalar: bool = False) -> str:
    """Source of a module holding the generated functions (batched or ``scalar``), starting with the line
    :data:`HEADER` (its cache key and the checksum of the rest)."""
    parts = ['"""Generated by attnphase.theory.codegen; do not edit (regenerated when the theory changes)."""',
             "import numpy", "", *(render_function(spec, cse, scalar) for spec in specs)]
    body = "\n\n".join(parts)
    return HEADER.format(key=key, digest=_digest(body)) + "\n" + body


def cache_dir() -> Path:
    """The on-disk cache directory: ``$ATTNPHASE_CACHE_DIR`` or ``~/.cache/attnphase``."""
    env = os.environ.get("ATTNPHASE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "attnphase"


def cache_dir_error() -> str:
    """Why ``$ATTNPHASE_CACHE_DIR`` cannot hold the cache ("" where it can, or where it is unset): the folder cannot
    be made, or a file cannot be written in it (every run would generate and compile its kernels again)."""
    env = os.environ.get("ATTNPHASE_CACHE_DIR")
    if not env:
        return ""
    try:
        Path(env).mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=env, suffix=".probe"):
            pass
    except OSError as exc:
        return (f"$ATTNPHASE_CACHE_DIR={env}: the kernel cache cannot be written there ({exc.strerror or exc}); give "
                "a writable folder, or unset it for ~/.cache/attnphase")
    return ""


def fingerprint() -> str:
    """Package version plus a hash of the theory sources that generate code."""
    from attnphase import __version__

    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _FINGERPRINT_FILES:
        path = here / name
        digest.update(name.encode())
        if path.exists():
            digest.update(path.read_bytes())
    return f"{__version__}-{digest.hexdigest()[:16]}"


def _key(kind: str, L: int, r: int, cse: bool, scalar: bool) -> tuple[str, str]:
    """(cache key, file stem) of the generated module ``kind`` for (L, r, cse[, scalar])."""
    variant = " scalar" if scalar else ""
    key = f"{kind}{variant} L={L} r={r} cse={bool(cse)} {fingerprint()}"
    stem = f"{kind}_scalar" if scalar else kind
    return key, f"{stem}_L{L}_r{r}_{'cse' if cse else 'nocse'}_{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _read_cached(path: Path, key: str, say_edited: bool = False) -> str | None:
    """The text of the cache file ``path`` if its first line carries ``key`` and the checksum of the rest
    (:data:`HEADER`), else None; ``say_edited``: a one-line note when only the checksum differs."""
    try:
        source = path.read_text()
    except (OSError, ValueError):
        return None
    first, _, body = source.partition("\n")
    if first == HEADER.format(key=key, digest=_digest(body)):
        return source
    if say_edited and first.startswith(HEADER.split("{key}")[0] + key + "; sha256: "):
        print(f"attnphase: note: the cached generated code {path} was changed after it was generated (its "
              f"checksum does not match); regenerating it", file=sys.stderr, flush=True)
    return None


def cached_source(
    kind: str, L: int, r: int, cse: bool, build: Callable[[], Sequence[FunctionSpec]], scalar: bool = False
) -> tuple[str, Path]:
    """Source text of the generated module ``kind`` for (L, r, cse[, scalar]) and its cache path: read from
    the disk cache when its key line and checksum match and it compiles, else rendered from ``build()`` and
    stored (where the cache directory can be written)."""
    key, stem = _key(kind, L, r, cse, scalar)
    path = cache_dir() / f"{stem}.py"
    source = _read_cached(path, key, say_edited=True)
    if source is not None:
        try:
            compile(source, str(path), "exec")  # a damaged file is regenerated
            return source, path
        except (SyntaxError, ValueError):
            pass
    family = kind if kind in _GENERATION else "kernels" if kind.startswith("kernels_") else kind
    if family in _GENERATION and not scalar:  # the first and largest module of a model: one line for all
        what, seconds = _GENERATION[family]
        first_run_notice(f"generating the {what} for L = {L} with sympy, once "
                         f"({seconds.get(L, 'minutes')}; later runs read them from {cache_dir()})")
    source = render_module(key, build(), cse, scalar)
    if not write_atomic(path, source) and family in _GENERATION and not scalar:
        first_run_notice(f"{cache_dir()} cannot be written: every run generates these kernels again")
    return source, path


#: What the notice calls each family of kernel modules (a channel's r = 1 ``kernels_<channel tag>`` are "kernels"),
#: and the rough one-off cost of generating every kernel module of a model, by L (2 cores).
_GENERATION = {"kernels": ("kernels", {2: "a few seconds", 3: "about 20 s", 4: "about 90 s"}),
               "kernels_cov": ("correlated-token kernels", {2: "a few seconds", 3: "about 10 s"})}


def first_run_notice(what: str) -> None:
    """One line on stderr before a one-off cost (code generation, JIT), unless ``$ATTNPHASE_QUIET=1``."""
    if os.environ.get("ATTNPHASE_QUIET", "").strip() not in ("1", "true", "yes"):
        print(f"attnphase: {what}", file=sys.stderr, flush=True)


def import_path(name: str, path: Path, source: str | None = None, loader_state: Any = None) -> ModuleType:
    """Import the file ``path`` as the module ``name`` (executed from ``source`` where ``path`` does not hold that
    text), registered in ``sys.modules``, with ``loader_state`` as its ``__spec__.loader_state``."""
    try:
        on_disk = source is None or path.read_text() == source
    except OSError:
        on_disk = False
    if on_disk:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
            raise ImportError(f"cannot import {path}")
    else:
        spec = importlib.machinery.ModuleSpec(name, None, origin=str(path))
    spec.loader_state = loader_state
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    sys.modules[name] = module
    try:
        if on_disk:
            spec.loader.exec_module(module)
        else:
            exec(compile(source or "", str(path), "exec"), module.__dict__)  # noqa: S102 - our own generated code
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_module(
    kind: str, L: int, r: int, cse: bool, build: Callable[[], Sequence[FunctionSpec]], scalar: bool = False
) -> ModuleType:
    """The generated module ``kind`` for (L, r, cse), imported once per process as
    ``attnphase._generated.<stem>_<hash of the cache directory>`` (the stem carries a hash of the key)."""
    key, stem = _key(kind, L, r, cse, scalar)
    directory = cache_dir()
    name = f"attnphase._generated.{stem}_{hashlib.sha256(str(directory).encode()).hexdigest()[:8]}"
    module = sys.modules.get(name)
    if module is not None:
        return module
    path = directory / f"{stem}.py"
    if _read_cached(path, key) is not None:
        try:
            return import_path(name, path)  # compiled once, by the import itself
        except (SyntaxError, ValueError):
            pass  # a damaged file is regenerated
    source, path = cached_source(kind, L, r, cse, build, scalar)
    return import_path(name, path, source)


@lru_cache(maxsize=None)
def generated_functions(kind: str, L: int, specs: Callable[[int], Sequence[FunctionSpec]]) -> dict[str, Any]:
    """The namespace of the generated module ``kind`` for L (r = 1, cse) built from ``specs(L)``
    (:func:`load_module`), looked up once per process."""
    return vars(load_module(kind, L, 1, True, lambda: specs(L)))


def write_atomic(path: Path, data: str | bytes) -> bool:
    """Write ``data`` (text or bytes) to ``path`` through a temporary file and a rename; False if that fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = "wb" if isinstance(data, bytes) else "w"
        with tempfile.NamedTemporaryFile(mode, dir=path.parent, delete=False, suffix=".tmp") as fh:
            fh.write(data)
            tmp = fh.name
        os.replace(tmp, path)
    except OSError:
        return False
    return True

