# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An apt repository's signed Release, verified against a key without gpg: what makes its package index trusted.

apt trusts a Packages index through the Release file (its SHA-256 and size are listed there) and the Release file
through its OpenPGP signature (InRelease, cleartext-signed; or Release with a detached Release.gpg). This module does
the same for repository_index, which reads a repository before apt has it configured: it verifies a v4 signature
(RFC 4880 5.2: RSA PKCS#1 v1.5, or EdDSA over Ed25519 as GnuPG makes them, RFC 8032) made by the key file's primary
key or one of its signing subkeys, and returns the Release text and its SHA-256 table. Pure Python (nodes need no
gpg), Python 3.8 compatible: shipped to nodes with repository_index.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp, parsing

SIGNATURE_TAG = 2
PUBLIC_KEY_TAG = 6
PUBLIC_SUBKEY_TAG = 14
SIGNATURE_BLOCK = b"SIGNATURE"
USER_ID_TAG = 13
USER_ATTRIBUTE_TAG = 17
# Signature types (RFC 4880 5.2.1).
BINARY, TEXT, SUBKEY_BINDING, KEY_REVOCATION, SUBKEY_REVOCATION = 0x00, 0x01, 0x18, 0x20, 0x28
# Subpacket types (RFC 4880 5.2.3.1, RFC 9580 5.2.3.35) and the key flag "may sign data".
ISSUER, KEY_FLAGS, ISSUER_FINGERPRINT = 16, 27, 33
SIGN = 0x02
# apt refuses SHA-1 and MD5 for Release signatures, so only these count.
HASHES = {8: "sha256", 9: "sha384", 10: "sha512", 11: "sha224"}
MIN_RSA_BITS = 1024
# EMSA-PKCS1-v1_5's DigestInfo prefixes (RFC 8017 9.2 note 1).
DIGEST_INFO = {
    "sha224": bytes.fromhex("302d300d06096086480165030402040500041c"),
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}
RSA_ALGORITHMS = (1, 3)
# EdDSA as GnuPG and Sequoia make v4 keys (RFC 4880bis; RFC 9580's native Ed25519, 27, no vendor signs with yet).
EDDSA_LEGACY = 22
ED25519_OID = bytes.fromhex("2b06010401da470f01")
BEGIN_MESSAGE = "-----BEGIN PGP SIGNED MESSAGE-----"
BEGIN_SIGNATURE = "-----BEGIN PGP SIGNATURE-----"
END_SIGNATURE = "-----END PGP SIGNATURE-----"
# A Release file is a few hundred KB (Debian's: 150 KB); NVIDIA's flat repositories' a few KB.
MAX_RELEASE = 16 * 1024 * 1024
# Each Ed25519 check costs milliseconds in pure Python: a Release carries a few signatures (Debian's three), a key
# file a few subkey bindings and revocations, so a file crafted with thousands costs no more than these.
MAX_SIGNATURES = 16
MAX_KEY_SIGNATURES = 64


class SignatureError(parsing.ParseError):
    """The Release is not signed by the key, or not readable as a signed Release; the message says which."""


# --- Ed25519 (RFC 8032 5.1), verification only ----------------------------------------------------------------------

_P = 2**255 - 19
_L = 2**252 + 27742317777372353535851937790883648493
_D = -121665 * pow(121666, _P - 2, _P) % _P
_I = pow(2, (_P - 1) // 4, _P)


def _recover_x(y, sign):
    """The x coordinate of the point with y and x's low bit sign (RFC 8032 5.1.3), or None: no such point."""
    if y >= _P:
        return None
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P)
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _I % _P
    if (x * x - x2) % _P or (x == 0 and sign):
        return None
    return _P - x if (x & 1) != sign else x


def _decompress(data):
    y = int.from_bytes(data, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % _P)


def _add(a, b):
    # Extended coordinates (RFC 8032 5.1.4).
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    a_ = (y1 - x1) * (y2 - x2) % _P
    b_ = (y1 + x1) * (y2 + x2) % _P
    c = 2 * t1 * t2 * _D % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b_ - a_, d - c, d + c, b_ + a_
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _multiply(scalar, point):
    result = (0, 1, 1, 0)  # the neutral point
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _equal(a, b):
    x1, y1, z1, _t1 = a
    x2, y2, z2, _t2 = b
    return (x1 * z2 - x2 * z1) % _P == 0 and (y1 * z2 - y2 * z1) % _P == 0


_NEUTRAL = (0, 1, 1, 0)
_BASE = _decompress((4 * pow(5, _P - 2, _P) % _P).to_bytes(32, "little"))


def ed25519_verify(public, message, signature):
    """Whether signature (64 bytes) is public's (32 bytes) Ed25519 signature of message."""
    if len(public) != 32 or len(signature) != 64:
        return False
    a, r = _decompress(public), _decompress(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= _L:
        return False
    # A key of small order (the neutral point among them) verifies signatures nobody made: refused, as libsodium does.
    if _equal(_multiply(8, a), _NEUTRAL):
        return False
    h = int.from_bytes(hashlib.sha512(signature[:32] + public + message).digest(), "little") % _L
    return _equal(_multiply(s, _BASE), _add(r, _multiply(h, a)))


# --- keys and signatures ----------------------------------------------------------------------------------------------


def _mpi(body, offset):
    """(integer, offset after it) of an OpenPGP multiprecision integer at offset."""
    if len(body) < offset + 2:
        raise SignatureError("a number is cut short")
    bits = int.from_bytes(body[offset : offset + 2], "big")
    end = offset + 2 + (bits + 7) // 8
    if len(body) < end:
        raise SignatureError("a number is cut short")
    return int.from_bytes(body[offset + 2 : end], "big"), end


def _key(body):
    """{algorithm, material} of a v4 public key or subkey packet body (RSA or Ed25519); None for other kinds."""
    if len(body) < 6 or body[0] != 4:
        return None
    algorithm = body[5]
    if algorithm in RSA_ALGORITHMS:
        n, at = _mpi(body, 6)
        e, _at = _mpi(body, at)
        # gpg makes no RSA key under 1024 bits; a smaller or even modulus is no key to trust.
        return {"algorithm": "rsa", "n": n, "e": e} if n.bit_length() >= MIN_RSA_BITS and n & 1 and e > 1 else None
    if algorithm == EDDSA_LEGACY and len(body) > 7:
        size = body[6]
        if body[7 : 7 + size] != ED25519_OID:
            return None
        point, _at = _mpi(body, 7 + size)
        if point.bit_length() != 263:
            return None
        raw = point.to_bytes(33, "big")
        return {"algorithm": "ed25519", "public": raw[1:]} if raw[0] == 0x40 else None
    return None


def _subpackets(data):
    """(type, body) of each signature subpacket."""
    offset = 0
    while offset < len(data):
        first = data[offset]
        if first < 192:
            length, offset = first, offset + 1
        elif first < 255:
            if offset + 1 >= len(data):
                raise SignatureError("a signature subpacket is cut short")
            length, offset = ((first - 192) << 8) + data[offset + 1] + 192, offset + 2
        else:
            length, offset = int.from_bytes(data[offset + 1 : offset + 5], "big"), offset + 5
        if length == 0 or offset + length > len(data):
            raise SignatureError("a signature subpacket is cut short")
        yield data[offset] & 0x7F, data[offset + 1 : offset + length]
        offset += length


def _signature(body):
    """The parts of a v4 signature packet body that verification needs."""
    if len(body) < 6 or body[0] != 4:
        raise SignatureError(f"signature version {body[0] if body else None} is not supported (v4 is)")
    hashed_end = 6 + int.from_bytes(body[4:6], "big")
    if len(body) < hashed_end + 2:
        raise SignatureError("the signature is cut short")
    unhashed_end = hashed_end + 2 + int.from_bytes(body[hashed_end : hashed_end + 2], "big")
    if len(body) < unhashed_end + 2:
        raise SignatureError("the signature is cut short")
    issuers, flags = set(), None
    for hashed, part in ((True, body[6:hashed_end]), (False, body[hashed_end + 2 : unhashed_end])):
        for sub, data in _subpackets(part):
            if sub == ISSUER_FINGERPRINT and data[:1] == b"\x04":
                issuers.add(data[1:].hex().upper())
            elif sub == ISSUER:
                issuers.add(data.hex().upper())
            elif sub == KEY_FLAGS and hashed:
                flags = data[0] if data else 0
    # A key ID (subpacket 16) is its fingerprint's last 16 digits: named once, by the longer.
    issuers = {i for i in issuers if not any(other != i and other.endswith(i) for other in issuers)}
    return {
        "kind": body[1],
        "algorithm": body[2],
        "hash": HASHES.get(body[3]),
        "hashed": body[:hashed_end],
        "left16": body[unhashed_end : unhashed_end + 2],
        "values": body[unhashed_end + 2 :],
        "issuers": issuers,
        "flags": flags,
    }


def _verify_one(sig, data, key):
    """Whether sig is key's signature over data (RFC 4880 5.2.4: data, the hashed part, then its trailer)."""
    if sig["hash"] is None:
        return False
    digest = hashlib.new(sig["hash"])
    digest.update(data)
    digest.update(sig["hashed"])
    digest.update(b"\x04\xff" + len(sig["hashed"]).to_bytes(4, "big"))
    value = digest.digest()
    if value[:2] != sig["left16"]:
        return False
    if key["algorithm"] == "rsa" and sig["algorithm"] in RSA_ALGORITHMS:
        s, _at = _mpi(sig["values"], 0)
        size = (key["n"].bit_length() + 7) // 8
        if s >= key["n"]:
            return False
        encoded = pow(s, key["e"], key["n"]).to_bytes(size, "big")
        wanted = DIGEST_INFO[sig["hash"]] + value
        return encoded == b"\x00\x01" + b"\xff" * (size - len(wanted) - 3) + b"\x00" + wanted
    if key["algorithm"] == "ed25519" and sig["algorithm"] == EDDSA_LEGACY:
        r, at = _mpi(sig["values"], 0)
        s, _at = _mpi(sig["values"], at)
        if r.bit_length() > 256 or s.bit_length() > 256:
            return False
        # GnuPG stores the native signature's halves R and S as big-endian numbers of their 32 bytes.
        return ed25519_verify(key["public"], value, r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    return False


def _key_packet(body):
    """A key packet as a signature over it hashes it (0x99, two-byte length, body)."""
    return b"\x99" + len(body).to_bytes(2, "big") + body


def _sections(packets):
    """[{primary body, signatures on it, subkeys: [{body, signatures}]}] of a key file's packets: each key's
    signatures where they stand (a user ID's certifications are not the key's)."""
    keys, target = [], None
    for tag, body in packets:
        if tag == PUBLIC_KEY_TAG:
            keys.append({"body": body, "signatures": [], "subkeys": []})
            target = keys[-1]
        elif tag == PUBLIC_SUBKEY_TAG and keys:
            keys[-1]["subkeys"].append({"body": body, "signatures": []})
            target = keys[-1]["subkeys"][-1]
        elif tag == SIGNATURE_TAG and target is not None:
            target["signatures"].append(body)
        elif tag in (USER_ID_TAG, USER_ATTRIBUTE_TAG):
            target = None
    return keys


def signing_keys(key_file):
    """{fingerprint: {algorithm, material, primary: its primary key's fingerprint}} of the keys in a key file that
    may sign a Release: each RSA or Ed25519 primary key not revoked, and each subkey its primary bound for signing
    and did not revoke.

    A subkey counts only with a binding signature (0x18) the primary made, as gpgv requires: the file is pinned by
    the primary's fingerprint, which a subkey appended by whoever serves the file would not change. A revocation
    (0x20 of the key, 0x28 of a subkey) counts when the primary made it."""
    try:
        sections = _sections(openpgp.packets(openpgp.dearmor(key_file)))
    except openpgp.KeyFileError as exc:
        raise SignatureError(f"the key file: {exc}") from exc
    checks = 0

    def made_by_primary(body, kinds, data, primary_key):
        """The signature when it is of one of kinds and the primary made it over data, else None."""
        nonlocal checks
        sig = _signature(body)
        if sig["kind"] not in kinds:
            return None
        checks += 1
        if checks > MAX_KEY_SIGNATURES:
            raise SignatureError(f"the key file carries more than {MAX_KEY_SIGNATURES} key signatures to check")
        return sig if _verify_one(sig, data, primary_key) else None

    keys = {}
    for section in sections:
        primary_key = _key(section["body"])
        if primary_key is None:
            continue
        primary, packet = openpgp.fingerprint(section["body"]), _key_packet(section["body"])
        if any(made_by_primary(b, (KEY_REVOCATION,), packet, primary_key) for b in section["signatures"]):
            continue
        keys[primary] = {**primary_key, "primary": primary}
        for subkey in section["subkeys"]:
            key, data = _key(subkey["body"]), packet + _key_packet(subkey["body"])
            if key is None:
                continue
            verified = [made_by_primary(b, (SUBKEY_BINDING, SUBKEY_REVOCATION), data, primary_key)
                        for b in subkey["signatures"]]  # fmt: skip
            kinds = {sig["kind"] for sig in verified if sig and (sig["kind"] != SUBKEY_BINDING or _signs(sig))}
            if kinds == {SUBKEY_BINDING}:
                keys[openpgp.fingerprint(subkey["body"])] = {**key, "primary": primary}
    return keys


def _signs(binding):
    """Whether a subkey binding lets the subkey sign (no key flags: as RFC 4880 allows, any use)."""
    return binding["flags"] is None or bool(binding["flags"] & SIGN)


def verify(data, signature, key_file):
    """The primary fingerprint of the key file's key that made one of signature's signatures over data; SignatureError
    when none did (a file signed by several keys needs only one of them, as apt does)."""
    keys = signing_keys(key_file)
    if not keys:
        raise SignatureError("the key file holds no RSA or Ed25519 key that may sign (none, or revoked)")
    try:
        bodies = [
            body for tag, body in openpgp.packets(openpgp.dearmor(signature, SIGNATURE_BLOCK)) if tag == SIGNATURE_TAG
        ]
    except openpgp.KeyFileError as exc:
        raise SignatureError(f"the signature: {exc}") from exc
    if not bodies:
        raise SignatureError("the signature file holds no signature")
    if len(bodies) > MAX_SIGNATURES:
        raise SignatureError(f"it carries {len(bodies)} signatures, more than any Release ({MAX_SIGNATURES})")
    signatures = [_signature(body) for body in bodies]
    weak = False
    for sig in signatures:
        if sig["kind"] not in (BINARY, TEXT):
            continue
        if sig["hash"] is None:
            weak = True
            continue
        # A text signature is over the text with CRLF line ends (RFC 4880 5.2.1); InRelease's already has them.
        signed = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") if sig["kind"] == TEXT else data
        for fingerprint, key in keys.items():
            if sig["issuers"] and not any(fingerprint.endswith(issuer) for issuer in sig["issuers"]):
                continue
            if _verify_one(sig, signed, key):
                return key["primary"]
    issuers = ", ".join(sorted(i for sig in signatures for i in sig["issuers"])) or "keys it does not name"
    refused = " (SHA-1 and MD5 signatures are refused, as apt refuses them)" if weak else ""
    raise SignatureError(f"no signature of it verifies with the key file's keys: it is signed by {issuers}{refused}")


def cleartext(text):
    """(the signed text as the signature covers it, the armored signature) of a cleartext-signed file (InRelease):
    dash-escaping removed, trailing blanks of each line dropped, lines joined with CRLF (RFC 4880 7.1)."""
    lines = parsing.clean(text).split("\n")
    try:
        start = lines.index(BEGIN_MESSAGE)
        signature_at = lines.index(BEGIN_SIGNATURE, start)
        end = lines.index(END_SIGNATURE, signature_at)
    except ValueError:
        raise SignatureError(
            "it is not cleartext-signed (no BEGIN PGP SIGNED MESSAGE, SIGNATURE and END lines)"
        ) from None
    # The armor headers ("Hash: SHA512") end at the first blank line.
    body_at = next((i + 1 for i in range(start + 1, signature_at) if not lines[i].strip()), None)
    if body_at is None:
        raise SignatureError("its armor headers never end")
    body = [line[2:] if line.startswith("- ") else line for line in lines[body_at:signature_at]]
    signed = "\r\n".join(line.rstrip(" \t\r") for line in body).encode("utf-8")
    return signed, "\n".join(lines[signature_at : end + 1]).encode("ascii", "replace")


_HASH_LINE = re.compile(r" ([0-9a-f]{64}) +([0-9]{1,20}) (\S+)")


def sha256_table(release_text):
    """{path: (sha256, size)} of a Release file's SHA256 section."""
    table = {}
    inside = False
    for line in parsing.clean(release_text).splitlines():
        if not line.startswith(" "):
            inside = line.rstrip() == "SHA256:"
            continue
        match = _HASH_LINE.fullmatch(line.rstrip()) if inside else None
        if match:
            table[match.group(3)] = (match.group(1), int(match.group(2)))
    return table


def check_index(release_text, path, data):
    """SignatureError unless data (a downloaded index) is what the verified Release lists for path."""
    listed = sha256_table(release_text).get(path)
    if listed is None:
        raise SignatureError(f"the signed Release lists no {path}")
    digest = hashlib.sha256(data).hexdigest()
    if (digest, len(data)) != listed:
        raise SignatureError(
            f"{path} is {len(data)} bytes with SHA-256 {digest}; the signed Release lists {listed[1]} bytes with "
            f"{listed[0]} (a mirror out of date, or changed)"
        )
