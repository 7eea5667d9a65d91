"""BERT WordPiece tokenization, following the rules a `tokenizer.json` declares.

normalise (drop control characters, space out CJK ideographs, strip accents, lower-case)
-> split on whitespace and around punctuation -> greedy longest-match WordPiece with the
`##` continuation prefix ([UNK] for a word that cannot be covered) -> the post-processor's
single-sequence template, i.e. [CLS] ... [SEP]. Special tokens the file adds ([CLS], [SEP],
[MASK], ...) written in the text stay one token each, as in Hugging Face's tokenizers.
Truncation and padding are never applied, whatever the file declares: every token of the
text reaches the model.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from sweep.config.files import read_bytes
from sweep.config.schema import clip


@dataclass(frozen=True)
class WordPiece:
    vocab: dict[str, int]
    unk: str = "[UNK]"
    prefix: str = "##"
    max_chars: int = 100
    lowercase: bool = True
    strip_accents: bool = True
    clean_text: bool = True
    chinese_chars: bool = True
    template: tuple[str, ...] = ("[CLS]", "$A", "[SEP]")
    specials: tuple[str, ...] = ()  # added special tokens, kept whole where the text has them

    def tokens(self, text: str) -> list[str]:
        """The token strings of `text`, template tokens included. A special token written
        in the text ([CLS], [SEP], [MASK], ...) is that one token, matched exactly before
        normalisation, as Hugging Face's tokenizers match the added special tokens."""
        pieces = []
        for chunk in self._split_specials(text):
            if chunk in self.specials:
                pieces.append(chunk)
            else:
                pieces += [p for word in pre_split(self.normalise(chunk)) for p in self.word(word)]
        out = []
        for item in self.template:
            out.extend(pieces if item == "$A" else [item])
        return out

    def _split_specials(self, text: str) -> list[str]:
        if not self.specials:
            return [text]
        longest_first = sorted(self.specials, key=len, reverse=True)
        return re.split("(" + "|".join(map(re.escape, longest_first)) + ")", text)

    def encode(self, text: str) -> list[int]:
        return [self.vocab[t] for t in self.tokens(text)]

    def normalise(self, text: str) -> str:
        if self.clean_text:
            text = "".join(" " if _is_space(c) else c for c in text if not _is_control(c))
        if self.chinese_chars:
            text = "".join(f" {c} " if _is_cjk(c) else c for c in text)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text)
                           if unicodedata.category(c) != "Mn")
        return text.lower() if self.lowercase else text

    def word(self, word: str) -> list[str]:
        """Greedy longest-match-first pieces of one word; [UNK] if any part has no piece."""
        if len(word) > self.max_chars:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            if end == start:
                return [self.unk]
            pieces.append(piece)
            start = end
        return pieces


def pre_split(text: str) -> list[str]:
    """Whitespace-separated words, with every punctuation character a word of its own."""
    words = []
    for chunk in text.split():
        current = ""
        for c in chunk:
            if _is_punctuation(c):
                words.extend([current, c] if current else [c])
                current = ""
            else:
                current += c
        if current:
            words.append(current)
    return words


def read_tokenizer(path: str | Path) -> WordPiece:
    """The tokenizer a Hugging Face `tokenizer.json` describes (BERT normaliser, WordPiece);
    ValueError saying what in it cannot be used."""
    try:
        spec = json.loads(read_bytes(path))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as err:
        raise ValueError(f"not readable JSON ({err})") from None
    except OSError as err:
        raise ValueError(f"cannot read ({err.strerror or err})") from None
    try:
        return _from_spec(spec)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise ValueError(f"not a WordPiece tokenizer ({type(err).__name__}: {clip(err, 80)})")\
            from None


def _from_spec(spec: dict) -> WordPiece:
    model, norm = spec["model"], spec.get("normalizer") or {}
    vocab = dict(model["vocab"])
    if not vocab or not all(isinstance(k, str) and isinstance(i, int) and i >= 0
                            for k, i in vocab.items()):
        raise ValueError("model.vocab must map token strings to ids >= 0")
    lowercase = bool(norm.get("lowercase", True))
    accents = norm.get("strip_accents")
    template = ("[CLS]", "$A", "[SEP]")
    post = spec.get("post_processor") or {}
    if post.get("type") == "TemplateProcessing":
        template = tuple(_template_item(item) for item in post["single"])
    unk = model.get("unk_token", "[UNK]")
    specials = tuple(t["content"] for t in spec.get("added_tokens") or () if t.get("special"))
    for token in (unk, *specials, *(t for t in template if t != "$A")):
        if token not in vocab:
            raise ValueError(f"special token {clip(token)} not in the vocabulary")
    return WordPiece(
        vocab=vocab, unk=unk, prefix=str(model.get("continuing_subword_prefix", "##")),
        max_chars=int(model.get("max_input_chars_per_word", 100)), lowercase=lowercase,
        # BERT's rule: accents follow lower-casing unless the file says otherwise
        strip_accents=lowercase if accents is None else bool(accents),
        clean_text=bool(norm.get("clean_text", True)),
        chinese_chars=bool(norm.get("handle_chinese_chars", True)), template=template,
        specials=specials)


def _template_item(item: dict) -> str:
    if "SpecialToken" in item:
        return item["SpecialToken"]["id"]
    return "$" + item["Sequence"]["id"]


def _is_space(c: str) -> bool:
    return c.isspace()


def _is_control(c: str) -> bool:
    if c in "\t\n\r":
        return False
    return ord(c) in (0, 0xFFFD) or unicodedata.category(c).startswith("C")


def _is_punctuation(c: str) -> bool:
    cp = ord(c)
    # BERT counts every non-alphanumeric ASCII symbol ($, ^, `...) as punctuation
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(c: str) -> bool:
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in _CJK)


_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
