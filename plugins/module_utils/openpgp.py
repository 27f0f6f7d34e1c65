# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fingerprints of the primary keys in an OpenPGP public key file, armored or binary, without gpg.

A repository's signing key is pinned by its fingerprint, the value vendors publish ("EB69 3B30 35CD 5710 E231 E123
A4B4 6996 3BF8 63CC" for NVIDIA's CUDA repositories): it stays the same when the vendor re-exports the key with new
signatures or subkeys, where the file's checksum changes. Nodes need no gpg for it (Debian installs only gpgv or
sqv). RFC 4880 (packet framing, v4 fingerprints) and RFC 9580 (v6). Python 3.8 compatible: shipped to nodes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

PUBLIC_KEY_TAG = 6
PUBLIC_KEY_BLOCK = b"PUBLIC KEY BLOCK"
# A key file is kilobytes (NVIDIA's: 1.7 KB; Debian's archive keyring: 100 KB).
MAX_KEY_FILE = 4 * 1024 * 1024


class KeyFileError(parsing.ParseError):
    """Not an OpenPGP public key file; the message says why."""


def dearmor(data, block=PUBLIC_KEY_BLOCK):
    """The binary packets of an ASCII-armored file (its armor headers and CRC line dropped); binary data as is.
    block: the armor's kind (C(-----BEGIN PGP <block>-----)), a key file's or b"SIGNATURE".

    The armor is found by plain search: a regular expression from BEGIN to END scanned to the end of the file
    from every BEGIN, quadratic in a file repeating BEGIN."""
    if len(data) > MAX_KEY_FILE:
        raise KeyFileError(f"the file is {len(data)} bytes, more than any key or signature file ({MAX_KEY_FILE})")
    begin_line, end_line = b"-----BEGIN PGP " + block + b"-----", b"-----END PGP " + block + b"-----"
    begin = data.find(begin_line)
    if begin < 0:
        return data
    newline = data.find(b"\n", begin + len(begin_line))
    end = data.find(end_line, begin + len(begin_line))
    if newline < 0 or end < 0 or data[begin + len(begin_line) : newline].strip(b"\r"):
        raise KeyFileError("the armor has no body between its BEGIN and END lines")
    lines = [line.strip() for line in data[newline + 1 : end].splitlines()]
    # Armor headers ("Version: ...", "Comment: ...") end at the first blank line; the "=" line is the CRC.
    if b"" in lines:
        lines = lines[lines.index(b"") + 1 :]
    encoded = b"".join(line for line in lines if line and not line.startswith(b"="))
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error as exc:
        raise KeyFileError(f"the armor is not valid base64: {exc}") from exc


def packets(data):
    """(tag, body) for each OpenPGP packet of binary data (old and new packet formats)."""
    offset = 0
    while offset < len(data):
        header = data[offset]
        if not header & 0x80:
            raise KeyFileError(f"byte {offset} is no OpenPGP packet header")
        # The longest header is 6 bytes; one cut short is a truncated file, not an IndexError.
        if len(data) - offset < 2 or (header & 0x40 and data[offset + 1] >= 192 and len(data) - offset < 6):
            raise KeyFileError("the key file is truncated")
        if header & 0x40:
            tag = header & 0x3F
            first = data[offset + 1]
            if first < 192:
                length, offset = first, offset + 2
            elif first < 224:
                length, offset = ((first - 192) << 8) + data[offset + 2] + 192, offset + 3
            elif first == 255:
                length, offset = int.from_bytes(data[offset + 2 : offset + 6], "big"), offset + 6
            else:
                # Partial body lengths are for literal and encrypted data, never in a key file.
                raise KeyFileError(f"packet at byte {offset} has a partial length, which a key file never uses")
        else:
            tag = (header >> 2) & 0x0F
            size = {0: 1, 1: 2, 2: 4}.get(header & 0x03)
            if size is None:
                raise KeyFileError(f"packet at byte {offset} has an indeterminate length")
            if len(data) - offset < 1 + size:
                raise KeyFileError("the key file is truncated")
            length = int.from_bytes(data[offset + 1 : offset + 1 + size], "big")
            offset += 1 + size
        body = data[offset : offset + length]
        if len(body) != length:
            raise KeyFileError("the key file is truncated")
        yield tag, body
        offset += length


def fingerprint(body):
    """The fingerprint of a public key packet body, upper-case hex: v4 SHA-1, v6 SHA-256."""
    version = body[0] if body else None
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise KeyFileError(f"public key version {version} is not supported (v4 and v6 are)")


def primary_fingerprints(data):
    """Fingerprints of every primary key in a key file (a file may hold several keys), in file order."""
    binary = dearmor(data)
    found = [fingerprint(body) for tag, body in packets(binary) if tag == PUBLIC_KEY_TAG]
    if not found:
        raise KeyFileError("the file holds no OpenPGP public key")
    return found


def normalize(value):
    """A fingerprint as written by people ("EB69 3B30 ...", "0x...", lower case) in the form computed here."""
    text = re.sub(r"\s+", "", str(value or "")).upper()
    return text[2:] if text.startswith("0X") else text


FINGERPRINT = re.compile(r"^([0-9A-F]{40}|[0-9A-F]{64})$")
