"""parsing.truncated: messages cut as Jinja's truncate filter cut them, at a word, with leeway."""

from __future__ import annotations

import pytest

from ansible_collections.gpuops.bringup.plugins.module_utils import parsing

TEXT = "dpkg reports broken packages here"  # 33 characters


@pytest.mark.parametrize(
    ("limit", "leeway", "expected"),
    [
        (33, 0, TEXT),  # exactly the limit: whole
        (32, 0, "dpkg reports broken packages..."),  # one over: cut at the last word that fits with "..."
        (28, 5, TEXT),  # within the leeway: whole
        (27, 5, "dpkg reports broken..."),  # one past the leeway
        (6, 0, "dpk..."),  # no word boundary within the limit: the word is cut
    ],
)
def test_truncated_at_a_word_with_leeway(limit, leeway, expected):
    assert parsing.truncated(TEXT, limit, leeway=leeway) == expected
