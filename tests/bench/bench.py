"""Test bench for gpuops.bringup: podman host setup, base images, offline mirror, node containers.

Standard library only: `make setup` runs it with the system Python before the
project's virtual environment exists. Every command is idempotent and cached:
images are rebuilt only when their recipe changes, the mirror only restarted
when its configuration changes.

    bench.py host                 install podman & co, write the podman drop-in, create the network
    bench.py images               build the Debian 12/13 node images (and Debian 12's with rpm and dnf, for nodes
                                  posing as RHEL) and the mirror image
    bench.py mirror               (re)build the local repository and the stand-in repositories
                                  (tests/standins), start the mirror
    bench.py nodes up GROUP SPEC  start node containers (SPEC: JSON list of {name, image, hardware}: hardware
                                  names a simulated-hardware profile of tests/sim/profiles; --prefix: GROUP-name;
                                  --inventory FILE [--groups a,b]: also write their Ansible inventory)
    bench.py nodes down GROUP     remove a group's node containers
    bench.py rack up|down         start or remove the demo rack of inventory/local.yml
    bench.py clean                remove every bench container, network and image
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fcntl
import gzip
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = Path(__file__).resolve().parent
SIM = ROOT / "tests" / "sim"
STANDINS = ROOT / "tests" / "standins"
FIXTURES = ROOT / "tests" / "fixtures"
STATE = Path(os.environ.get("GPUOPS_BENCH_STATE", ROOT / ".bench"))

NETWORK = "gpuops-bench"
LABEL = "gpuops.bench"
MIRROR_NAME = "gpuops-mirror"
MIRROR_PORT = 8080
# Upstream hosts the mirror passes through (with a cache); everything else it
# serves comes from the bench's own repository under STATE/mirror/www.
MIRROR_UPSTREAMS = ("deb.debian.org", "security.debian.org")
LOCAL_REPO_HOST = "bench.gpuops.test"
DEBIAN_ARCHIVE = "http://deb.debian.org/debian"

DISTROS = {
    "debian12": "bookworm",
    "debian13": "trixie",
}
# netavark and aardvark-dns are only Recommends of Debian 12's podman: without
# them (apt --no-install-recommends) podman falls back to CNI, whose networks
# have no DNS, and the nodes cannot find the mirror or each other by name.
# netavark 1.4 sets up its bridges' NAT with iptables, which nothing depends
# on (podman only Suggests it): without it every image build's RUN step fails
# with "netavark: No such file or directory (os error 2)".
# rpm (rpmbuild, rpmsign) and createrepo-c build the rpm-md stand-in repositories (NVIDIA's rhel8/rhel9).
HOST_PACKAGES = (
    "podman", "runc", "netavark", "aardvark-dns", "iptables", "debootstrap", "gnupg", "apt-utils", "openssh-client",
    "rpm", "createrepo-c",
    # The acceptance report's browser test (tests/integration/test_report_browser.py): Debian's headless browser.
    "chromium", "chromium-driver",
)  # fmt: skip
# The two settings ../shared/ENVIRONMENT.md found necessary on this host:
# runc (crun fails on hybrid cgroups) and ulimits within the host's limits;
# and netavark named, since podman keeps CNI once a CNI network exists.
PODMAN_DROPIN = Path("/etc/containers/containers.conf.d/50-gpuops-bench.conf")
PODMAN_CONF = """\
# Written by gpuops.bringup tests/bench/bench.py host.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"

[network]
network_backend = "netavark"
"""


class BenchError(Exception):
    """A bench step failed; the message says which and why."""


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], *, check: bool = True, capture: bool = False, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, text=True, capture_output=capture, check=False, **kw)
    if check and proc.returncode != 0:
        detail = (proc.stderr or "").strip()[-2000:] if capture else ""
        raise BenchError(f"command failed (rc={proc.returncode}): {' '.join(cmd)}\n{detail}")
    return proc


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return run(["podman", *args], check=check, capture=True)


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def write_if_changed(path: Path, content: str, mode: int = 0o644) -> bool:
    if path.exists() and path.read_text() == content:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(content)
    tmp.chmod(mode)
    tmp.replace(path)
    return True


# --- host ---------------------------------------------------------------------------------


def cmd_host(_args: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        raise BenchError("the bench runs rootful podman and installs packages: run it as root")
    missing = [p for p in HOST_PACKAGES if not _dpkg_installed(p)]
    if missing:
        log(f"installing host packages: {' '.join(missing)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run(["apt-get", "update", "-qq"], env=env, capture=True)
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env, capture=True)
    if write_if_changed(PODMAN_DROPIN, PODMAN_CONF):
        log(f"wrote {PODMAN_DROPIN}")
    # Left by podman's CNI backend (before the drop-in named netavark): a bridge
    # with the default network's subnet, whose route takes the image builds'
    # traffic into a dead link.
    if Path("/sys/class/net/cni-podman0").exists():
        log("removing the CNI bridge cni-podman0")
        run(["ip", "link", "delete", "cni-podman0"])
    ensure_network()
    ensure_ssh_key()


def _dpkg_installed(pkg: str) -> bool:
    proc = run(["dpkg-query", "-W", "-f=${db:Status-Status}", pkg], check=False, capture=True)
    return proc.stdout.strip() == "installed"


def ensure_network() -> None:
    inspect = podman("network", "inspect", "--format", "{{.DNSEnabled}}", NETWORK, check=False)
    if inspect.returncode == 0 and inspect.stdout.strip() != "true":
        # Made by an earlier bench without netavark: its containers go with it (the bench recreates them).
        log(f"recreating podman network {NETWORK} with DNS")
        podman("network", "rm", "--force", NETWORK)
    if podman("network", "exists", NETWORK, check=False).returncode != 0:
        podman("network", "create", "--label", f"{LABEL}=network", NETWORK)
        log(f"created podman network {NETWORK}")


def ssh_key() -> Path:
    return STATE / "ssh" / "id_ed25519"


def cache_dir(name: str) -> Path:
    """A cache every node shares: the kernel compiler's (ccache) or Python's (tests/bench/images/node.Containerfile)."""
    path = STATE / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def ensure_ssh_key() -> Path:
    key = ssh_key()
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        key.parent.chmod(0o700)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuops-bench", "-f", str(key)])
    return key


# --- images -------------------------------------------------------------------------------


def image_label(ref: str) -> str | None:
    proc = podman("image", "inspect", "--format", '{{ index .Labels "gpuops.recipe" }}', ref, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def build_rootfs(name: str, suite: str) -> str:
    """Debootstrap a minimal Debian and import it; returns the image reference."""
    ref = f"localhost/gpuops-rootfs:{name}"
    recipe = digest("debootstrap --variant=minbase", suite, DEBIAN_ARCHIVE)
    if image_label(ref) == recipe:
        return ref
    log(f"debootstrap {suite} (about 30 s)")
    with tempfile.TemporaryDirectory(prefix=f"gpuops-{name}-") as tmp:
        target = Path(tmp) / "rootfs"
        run(["debootstrap", "--variant=minbase", suite, str(target), DEBIAN_ARCHIVE], capture=True)
        tar = subprocess.Popen(["tar", "-C", str(target), "-c", "."], stdout=subprocess.PIPE)
        run(["podman", "import", "--change", f"LABEL gpuops.recipe={recipe}", "-", ref], stdin=tar.stdout, capture=True)
        if tar.wait() != 0:
            raise BenchError(f"tar of the {suite} rootfs failed")
    return ref


def build_image(ref: str, containerfile: Path, rootfs: str) -> None:
    # The files the Containerfile may COPY from its directory are part of the recipe.
    context = [
        p.read_text() for p in sorted(containerfile.parent.iterdir()) if p.is_file() and p.suffix != ".Containerfile"
    ]
    recipe = digest(containerfile.read_text(), *context, rootfs, image_label(rootfs) or "")
    if image_label(ref) == recipe:
        return
    log(f"building {ref}")
    run(
        [
            "podman",
            "build",
            "--pull=never",
            "--label",
            f"gpuops.recipe={recipe}",
            "--build-arg",
            f"ROOTFS={rootfs}",
            "-f",
            str(containerfile),
            "-t",
            ref,
            str(BENCH / "images"),
        ],
        capture=True,
    )


def node_image(name: str) -> str:
    return f"localhost/gpuops-node:{name}"


MIRROR_IMAGE = "localhost/gpuops-mirror:latest"


# Node images built on a node image: name -> (the node image it starts from, its Containerfile under images/).
DERIVED = {"debian12-rpm": ("debian12", "rpm.Containerfile")}


def cmd_images(_args: argparse.Namespace) -> None:
    def one(name: str, suite: str) -> None:
        rootfs = build_rootfs(name, suite)
        build_image(node_image(name), BENCH / "images" / "node.Containerfile", rootfs)
        if name == "debian12":
            build_image(MIRROR_IMAGE, BENCH / "images" / "mirror.Containerfile", rootfs)
        for derived, (base, containerfile) in DERIVED.items():
            if base == name:
                build_image(node_image(derived), BENCH / "images" / containerfile, node_image(name))

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(DISTROS)) as pool:
        for future in [pool.submit(one, n, s) for n, s in DISTROS.items()]:
            future.result()
    log("images ready: " + ", ".join(node_image(n) for n in [*DISTROS, *DERIVED]) + f", {MIRROR_IMAGE}")


# --- mirror -------------------------------------------------------------------------------


def mirror_root() -> Path:
    return STATE / "mirror"


def nginx_conf() -> str:
    blocks = []
    for host in MIRROR_UPSTREAMS:
        esc = host.replace(".", r"\.")
        # Release files and unhashed indices change with every archive update;
        # pool files and by-hash indices never change under the same name.
        blocks.append(
            f"""
    location ~ ^/{esc}/.*/dists/(?!.*/by-hash/) {{
        rewrite ^/{esc}(/.*)$ $1 break;
        proxy_pass http://{host};
        proxy_cache_valid 200 10m;
    }}
    location /{host}/ {{
        proxy_pass http://{host}/;
        proxy_cache_valid 200 60d;
    }}"""
        )
    return f"""# Written by tests/bench/bench.py mirror.
proxy_cache_path /var/cache/gpuops-mirror levels=1:2 keys_zone=mirror:20m max_size=8g inactive=60d use_temp_path=off;

server {{
    listen {MIRROR_PORT};
    root /srv/mirror/www;
    autoindex on;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_cache mirror;
    proxy_cache_key $uri;
    proxy_cache_lock on;
    proxy_cache_use_stale error timeout updating;
    proxy_cache_valid 404 1m;
{"".join(blocks)}
}}
"""


def gpg(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    home = mirror_root() / "gnupg"
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    return run(["gpg", "--homedir", str(home), "--batch", "--yes", "--quiet", *args], capture=True, check=check)


def key_fingerprint(keyfile: Path) -> str:
    """The primary key's fingerprint, as `gpg --show-keys` prints it."""
    listing = gpg("--with-colons", "--show-keys", str(keyfile)).stdout.splitlines()
    return next(line.split(":")[9] for index, line in enumerate(listing) if line.startswith("fpr:")
                and listing[index - 1].startswith("pub:"))  # fmt: skip


def build_local_repo() -> dict:
    """An apt repository signed by the bench's own key, laid out as the mirror of http://bench.gpuops.test/apt.

    Empty until later stages add stand-in packages to STATE/mirror/pool; it
    already exercises signed-by, key checksums and apt's signature checks.
    """
    repo = mirror_root() / "www" / LOCAL_REPO_HOST / "apt"
    keyfile = repo / "gpuops-bench.asc"
    if gpg("--list-secret-keys", "bench@gpuops.test", check=False).returncode != 0:
        gpg(
            "--passphrase", "", "--quick-gen-key", "gpuops bench mirror <bench@gpuops.test>", "ed25519", "sign", "never"
        )
    write_if_changed(keyfile, gpg("--armor", "--export", "bench@gpuops.test").stdout)
    pool = repo / "pool" / "main"
    pool.mkdir(parents=True, exist_ok=True)
    dists = repo / "dists" / "stable"
    binary = dists / "main" / "binary-amd64"
    binary.mkdir(parents=True, exist_ok=True)
    packages = run(["apt-ftparchive", "packages", "pool"], cwd=repo, capture=True).stdout
    changed = write_if_changed(binary / "Packages", packages)
    if changed or not (dists / "InRelease").exists():
        run(["gzip", "-9nkf", str(binary / "Packages")])
        release = run(
            [
                "apt-ftparchive",
                "-o",
                "APT::FTPArchive::Release::Origin=gpuops-bench",
                "-o",
                "APT::FTPArchive::Release::Label=gpuops-bench",
                "-o",
                "APT::FTPArchive::Release::Suite=stable",
                "-o",
                "APT::FTPArchive::Release::Codename=stable",
                "-o",
                "APT::FTPArchive::Release::Architectures=amd64",
                "-o",
                "APT::FTPArchive::Release::Components=main",
                "release",
                ".",
            ],
            cwd=dists,
            capture=True,
        ).stdout
        (dists / "Release").write_text(release)
        gpg("--local-user", "bench@gpuops.test", "--clearsign", "-o", str(dists / "InRelease"), str(dists / "Release"))
        gpg("--local-user", "bench@gpuops.test", "-abs", "-o", str(dists / "Release.gpg"), str(dists / "Release"))
    info = {
        "url": f"http://{MIRROR_NAME}:{MIRROR_PORT}",
        "local_repo": f"http://{LOCAL_REPO_HOST}/apt",
        "local_repo_key_url": f"http://{LOCAL_REPO_HOST}/apt/gpuops-bench.asc",
        "local_repo_key_sha256": hashlib.sha256(keyfile.read_bytes()).hexdigest(),
        # What tests pin the stand-in repositories by, where production pins the vendor's key.
        "local_repo_key_fingerprint": key_fingerprint(keyfile),
        "standin_repos": build_standin_repos(keyfile),
    }
    info["standin_sources"], info["standin_git"] = build_standin_sources()
    write_if_changed(mirror_root() / "mirror.json", json.dumps(info, indent=2) + "\n")
    return info


def render_standin(source: Path, dest: Path, version: str) -> None:
    """Copy a stand-in package tree, filling in @VERSION@ (Debian version, or rpm VERSION-RELEASE), @UPSTREAM@
    (without the revision) and @RELEASE@ (the revision alone)."""
    upstream, sep, release = version.split(":", 1)[-1].rpartition("-")
    if not sep:
        upstream, release = release, ""
    for path in sorted(source.rglob("*")):
        target = dest / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        for mark, value in (("@VERSION@", version), ("@UPSTREAM@", upstream), ("@RELEASE@", release)):
            data = data.replace(mark.encode(), value.encode())
        target.write_bytes(data)
        target.chmod(path.stat().st_mode & 0o777)


def tree_recipe(source: Path) -> str:
    """A digest of a stand-in package tree (names, modes, contents): a package is rebuilt when it changes."""
    paths = sorted(source.rglob("*"))
    return digest(*(f"{p.relative_to(source)}:{p.stat().st_mode}" for p in paths),
                  *(p.read_bytes() for p in paths if p.is_file()))  # fmt: skip


def build_flat_repo(repo: Path, label: str) -> None:
    """Packages, Release, InRelease and Release.gpg of a flat apt repository ("deb URL /"), signed by the bench."""
    packages = run(["apt-ftparchive", "packages", "."], cwd=repo, capture=True).stdout
    if write_if_changed(repo / "Packages", packages) or not (repo / "InRelease").exists():
        run(["gzip", "-9nkf", str(repo / "Packages")])
        release = run(
            ["apt-ftparchive", "-o", f"APT::FTPArchive::Release::Origin={label}",
             "-o", f"APT::FTPArchive::Release::Label={label}", "release", "."],
            cwd=repo,
            capture=True,
        ).stdout  # fmt: skip
        (repo / "Release").write_text(release)
        gpg("--local-user", "bench@gpuops.test", "--clearsign", "-o", str(repo / "InRelease"), str(repo / "Release"))
        gpg("--local-user", "bench@gpuops.test", "-abs", "-o", str(repo / "Release.gpg"), str(repo / "Release"))


def build_standin_repos(keyfile: Path) -> dict:
    """The repositories no reachable registry has, at their upstream paths in the mirror, holding stand-ins.

    tests/standins/<dir>/repo.json says where the real repository lives (`path`: upstream host and path, the mirror
    layout), where its signing key lives (`key`: upstream host and path of the key file, same layout), and which
    versions of each package it carries (`packages`: {name: [Debian versions]});
    tests/standins/<dir>/<package>/ is the package's tree (DEBIAN/control and its files). Several directories may
    publish into one repository (NVIDIA's CUDA repository carries fabric manager, drivers and toolkits): they are
    merged by `path`. The bench builds one .deb per version, publishes them as a flat repository signed by the
    bench's key, and puts that key where the real one is: a node reaches them only through the mirror, as an
    air-gapped site does. Returns {path: key path}.
    """
    repos: dict[str, list[tuple[Path, dict]]] = {}
    rpm_parts = []
    for spec_file in sorted(STANDINS.glob("*/repo.json")):
        spec = json.loads(spec_file.read_text())
        if spec.get("format") == "rpm":
            rpm_parts.append((spec_file.parent, spec))
            continue
        repos.setdefault(spec["path"], []).append((spec_file.parent, spec))
    published = build_rpm_repos(rpm_parts, keyfile)
    for path, parts in repos.items():
        keys = {spec["key"] for _folder, spec in parts}
        if len(keys) != 1:
            raise BenchError(f"stand-in directories publishing {path} name different keys: {sorted(keys)}")
        repo = mirror_root() / "www" / path
        repo.mkdir(parents=True, exist_ok=True)
        wanted = set()
        for folder, spec in parts:
            for package, versions in spec["packages"].items():
                wanted.update(build_standin_package(folder / package, repo, path, versions, spec))
        for old in repo.glob("*.deb"):
            if old.name not in wanted:
                old.unlink()
        published[path] = keys.pop()
        key = mirror_root() / "www" / published[path]
        key.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(keyfile, key)
        build_flat_repo(repo, f"gpuops-bench stand-in of {path}")
    return published


def build_rpm_repos(parts: list[tuple[Path, dict]], keyfile: Path) -> dict:
    """An rpm-md repository at each `paths` entry of the rpm stand-in directories (parts: (folder, repo.json); dnf's
    baseurl layout: the rpms and repodata/), holding one rpm per version of each package, signed by the bench's key as
    the real ones are by the vendor's, with that key beside them as `key_file`. Several directories may publish into
    one repository (NVIDIA's rhel9 one carries toolkits and drivers). A package is `<folder>/<name>/package.spec`
    (with @VERSION@, @UPSTREAM@, @RELEASE@; an epoch, as NVIDIA's driver rpms carry, is the spec's own Epoch line);
    its tree is rendered into the build's %{_sourcedir}, where the spec's %install may take files from. Each rpm is
    built once and copied into every repository that lacks it or holds an older recipe's. `modules` ({"name:stream":
    [package names]}) makes the repository modular as NVIDIA's is: those packages, every version, are the stream's
    artifacts in its modules.yaml. Returns {path: key path}."""
    www = mirror_root() / "www"
    wanted: dict[str, set] = {}
    changed = set()
    keys: dict[str, set] = {}
    modules: dict[str, list[str]] = {}
    for folder, spec in parts:
        for path in spec["paths"]:
            keys.setdefault(path, set()).add(spec["key_file"])
            wanted.setdefault(path, set())
            modules.setdefault(path, []).extend(modulemd(spec))
        changed.update(build_rpm_packages(folder, spec, wanted))
    published = {}
    for path, names in wanted.items():
        if len(keys[path]) != 1:
            raise BenchError(f"rpm stand-ins publishing {path} name different key files: {sorted(keys[path])}")
        repo = www / path
        repo.mkdir(parents=True, exist_ok=True)
        for old in repo.glob("*.rpm"):
            if old.name not in names:
                old.unlink()
                changed.add(path)
        document = "".join(modules[path])
        stamp = mirror_root() / "standin-recipes" / path / "modules.yaml"
        if (stamp.read_text() if stamp.exists() else "") != document:
            changed.add(path)
        if path in changed or not (repo / "repodata" / "repomd.xml").exists():
            run(["createrepo_c", "--quiet", "--update", str(repo)], capture=True)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.write_text(document)
            if document:
                run(["modifyrepo_c", "--mdtype=modules", str(stamp), str(repo / "repodata")], capture=True)
        published[path] = f"{path}/{keys[path].pop()}"
        shutil.copyfile(keyfile, www / published[path])
    return published


def modulemd(spec: dict) -> list[str]:
    """modulemd v2 documents for a stand-in directory's module streams: each stream's artifacts are its packages at
    every version the directory carries (NEVRAs, with the epoch a spec sets)."""
    documents = []
    arch = spec.get("architecture", "x86_64")
    for module_stream, names in spec.get("modules", {}).items():
        name, stream = module_stream.split(":")
        artifacts = [
            f"      - {package}-{spec.get('epochs', {}).get(package, 0)}:{version}.{arch}"
            for package in names
            for version in spec["packages"][package]
        ]
        documents.append(
            f'---\ndocument: modulemd\nversion: 2\ndata:\n  name: {name}\n  stream: "{stream}"\n  version: 1\n'
            f"  context: gpuops00\n  arch: {arch}\n  summary: {module_stream} (gpuops bench stand-in)\n"
            f"  description: Stand-in of NVIDIA's {module_stream} stream.\n  license:\n    module: [MIT]\n"
            f"  profiles:\n    default:\n      rpms: [{names[0]}]\n  artifacts:\n    rpms:\n"
            + "\n".join(artifacts)
            + "\n...\n"
        )
    return documents


def build_rpm_packages(folder: Path, spec: dict, wanted: dict) -> set:
    """Build one rpm stand-in directory's packages into its repositories (adding each rpm's file name to wanted[path]);
    returns the paths whose rpms changed."""
    www = mirror_root() / "www"
    changed = set()
    for package, versions in spec["packages"].items():
        source = folder / package
        recipe = tree_recipe(source)
        for version in versions:
            name = f"{package}-{version}.{spec.get('architecture', 'x86_64')}.rpm"
            for path in spec["paths"]:
                wanted[path].add(name)
            stamps = {path: mirror_root() / "standin-recipes" / path / f"{name}.recipe" for path in spec["paths"]}
            current = {path for path, stamp in stamps.items()
                       if (www / path / name).exists() and stamp.exists() and stamp.read_text() == recipe}  # fmt: skip
            stale = [path for path in spec["paths"] if path not in current]
            if not stale:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                render_standin(source, Path(tmp) / "SOURCES", version)
                run(["rpmbuild", "-bb", "--quiet", "--define", f"_topdir {tmp}",
                     "--define", f"_sourcedir {tmp}/SOURCES", f"{tmp}/SOURCES/package.spec"],
                    capture=True)  # fmt: skip
                built = next(Path(tmp, "RPMS").rglob("*.rpm"))
                # rpm's own default for gpg's path is not where Debian puts it.
                run(["rpmsign", "--define", f"__gpg {shutil.which('gpg')}",
                     "--define", f"_gpg_path {mirror_root() / 'gnupg'}",
                     "--define", "_gpg_name bench@gpuops.test", "--addsign", str(built)],
                    capture=True)  # fmt: skip
                for path in stale:
                    (www / path).mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(built, www / path / name)
                    stamps[path].parent.mkdir(parents=True, exist_ok=True)
                    stamps[path].write_text(recipe)
                    changed.add(path)
    return changed


def build_standin_sources() -> tuple[dict, dict]:
    """Sources no reachable host serves, at their upstream paths in the mirror, holding stand-ins.

    tests/standins/<dir>/source.json names the upstream path (`path`: host and path, the mirror layout), the
    tarball's top directory (`prefix`, as GitHub's archive names it) and the `files` of the directory it holds.
    The tarball is reproducible (sorted names, fixed mtime, owner and modes, gzip without a timestamp), so its
    sha256 stays the same until a file changes, and tests can pin it. With `git` (host and path of the upstream
    repository), the same files are also published there as a git repository of one commit, served over git's
    "dumb" HTTP protocol (static files). Returns ({path: sha256}, {git path: commit}).
    """
    published, commits = {}, {}
    for spec_file in sorted(STANDINS.glob("*/source.json")):
        spec = json.loads(spec_file.read_text())
        files = {name: (spec_file.parent / name).read_bytes() for name in sorted(spec["files"])}
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
            for name, data in files.items():
                info = tarfile.TarInfo(f"{spec['prefix']}/{name}")
                info.size, info.mode, info.mtime, info.uname, info.gname = len(data), 0o644, 0, "root", "root"
                tar.addfile(info, io.BytesIO(data))
        target = mirror_root() / "www" / spec["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != buffer.getvalue():
            target.write_bytes(buffer.getvalue())
        published[spec["path"]] = hashlib.sha256(buffer.getvalue()).hexdigest()
        if spec.get("git"):
            commits[spec["git"]] = publish_git_repository(mirror_root() / "www" / spec["git"], files)
    return published, commits


def publish_git_repository(target: Path, files: dict) -> str:
    """A bare git repository of one commit holding `files`, made with git's plumbing, with the info/refs file git's
    dumb HTTP protocol reads. The commit (fixed author, committer and time) is the same until a file changes, so tests
    can pin it; the repository is rewritten only then. Returns the commit."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent))
    who = {"NAME": "gpuops.bringup test bench", "EMAIL": "bench@gpuops.test", "DATE": "@0 +0000"}
    env = {
        **os.environ,
        **{f"GIT_{role}_{key}": value for role in ("AUTHOR", "COMMITTER") for key, value in who.items()},
        "GIT_DIR": str(staging),
        "GIT_INDEX_FILE": str(staging / "index"),
    }

    def git(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", *args], input=data, env=env, capture_output=True, check=True).stdout.decode()

    # No template: the served tree holds the repository alone (no sample hooks).
    git("init", "--quiet", "--bare", "--template=", "--initial-branch=main")
    for name, data in files.items():
        blob = git("hash-object", "-w", "--stdin", data=data).strip()
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{name}")
    tree = git("write-tree").strip()
    commit = git("commit-tree", tree, "-m", "gpuops bench stand-in (tests/standins/README.md)").strip()
    head = target / "refs" / "heads" / "main"
    if head.is_file() and head.read_text().strip() == commit:
        shutil.rmtree(staging)
        return commit
    git("update-ref", "refs/heads/main", commit)
    git("update-server-info")
    (staging / "index").unlink()
    for path in staging.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    staging.chmod(0o755)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return commit


def build_standin_package(source: Path, repo: Path, path: str, versions: list[str], spec: dict) -> list[str]:
    """One .deb per version of the package tree `source` into `repo`, rebuilt only when the tree changed."""
    recipe = tree_recipe(source)
    names = []
    for version in versions:
        deb = repo / f"{source.name}_{version.split(':', 1)[-1]}_{spec.get('architecture', 'amd64')}.deb"
        # Kept outside the served tree: the recipe each .deb was built from.
        stamp = mirror_root() / "standin-recipes" / path / f"{deb.name}.recipe"
        stamp.parent.mkdir(parents=True, exist_ok=True)
        names.append(deb.name)
        if deb.exists() and stamp.exists() and stamp.read_text() == recipe:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            render_standin(source, Path(tmp) / "root", version)
            run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(Path(tmp) / "root"), str(deb)],
                capture=True)  # fmt: skip
        stamp.write_text(recipe)
    return names


def container_label(name: str, label: str) -> str:
    proc = podman("container", "inspect", "--format", f'{{{{ index .Config.Labels "{label}" }}}}', name, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def container_running(name: str) -> bool:
    proc = podman("container", "inspect", "--format", "{{.State.Running}}", name, check=False)
    return proc.returncode == 0 and proc.stdout.strip() == "true"


def cmd_mirror(_args: argparse.Namespace) -> None:
    # Molecule scenarios run side by side call this concurrently: one at a time
    # rebuilds the repositories and (re)starts the mirror.
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "mirror.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        start_mirror()


def start_mirror() -> None:
    ensure_network()
    info = build_local_repo()
    conf = mirror_root() / "nginx.conf"
    conf_changed = write_if_changed(conf, nginx_conf())
    cache = STATE / "cache" / "mirror"
    cache.mkdir(parents=True, exist_ok=True)
    # The bench state it serves is part of the recipe: another checkout's mirror serves another key.
    recipe = digest(nginx_conf(), image_label(MIRROR_IMAGE) or "", str(mirror_root()))
    if conf_changed or not container_running(MIRROR_NAME) or container_label(MIRROR_NAME, "gpuops.recipe") != recipe:
        podman("rm", "--force", "--ignore", MIRROR_NAME)
        podman(
            "run",
            "--detach",
            "--name",
            MIRROR_NAME,
            "--hostname",
            MIRROR_NAME,
            "--network",
            NETWORK,
            "--label",
            f"{LABEL}=mirror",
            "--label",
            f"gpuops.recipe={recipe}",
            "--publish",
            f"127.0.0.1::{MIRROR_PORT}",
            "--volume",
            f"{mirror_root() / 'www'}:/srv/mirror/www:ro",
            "--volume",
            f"{conf}:/etc/nginx/conf.d/gpuops-mirror.conf:ro",
            "--volume",
            f"{cache}:/var/cache/gpuops-mirror",
            MIRROR_IMAGE,
        )
    port = published_port(MIRROR_NAME, MIRROR_PORT)
    probe = f"http://127.0.0.1:{port}/{LOCAL_REPO_HOST}/apt/dists/stable/InRelease"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(probe, timeout=5) as resp:
                if resp.status == 200:
                    break
        except OSError as exc:
            if time.monotonic() > deadline:
                raise BenchError(f"the mirror does not answer at {probe}: {exc}") from exc
            time.sleep(0.5)
    log(f"mirror ready: {info['url']} (from the host: http://127.0.0.1:{port})")


def published_port(name: str, port: int) -> int:
    out = podman("port", name, f"{port}/tcp").stdout.strip().splitlines()
    if not out:
        raise BenchError(f"container {name} publishes no port {port}")
    return int(out[0].rsplit(":", 1)[1])


# --- nodes --------------------------------------------------------------------------------


# --- simulated hardware (tests/sim) ----------------------------------------------------------


# Tools a stage installs, whose stand-in packages replay the profile's captures (tests/standins: dcgmi of
# datacenter-gpu-manager-4-core): not mounted, so a node has them only once the stage installed them.
INSTALLED_TOOLS = ("dcgmi",)


def sim_profile(name: str) -> dict:
    """A simulated-hardware profile with its base profiles merged in (a fault variant names its healthy base)."""
    path = SIM / "profiles" / f"{name}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in (SIM / "profiles").glob("*.json")))
        raise BenchError(f"unknown simulated hardware profile {name!r}; known: {known}")
    data = json.loads(path.read_text())
    if "base" not in data:
        return data
    merged = sim_profile(data["base"])
    commands = {tool: dict(entries) for tool, entries in merged.get("commands", {}).items()}
    for tool, entries in data.get("commands", {}).items():
        commands.setdefault(tool, {}).update(entries)
    return {**merged, **{k: v for k, v in data.items() if k != "base"}, "commands": commands}


def driver_presentation(profile: dict) -> dict:
    """What replay.py needs to present the node's installed driver instead of the capture's: the capture's driver
    and CUDA versions, and the newest CUDA each driver supports (the collection's gpu_catalog table)."""
    query = profile.get("commands", {}).get("nvidia-smi", {}).get("-q -x")
    if query is None or query.get("rc", 0) != 0:
        return {}
    text = (FIXTURES / query["file"]).read_text(errors="replace")
    driver = re.search(r"<driver_version>([^<]*)</driver_version>", text)
    cuda = re.search(r"<cuda_version>([^<]*)</cuda_version>", text)
    spec = importlib.util.spec_from_file_location("gpu_catalog", ROOT / "plugins" / "module_utils" / "gpu_catalog.py")
    catalog = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(catalog)
    newest: dict[str, str] = {}
    for _label, version, minimum in catalog.TOOLKIT_DRIVERS:
        release = ".".join(version.split(".")[:2])
        newest.setdefault(release, minimum)
        if tuple(map(int, minimum.split("."))) < tuple(map(int, newest[release].split("."))):
            newest[release] = minimum
    return {
        "captured_driver": driver.group(1) if driver else None,
        "captured_cuda": cuda.group(1) if cuda else None,
        "cuda_drivers": sorted(newest.items()),
    }


def stage_sim(name: str, stage: Path, build: Path) -> tuple[list[str], str]:
    """Stage a profile's captures into build, for a node that mounts them from stage.

    Returns the podman mount options and a digest of everything staged.

    Each tool of the profile but INSTALLED_TOOLS becomes /usr/local/bin/<tool> (tests/sim/standin.sh),
    replaying its captures; /etc/gpuops/simulated-hardware.json says which
    profile this node simulates, so reports can say so.
    """
    profile = sim_profile(name)
    shutil.rmtree(build, ignore_errors=True)
    (build / "captures").mkdir(parents=True)
    shutil.copy2(SIM / "replay.py", build / "replay.py")
    commands, captures = {}, []
    for tool, entries in profile.get("commands", {}).items():
        for args, entry in entries.items():
            staged_files = []
            for capture in entry.get("files", [entry.get("file")]):
                source = FIXTURES / capture
                target = f"captures/{len(captures):02d}-{source.name}"
                shutil.copy2(source, build / target)
                captures.append(capture)
                staged_files.append(target)
            key = {"files": staged_files} if "files" in entry else {"file": staged_files[0]}
            commands.setdefault(tool, {})[args] = {**key, "rc": entry.get("rc", 0)}
    staged = {"profile": name, "commands": commands, **driver_presentation(profile)}
    (build / "profile.json").write_text(json.dumps(staged, indent=2))
    marker = {
        "profile": name,
        "description": profile.get("description", ""),
        "captures": sorted(set(captures)),
        "sources": "tests/fixtures/SOURCES.md in gpuops.bringup",
    }
    (build / "marker.json").write_text(json.dumps(marker, indent=2))
    mounts = ["--volume", f"{stage}:/usr/share/gpuops-sim:ro"]
    mounts += ["--volume", f"{stage / 'marker.json'}:/etc/gpuops/simulated-hardware.json:ro"]
    for tool in sorted(set(commands) - set(INSTALLED_TOOLS)):
        mounts += ["--volume", f"{SIM / 'standin.sh'}:/usr/local/bin/{tool}:ro"]
    staged_captures = [(build / "captures" / p).read_bytes() for p in sorted(os.listdir(build / "captures"))]
    return mounts, digest(
        (build / "profile.json").read_text(), (SIM / "replay.py").read_text(), *staged_captures, *mounts
    )


def start_node(group: str, spec: dict) -> dict:
    name = spec["name"]
    image = node_image(spec.get("image", "debian12"))
    if image_label(image) is None:
        raise BenchError(f"image {image} is missing: run `make setup` (bench.py images) first")
    key = ssh_key()
    stage, build = STATE / "sim" / name, STATE / "sim" / f"{name}.new"
    sim_mounts, sim_digest = stage_sim(spec["hardware"], stage, build) if spec.get("hardware") else ([], "")
    # A node started for another image, SSH key (another checkout's bench) or
    # simulated hardware is replaced.
    recipe = digest(image_label(image) or "", key.with_suffix(".pub").read_text(), sim_digest)
    if container_running(name) and container_label(name, "gpuops.recipe") == recipe:
        shutil.rmtree(build, ignore_errors=True)
    else:
        remove_containers([name])
        # A running node's mounts still point at its stage; replace it only now.
        shutil.rmtree(stage, ignore_errors=True)
        if build.exists():
            build.rename(stage)
        cmd = [
            "run",
            "--detach",
            "--name",
            name,
            "--hostname",
            spec.get("hostname", name),
            "--network",
            NETWORK,
            "--systemd=always",
            "--label",
            f"{LABEL}=node",
            "--label",
            f"gpuops.bench.group={group}",
            "--label",
            f"gpuops.recipe={recipe}",
            "--publish",
            f"127.0.0.1:{spec.get('ssh_port', '')}:22",
            "--volume",
            f"{key}.pub:/root/.ssh/authorized_keys:ro",
            "--volume",
            f"{cache_dir('ccache')}:/var/cache/bench-ccache",
            "--volume",
            f"{cache_dir('pycache')}:/var/cache/bench-pycache",
            *sim_mounts,
            image,
        ]
        run_publishing(name, cmd)
    port = published_port(name, 22)
    wait_for_ssh(name, port)
    return {
        "instance": spec.get("instance", name),
        "container": name,
        "address": "127.0.0.1",
        "port": port,
        "user": "root",
        "identity_file": str(key),
        "image": image,
        "hardware": spec.get("hardware", ""),
    }


def run_publishing(name: str, cmd: list[str], tries: int = 4) -> None:
    """`podman run` a container that publishes a port podman picks.

    Podman picks a free host port when it creates the container and binds it
    only when the container starts (podman issue 19048): nodes started at once
    by two test workers now and then get the same port, and the later one fails
    with "address already in use". That container is removed and started again,
    when podman picks anew.

    The failed start also costs the node that holds the port its reachability:
    netavark (1.4, iptables) adds the loser's forwarding rules before the bind
    fails and deletes them after, and its two "mark for masquerade" rules are
    the same for any container on that host port, so the deletion removes the
    holder's: connections from 127.0.0.1 to the holder then hang (seen in CI as
    "no SSH banner"). The holder's rules are made again (podman network reload).
    """
    for attempt in range(tries):
        proc = podman(*cmd, check=False)
        if proc.returncode == 0:
            return
        taken = re.search(r":(\d+): bind: address already in use", proc.stderr)
        if not taken:
            raise BenchError(f"podman could not start {name} (rc={proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
        holders = port_holders(int(taken.group(1)))
        if holders:
            log(f"{name}: restoring the forwarding rules of {', '.join(holders)}, which holds its port")
            podman("network", "reload", *holders)
        if attempt == tries - 1:
            raise BenchError(f"podman could not start {name} (rc={proc.returncode}):\n{proc.stderr.strip()[-2000:]}")
        log(f"{name}: its published port was taken meanwhile; starting it again")
        remove_containers([name])


def port_holders(port: int) -> list[str]:
    """Running containers that publish a host port (podman 4.3's `ps` has no filter for it)."""
    listing = podman("ps", "--format", "{{.Names}}\t{{.Ports}}").stdout
    published = re.compile(rf":{port}->")
    return [line.split("\t")[0] for line in listing.splitlines() if "\t" in line and published.search(line)]


def wait_for_ssh(name: str, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            logs = podman("logs", "--tail", "20", name, check=False).stdout
            raise BenchError(f"node {name}: no SSH banner on 127.0.0.1:{port} after {timeout:.0f} s\n{logs}")
        time.sleep(0.3)


def cmd_nodes(args: argparse.Namespace) -> None:
    if args.action == "up":
        specs = json.loads(args.spec)
        if args.prefix:
            # Molecule platforms: the container name carries the group, so
            # scenarios can run side by side; the inventory name stays short.
            specs = [dict(s, name=f"{args.group}-{s['name']}", instance=s["name"], hostname=s["name"]) for s in specs]
        ensure_network()
        ensure_ssh_key()
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
            nodes = list(pool.map(lambda s: start_node(args.group, s), specs))
        if args.inventory:
            write_inventory(nodes, Path(args.inventory), args.groups.split(",") if args.groups else [])
        json.dump(nodes, sys.stdout, indent=2)
        print()
    else:
        names = podman("ps", "-a", "--format", "{{.Names}}", "--filter", f"label=gpuops.bench.group={args.group}")
        names = names.stdout.split()
        remove_containers(names)
        for name in names:
            shutil.rmtree(STATE / "sim" / name, ignore_errors=True)


def remove_containers(names: list[str], tries: int = 4) -> None:
    """Remove containers, retrying the ones podman could not remove yet.

    On a loaded 2-core CI machine rootless podman now and then fails a removal
    (a container still "Created" while its conmon starts, storage busy while
    the stop settles); one failed teardown must not fail a whole test run.
    """
    left = list(names)
    for attempt in range(tries):
        if not left:
            return
        proc = podman("rm", "--force", "--ignore", "--time", "5", *left, check=False)
        if proc.returncode == 0:
            return
        present = set(podman("ps", "-a", "--format", "{{.Names}}\t{{.ID}}").stdout.split())
        left = [name for name in left if name in present]
        if attempt < tries - 1:
            time.sleep(2 * (attempt + 1))
    if left:
        raise BenchError(f"podman could not remove {', '.join(left)}:\n{proc.stderr.strip()[-2000:]}")


def write_inventory(nodes: list[dict], path: Path, groups: list[str]) -> None:
    """An Ansible inventory (JSON) for started nodes, each also in the given groups."""
    hosts = {
        n["instance"]: {
            "ansible_host": n["address"],
            "ansible_port": n["port"],
            "ansible_user": n["user"],
            "ansible_ssh_private_key_file": n["identity_file"],
            # Bench containers get new host keys whenever they are recreated.
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        }
        for n in nodes
    }
    children = {group: {"hosts": dict.fromkeys(hosts)} for group in groups}
    write_if_changed(path, json.dumps({"all": {"hosts": hosts, "children": children}}, indent=2) + "\n")


RACK_GROUP = "rack"


def cmd_rack(args: argparse.Namespace) -> None:
    """The built-in default rack: one node container per host of inventory/local.yml, on its fixed SSH port."""
    if args.action == "down":
        cmd_nodes(argparse.Namespace(action="down", group=RACK_GROUP))
        return
    proc = run(["ansible-inventory", "-i", str(ROOT / "inventory" / "local.yml"), "--list"], capture=True, cwd=ROOT)
    hostvars = json.loads(proc.stdout)["_meta"]["hostvars"]
    specs = [
        {
            "name": name,
            "image": hv.get("gpuops_bench_image", "debian12"),
            "hardware": hv.get("gpuops_bench_hardware", ""),
            "ssh_port": hv["ansible_port"],
        }
        for name, hv in sorted(hostvars.items())
    ]
    ensure_network()
    ensure_ssh_key()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        nodes = list(pool.map(lambda spec: start_node(RACK_GROUP, spec), specs))
    for node in nodes:
        hardware = f", simulated {node['hardware']}" if node["hardware"] else ""
        log(f"rack node {node['instance']} ({node['image']}{hardware}) on 127.0.0.1:{node['port']}")


def cmd_clean(_args: argparse.Namespace) -> None:
    remove_containers(podman("ps", "-aq", "--filter", f"label={LABEL}").stdout.split())
    podman("network", "rm", "--force", NETWORK, check=False)
    images = [*(node_image(n) for n in [*DERIVED, *DISTROS]), MIRROR_IMAGE]
    for ref in [*images, *(f"localhost/gpuops-rootfs:{n}" for n in DISTROS)]:
        podman("rmi", "--force", ref, check=False)
    shutil.rmtree(STATE, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("host").set_defaults(func=cmd_host)
    sub.add_parser("images").set_defaults(func=cmd_images)
    sub.add_parser("mirror").set_defaults(func=cmd_mirror)
    nodes = sub.add_parser("nodes")
    nodes.add_argument("action", choices=["up", "down"])
    nodes.add_argument("group")
    nodes.add_argument("spec", nargs="?", default="[]")
    nodes.add_argument("--prefix", action="store_true", help="prefix container names with the group")
    nodes.add_argument("--inventory", help="also write an Ansible inventory (JSON) of the nodes to this file")
    nodes.add_argument("--groups", help="comma-separated groups every node of that inventory is in")
    nodes.set_defaults(func=cmd_nodes)
    rack = sub.add_parser("rack")
    rack.add_argument("action", choices=["up", "down"])
    rack.set_defaults(func=cmd_rack)
    sub.add_parser("clean").set_defaults(func=cmd_clean)
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
