"""The pinned upstream CRDs: their lock, where a verified copy lives, and fetching one.

`schemas/crds.lock` pins every CRD file the kubeconform schemas are built from
(schemastore.py), one line each: `<sha256>  <file>  <- owner/repo@ref:path`. Every caller
gets the CRD directory from resolve_crd_dir(), which looks, in order, at:

1. `$TRAINYARD_CRDS`, if set (checked against its own SOURCES.txt when it has one);
2. `../shared/crds` beside the repository root, if it matches the lock;
3. `<cache>/crds/<key of the lock>`, filled by `python generate.py fetch-crds`, if it matches;

and otherwise raises CrdsNotFound, whose one line says to run that command.

Stdlib only: CI runs `generate.py fetch-crds` before requirements.txt is installed.
See docs/validation-schemas.md, "Pinned CRDs".
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tools.toolchain import cache_dir

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
LOCK_FILE: Final = REPO_ROOT / "schemas" / "crds.lock"
SHARED_CRD_DIR: Final = REPO_ROOT.parent / "shared" / "crds"
SOURCES_FILE: Final = "SOURCES.txt"  # the pins a CRD directory carries with it
CRDS_ENV: Final = "TRAINYARD_CRDS"  # a CRD directory to use instead of the pinned ones
MIRROR_ENV: Final = "TRAINYARD_CRD_MIRROR"  # stands in for GITHUB_RAW (same layout below it)
GITHUB_RAW: Final = "https://raw.githubusercontent.com"
FETCH_COMMAND: Final = "python generate.py fetch-crds"
_SOURCE_LINE: Final = re.compile(
    r"^(?P<sha>[0-9a-f]{64})\s+(?P<file>\S+)\s+<-\s+"
    r"(?P<owner>[^/\s]+)/(?P<repo>[^@\s]+)@(?P<ref>[^:\s]+):(?P<path>\S+)$"
)


class CrdPinError(RuntimeError):
    """The pinned CRDs cannot be found, read, fetched or verified (one-line message)."""


class CrdVerificationError(CrdPinError):
    """CRD files do not match their sha256 pins."""


class CrdsNotFound(CrdPinError):
    """No verified copy of the pinned CRDs: run `python generate.py fetch-crds`."""


class CrdFetchError(CrdPinError):
    """A pinned CRD could not be downloaded (network, HTTP status)."""


@dataclass(frozen=True)
class CrdSource:
    """One pinned CRD file: where it lives locally and upstream, and its sha256."""

    sha256: str
    file: str  # relative to the CRD directory
    url: str  # upstream, on GITHUB_RAW


@dataclass(frozen=True)
class CrdProblem:
    """A CRD file that is missing, altered, or not pinned."""

    file: str
    problem: str


def read_sources(sources: Path) -> list[CrdSource]:
    """Parse a lock or SOURCES.txt: `<sha256>  <file>  <- owner/repo@ref:path` per line."""
    result = []
    for number, line in enumerate(sources.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _SOURCE_LINE.match(line.strip())
        if not match:
            raise CrdPinError(f"{sources}:{number}: not `<sha256>  <file>  <- o/r@ref:path`")
        url = "{base}/{owner}/{repo}/{ref}/{path}".format(base=GITHUB_RAW, **match.groupdict())
        result.append(CrdSource(match["sha"], match["file"], url))
    return result


def crd_files(crd_dir: Path) -> list[Path]:
    """Every YAML file under crd_dir, in a stable order."""
    return sorted(p for p in crd_dir.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify_crds(crd_dir: Path, sources: Path | Sequence[CrdSource] | None = None) -> list[CrdProblem]:
    """Compare the CRD files under crd_dir with their pins (default: its SOURCES.txt); [] if all match."""
    if sources is None or isinstance(sources, Path):
        sources = read_sources(sources or crd_dir / SOURCES_FILE)
    pins = {s.file: s for s in sources}
    problems = []
    for name, pin in sorted(pins.items()):
        path = crd_dir / name
        if not path.is_file():
            problems.append(CrdProblem(name, "missing"))
        elif (actual := sha256_file(path)) != pin.sha256:
            problems.append(CrdProblem(name, f"sha256 {actual}, pinned {pin.sha256}"))
    for path in crd_files(crd_dir):
        name = path.relative_to(crd_dir).as_posix()
        if name not in pins:
            problems.append(CrdProblem(name, "not pinned"))
    return problems


def describe(problems: Sequence[CrdProblem], limit: int = 2) -> str:
    """`a: missing; b: sha256 ...` (the first `limit`, then a count): one line, any number."""
    shown = "; ".join(f"{p.file}: {p.problem}" for p in problems[:limit])
    return shown + (f"; and {len(problems) - limit} more" if len(problems) > limit else "")


def lock_key(pins: Sequence[CrdSource]) -> str:
    """Names the cache directory of one pin set: what is fetched, not the lock's comments."""
    text = "\n".join(f"{p.sha256} {p.file} {p.url}" for p in sorted(pins, key=lambda p: p.file))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_crd_dir(lock: Path = LOCK_FILE) -> Path:
    """Where `generate.py fetch-crds` puts the CRDs of this lock (may not exist yet)."""
    return cache_dir() / "crds" / lock_key(read_sources(lock))


def resolve_crd_dir(lock: Path = LOCK_FILE, shared: Path = SHARED_CRD_DIR) -> Path:
    """The verified CRD directory to build schemas from (order in the module docstring)."""
    override = os.environ.get(CRDS_ENV)
    if override:
        chosen = Path(override).expanduser()
        if not chosen.is_dir():
            raise CrdsNotFound(f"${CRDS_ENV}={override} is not a directory")
        if (chosen / SOURCES_FILE).is_file() and (problems := verify_crds(chosen)):
            raise CrdVerificationError(
                f"${CRDS_ENV}={override} does not match its {SOURCES_FILE}: {describe(problems)}"
            )
        return chosen
    pins = read_sources(lock)
    seen = []
    for candidate in (shared, cache_dir() / "crds" / lock_key(pins)):
        if not candidate.is_dir():
            seen.append(f"{_shown(candidate)}: absent")
        elif problems := verify_crds(candidate, pins):
            seen.append(f"{_shown(candidate)}: {describe(problems, limit=1)}")
        else:
            return candidate
    raise CrdsNotFound(
        f"no verified copy of the CRDs pinned in {_shown(lock)} ({'; '.join(seen)}); run: {FETCH_COMMAND}"
    )


def _shown(path: Path) -> str:
    """A path relative to the repository root when it is in it or beside it (../shared/crds)."""
    if not path.is_absolute():
        return str(path)
    relative = os.path.relpath(path, REPO_ROOT)
    # Only the repository and ../shared read relative; anything else beside the checkout (a
    # temp dir when the clone itself lives in /tmp) is shown whole.
    beside = relative.startswith(os.pardir) and not path.is_relative_to(REPO_ROOT.parent / "shared")
    return str(path) if beside else relative


def download_url(pin: CrdSource, mirror: str | None = None) -> str:
    """pin.url, or the same path below `mirror` (default: $TRAINYARD_CRD_MIRROR, if set)."""
    base = mirror or os.environ.get(MIRROR_ENV)
    return base.rstrip("/") + pin.url.removeprefix(GITHUB_RAW) if base else pin.url


def fetch_crds(
    dest: Path, sources: Path | None = None, timeout: float = 60.0, mirror: str | None = None
) -> list[Path]:
    """Download every pinned CRD not already verified in dest; return the downloaded files.

    Each file is written (atomically, by rename) only after its sha256 matched its pin, so a
    reader never sees a partial or unverified file; a failure leaves the verified files in
    place and the next call downloads only the rest. A copy of the pins goes in as SOURCES.txt.
    """
    sources = sources or LOCK_FILE
    pins = read_sources(sources)
    downloaded = []
    for pin in pins:
        path = dest / pin.file
        if path.is_file() and sha256_file(path) == pin.sha256:
            continue
        body = _download(download_url(pin, mirror), timeout)
        if (actual := hashlib.sha256(body).hexdigest()) != pin.sha256:
            raise CrdVerificationError(f"{download_url(pin, mirror)}: sha256 {actual}, pinned {pin.sha256}")
        downloaded.append(_write_atomic(path, body))
    copy = dest / SOURCES_FILE
    if not copy.is_file() or copy.read_bytes() != sources.read_bytes():
        _write_atomic(copy, sources.read_bytes())
    return downloaded


def _download(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body: bytes = response.read()
    except urllib.error.URLError as error:  # HTTPError (404, 500 ...) is one too
        raise CrdFetchError(f"{url}: {getattr(error, 'reason', error)}") from error
    except (OSError, http.client.HTTPException) as error:  # timeouts, resets, bad responses
        raise CrdFetchError(f"{url}: {error or type(error).__name__}") from error
    return body


def fetch_pinned(lock: Path = LOCK_FILE, timeout: float = 60.0) -> tuple[Path, list[Path]]:
    """Fill <cache>/crds/<key> from the lock (`generate.py fetch-crds`): (directory, downloaded).

    Files already there and verified are not downloaded again; the result is verified whole.
    """
    dest = cached_crd_dir(lock)
    downloaded = fetch_crds(dest, lock, timeout)
    if problems := verify_crds(dest, lock):  # e.g. a stray file someone put there
        raise CrdVerificationError(f"{dest} does not match {_shown(lock)}: {describe(problems)}")
    return dest, downloaded


def seed_cache(source: Path, lock: Path = LOCK_FILE) -> Path:
    """Copy a verified CRD directory (e.g. ../shared/crds) into <cache>/crds/<key>, so that
    checkouts anywhere on this machine (CI's fresh clone) find the pins without a network."""
    dest = cached_crd_dir(lock)
    for pin in read_sources(lock):
        target = dest / pin.file
        if not (target.is_file() and sha256_file(target) == pin.sha256):
            body = (source / pin.file).read_bytes()
            if hashlib.sha256(body).hexdigest() != pin.sha256:
                raise CrdVerificationError(f"{source / pin.file}: does not match its pin")
            _write_atomic(target, body)
    _write_atomic(dest / SOURCES_FILE, lock.read_bytes())
    return dest


def _write_atomic(path: Path, body: bytes) -> Path:
    """Write via a uniquely named temporary file and rename: concurrent fetchers never collide."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(body)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a shared cache must stay readable
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
