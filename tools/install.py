#!/usr/bin/env python3
"""Build the pinned Go tools into the shared cache (see tools/toolchain.py, tools/README.md).

    python tools/install.py              # every tool in PINS, cheap ones first
    python tools/install.py promtool etcd
    python tools/install.py --list       # pins, module versions, install state

Each tool is compiled from the Go module proxy in a throwaway wrapper module under
cache_dir()/build (never inside the checkout), then copied atomically to
cache_dir()/bin/<name>-<version>. A tool already there is skipped without running Go, so a
warm run takes milliseconds. Stdlib only: this runs before any venv exists.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as `python tools/install.py`, sys.path[0] is tools/; the repo root makes the
# documented `tools.toolchain` import work in both that and `python -m tools.install`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.toolchain import (
    ARCHIVES,
    PINS,
    ToolNotInstalled,
    archive_path,
    bin_dir,
    cache_dir,
    cached_archive,
    expected_path,
    file_lock,
    is_installed,
    sha256_of,
)

# Parallelism for the Go compiler and linker. The machine has 2 cores and the
# kube-apiserver link alone needs several GB; more parallel packages only adds memory.
GO_PARALLEL = "2"


class InstallError(RuntimeError):
    """A tool could not be built or failed its smoke check."""


@dataclass(frozen=True)
class Wrapper:
    """A Go module (wrapper) that builds one or more tools from one upstream module.

    Tools that share a wrapper (promtool + prometheus, kube-apiserver + kubectl) share
    its directory, go.mod, go.sum and module downloads.
    """

    key: str  # directory name under cache_dir()/build, includes the version
    module: str  # upstream module path
    version: str  # upstream module version (Go module semver)
    # Copy upstream's `replace` directives that point at published module versions
    # (descheduler pins k8s.io/kube-openapi this way).
    copy_versioned_replaces: bool = False
    # For k8s.io/kubernetes: replace each required ./staging/src/<m> module with <m> at
    # this version (the staging modules are published separately as v0.N.P).
    staging_version: str | None = None
    # Copy upstream's godebug directive so runtime defaults match upstream's binaries.
    copy_godebug: bool = False
    # Extra Go source files written into the wrapper (file name -> content).
    files: tuple[tuple[str, str], ...] = ()
    # Build inside this upstream source archive (a key of ARCHIVES) instead of a wrapper:
    # for programs whose main module the proxy refuses; their dependencies come from it.
    archive: str | None = None


@dataclass(frozen=True)
class Tool:
    name: str
    wrapper: Wrapper
    package: str  # import path to build ("." = the wrapper's own main package)
    ldflags: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    smoke: tuple[str, ...] = ("--version",)  # arguments for the post-build check
    smoke_ok: tuple[int, ...] = (0,)  # accepted exit codes of the smoke check
    # Text the smoke output must contain: proves the version ldflags took (or, for kueue,
    # which has no version flag, that its own flags are registered). Empty: the version.
    smoke_expect: str = ""
    env: dict[str, str] = field(default_factory=dict)


def _x(var: str, value: str) -> str:
    return f"-X {var}={value}"


def _k8s_version_ldflags(version: str) -> tuple[str, ...]:
    # Same variables upstream's hack/lib/version.sh sets; without them the apiserver
    # reports v0.0.0-master, which clients (and kubectl's skew warning) dislike.
    major, minor = version.lstrip("v").split(".")[:2]
    base = "k8s.io/component-base/version"
    return (
        _x(f"{base}.gitVersion", version),
        _x(f"{base}.gitMajor", major),
        _x(f"{base}.gitMinor", minor),
        _x(f"{base}.gitTreeState", "clean"),
        _x(f"{base}.buildDate", "1970-01-01T00:00:00Z"),
    )


def _prometheus_ldflags(release: str) -> tuple[str, ...]:
    base = "github.com/prometheus/common/version"
    return (
        _x(f"{base}.Version", release.lstrip("v")),
        _x(f"{base}.Branch", "HEAD"),
        _x(f"{base}.BuildUser", "trainyard"),
        _x(f"{base}.Revision", "go-module-proxy"),
    )


ARGOCD_ARCHIVE = "argo-cd-3.5.1.tar.gz"
# The commit of tag v3.5.1 (`git get-tar-commit-id` of the archive; ../shared/src/SOURCES.txt).
ARGOCD_COMMIT = "109ca7ca71139e514114499d294a492e7910a965"


MINIREDIS_MAIN = """\
// A Redis server for Argo CD in the box: miniredis (the Go Redis server Argo CD runs
// in-process as its own Redis for `argocd --core`) listening on -addr until SIGTERM.
package main

import (
\t"flag"
\t"fmt"
\t"os"
\t"os/signal"
\t"syscall"
\t"time"

\t"github.com/alicebob/miniredis/v2"
)

var version = "unknown"

func main() {
\taddr := flag.String("addr", "127.0.0.1:6379", "host:port to listen on")
\tshowVersion := flag.Bool("version", false, "print the version and exit")
\tflag.Parse()
\tif *showVersion {
\t\tfmt.Println("miniredis", version)
\t\treturn
\t}
\tserver := miniredis.NewMiniRedis()
\tif err := server.StartAddr(*addr); err != nil {
\t\tfmt.Fprintln(os.Stderr, "miniredis:", err)
\t\tos.Exit(1)
\t}
\tfmt.Printf("miniredis %s listening on %s\\n", version, server.Addr())
\t// miniredis moves its clock (and expires keys with a TTL) only when told; Argo CD
\t// sets TTLs on its cache entries and locks, so the clock follows the wall clock.
\tticker := time.NewTicker(time.Second)
\tstop := make(chan os.Signal, 1)
\tsignal.Notify(stop, syscall.SIGTERM, os.Interrupt)
\tfor {
\t\tselect {
\t\tcase <-ticker.C:
\t\t\tserver.FastForward(time.Second)
\t\tcase <-stop:
\t\t\tserver.Close()
\t\t\treturn
\t\t}
\t}
}
"""


def _argocd_ldflags(release: str) -> tuple[str, ...]:
    # The variables upstream's Makefile sets (LDFLAGS, lines 186-200 of v3.5.1): with a
    # commit, a tag and a clean tree, common.GetVersion reports the tag itself (v3.5.1), as
    # the release images do. kubectlVersion is the client-go version its go.mod requires.
    base = "github.com/argoproj/argo-cd/v3/common"
    return (
        _x(f"{base}.version", release.lstrip("v")),
        _x(f"{base}.buildDate", "1970-01-01T00:00:00Z"),
        _x(f"{base}.gitCommit", ARGOCD_COMMIT),
        _x(f"{base}.gitTag", release),
        _x(f"{base}.gitTreeState", "clean"),
        _x(f"{base}.kubectlVersion", "v0.36.1"),
    )


ETCD_MAIN = """\
// Wrapper for etcd's server binary: go.etcd.io/etcd/server/v3 replaces its sibling
// modules with relative paths, so it cannot be `go install`ed; requiring it from this
// module uses the published siblings instead.
package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
\tetcdmain.Main(os.Args)
}
"""


def _tools() -> dict[str, Tool]:
    """Build recipes, in install order (cheap first, kube-apiserver last).

    A table of data, one `Tool(...)` row per pinned tool, not logic: its length grows with the
    toolchain, and splitting it would only scatter the rows (the 80-line limit on functions
    does not apply to tables)."""
    prom_release = PINS["prometheus"]
    assert PINS["promtool"] == prom_release, "promtool and prometheus share one release"
    # Prometheus 3.x.y is published as Go module v0.3xx.y (3.16.0 -> v0.316.0).
    pmaj, pmin, ppatch = prom_release.lstrip("v").split(".")
    prom_module_version = f"v0.{int(pmaj) * 100 + int(pmin)}.{ppatch}"
    k8s = PINS["kube-apiserver"]
    for sibling in ("kubectl", "kube-scheduler", "kube-controller-manager"):
        assert PINS[sibling] == k8s, f"{sibling} and kube-apiserver share one wrapper"
    k8s_staging = "v0." + k8s.lstrip("v").split(".", 1)[1]  # v1.36.5 -> v0.36.5

    def simple(name: str, module: str, main: str | None = None) -> Wrapper:
        """The wrapper of `name`'s pinned `module`; with `main`, our own main.go beside it."""
        files = (("main.go", main),) if main is not None else ()
        return Wrapper(key=f"{name}-{PINS[name]}", module=module, version=PINS[name], files=files)

    prom = Wrapper(
        key=f"prometheus-{prom_module_version}",
        module="github.com/prometheus/prometheus",
        version=prom_module_version,
    )
    kube = Wrapper(
        key=f"kubernetes-{k8s}",
        module="k8s.io/kubernetes",
        version=k8s,
        staging_version=k8s_staging,
        copy_godebug=True,
    )

    def from_archive(name: str, module: str, archive: str) -> Wrapper:
        return Wrapper(key=f"{name}-{PINS[name]}-src", module=module, version=PINS[name], archive=archive)

    kwok = simple("kwok", "sigs.k8s.io/kwok")
    assert PINS["kwokctl"] == PINS["kwok"], "kwok and kwokctl share one wrapper"
    kwok_ldflags = (_x("sigs.k8s.io/kwok/pkg/consts.Version", PINS["kwok"]),)
    k8s_minor = k8s.lstrip("v").split(".")[1]
    helm_ldflags = (
        _x("helm.sh/helm/v3/internal/version.version", PINS["helm"]),
        _x("helm.sh/helm/v3/internal/version.gitTreeState", "clean"),
        # What release builds set from client-go: without it helm assumes Kubernetes 1.20
        # and refuses kube-prometheus-stack's kubeVersion (../shared/charts/SOURCES.txt).
        _x("helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor", "1"),
        _x("helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor", k8s_minor),
        _x("helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor", "1"),
        _x("helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor", k8s_minor),
    )
    prom_ldflags = _prometheus_ldflags(prom_release)
    # Prometheus's own build tags pick its service discoveries (plugins/plugin_*.go,
    # `//go:build !remove_all_sd || enable_<name>_sd`; file and http are always in,
    # plugins/minimum.go): the tests use kubernetes_sd (the operator's scrape configs) and
    # file_sd (the box), never a cloud's. Leaving out the cloud SDKs (AWS, Azure, GCE, OCI,
    # ...) makes promtool's cold compile a third of what it was (measured in tools/README.md);
    # rules, unit tests and the server's scraping are the same code.
    prom_tags = ("remove_all_sd", "enable_kubernetes_sd")
    k8s_ldflags = _k8s_version_ldflags(k8s)

    def command(name: str, source: str | Wrapper, version_var: str = "", **options: Any) -> Tool:
        """The program <module>/cmd/<name>, of `source`: a Go module pinned at PINS[name], or a
        Wrapper several programs share. `version_var` (when the program has one) is set to the
        pin with -X, so the smoke check sees the pinned version."""
        wrapper = source if isinstance(source, Wrapper) else simple(name, source)
        if version_var:
            options["ldflags"] = (_x(version_var, PINS[name]),)
        return Tool(name, wrapper, f"{wrapper.module}/cmd/{name}", **options)

    tools = [
        command("kubeconform", "github.com/yannh/kubeconform", "main.version", smoke=("-v",)),
        command(
            "actionlint",
            "github.com/rhysd/actionlint",
            "github.com/rhysd/actionlint.version",
            smoke=("-version",),
        ),
        command(
            "kube-score",
            "github.com/zegl/kube-score",
            ldflags=(_x("main.version", PINS["kube-score"].lstrip("v")),),
            smoke=("version",),
        ),
        command("promtool", prom, ldflags=prom_ldflags, tags=prom_tags),
        command("prometheus", prom, ldflags=prom_ldflags, tags=prom_tags),
        Tool("etcd", simple("etcd", "go.etcd.io/etcd/server/v3", ETCD_MAIN), "."),
        command(
            "kueue",
            "sigs.k8s.io/kueue",
            "sigs.k8s.io/kueue/pkg/version.GitVersion",
            smoke=("--help",),
            # cmd/kueue links ginkgo, whose flags head --help; check for kueue's own flag.
            smoke_expect="-config string",
        ),
        command(
            "descheduler",
            Wrapper(
                key=f"descheduler-{PINS['descheduler']}",
                module="sigs.k8s.io/descheduler",
                version=PINS["descheduler"],
                copy_versioned_replaces=True,
                copy_godebug=True,
            ),
            "sigs.k8s.io/descheduler/pkg/version.version",
            smoke=("version",),
        ),
        command("helm", "helm.sh/helm/v3", ldflags=helm_ldflags, smoke=("version", "--short")),
        Tool(
            "node_exporter",
            simple("node_exporter", "github.com/prometheus/node_exporter"),
            "github.com/prometheus/node_exporter",
            ldflags=_prometheus_ldflags(PINS["node_exporter"]),
        ),
        command("kwok", kwok, ldflags=kwok_ldflags),
        command("kwokctl", kwok, ldflags=kwok_ldflags),
        Tool(
            "interlink-vk",
            from_archive("interlink-vk", "github.com/interlink-hq/interlink", "interlink-0.6.1.tar.gz"),
            "./cmd/virtual-kubelet",
            # As the upstream image (docker/Dockerfile.vk): the node reports this kubeletVersion.
            ldflags=(
                _x(
                    "github.com/interlink-hq/interlink/pkg/virtualkubelet.KubeletVersion",
                    PINS["interlink-vk"],
                ),
            ),
            smoke=("--help",),
            smoke_ok=(0, 2),
            smoke_expect="nodename",
        ),
        Tool(
            "kube-state-metrics",
            from_archive(
                "kube-state-metrics", "k8s.io/kube-state-metrics/v2", "kube-state-metrics-v2.17.0.tar.gz"
            ),
            ".",
            ldflags=(
                _x("github.com/prometheus/common/version.Version", PINS["kube-state-metrics"]),
                _x("github.com/prometheus/common/version.Revision", "f9f0a178"),
                _x("github.com/prometheus/common/version.Branch", PINS["kube-state-metrics"]),
            ),
            smoke=("version",),
        ),
        Tool(
            "prometheus-adapter",
            from_archive(
                "prometheus-adapter", "sigs.k8s.io/prometheus-adapter", "prometheus-adapter-v0.12.0.tar.gz"
            ),
            "./cmd/adapter",
            smoke=("--help",),
            smoke_ok=(0, 2),  # pflag exits 2 after --help
            smoke_expect="--prometheus-url",
        ),
        command(
            "virtual-kubelet",
            "github.com/virtual-kubelet/virtual-kubelet",
            "main.buildVersion",
            smoke=("version",),
        ),
        Tool(
            "jobset",
            simple("jobset", "sigs.k8s.io/jobset"),
            "sigs.k8s.io/jobset",  # its main package is the module root (main.go)
            smoke=("--help",),
            smoke_ok=(0, 2),  # Go's flag package exits 2 after -help
            smoke_expect="-metrics-bind-address",
        ),
        Tool(
            "argocd",
            from_archive("argocd", "github.com/argoproj/argo-cd/v3", ARGOCD_ARCHIVE),
            # One multi-call binary: argv[0] or $ARGOCD_BINARY_NAME picks the component
            # (cmd/main.go), so the box runs the controller and repo server from this file.
            "./cmd",
            ldflags=_argocd_ldflags(PINS["argocd"]),
            smoke=("version", "--client"),
        ),
        Tool(
            "miniredis",
            simple("miniredis", "github.com/alicebob/miniredis/v2", MINIREDIS_MAIN),
            ".",
            ldflags=(_x("main.version", PINS["miniredis"]),),
        ),
        command("kube-apiserver", kube, ldflags=k8s_ldflags),
        command("kubectl", kube, ldflags=k8s_ldflags, smoke=("version", "--client")),
        command("kube-scheduler", kube, ldflags=k8s_ldflags),
        command("kube-controller-manager", kube, ldflags=k8s_ldflags),
    ]
    recipes = {t.name: t for t in tools}
    missing = set(PINS) ^ set(recipes)
    assert not missing, f"PINS and install recipes disagree: {sorted(missing)}"
    return recipes


# --------------------------------------------------------------------------- go helpers


def go_env() -> dict[str, str]:
    """Environment for every go command we run."""
    env = dict(os.environ)
    env.update(
        {
            # -mod=mod lets `go build` fill in go.mod/go.sum of the wrapper itself.
            "GOFLAGS": "-mod=mod -buildvcs=false -trimpath",
            "CGO_ENABLED": "0",
            # Never switch to another Go toolchain behind our back; fail loudly instead.
            "GOTOOLCHAIN": "local",
            # A go.work above the build dir (or GOWORK in the caller's env) must not leak in.
            "GOWORK": "off",
            "GOMAXPROCS": GO_PARALLEL,
            "GO111MODULE": "on",
        }
    )
    return env


def run_go(args: Sequence[str], cwd: Path, log: Path, timeout: float | None = None) -> str:
    """Run `go <args>` in cwd, appending output to log; raise InstallError on failure."""
    cmd = ["go", *args]
    with log.open("a") as fh:
        fh.write(f"\n# {time.strftime('%Y-%m-%dT%H:%M:%S')}\n$ (cd {cwd} && {' '.join(cmd)})\n")
        fh.flush()
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                cwd=cwd,
                env=go_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=timeout,
                check=False,
            )
        except FileNotFoundError:
            raise InstallError("`go` is not on PATH; install Go >= 1.26") from None
        except subprocess.TimeoutExpired:
            raise InstallError(f"timed out after {timeout}s: {' '.join(cmd)}") from None
        fh.write(proc.stdout)
        # Wall clock per go command, so cold-build costs can be read back from the log.
        fh.write(f"# exit {proc.returncode} after {time.monotonic() - started:.1f}s\n")
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.strip().splitlines()[-25:])
        raise InstallError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}); full log: {log}\n{tail}")
    return proc.stdout


def local_go_version() -> str:
    """The local Go version, e.g. '1.26.8'."""
    out = subprocess.run(
        ["go", "env", "GOVERSION"], env=go_env(), capture_output=True, text=True, check=True
    ).stdout.strip()
    return out.removeprefix("go")


def upstream_gomod(module: str, version: str, workdir: Path, log: Path) -> str:
    """Text of the upstream go.mod, fetched through the Go module proxy."""
    out = run_go(["mod", "download", "-json", f"{module}@{version}"], workdir, log)
    info = json.loads(out)
    if info.get("Error"):
        raise InstallError(f"{module}@{version}: {info['Error']}")
    return Path(info["GoMod"]).read_text()


_REPLACE_RE = re.compile(r"^\s*(?:replace\s+)?(\S+)(?:\s+(\S+))?\s+=>\s+(\S+)(?:\s+(\S+))?\s*$")
_REQUIRE_RE = re.compile(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)(?:\s*//.*)?$")


def _blocks(gomod: str, verb: str) -> Iterator[str]:
    """Lines of every `verb ( ... )` block and every single-line `verb x` directive."""
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].rstrip() if verb != "require" else raw.rstrip()
        stripped = line.strip()
        if in_block:
            if stripped == ")":
                in_block = False
            elif stripped:
                yield stripped
        elif stripped == f"{verb} (":
            in_block = True
        elif stripped.startswith(f"{verb} "):
            yield stripped


def wrapper_gomod(w: Wrapper, upstream: str, go_version: str) -> str:
    """go.mod of the wrapper module that builds from `w.module`."""
    lines = [
        "// Generated by trainyard tools/install.py; safe to delete (it is rebuilt).",
        f"module trainyard.local/tools/{w.key}",
        "",
        f"go {go_version}",
        "",
    ]
    if w.copy_godebug:
        for d in _blocks(upstream, "godebug"):
            lines.append(d if d.startswith("godebug ") else f"godebug {d}")
        lines.append("")
    lines += [f"require {w.module} {w.version}", ""]
    replaces: list[str] = []
    if w.copy_versioned_replaces:
        for d in _blocks(upstream, "replace"):
            m = _REPLACE_RE.match(d)
            # Only replacements by another module version; relative paths can't be used.
            if m and m.group(4):
                old = m.group(1) + (f" {m.group(2)}" if m.group(2) else "")
                replaces.append(f"replace {old} => {m.group(3)} {m.group(4)}")
    if w.staging_version:
        required = set()
        for d in _blocks(upstream, "require"):
            r = _REQUIRE_RE.match(d)
            if r:
                required.add(r.group(1))
        for d in _blocks(upstream, "replace"):
            m = _REPLACE_RE.match(d)
            # Replace only staging modules upstream actually requires: a few (sample-*)
            # are not published on the proxy and are not in the build graph anyway.
            if m and m.group(3).startswith("./staging/src/") and m.group(1) in required:
                replaces.append(f"replace {m.group(1)} => {m.group(1)} {w.staging_version}")
        if not replaces:
            raise InstallError(f"no staging replaces found in {w.module}@{w.version} go.mod")
    lines += replaces
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- install


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def wrapper_digest(w: Wrapper) -> str:
    """Hash of everything that shapes a wrapper's go.mod and sources."""
    return _digest(dataclasses.asdict(w))


def recipe_digest(tool: Tool) -> str:
    """Hash of everything that shapes a tool's binary besides the Go toolchain."""
    return _digest(dataclasses.asdict(tool))


def manifest_path(name: str) -> Path:
    """Build record of an installed binary (kept out of bin/ so bin/ holds binaries only)."""
    return cache_dir() / "manifests" / f"{expected_path(name).name}.json"


def recipe_changed(tool: Tool) -> bool:
    """True if the cached binary was built from a different recipe than the current one.

    The binary's cache key is only <name>-<version> (the contract other code relies on), so
    a change of flags or tags under the same pin is reported, not silently rebuilt.
    """
    try:
        built = json.loads(manifest_path(tool.name).read_text()).get("recipe")
    except (OSError, ValueError):
        return False  # no record (built before manifests existed): nothing to compare
    return bool(built) and built != recipe_digest(tool)


def prepare_source(w: Wrapper) -> Path:
    """Unpack w's source archive (verified) under the build dir; return its module root."""
    assert w.archive
    wdir = cache_dir() / "build" / w.key
    stamp = wdir / "archive.sha256"
    sha = ARCHIVES[w.archive][1]
    if not (stamp.is_file() and stamp.read_text().strip() == sha):
        shutil.rmtree(wdir, ignore_errors=True)
        wdir.mkdir(parents=True)
        try:
            tarball = archive_path(w.archive)
        except ToolNotInstalled as exc:
            raise InstallError(str(exc)) from None
        with tarfile.open(tarball) as tar:
            tar.extractall(wdir, filter="data")
        stamp.write_text(sha + "\n")
    roots = [p for p in wdir.iterdir() if p.is_dir() and (p / "go.mod").is_file()]
    if len(roots) != 1:
        raise InstallError(f"{w.archive}: expected one top-level module directory in {wdir}")
    return roots[0]


def copy_archives(names: Sequence[str] = tuple(ARCHIVES)) -> list[str]:
    """Copy each archive from ../shared into the cache, verified; return the problems."""
    problems = []
    for name in names:
        dest = cached_archive(name)
        if dest.is_file():
            continue
        kind, sha = ARCHIVES[name]
        try:
            source = archive_path(name)
        except ToolNotInstalled as exc:
            problems.append(str(exc))
            continue
        if sha256_of(source) != sha:
            problems.append(f"{source}: sha256 differs from the pin {sha}")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{name}.tmp{os.getpid()}")
        shutil.copyfile(source, tmp)
        tmp.chmod(0o644)
        os.replace(tmp, dest)
        print(f"archive {name}: copied from ../shared/{kind} (sha256 verified)", flush=True)
    return problems


def prepare_wrapper(w: Wrapper, log: Path) -> Path:
    """Create (or reuse) the wrapper module directory for w."""
    if w.archive:
        return prepare_source(w)
    wdir = cache_dir() / "build" / w.key
    wdir.mkdir(parents=True, exist_ok=True)
    gomod = wdir / "go.mod"
    stamp = wdir / "recipe"
    # A wrapper written by an older recipe (other replaces, godebug, sources) is rebuilt
    # from scratch; module downloads stay in GOMODCACHE, so this costs seconds.
    if gomod.exists() and (not stamp.exists() or stamp.read_text().strip() != wrapper_digest(w)):
        for stale in (gomod, wdir / "go.sum", *(wdir / n for n, _ in w.files)):
            stale.unlink(missing_ok=True)
    if not gomod.exists():
        upstream = upstream_gomod(w.module, w.version, wdir, log)
        up_go = re.search(r"^go\s+(\S+)", upstream, re.M)
        # The wrapper's go line must not be below upstream's (Go refuses to build then).
        go_version = up_go.group(1) if up_go else local_go_version()
        for name, content in w.files:
            (wdir / name).write_text(content)
        # Write go.mod last and atomically: its presence marks a complete wrapper.
        tmp = wdir / "go.mod.tmp"
        tmp.write_text(wrapper_gomod(w, upstream, go_version))
        stamp.write_text(wrapper_digest(w) + "\n")
        os.replace(tmp, gomod)
    return wdir


def smoke_check(tool: Tool, binary: Path) -> str:
    """Run the binary once; return the first output line, raise if it does not start."""
    try:
        proc = subprocess.run(
            [str(binary), *tool.smoke],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{tool.name}: smoke check failed: {exc}") from None
    # Strip terminal colour codes (kueue's --help is coloured even without a tty).
    out = _ANSI_RE.sub("", proc.stdout + proc.stderr).strip()
    cmd = f"`{binary.name} {' '.join(tool.smoke)}`"
    if proc.returncode not in tool.smoke_ok:
        raise InstallError(f"{tool.name}: {cmd} exited {proc.returncode}: {out[:500]}")
    expect = tool.smoke_expect or PINS[tool.name].lstrip("v")
    lines = [line.strip() for line in out.splitlines() if expect in line]
    if not lines:
        raise InstallError(f"{tool.name}: {cmd} output lacks {expect!r}: {out[:500]}")
    return lines[0]


_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def build(tool: Tool, verbose: bool) -> str:
    """Build tool into the cache; return the smoke-check line."""
    started = time.monotonic()
    logdir = cache_dir() / "build" / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    log = logdir / f"{tool.name}-{PINS[tool.name]}.log"
    log.write_text(f"# build of {tool.name} {PINS[tool.name]}\n")
    if verbose:
        print(f"  log: {log}", flush=True)
    wdir = prepare_wrapper(tool.wrapper, log)
    outdir = wdir / "out"
    outdir.mkdir(exist_ok=True)
    out = outdir / tool.name
    args = ["build", "-p", GO_PARALLEL, "-o", str(out)]
    if tool.tags:
        args += ["-tags", ",".join(tool.tags)]
    # -s -w: no symbol table/DWARF; smaller binaries and a cheaper (less RAM) link.
    args += ["-ldflags", " ".join(("-s", "-w", *tool.ldflags)), tool.package]
    run_go(args, wdir, log)
    line = smoke_check(tool, out)
    dest = expected_path(tool.name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
    shutil.copy2(out, tmp)
    tmp.chmod(0o755)
    os.replace(tmp, dest)  # atomic: readers see the old state or a complete binary
    out.unlink()
    record = {
        "tool": tool.name,
        "version": PINS[tool.name],
        "module": f"{tool.wrapper.module}@{tool.wrapper.version}",
        "package": tool.package,
        "ldflags": list(tool.ldflags),
        "tags": list(tool.tags),
        "go": local_go_version(),
        "recipe": recipe_digest(tool),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_seconds": round(time.monotonic() - started, 1),
        "smoke": line,
    }
    manifest = manifest_path(tool.name)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(record, indent=2) + "\n")
    return line


def install(names: Sequence[str], force: bool, verbose: bool) -> int:
    recipes = _tools()
    failures: list[tuple[str, str]] = []
    total = time.monotonic()
    # Charts and source archives first: cheap, and the archive-built tools need them.
    for problem in copy_archives():
        failures.append(("archives", problem))
        print(f"archives: {problem}", file=sys.stderr, flush=True)
    for name in names:
        tool = recipes[name]
        label = f"{name} {PINS[name]}"
        start = time.monotonic()
        if is_installed(name) and not force:
            note = " [recipe changed since this build: --force rebuilds]" if recipe_changed(tool) else ""
            print(f"{label}: cached ({time.monotonic() - start:.2f}s){note}", flush=True)
            continue
        print(f"{label}: building from {tool.wrapper.module}@{tool.wrapper.version} ...", flush=True)
        try:
            # Lock per wrapper, not per tool: kubectl and kube-apiserver (promtool and
            # prometheus) share a wrapper dir whose go.mod/go.sum `go build` rewrites.
            with file_lock(cache_dir() / "locks" / f"{tool.wrapper.key}.lock"):
                # Another process may have finished the build while we waited.
                if is_installed(name) and not force:
                    print(
                        f"{label}: cached, built concurrently ({time.monotonic() - start:.2f}s)",
                        flush=True,
                    )
                    continue
                line = build(tool, verbose)
        except (InstallError, OSError, subprocess.SubprocessError) as exc:
            failures.append((name, str(exc)))
            print(
                f"{label}: FAILED after {time.monotonic() - start:.1f}s: {exc}",
                file=sys.stderr,
                flush=True,
            )
            continue
        print(
            f"{label}: installed ({time.monotonic() - start:.1f}s) -> {expected_path(name)} [{line}]",
            flush=True,
        )
    print(f"total {time.monotonic() - total:.2f}s", flush=True)
    if failures:
        print(
            f"install.py: {len(failures)} tool(s) failed: "
            f"{', '.join(n for n, _ in failures)} (logs in {cache_dir() / 'build' / 'logs'})",
            file=sys.stderr,
        )
        return 1
    return 0


def list_tools(recipes: dict[str, Tool], out: Callable[[str], None] = print) -> None:
    for name, tool in recipes.items():
        state = "installed" if is_installed(name) else "missing"
        out(
            f"{name:15} {PINS[name]:9} {tool.wrapper.module}@{tool.wrapper.version:10} "
            f"{state:9} {expected_path(name)}"
        )


def verify(recipes: dict[str, Tool], names: Sequence[str]) -> int:
    """Run each installed tool's smoke check again (e.g. after a Go or OS upgrade)."""
    bad = 0
    for name in names:
        if not is_installed(name):
            print(f"{name} {PINS[name]}: missing (python tools/install.py {name})")
            bad += 1
            continue
        try:
            print(f"{name} {PINS[name]}: ok [{smoke_check(recipes[name], expected_path(name))}]")
        except InstallError as exc:
            print(f"{name} {PINS[name]}: BROKEN: {exc}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    recipes = _tools()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"tools to install (default: all): {', '.join(recipes)}",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--list", action="store_true", help="show pins and install state")
    parser.add_argument("--verify", action="store_true", help="smoke-check installed tools, build nothing")
    parser.add_argument("-v", "--verbose", action="store_true", help="print build log paths")
    parser.add_argument(
        "--archives",
        action="store_true",
        help="only copy the pinned charts and source archives into the cache",
    )
    args = parser.parse_args(argv)
    if args.list:
        list_tools(recipes)
        return 0
    unknown = [n for n in args.names if n not in recipes]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(recipes)}")
    # Keep the recipe order (cheap first) whatever order the names were given in.
    names = [n for n in recipes if not args.names or n in args.names]
    if args.verify:
        return verify(recipes, names)
    if args.archives:
        problems = copy_archives()
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    bin_dir().mkdir(parents=True, exist_ok=True)
    return install(names, args.force, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
