"""BERT's uncased WordPiece tokenizer in the standard library, for the sentence encoder's text
models (stdlib only: the device needs no tokenizer library).

The rules are those of the original BERT (Devlin et al. 2019, ``tokenization.py`` of
google-research/bert) as Hugging Face's ``BertTokenizer`` with ``do_lower_case=True`` applies
them, which is how all-MiniLM-L6-v2 was trained; tests compare this module with Hugging Face's
``tokenizers`` on a corpus of English, Chinese, accented, emoji and control-character texts.

1. **Cleaned**: U+0000, U+FFFD and control characters (Unicode category ``C*`` other than tab,
   newline and carriage return) removed; every whitespace character (tab, newline, CR, category
   ``Zs``) made a space; a space put around each CJK ideograph (each is a token).
2. **Split** on whitespace; each piece lowercased, accents removed (NFD, marks ``Mn`` dropped)
   and split again around every punctuation character (ASCII symbols ``!``..``/``, ``:``..``@``,
   ``[``..`````, ``{``..``~``, and Unicode category ``P*``).
3. **WordPiece** (Schuster & Nakajima 2012; Wu et al. 2016): each word, greedily the longest
   vocabulary entry from the left, continuations prefixed ``##``; a word with a part not in the
   vocabulary, or longer than 100 characters, is ``[UNK]``.
4. ``[CLS]`` + the word pieces + ``[SEP]``, cut to ``max_tokens`` ids in all.

One difference from Hugging Face's ``tokenizers``, on purpose: a marker typed in a text
(``"[SEP]"``, ``"[CLS]"``) is text, tokenised as ``[``, ``sep``, ``]``, never a marker.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["VOCAB_METADATA_KEY", "WordPiece", "WordPieceError", "vocab_sha256"]

#: The ONNX metadata entry (``metadata_props``) that carries a model's vocabulary, one token per
#: line in id order: the vocabulary cannot be paired with the wrong model.
VOCAB_METADATA_KEY = "sampan.wordpiece_vocab"

_MAX_WORD_CHARS = 100
#: CJK Unified Ideographs and their extensions and compatibility blocks: BERT's
#: ``_is_chinese_char`` (Japanese kana and Korean Hangul are not in it).
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
_SPACE = re.compile(r"\s")
#: Characters of a run without whitespace that are tokenised (see :meth:`WordPiece.encode`).
_MAX_RUN = 4096


def _run_start(text: str, start: int, end: int) -> str:
    """The first :data:`_MAX_RUN` characters of ``text[start:end]`` (a run without whitespace)."""
    return text[start : min(end, start + _MAX_RUN)]


class WordPieceError(ValueError):
    """A vocabulary without BERT's special tokens, or a bad ``max_tokens``."""


def vocab_sha256(vocab: Sequence[str]) -> str:
    """Hex SHA-256 of the vocabulary as stored (tokens joined by newlines, UTF-8)."""
    return hashlib.sha256("\n".join(vocab).encode("utf-8")).hexdigest()


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _clean(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD):
            continue
        if char in " \t\n\r" or unicodedata.category(char) == "Zs":
            out.append(" ")
        elif unicodedata.category(char).startswith("C"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    return "".join(out)


def _split_punctuation(word: str) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    for char in word:
        if _is_punctuation(char):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(char)
        else:
            current.append(char)
    if current:
        pieces.append("".join(current))
    return pieces


def _strip_accents(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if unicodedata.category(c) != "Mn")


class WordPiece:
    """``vocab``: the tokens in id order (``vocab.txt``, one per line); must hold ``[PAD]``,
    ``[UNK]``, ``[CLS]`` and ``[SEP]``. ``max_tokens``: ids per text, the two markers included
    (>= 3).

    Raises:
        WordPieceError: a special token is missing, ``max_tokens`` < 3.
    """

    def __init__(self, vocab: Sequence[str], max_tokens: int = 128) -> None:
        self.ids = {token: i for i, token in enumerate(vocab)}
        missing = [token for token in _SPECIAL if token not in self.ids]
        if missing:
            raise WordPieceError(f"the vocabulary lacks {', '.join(missing)}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 3:
            raise WordPieceError(f"max_tokens must be an integer >= 3, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.pad_id, self.unk_id, self.cls_id, self.sep_id = (self.ids[t] for t in _SPECIAL)
        self._cache: dict[str, list[int]] = {}

    def words(self, text: str) -> list[str]:
        """The basic tokenizer's words of ``text`` (steps 1-2 of the module docstring)."""
        words = []
        for piece in _clean(text).split():
            words.extend(_split_punctuation(_strip_accents(piece.lower())))
        return words

    def _word_ids(self, word: str) -> list[int]:
        if len(word) > _MAX_WORD_CHARS:
            return [self.unk_id]
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.ids.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                ids = [self.unk_id]
                break
            ids.append(found)
            start = end
        if len(self._cache) < 100_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> tuple[list[int], bool]:
        """(ids: ``[CLS]`` + word pieces + ``[SEP]``, at most ``max_tokens``; whether pieces were
        cut off). Only as much of ``text`` is read as can fill ``max_tokens``: it is read in
        chunks ending at whitespace (a word is never cut in two), and of a run without
        whitespace longer than :data:`_MAX_RUN` characters only the first ``_MAX_RUN`` are
        tokenised (such a run is one ``[UNK]`` word unless punctuation or CJK split it, and then
        its first ``_MAX_RUN`` characters hold far more than ``max_tokens`` tokens), so a 1 MB
        text costs what its start costs."""
        room = self.max_tokens - 2
        ids: list[int] = []
        start, chunk, truncated = 0, max(256, room * 8), False
        while len(ids) <= room and start < len(text):
            found = _SPACE.search(text, start + chunk)  # C speed, even over megabytes
            end = found.start() if found else len(text)
            piece = text[start:end] if end - start <= _MAX_RUN + chunk else \
                text[start : start + chunk] + _run_start(text, start + chunk, end)
            for word in self.words(piece):
                ids.extend(self._word_ids(word))
                if len(ids) > room:
                    break
            start = end
        if len(ids) > room:
            ids, truncated = ids[:room], True
        return [self.cls_id, *ids, self.sep_id], truncated
