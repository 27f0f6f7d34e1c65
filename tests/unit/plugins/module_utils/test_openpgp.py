"""openpgp's fingerprints on real published keys (Debian's archive keys, tests/fixtures/openpgp, SOURCES.md), checked
against what `gpg --show-keys` printed for them."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp

KEYS = Path(__file__).resolve().parents[3] / "fixtures" / "openpgp"
# gpg --with-colons --show-keys <file>: the fpr line after the pub line.
GPG = {
    "debian-archive-bookworm-stable.asc": "4D64FEC119C2029067D6E791F8D2585B8783D481",
    "debian-archive-trixie-automatic.asc": "04B54C3CDCA79751B16BC6B5225629DF75B188BD",
    "debian-archive-bookworm-security-automatic.gpg": "05AB90340C0C5E797F44A8C8254CF3B5AEC0A8F0",
    "debian-archive-bookworm-automatic.asc": "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8",
}


@pytest.mark.parametrize("name", sorted(GPG))
def test_primary_fingerprint_matches_gpg(name):
    # Armored (ed25519 and RSA 4096, each with a subkey, whose fingerprint is not the key's) and binary.
    assert openpgp.primary_fingerprints((KEYS / name).read_bytes()) == [GPG[name]]


def test_a_file_with_several_keys_gives_each_primary_in_order():
    data = (KEYS / "debian-archive-bookworm-stable.asc").read_bytes()
    binary = openpgp.dearmor(data) + (KEYS / "debian-archive-bookworm-security-automatic.gpg").read_bytes()
    assert openpgp.primary_fingerprints(binary) == [
        GPG["debian-archive-bookworm-stable.asc"],
        GPG["debian-archive-bookworm-security-automatic.gpg"],
    ]


def test_new_format_packet_headers_give_the_same_fingerprint():
    """gpg writes old-format headers; RFC 9580 implementations (Sequoia) write new ones: reframe the key packet."""
    binary = (KEYS / "debian-archive-bookworm-security-automatic.gpg").read_bytes()
    (tag, body), *_rest = list(openpgp.packets(binary))
    assert tag == openpgp.PUBLIC_KEY_TAG
    length = len(body) - 192
    reframed = bytes([0xC0 | tag, (length >> 8) + 192, length & 0xFF]) + body
    assert 192 <= len(body) < 8384
    assert openpgp.primary_fingerprints(reframed) == [GPG["debian-archive-bookworm-security-automatic.gpg"]]
    five_octet = bytes([0xC0 | tag, 255]) + len(body).to_bytes(4, "big") + body
    assert openpgp.primary_fingerprints(five_octet) == [GPG["debian-archive-bookworm-security-automatic.gpg"]]


def test_armor_headers_are_skipped():
    data = (KEYS / "debian-archive-bookworm-stable.asc").read_bytes()
    with_header = data.replace(b"-----\n", b"-----\nComment: a comment line\n", 1)
    assert with_header != data
    assert openpgp.primary_fingerprints(with_header) == [GPG["debian-archive-bookworm-stable.asc"]]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<html>404 Not Found</html>", "byte 0 is no OpenPGP packet header"),
        (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not valid base64"),
        # A user id packet alone: no key in the file.
        (bytes([0xB4, 3]) + b"abc", "the file holds no OpenPGP public key"),
    ],
)
def test_what_is_not_a_key_file_says_why(data, message):
    with pytest.raises(openpgp.KeyFileError, match=message):
        openpgp.primary_fingerprints(data)


def test_a_truncated_key_file_is_refused():
    binary = (KEYS / "debian-archive-bookworm-security-automatic.gpg").read_bytes()
    with pytest.raises(openpgp.KeyFileError, match="truncated"):
        openpgp.primary_fingerprints(binary[:100])
    armored = (
        b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
        + base64.b64encode(binary[:100])
        + b"\n-----END PGP PUBLIC KEY BLOCK-----\n"
    )
    with pytest.raises(openpgp.KeyFileError, match="truncated"):
        openpgp.primary_fingerprints(armored)


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("0xeb693b3035cd5710e231e123a4b469963bf863cc", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    ],
)
def test_normalize(written, normal):
    assert openpgp.normalize(written) == normal
    assert openpgp.FINGERPRINT.match(normal)
