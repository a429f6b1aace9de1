"""The pinned CRDs: schemas/crds.lock, the one resolver every caller uses, and
`generate.py fetch-crds` run for real against a mirror on loopback (GitHub is out of reach
here; $TRAINYARD_CRD_MIRROR is the same code path with another base URL)."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from box.httpd import Background
from generators.validation.pinned_crds import (
    CRDS_ENV,
    FETCH_COMMAND,
    GITHUB_RAW,
    LOCK_FILE,
    MIRROR_ENV,
    SHARED_CRD_DIR,
    SOURCES_FILE,
    CrdsNotFound,
    CrdVerificationError,
    cached_crd_dir,
    download_url,
    read_sources,
    resolve_crd_dir,
    verify_crds,
)
from tests.support import ROOT, free_port
from tests.support.httpserver import QuietHTTPServer
from tools.toolchain import CACHE_ENV, bin_dir

PINS = read_sources(LOCK_FILE)
CLUSTERQUEUES = "kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml"


def _pin_lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.skipif(not SHARED_CRD_DIR.is_dir(), reason="no ../shared/crds beside the repository")
def test_lock_is_identical_to_the_shared_sources() -> None:
    assert _pin_lines(LOCK_FILE) == _pin_lines(SHARED_CRD_DIR / SOURCES_FILE)
    assert read_sources(SHARED_CRD_DIR / SOURCES_FILE) == PINS
    assert LOCK_FILE.read_text().startswith("# schemas/crds.lock: ")


@pytest.mark.skipif(not SHARED_CRD_DIR.is_dir(), reason="no ../shared/crds beside the repository")
def test_this_machine_resolves_to_the_shared_crds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CRDS_ENV, raising=False)
    assert resolve_crd_dir() == SHARED_CRD_DIR


def _copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


def test_trainyard_crds_overrides_and_is_checked_against_its_sources(
    tmp_path: Path, crd_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _copy(crd_dir, tmp_path / "mine")
    monkeypatch.setenv(CRDS_ENV, str(mine))
    assert resolve_crd_dir(shared=crd_dir) == mine
    (mine / CLUSTERQUEUES).write_text("# changed\n")
    with pytest.raises(CrdVerificationError, match=re.escape(f"{CLUSTERQUEUES}: sha256")):
        resolve_crd_dir(shared=crd_dir)
    (mine / SOURCES_FILE).unlink()  # without pins, the user's directory is taken as it is
    assert resolve_crd_dir(shared=crd_dir) == mine
    monkeypatch.setenv(CRDS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(CrdsNotFound, match="is not a directory"):
        resolve_crd_dir(shared=crd_dir)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No TRAINYARD_CRDS override, and a private cache that starts empty."""
    monkeypatch.delenv(CRDS_ENV, raising=False)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_shared_crds_are_used_only_when_they_match_the_lock(
    tmp_path: Path, crd_dir: Path, cache: Path
) -> None:
    shared = _copy(crd_dir, tmp_path / "shared")
    assert resolve_crd_dir(shared=shared) == shared
    (shared / CLUSTERQUEUES).write_text("# changed\n")
    with pytest.raises(CrdsNotFound) as caught:
        resolve_crd_dir(shared=shared)
    message = str(caught.value)
    assert "\n" not in message and f"run: {FETCH_COMMAND}" in message
    assert f"{CLUSTERQUEUES}: sha256" in message and "crds.lock" in message
    assert f"{cached_crd_dir()}: absent" in message


def test_nothing_found_is_one_line_naming_the_fetch_command(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(CrdsNotFound) as caught:
        resolve_crd_dir(shared=tmp_path / "shared")
    assert str(caught.value) == (
        f"no verified copy of the CRDs pinned in schemas/crds.lock "
        f"({tmp_path / 'shared'}: absent; {cached_crd_dir()}: absent); "
        f"run: {FETCH_COMMAND}"
    )


def test_downloads_come_from_github_unless_a_mirror_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    pin = next(p for p in PINS if p.file == CLUSTERQUEUES)
    path = "/kubernetes-sigs/kueue/v0.19.2/config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml"
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    assert download_url(pin) == pin.url == GITHUB_RAW + path
    monkeypatch.setenv(MIRROR_ENV, "https://artifacts.example/raw-github/")
    assert download_url(pin) == "https://artifacts.example/raw-github" + path


@dataclass
class Mirror:
    """raw.githubusercontent.com's layout on loopback, serving the pinned bytes."""

    url: str
    bodies: dict[str, bytes]  # URL path -> body; a missing path is a 404
    requests: list[str] = field(default_factory=list)


@pytest.fixture
def mirror(crd_dir: Path) -> Iterator[Mirror]:
    bodies = {pin.url.removeprefix(GITHUB_RAW): (crd_dir / pin.file).read_bytes() for pin in PINS}
    served = Mirror("", bodies)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.requests.append(self.path)
            body = served.bodies.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, format: str, *args: object) -> None:  # quiet test output
            pass

    serving = Background(QuietHTTPServer(("127.0.0.1", 0), Handler)).start()
    served.url = f"http://127.0.0.1:{serving.port}"
    yield served
    serving.stop()


def _cli(root: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python generate.py ARGV` of the checkout at root, as a user runs it."""
    environment = {k: v for k, v in os.environ.items() if k not in (CRDS_ENV, MIRROR_ENV)}
    environment.update(no_proxy="127.0.0.1", NO_PROXY="127.0.0.1", **env)
    return subprocess.run(
        [sys.executable, str(root / "generate.py"), *argv],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _fetch(mirror: Mirror, cache: Path) -> subprocess.CompletedProcess[str]:
    return _cli(ROOT, "fetch-crds", **{CACHE_ENV: str(cache), MIRROR_ENV: mirror.url})


def test_fetch_crds_downloads_once_and_resumes(tmp_path: Path, mirror: Mirror, cache: Path) -> None:
    done = _fetch(mirror, cache)
    fetched = cached_crd_dir()
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{fetched}: {len(PINS)} pinned CRD files verified ({len(PINS)} downloaded)\n"
    assert sorted(mirror.requests) == sorted(mirror.bodies)
    assert verify_crds(fetched) == [] and verify_crds(fetched, LOCK_FILE) == []
    assert resolve_crd_dir(shared=tmp_path / "no-shared") == fetched

    again = _fetch(mirror, cache)  # idempotent: verified files are not fetched
    assert (again.returncode, len(mirror.requests)) == (0, len(PINS))
    assert again.stdout.endswith("(0 downloaded)\n")

    (fetched / CLUSTERQUEUES).write_text("# changed\n")
    (fetched / PINS[-1].file).unlink()
    resumed = _fetch(mirror, cache)
    assert resumed.returncode == 0 and resumed.stdout.endswith("(2 downloaded)\n")
    assert len(mirror.requests) == len(PINS) + 2
    assert verify_crds(fetched, LOCK_FILE) == []
    assert not [p for p in fetched.rglob("*.tmp")]


def test_fetch_crds_refuses_a_tampered_file(tmp_path: Path, mirror: Mirror, cache: Path) -> None:
    pin = next(p for p in PINS if p.file == CLUSTERQUEUES)
    path = pin.url.removeprefix(GITHUB_RAW)
    mirror.bodies[path] = mirror.bodies[path].replace(b"nominalQuota", b"nominalQouta", 1)
    done = _fetch(mirror, cache)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"generate.py fetch-crds: error: {mirror.url}{path}: sha256 ")
    assert done.stderr.endswith(f", pinned {pin.sha256}\n") and done.stderr.count("\n") == 1
    assert not (cached_crd_dir() / CLUSTERQUEUES).exists()  # never written
    with pytest.raises(CrdsNotFound, match=re.escape(str(cached_crd_dir())) + ": [^;]+: missing"):
        resolve_crd_dir(shared=tmp_path / "no-shared")


def test_fetch_crds_fails_in_one_line_on_network_errors(tmp_path: Path, mirror: Mirror) -> None:
    del mirror.bodies[PINS[0].url.removeprefix(GITHUB_RAW)]
    missing = _fetch(mirror, tmp_path / "cache")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert missing.stderr.endswith(f"{PINS[0].url.removeprefix(GITHUB_RAW)}: Not Found\n")
    unreachable = _cli(
        ROOT,
        "fetch-crds",
        **{CACHE_ENV: str(tmp_path / "cache"), MIRROR_ENV: f"http://127.0.0.1:{free_port()}"},
    )
    assert unreachable.returncode == 1 and unreachable.stderr.count("\n") == 1
    assert "Connection refused" in unreachable.stderr


def _clone_elsewhere(tmp_path: Path) -> Path:
    """The working tree copied where no ../shared/crds is beside it, as a user's clone."""
    clone = tmp_path / "elsewhere" / "trainyard"
    shutil.copytree(
        ROOT,
        clone,
        symlinks=True,
        ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".*_cache", ".hypothesis"),
    )
    return clone


@pytest.mark.slow
def test_a_clone_elsewhere_validates_after_fetch_crds(
    tmp_path: Path, mirror: Mirror, schema_dir: Path
) -> None:
    # schema_dir: the set built from the same CRD bytes has the same key, so the clone finds it.
    clone = _clone_elsewhere(tmp_path)
    assert not (clone.parent / "shared").exists()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bin").symlink_to(bin_dir())  # the pinned kubeconform and promtool, already built
    (cache / "schemas").symlink_to(schema_dir.parent, target_is_directory=True)
    before = _cli(clone, "validate", "dev", **{CACHE_ENV: str(cache)})
    assert before.returncode == 1
    assert (
        f"kubeconform: did not run: no verified copy of the CRDs pinned in schemas/crds.lock "
        f"(../shared/crds: absent; {cache}/crds/" in before.stdout
    )
    assert f"run: {FETCH_COMMAND}" in before.stdout
    fetched = _cli(clone, "fetch-crds", **{CACHE_ENV: str(cache), MIRROR_ENV: mirror.url})
    assert fetched.returncode == 0, fetched.stderr
    after = _cli(clone, "validate", "dev", **{CACHE_ENV: str(cache)})
    assert after.returncode == 0, after.stdout + after.stderr
    assert "dev: " in after.stdout and " 0 findings" in after.stdout
