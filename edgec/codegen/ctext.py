"""Text from the model (tensor and node names, the model's file name) on its way into
generated C: as a string literal or inside a comment, never as code.

A name is whatever the ONNX file says, `y*/ #define x` or a newline included: in a comment it
could close the comment and become preprocessor text in every app that includes the header;
in a string literal a quote, a backslash, a newline or a trigraph (`??/`) would break out.
"""

from __future__ import annotations

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                   " !#$%&'()*+,-./:;<=>@[]^_`{|}~")


def c_string(text: str) -> str:
    """A C string literal holding `text`'s UTF-8 bytes: letters, digits and plain punctuation
    as they are, every other byte (quote, backslash, '?', controls, non-ASCII) as a
    three-digit octal escape, which no following character can extend."""
    return '"' + "".join(chr(b) if chr(b) in _PLAIN else f"\\{b:03o}"
                         for b in text.encode("utf-8")) + '"'


def c_comment(text: str) -> str:
    """`text` made safe inside a C block comment on one line: printable ASCII only (others
    become '?'), and no '*/' or '/*' (a space goes between)."""
    out = "".join(ch if " " <= ch <= "~" else "?" for ch in text)
    while "*/" in out or "/*" in out:
        out = out.replace("*/", "* /").replace("/*", "/ *")
    return out
