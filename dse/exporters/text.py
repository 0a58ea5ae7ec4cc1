"""Safe names for the exporters: path components, build-script tokens, comment text.

The YAML and JSON the exporters write come from the one emitter, dse.specs.emit.
"""

from __future__ import annotations

import re

from dse.errors import SpecError

SAFE_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A word written unquoted into a shell script or a v++ config (part numbers, platform names).
SAFE_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+-]*$")


def safe_component(name: str, what: str) -> str:
    """A name from the design used as one path component: letters, digits, '.', '_', '-',
    starting with a letter or digit (so never '..', absolute or containing a separator)."""
    if not isinstance(name, str) or not SAFE_COMPONENT.match(name) or ".." in name:
        raise SpecError(what, "name", f"{name!r} cannot be used in a file path (letters, "
                        "digits, '.', '_', '-' only, starting with a letter or digit)")
    return name


def safe_token(value: str, path: object, key: str, *, empty_ok: bool = False) -> str:
    """A catalog string written unquoted into build.sh or a v++ config: a single word of
    letters, digits and '._:+-', so it cannot inject commands or config lines."""
    if (empty_ok and value == "") or SAFE_TOKEN.match(value):
        return value
    raise SpecError(path, key, f"{value!r} cannot be written into a build script (one word of "
                    "letters, digits, '.', '_', ':', '+', '-' expected)")


def comment_text(text: str) -> str:
    """Text for a one-line // or # comment: characters that could end the line or splice the
    next one into it (newlines, backslashes, control characters) become '?'."""
    return re.sub(r"[^ -\[\]-~]", "?", text)
