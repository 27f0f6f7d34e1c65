"""Flat apt repositories signed by throwaway keys, made with gpg and apt-ftparchive as the bench makes its mirror's.

For the tests of the Release signature check (module_utils signed_release, repository_index) where the shape a test
needs (dash-escaped lines, a subkey, a tampered index) is in no captured repository. Real tools, real signatures:
only the keys are new for each test session.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import tempfile
from pathlib import Path


def _gone_is_fine(function, path, info) -> None:
    """rmtree's error handler: the agent gpgconf stopped removes its sockets as it exits, so a file may vanish under
    rmtree (seen as FileNotFoundError with two test runs on the machine); anything else is raised."""
    if not issubclass(info[0], FileNotFoundError):
        raise info[1]


class Signer:
    """One gpg home holding one key; the key's armored export and fingerprint.

    The home is a short directory of its own under the system's temporary directory, not under a test's tmp_path:
    gpg-agent's sockets live in it and a socket's path has at most 107 bytes, which pytest's deeper tmp_path
    (xdist worker, module, case) exceeds, and gpg then fails to make a key.
    """

    def __init__(self, name: str, algorithm: str = "ed25519", subkey: str | None = None):
        self.home = Path(tempfile.mkdtemp(prefix="gpg-"))
        uid = f"{name} <{name}@gpuops.test>"
        self.gpg("--passphrase", "", "--quick-gen-key", uid, algorithm, "sign", "never")
        listing = self.gpg("--with-colons", "--list-keys").stdout.splitlines()
        self.fingerprint = next(line.split(":")[9] for line in listing if line.startswith("fpr:"))
        if subkey:
            self.gpg("--passphrase", "", "--quick-add-key", self.fingerprint, subkey, "sign", "never")
        self.key = self.gpg("--armor", "--export", self.fingerprint, text=False).stdout

    def gpg(self, *args: str, data: bytes | None = None, text: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            ["gpg", "--homedir", str(self.home), "--batch", "--yes", "--quiet", *args],
            input=data,
            capture_output=True,
            check=True,
        )
        if text:
            proc.stdout = proc.stdout.decode()
        return proc

    def revoke_subkeys(self) -> None:
        """Revoke every subkey (gpg's edit-key dialogue: key 1, revkey, reason 0, no text), and export again."""
        self.gpg("--pinentry-mode", "loopback", "--passphrase", "", "--command-fd", "0", "--edit-key",
                 self.fingerprint, data=b"key 1\nrevkey\ny\n0\n\ny\nsave\n")  # fmt: skip
        self.key = self.gpg("--armor", "--export", self.fingerprint, text=False).stdout

    def revoke(self) -> None:
        """Revoke the key with the revocation certificate gpg made with it, and export again."""
        certificate = (self.home / "openpgp-revocs.d" / f"{self.fingerprint}.rev").read_bytes()
        # gpg writes the certificate with its armor line masked (":-----BEGIN"), so that no import is an accident.
        self.gpg("--import", data=certificate.replace(b":-----BEGIN", b"-----BEGIN"))
        self.key = self.gpg("--armor", "--export", self.fingerprint, text=False).stdout

    def close(self) -> None:
        """Stop the gpg-agent gpg started for this home, which would otherwise outlive the test, and remove the home."""
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], capture_output=True, check=True)
        shutil.rmtree(self.home, onerror=_gone_is_fine)

    def clearsign(self, data: bytes, *options: str) -> bytes:
        return self.gpg("--clearsign", *options, data=data, text=False).stdout

    def detach(self, data: bytes, *options: str) -> bytes:
        return self.gpg("--detach-sign", *options, data=data, text=False).stdout


def flat_repo(directory: Path, signer: Signer, packages: bytes) -> dict:
    """{name: bytes} of a flat repository ("deb URL /") in directory: Packages.gz, the Release apt-ftparchive writes
    for it, InRelease and Release.gpg by signer."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "Packages.gz").write_bytes(gzip.compress(packages, mtime=0))
    release = subprocess.run(["apt-ftparchive", "release", "."], cwd=directory, capture_output=True, check=True).stdout
    return {
        "Packages.gz": (directory / "Packages.gz").read_bytes(),
        "Release": release,
        "InRelease": signer.clearsign(release),
        "Release.gpg": signer.detach(release),
    }
