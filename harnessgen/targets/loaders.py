"""Load programs from user files (saved SDFGs and ``file.py:function``), and built-in ones
through a cache of their parsed SDFGs."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import lzma
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Optional

from ..core import envs
from ..core.errors import ConfigError
from ..core.files import write_atomic
from ..dacecompat import copy_sdfg, sdfg_json, settled
from .base import Program, Target, with_afl_configs
from .reference import python_reference


def prepare_sdfg(sdfg, simplify: bool = True):
    """Make an SDFG ready for instance enumeration: pure library expansions, simplified (unless
    asked not to: the program as written, what a pass under test starts from), and
    passed once through its JSON form. The frontend's objects carry state a file does not keep,
    and DaCe's matchers read it (LoopToMap matched 7 loops of a freshly parsed CLOUDSC and 11
    of the same SDFG read back from its cache file): this way a parse and a cache hit enumerate
    the same instances."""
    sdfg.expand_library_nodes()
    if simplify:
        sdfg.simplify()
    # through text, as a cache file is written and read (to_json's dictionaries still share
    # objects with the frontend's SDFG)
    return _through_json(sdfg)


# parsed built-in programs that ship with harnessgen, one folder per DaCe version
# (``python -m harnessgen.targets.shipped`` writes them)
SHIPPED = Path(__file__).parent / "parsed"


def program_key(source: bytes, dace_version: Optional[str] = None) -> str:
    """What a cached program is keyed by: its source, how it is prepared (the code of the
    functions that make a cache file's content) and DaCe (the running one unless named)."""
    if dace_version is None:
        from ..dacecompat import dace_identity

        dace_version = dace_identity()
    return hashlib.sha256(source + _preparation_code() + dace_version.encode()).hexdigest()[:16]


def _preparation_code() -> bytes:
    """The code that decides what a cache file holds (not how it is found, read or shipped)."""
    return "".join(inspect.getsource(f) for f in (prepare_sdfg, cached_program, _through_json)).encode()


def shipped_parse(cache_name: str, dace_version: str) -> Path:
    """Where the shipped parse of a cache file (``<label>-<key>[-unsimplified].sdfg``) lies."""
    return SHIPPED / f"dace-{dace_version}" / f"{cache_name}.xz"


def _install_shipped(cached: Path) -> None:
    """Put the shipped parse of ``cached`` into the cache where one ships: a fresh machine
    starts from the parse DaCe's frontend made once (CLOUDSC: a minute of parsing), not from a
    parse of its own. The key names the source, its preparation and DaCe: a shipped file is never
    used for another version of any of them."""
    import dace

    shipped = shipped_parse(cached.name, dace.__version__)
    if envs.get("HARNESSGEN_SHIPPED_PARSES") != "1" or not shipped.is_file():
        return

    def unpack(tmp: Path) -> None:
        with lzma.open(shipped) as packed, open(tmp, "wb") as out:
            shutil.copyfileobj(packed, out)

    _publish_file(unpack, cached)


def content_identity(*parts: bytes) -> str:
    """A program's identity (``Program.identity``) from what it is made of."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:24]


def cached_program(label: str, source: bytes, parse, simplify: bool = True, frontend_form: bool = False) -> "dace.SDFG":
    """A built-in program's prepared SDFG, parsed once per version of its source, of its preparation
    and of DaCe (``HARNESSGEN_PROGRAM_CACHE``) and always read back from that file. DaCe's
    frontend is not deterministic (the same source gave gemm and softmax two different node
    orders in two runs), and an instance's id hashes its match: reading one file, every run
    enumerates the same instances. The first process to publish the file wins; the others
    read it. ``simplify=False`` keeps (and caches apart) the program as the frontend wrote it.
    ``frontend_form``: ``parse()`` gives the frontend's form whatever the form asked for, so
    one parse makes both forms (the frontend's written first, then the same object simplified:
    what two separate parses would give, at half the parsing time)."""
    key = program_key(source)
    folder = Path(envs.get("HARNESSGEN_PROGRAM_CACHE"))
    cached = folder / f"{label}-{key}{'' if simplify else '-unsimplified'}.sdfg"
    if not cached.is_file():
        _install_shipped(cached)
    if not cached.is_file():
        other = folder / f"{label}-{key}{'-unsimplified' if simplify else ''}.sdfg"
        if frontend_form and not other.is_file():
            sdfg = parse()
            sdfg.expand_library_nodes()
            written = _publish_beside(sdfg, folder / f"{label}-{key}-unsimplified.sdfg")
            try:
                sdfg.simplify()
                made = _through_json(sdfg)
                won = _publish(made, folder / f"{label}-{key}.sdfg")
            finally:
                written()            # its process waited for and its JSON text removed, whatever happened
            if simplify and won:
                return made
        else:
            made = prepare_sdfg(parse(), simplify)
            if _publish(made, cached):
                return made            # what the file holds, read from JSON as the file would be
    return read_cached(cached)


def read_cached(cached: Path):
    """The SDFG a cache file holds, from a pickle of it taken the first time it was read where
    that pickle is of this very file (its size and modification time): every worker of every
    run loads the program, and CLOUDSC takes seconds to read from JSON. The pickle of an SDFG
    just read from JSON is that SDFG (``tests/unit/test_copies.py``)."""
    import pickle

    import dace

    stat = cached.stat()
    stamp = [stat.st_size, stat.st_mtime_ns]
    pickled = cached.with_name(f"{cached.name}.pickle")
    if pickled.is_file():
        try:
            kept_stamp, sdfg = pickle.loads(pickled.read_bytes())
        except Exception:  # noqa: BLE001 -- a damaged pickle only costs the read from JSON
            kept_stamp = None
        if kept_stamp == stamp:
            return sdfg
    sdfg = settled(dace.SDFG.from_file(str(cached)))
    _keep_pickle(cached, sdfg)
    return sdfg


def _keep_pickle(cached: Path, sdfg) -> None:
    """Keep the pickle ``read_cached`` reads of the cache file ``cached``: ``sdfg``, its content."""
    import pickle

    stat = cached.stat()
    write_atomic(cached.with_name(f"{cached.name}.pickle"),
                 pickle.dumps(([stat.st_size, stat.st_mtime_ns], sdfg), protocol=pickle.HIGHEST_PROTOCOL))


def _through_json(sdfg):
    return copy_sdfg(sdfg)


def _publish(sdfg, cached: Path) -> bool:
    """Save ``sdfg`` as ``cached`` unless another process published it first (False then), and
    its pickle, which later reads take: where DaCe's JSON reader would change the program
    (``copies.json_broke_connectors``), the program as it was made."""
    if not _publish_file(lambda tmp: sdfg.save(str(tmp)), cached):
        return False
    _keep_pickle(cached, sdfg)
    return True


def _publish_file(write: Callable[[Path], None], cached: Path) -> bool:
    """``write`` a temporary file and link it into place as ``cached`` unless another process
    published it first (False then)."""
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".tmp{os.getpid()}")
    write(tmp)
    try:
        os.link(tmp, cached)        # never replaces a file another process may have read
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True


def _publish_beside(sdfg, cached: Path) -> Callable[[], None]:
    """Start publishing ``sdfg`` (through JSON) as ``cached`` in a process of its own and return
    what waits for it: the frontend's form of a large program takes seconds to read back and
    write (CLOUDSC: 8 s), and the simplified form, which a run starts from, is made meanwhile.
    Only the JSON text is made here; the file is what ``_publish(_through_json(sdfg))`` writes."""
    import dace

    cached.parent.mkdir(parents=True, exist_ok=True)
    text = cached.with_suffix(f".json{os.getpid()}")
    text.write_text(dace.serialize.dumps(sdfg_json(sdfg)))
    process = subprocess.Popen([sys.executable, "-c", "import sys; from harnessgen.targets.loaders import "
                                "publish_json; publish_json(*sys.argv[1:])", str(text), str(cached)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait() -> None:
        process.wait()
        if not cached.is_file():     # the process failed: here, then
            publish_json(str(text), str(cached))
        text.unlink(missing_ok=True)
    return wait


def publish_json(text: str, cached: str) -> None:
    """Publish the SDFG an SDFG's JSON file holds, read back (``_publish_beside``'s process)."""
    import json

    import dace

    _publish(settled(dace.SDFG.from_json(json.loads(Path(text).read_text()))), Path(cached))


# what the modules of users' files are named in this process (never importable by that name elsewhere)
USER_MODULE_PREFIX = "harnessgen_user_"


def load_module(path: Path) -> ModuleType:
    """Import a Python file once per process (a program and a transformation may share it)."""
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"no such file: {path.name!r} (check the path given to --program/--transformation)")
    key = USER_MODULE_PREFIX + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's file is broken: say which
        del sys.modules[key]
        raise ConfigError(f"importing {path.name} failed: {type(exc).__name__}: {exc}") from exc
    return module


def load_class(spec: str) -> type:
    """The class a ``module:Class`` or ``path/file.py:Class`` value names."""
    return load_attribute(spec, "--transformation", "class")


def load_attribute(spec: str, flag: str, what: str):
    """What a ``module:name`` or ``path/file.py:name`` value of ``flag`` names (a ``what``)."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise ConfigError(f"{flag} {spec!r}: give file.py:{what} or package.module:{what}")
    if where.endswith(".py"):
        if not Path(where).is_file():
            raise ConfigError(f"{flag} {spec!r}: no such file {where!r}")
        module = load_module(Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise ConfigError(f"{flag} {spec!r}: cannot import module {where!r} ({exc})") from exc
    found = getattr(module, name, None)
    if found is None:
        raise ConfigError(f"{flag} {spec!r}: {where} has no {what} {name!r}")
    return found


def load_sdfg_file(path: Path) -> Target:
    if not path.is_file():
        raise ConfigError(f"--program: no such SDFG file {str(path)!r}")
    program = _sdfg_program(path)
    return with_afl_configs(Target(name=program.name, programs={program.name: program}, simplify_by_default=False))


def load_sdfg_folder(folder: Path) -> Target:
    """Every SDFG file of a folder (``*.sdfg``, ``*.sdfgz``), each a program named by its file,
    tested as given: the programs ``harnessgen ci`` takes from a DaCe checkout's own tests. One
    that does not load is left out of the run with its reason, as NPBench's are."""
    files = sorted(p for p in Path(folder).iterdir() if p.suffix in (".sdfg", ".sdfgz") and p.is_file())
    if not files:
        raise ConfigError(f"--program {folder}: a folder without SDFG files (*.sdfg)")
    programs = {p.name: p for p in map(_sdfg_program, files)}
    return with_afl_configs(Target(name=Path(folder).name, programs=programs, simplify_by_default=False,
                                   partial=True))


def _sdfg_program(path: Path) -> Program:
    import dace

    def build(simplify: bool = True):
        try:
            sdfg = settled(dace.SDFG.from_file(str(path)))
        except Exception as exc:
            raise ConfigError(f"--program: {path.name} is not a readable SDFG ({exc})") from exc
        return prepare_sdfg(sdfg, simplify)

    return Program(path.stem, build, f"SDFG from {path.name}",
                   build_unsimplified=lambda: build(simplify=False), identity=content_identity(path.read_bytes()))


def _builder_target(path: Path, function: str, builder) -> Target:
    """A function that builds and returns an SDFG (a bug report's builder.py): tested as given."""
    import dace

    def build(simplify: bool = True):
        try:
            sdfg = builder()
        except Exception as exc:  # the user's builder failed: say which
            raise ConfigError(f"--program: {path.name}:{function}() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(sdfg, dace.SDFG):
            raise ConfigError(f"--program: {path.name}:{function}() returned {type(sdfg).__name__}, not an SDFG")
        return prepare_sdfg(sdfg, simplify)

    program = Program(function, build, f"SDFG built by {path.name}:{function}",
                      build_unsimplified=lambda: build(simplify=False),
                      identity=content_identity(path.read_bytes(), function.encode()))
    return with_afl_configs(Target(name=function, programs={function: program}, simplify_by_default=False))


def load_python_program(path: Path, function: str) -> Target:
    import dace

    module = load_module(path)
    prog = getattr(module, function, None)
    if prog is None:
        raise ConfigError(f"--program: {path.name} has no attribute {function!r}")
    if not hasattr(prog, "to_sdfg"):
        if callable(prog):
            return _builder_target(path, function, prog)
        raise ConfigError(f"--program: {path.name}:{function} is neither a @dace.program nor a function that "
                          "builds an SDFG")

    def build(simplify: bool = True):
        try:
            sdfg = prog.to_sdfg(simplify=simplify)
        except Exception as exc:     # noqa: BLE001 -- whatever DaCe raises, the user's program is the cause
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise ConfigError(f"--program: DaCe could not make an SDFG of {path.name}:{function} "
                              f"({type(exc).__name__}: {first[:400]}); change the program so DaCe accepts it (if "
                              "it is a program DaCe should accept, that is a DaCe bug to file: its frontend's, or "
                              "its simplify's where only the simplified form fails)") from exc
        if not isinstance(sdfg, dace.SDFG):
            raise ConfigError(f"--program: {path.name}:{function} did not produce an SDFG")
        return prepare_sdfg(sdfg, simplify)

    program = Program(function, build, f"{path.name}:{function}", build_unsimplified=lambda: build(simplify=False),
                      reference=python_reference(prog), identity=content_identity(path.read_bytes(), function.encode()))
    target = Target(name=function, programs={function: program}, source_module=module)
    return with_afl_configs(target)
