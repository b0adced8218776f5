"""The one rule for names and free text (sampan.core.names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sampan.core.names import InvalidName, check_text, clean_name, display_name


@pytest.mark.parametrize("value, shown", [
    ("line\nbreak", "U+000A (a control character) at position 4"),
    ("tab\there", "U+0009 (a control character) at position 3"),
    ("nul\x00", "U+0000 (a control character) at position 3"),
    ("del\x7f", "U+007F (a control character)"),
    ("c1\x85next-line", "U+0085 (a control character)"),
    ("evil\u202etxt.exe", "U+202E RIGHT-TO-LEFT OVERRIDE (a format character)"),
    ("iso\u2066late", "U+2066 LEFT-TO-RIGHT ISOLATE (a format character)"),
    ("zero\u200bwidth", "U+200B ZERO WIDTH SPACE (a format character)"),
    ("bom\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE (a format character)"),
    ("soft\u00adhyphen", "U+00AD SOFT HYPHEN (a format character)"),
    ("line\u2028sep", "U+2028 LINE SEPARATOR (a line separator)"),
    ("para\u2029sep", "U+2029 PARAGRAPH SEPARATOR (a paragraph separator)"),
    ("lone\ud800", "U+D800 (a lone surrogate)"),
])
def test_control_format_and_separator_characters_are_refused(value: str, shown: str) -> None:
    with pytest.raises(InvalidName) as refused:
        clean_name(value)
    assert str(refused.value).startswith("contains ")
    assert shown in str(refused.value)


@pytest.mark.parametrize("value", [
    "\U0001f469\u200d\U0001f4bb",  # woman technologist: an emoji ZWJ sequence
    "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian "mikhaham" needs ZWNJ
    "\u0915\u094d\u200d\u0937",  # Devanagari with ZWJ (half form)
    "猫狗识别 \"v2\"", "Ünïcödé ñame", "\ue000 private use", "tab-free name",
])
def test_scripts_emoji_and_private_use_are_names(value: str) -> None:
    assert clean_name(value) == value


def test_names_are_nfc_and_trimmed() -> None:
    assert clean_name("  Cafe\u0301 \n") == "Caf\u00e9"
    assert clean_name("\u00a0Cat\t") == "Cat"


def test_empty_and_long_names() -> None:
    with pytest.raises(InvalidName, match="must not be empty"):
        clean_name(" \n\t ")
    with pytest.raises(InvalidName, match=r"is 201 characters long \(at most 200\)"):
        clean_name("a" * 201, max_length=200)
    assert clean_name("a" * 200, max_length=200) == "a" * 200


def test_free_text_keeps_lines_but_not_other_controls() -> None:
    assert check_text("line one\r\nline\ttwo\n") == "line one\r\nline\ttwo\n"
    assert check_text("bidi \u202e stays in prose") == "bidi \u202e stays in prose"
    with pytest.raises(InvalidName, match=r"U\+0000 \(a control character\) at position 2"):
        check_text("ab\x00")
    with pytest.raises(InvalidName, match="lone surrogate"):
        check_text("x\udfff")


def test_display_name_replaces_what_the_rule_refuses() -> None:
    assert display_name("model\nname\u202e") == "model\ufffdname\ufffd"
    assert display_name("Cafe\u0301 \U0001f469\u200d\U0001f4bb") \
        == "Caf\u00e9 \U0001f469\u200d\U0001f4bb"


def test_the_schema_patterns_take_what_the_rule_takes_for_every_character() -> None:
    """docs/openapi.yaml documents the rule as a pattern on every name and text field: for each
    character of the Basic Multilingual Plane (surrogates apart), a name and a text holding it
    match the pattern exactly when the rule takes them."""
    import re
    import unicodedata

    import yaml

    from sampan.core.names import name_pattern, text_pattern

    name, text = re.compile(name_pattern()), re.compile(text_pattern())
    for code in range(0x10000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        for rule, pattern in ((clean_name, name), (check_text, text)):
            value = unicodedata.normalize("NFC", f"a{chr(code)}b")
            try:
                rule(value)
                taken = True
            except InvalidName:
                taken = False
            assert taken == bool(pattern.fullmatch(value)), (hex(code), rule.__name__)
    for blank in ("", " ", "\u3000 "):
        assert not name.fullmatch(blank)
    schema = (Path(__file__).resolve().parents[3] / "docs" / "openapi.yaml").read_text()
    patterns = {line.split("pattern:", 1)[1].strip()
                for line in schema.splitlines() if "pattern:" in line}
    assert yaml.safe_load(f"p: {name_pattern()}")["p"] in {
        yaml.safe_load(f"p: {p}")["p"] for p in patterns}
    assert schema.count(name_pattern()[:40]) >= 5  # projects, datasets, labels, devices, tokens
