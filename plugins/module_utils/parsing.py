# Copyright: gpuops.bringup contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every parser of tool output shares: its error type, numbers read safely, bounded input, short excerpts.

A parser here takes whatever a tool printed - truncated, cut mid-line, with bytes that are not UTF-8 (run_command
decodes with surrogateescape unless told otherwise), Unicode digits that str.isdigit() accepts and int() refuses,
numbers too large for a float - and either returns data (possibly partial, with a finding saying what was lost) or
raises ParseError (or its own subclass) with a message a person can act on. Nothing else escapes. Python 3.8
compatible: shipped to nodes with the modules.
"""

from __future__ import annotations

import math
import re
import zlib

# The most text a parser reads. Real outputs are far smaller (nvidia-smi -q -x of 8 GPUs: about 300 KB; rpm -qa of a
# full server: about 200 KB; a year of kernel log: a few MB); beyond this the tail is dropped with a finding.
MAX_TEXT = 32 * 1024 * 1024
# The most a compressed file (a package index, a rotated kernel log) may expand to.
MAX_DECOMPRESSED = 256 * 1024 * 1024
# Integers longer than this are no count, size or id any tool prints: they read as unknown, never as a huge number
# (int() of a 5000-digit string raises ValueError since Python 3.11's int_max_str_digits).
MAX_DIGITS = 24
EXCERPT = 120

_INT = re.compile(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}")
_FLOAT = re.compile(rf"[+-]?(?:[0-9]{{1,{MAX_DIGITS}}}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{{1,3}})?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile(r"[^\x20-\x7e\u00a0-\ud7ff\ue000-\ufffd]")


class ParseError(ValueError):
    """The text is not what the tool prints; the message says what is wrong (every parser's own error derives from
    this)."""


class TooLarge(ParseError):
    """Compressed data expands beyond MAX_DECOMPRESSED."""


def clean(text):
    """text with every code point JSON and UTF-8 cannot carry (lone surrogates from undecodable bytes) as U+FFFD."""
    if text is None:
        return None
    return _SURROGATE.sub("\ufffd", text)


def bounded(text, limit=MAX_TEXT):
    """(text, cut): text cleaned and cut to limit characters; cut is the number of characters dropped."""
    text = clean(text or "")
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def is_digits(text):
    """Whether text is one or more ASCII digits (str.isdigit() also accepts '²' and '٣', which int() may refuse)."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def to_int(text, base=10):
    """An integer from text as a tool prints it ('42', '-1', ' 7 '; base 16 for hex), or None for anything else:
    empty, not ASCII, too many digits."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, int):
        return text
    value = str(text).strip()
    if base == 16:
        digits = value[2:] if value[:2].lower() == "0x" else value
        if not digits or len(digits) > MAX_DIGITS or not re.fullmatch(r"[0-9A-Fa-f]+", digits):
            return None
        return int(digits, 16)
    if not _INT.fullmatch(value):
        return None
    return int(value)


def to_float(text):
    """A finite float from text ('1.5', '2.09715e+06'), or None: 'inf', 'nan', '1e400', Unicode digits, garbage."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text) if abs(text) < 1e300 else math.inf
    else:
        token = str(text).strip()
        if not _FLOAT.fullmatch(token):
            return None
        value = float(token)
    return value if math.isfinite(value) else None


def excerpt(text, limit=EXCERPT):
    """A short one-line excerpt of text for a message: control and undecodable characters escaped, long text cut."""
    text = clean(text or "")
    short = text[: limit + 1]
    shown = _UNPRINTABLE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), short[:limit])
    return repr(shown + ("..." if len(text) > limit else ""))


def truncated(text, limit, leeway=0):
    """text cut at a word boundary to at most limit characters, with "..." where it was cut; text up to limit + leeway
    characters is left whole (Jinja's truncate filter, as Ansible's messages used it: leeway 5)."""
    if len(text) <= limit + leeway:
        return text
    return text[: limit - 3].rsplit(" ", 1)[0] + "..."


def decompress(data, limit=MAX_DECOMPRESSED):
    """The bytes of gzip (or zlib) data, refusing more than limit bytes of output; ParseError for corrupt data."""
    decoder = zlib.decompressobj(wbits=47)  # 32 + 15: a gzip or zlib header, detected
    out = []
    size = 0
    remaining = data
    try:
        while True:
            chunk = decoder.decompress(remaining, 1024 * 1024)
            remaining = decoder.unconsumed_tail
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"it expands to more than {limit // (1024 * 1024)} MiB")
            out.append(chunk)
            if decoder.eof:
                # Concatenated gzip members (`cat a.gz b.gz`, some log rotators) are one stream to gzip -d.
                rest = decoder.unused_data
                if not rest.strip(b"\0"):
                    break
                decoder = zlib.decompressobj(wbits=47)
                remaining = rest
            elif not chunk and not remaining:
                raise ParseError("the compressed data is truncated")
    except zlib.error as exc:
        raise ParseError(f"the compressed data is corrupt ({exc})") from None
    return b"".join(out)
