"""signed_release against gpgv: Debian's real Release files and signatures (tests/fixtures/apt, SOURCES.md) with its
real archive keys (tests/fixtures/openpgp), each verdict the one gpgv gave; gpg-made keys and signatures
(tests/signing.py) for the shapes no capture has; RFC 8032's own test vectors and the cryptography package for
Ed25519."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st
from signing import Signer

from ansible_collections.gpuops.bringup.plugins.module_utils import openpgp, signed_release

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
APT = FIXTURES / "apt"
KEYS = FIXTURES / "openpgp"
BOOKWORM_STABLE = "4D64FEC119C2029067D6E791F8D2585B8783D481"
BOOKWORM_AUTOMATIC = "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"
TRIXIE_AUTOMATIC = "04B54C3CDCA79751B16BC6B5225629DF75B188BD"
# gpgv --status-fd 1 --keyring <key> ...: the primary fingerprint of its VALIDSIG line, or None where it had none.
GPGV = {
    "bookworm.Release": {
        "debian-archive-bookworm-stable.asc": BOOKWORM_STABLE,
        "debian-archive-bookworm-automatic.asc": BOOKWORM_AUTOMATIC,
        "debian-archive-trixie-automatic.asc": TRIXIE_AUTOMATIC,
        "debian-archive-bookworm-security-automatic.gpg": None,
    },
    "bookworm-updates.InRelease": {
        "debian-archive-bookworm-stable.asc": None,
        "debian-archive-bookworm-automatic.asc": BOOKWORM_AUTOMATIC,
        "debian-archive-trixie-automatic.asc": TRIXIE_AUTOMATIC,
        "debian-archive-bookworm-security-automatic.gpg": None,
    },
}


def signed(name):
    """(data, signature) of a fixture as apt reads it: InRelease cleartext, or Release with Release.gpg."""
    if name.endswith(".InRelease"):
        return signed_release.cleartext((APT / name).read_text())
    return (APT / name).read_bytes(), (APT / f"{name}.gpg").read_bytes()


def key(name):
    return (KEYS / name).read_bytes()


@pytest.mark.parametrize(
    ("release", "key_name"), [(release, key_name) for release, keys in GPGV.items() for key_name in keys]
)
def test_each_verdict_is_gpgvs(release, key_name):
    """EdDSA by a primary key (bookworm-stable), RSA 4096 by subkeys (the automatic keys), and keys that signed
    nothing here."""
    data, signature = signed(release)
    expected = GPGV[release][key_name]
    if expected is None:
        with pytest.raises(signed_release.SignatureError, match="no signature of it verifies with the key file's keys"):
            signed_release.verify(data, signature, key(key_name))
    else:
        assert signed_release.verify(data, signature, key(key_name)) == expected


def test_the_refusal_names_the_keys_that_did_sign():
    data, signature = signed("bookworm-updates.InRelease")
    with pytest.raises(signed_release.SignatureError) as raised:
        signed_release.verify(data, signature, key("debian-archive-bookworm-stable.asc"))
    assert str(raised.value) == (
        "no signature of it verifies with the key file's keys: it is signed by "
        "4CB50190207B4758A3F73A796ED0E7B82643E131, B8E5F13176D2A7A75220028078DBA3BC47EF2265"
    )


@pytest.mark.parametrize("release", sorted(GPGV))
@pytest.mark.parametrize("where", ["first line", "middle", "last line"])
def test_one_changed_byte_fails(release, where):
    data, signature = signed(release)
    at = {"first line": 0, "middle": len(data) // 2, "last line": len(data) - 1}[where]
    tampered = data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
    for key_name, expected in GPGV[release].items():
        if expected:
            with pytest.raises(signed_release.SignatureError):
                signed_release.verify(tampered, signature, key(key_name))


def test_cleartext_gives_the_text_the_signature_covers():
    data, signature = signed_release.cleartext((APT / "bookworm-updates.InRelease").read_text())
    assert data.startswith(b"Origin: Debian\r\nLabel: Debian\r\nSuite: oldstable-updates\r\n")
    assert not data.endswith(b"\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert signature.startswith(b"-----BEGIN PGP SIGNATURE-----\n")
    assert signature.endswith(b"-----END PGP SIGNATURE-----")


def test_a_subkey_appended_without_the_primarys_binding_signs_nothing():
    """Whoever serves the key file could append a subkey of their own, which the primary fingerprint pin would not
    notice: a subkey counts only when the primary's binding signature over it verifies (as gpgv requires)."""
    stable = list(openpgp.packets(openpgp.dearmor(key("debian-archive-bookworm-stable.asc"))))
    automatic = list(openpgp.packets(openpgp.dearmor(key("debian-archive-bookworm-automatic.asc"))))
    subkey_at = next(i for i, (tag, _body) in enumerate(automatic) if tag == signed_release.PUBLIC_SUBKEY_TAG)
    # The automatic key's RSA subkey (which signed bookworm-updates), alone and with its own binding signature.
    for appended in (automatic[subkey_at : subkey_at + 1], automatic[subkey_at:]):
        forged = b"".join(packet(tag, body) for tag, body in stable + appended)
        assert openpgp.primary_fingerprints(forged) == [BOOKWORM_STABLE]
        assert set(signed_release.signing_keys(forged)) == {BOOKWORM_STABLE}
        data, signature = signed("bookworm-updates.InRelease")
        with pytest.raises(signed_release.SignatureError):
            signed_release.verify(data, signature, forged)


def test_signing_keys_holds_the_bound_signing_subkeys():
    keys = signed_release.signing_keys(key("debian-archive-bookworm-automatic.asc"))
    assert set(keys) == {BOOKWORM_AUTOMATIC, "4CB50190207B4758A3F73A796ED0E7B82643E131"}
    assert {k["primary"] for k in keys.values()} == {BOOKWORM_AUTOMATIC}
    assert {k["algorithm"] for k in keys.values()} == {"rsa"}
    stable = signed_release.signing_keys(key("debian-archive-bookworm-stable.asc"))
    # Its subkey is for encryption (flags 0x0c), so only the primary signs.
    assert set(stable) == {BOOKWORM_STABLE}
    assert stable[BOOKWORM_STABLE]["algorithm"] == "ed25519"


def packet(tag, body):
    """A new-format OpenPGP packet (RFC 4880 4.2.2, five-byte length)."""
    return bytes([0xC0 | tag, 0xFF]) + len(body).to_bytes(4, "big") + body


def test_a_signature_with_a_weak_hash_is_refused():
    """apt refuses SHA-1 signatures of a Release: a signature naming SHA-1 (hash id 2) counts for nothing."""
    data, armored = signed("bookworm.Release")
    bodies = [body for _tag, body in openpgp.packets(openpgp.dearmor(armored, signed_release.SIGNATURE_BLOCK))]
    weakened = b"".join(packet(signed_release.SIGNATURE_TAG, body[:3] + b"\x02" + body[4:]) for body in bodies)
    with pytest.raises(signed_release.SignatureError, match="SHA-1 and MD5 signatures are refused, as apt refuses"):
        signed_release.verify(data, weakened, key("debian-archive-bookworm-automatic.asc"))


def test_sha256_table_and_check_index_on_a_real_release():
    text = (APT / "bookworm.Release").read_text()
    table = signed_release.sha256_table(text)
    section = text.split("\nSHA256:\n", 1)[1].splitlines()
    assert len(table) == len(section) > 100
    # The Release lists contrib's empty Contents-udeb-all: 0 bytes, the SHA-256 of nothing.
    assert table["contrib/Contents-udeb-all"] == (hashlib.sha256(b"").hexdigest(), 0)
    signed_release.check_index(text, "contrib/Contents-udeb-all", b"")
    with pytest.raises(signed_release.SignatureError, match=r"is 1 bytes with SHA-256 .*the signed Release lists 0"):
        signed_release.check_index(text, "contrib/Contents-udeb-all", b"x")
    with pytest.raises(signed_release.SignatureError, match=r"the signed Release lists no Packages\.gz"):
        signed_release.check_index(text, "Packages.gz", b"")


# --- gpg-made keys and signatures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def signer():
    made = Signer("signer", subkey="ed25519")
    yield made
    made.close()


@pytest.fixture(scope="module")
def stranger():
    made = Signer("stranger")
    yield made
    made.close()


TEXT = b"Origin: test\nLabel: test\n- a line gpg dash-escapes\nTrailing:   \t\n-----BEGIN PGP SIGNATURE-----\nEnd: 1\n"


def test_gpg_clearsigned_text_with_dash_escapes_and_trailing_blanks(signer):
    clear = signer.clearsign(TEXT)
    assert b"\n- - a line" in clear and b"\n- -----BEGIN PGP SIGNATURE" in clear
    data, signature = signed_release.cleartext(clear.decode())
    assert data == TEXT.replace(b"   \t\n", b"\n").rstrip(b"\n").replace(b"\n", b"\r\n")
    # gpg signs with the newest signing subkey: its primary is what verify names.
    assert signed_release.verify(data, signature, signer.key) == signer.fingerprint


@pytest.mark.parametrize(
    "options", [(), ("--textmode",), ("--digest-algo", "SHA512")], ids=["binary", "text", "sha512"]
)
def test_gpg_detached_signatures(signer, options):
    assert signed_release.verify(TEXT, signer.detach(TEXT, *options), signer.key) == signer.fingerprint


def test_a_text_signature_covers_the_text_whatever_its_line_ends(signer):
    signature = signer.detach(TEXT, "--textmode")
    assert signed_release.verify(TEXT.replace(b"\n", b"\r\n"), signature, signer.key) == signer.fingerprint


def test_a_revoked_subkey_signs_nothing():
    revoked = Signer("revoked", subkey="ed25519")
    signature = revoked.detach(TEXT)
    assert signed_release.verify(TEXT, signature, revoked.key) == revoked.fingerprint
    revoked.revoke_subkeys()
    revoked.close()
    assert set(signed_release.signing_keys(revoked.key)) == {revoked.fingerprint}
    with pytest.raises(signed_release.SignatureError, match="no signature of it verifies with the key file's keys"):
        signed_release.verify(TEXT, signature, revoked.key)


def test_a_revoked_key_signs_nothing():
    revoked = Signer("revoked")
    signature = revoked.detach(TEXT)
    revoked.revoke()
    revoked.close()
    assert signed_release.signing_keys(revoked.key) == {}
    with pytest.raises(signed_release.SignatureError, match="the key file holds no RSA or Ed25519 key that may sign"):
        signed_release.verify(TEXT, signature, revoked.key)


def test_another_keys_signature_is_refused(signer, stranger):
    with pytest.raises(signed_release.SignatureError, match=f"it is signed by {stranger.fingerprint}"):
        signed_release.verify(TEXT, stranger.detach(TEXT), signer.key)


def test_a_release_signed_by_both_needs_only_the_pinned_one(signer, stranger):
    both = stranger.detach(TEXT) + signer.detach(TEXT)
    assert signed_release.verify(TEXT, both, signer.key) == signer.fingerprint


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Origin: x\n", "it is not cleartext-signed"),
        ("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n", "it is not cleartext-signed"),
        (
            "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n-----BEGIN PGP SIGNATURE-----\n"
            "-----END PGP SIGNATURE-----\n",
            "its armor headers never end",
        ),
    ],
)
def test_what_is_not_cleartext_signed(text, message):
    with pytest.raises(signed_release.SignatureError, match=message):
        signed_release.cleartext(text)


def test_too_many_signatures_are_refused_before_any_is_checked(signer):
    one = openpgp.dearmor(signer.detach(TEXT, "--armor"), signed_release.SIGNATURE_BLOCK)
    with pytest.raises(signed_release.SignatureError, match="carries 17 signatures, more than any Release"):
        signed_release.verify(TEXT, one * (signed_release.MAX_SIGNATURES + 1), signer.key)


@pytest.mark.parametrize(
    ("signature", "key_file", "message"),
    [
        (b"", None, "the signature file holds no signature"),
        (b"\x01", None, "the signature: byte 0 is no OpenPGP packet header"),
        (b"\xc2\x01\x03", None, "signature version 3 is not supported"),
        (None, b"", "the key file holds no RSA or Ed25519 key that may sign"),
        (None, b"\xc6", "the key file: the key file is truncated"),
    ],
)
def test_unreadable_signatures_and_keys(signer, signature, key_file, message):
    with pytest.raises(signed_release.SignatureError, match=message):
        signed_release.verify(
            TEXT, signer.detach(TEXT) if signature is None else signature, signer.key if key_file is None else key_file
        )


# --- Ed25519 ----------------------------------------------------------------------------------------------------------

# The field prime p and the order L of Ed25519's base point (RFC 8032 5.1).
ED25519_P = 2**255 - 19
ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493
# RFC 8032 7.1, TEST 1 and TEST 2: (public key, message, signature).
RFC8032 = [
    (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24"
        "655141438e7a100b",
    ),
    (
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302a"
        "eeb00d291612bb0c00",
    ),
]


@pytest.mark.parametrize(("public", "message", "signature"), RFC8032)
def test_rfc8032_vectors(public, message, signature):
    public, message, signature = bytes.fromhex(public), bytes.fromhex(message), bytes.fromhex(signature)
    assert signed_release.ed25519_verify(public, message, signature)
    assert not signed_release.ed25519_verify(public, message + b"!", signature)
    assert not signed_release.ed25519_verify(public, message, signature[:63] + bytes([signature[63] ^ 0x10]))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.binary(min_size=32, max_size=32), message=st.binary(max_size=200), flip=st.integers(0, 64 * 8 - 1))
def test_ed25519_agrees_with_the_cryptography_package(seed, message, flip):
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    signature = private.sign(message)
    assert signed_release.ed25519_verify(public, message, signature)
    damaged = bytearray(signature)
    damaged[flip // 8] ^= 1 << (flip % 8)
    assert not signed_release.ed25519_verify(public, message, bytes(damaged))


def test_ed25519_refuses_malformed_values():
    public, _message, signature = (bytes.fromhex(v) for v in RFC8032[0])
    assert not signed_release.ed25519_verify(public[:31], b"", signature)
    assert not signed_release.ed25519_verify(public, b"", signature[:63])
    # S at or above the group order L (a malleable signature, RFC 8032 5.1.7 step 1).
    s = int.from_bytes(signature[32:], "little") + ED25519_ORDER
    assert not signed_release.ed25519_verify(public, b"", signature[:32] + s.to_bytes(32, "little"))
    # A y coordinate at or above p is no point.
    assert not signed_release.ed25519_verify(b"\xff" * 31 + b"\x7f", b"", signature)


def test_ed25519_refuses_keys_of_small_order():
    """The neutral point as a public key makes any R = [S]B a valid signature of any message; the same point with
    the sign bit set is no point at all (y = 1 has x = 0 only, RFC 8032 5.1.3 step 4)."""
    seed = bytes(range(32))
    r = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    scalar = bytearray(hashlib.sha512(seed).digest()[:32])
    scalar[0] &= 248
    scalar[31] = (scalar[31] & 127) | 64
    forged = r + (int.from_bytes(scalar, "little") % ED25519_ORDER).to_bytes(32, "little")
    neutral = (1).to_bytes(32, "little")
    assert not signed_release.ed25519_verify(neutral, b"any message", forged)
    assert not signed_release.ed25519_verify(neutral[:31] + b"\x80", b"any message", forged)
    # y = -1 (x = 0): the point of order 2.
    assert not signed_release.ed25519_verify((ED25519_P - 1).to_bytes(32, "little"), b"any message", forged)
