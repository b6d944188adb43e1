"""Credentials in a server's base URL, kept out of everything warmloop shows or saves.

`openai-compatible:https://user:pass@host/v1?token=abc#model` works (the client sends them),
but the model's name (saved in every transcript and session), provider errors and the CLI
banner show `https://***@host/v1?token=***` instead: user info and query values are
redacted, whatever their names.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

MASK = "***"


def _parts(url: str) -> tuple[str, list[str]]:
    """The redacted URL and the secret strings it held (as written and decoded)."""
    try:
        split = urlsplit(url)
        host = split.hostname or ""
        port = f":{split.port}" if split.port is not None else ""
    except ValueError:  # a malformed port or bracket: show nothing that could be secret
        return MASK, [url]
    secrets: list[str] = []
    netloc = split.netloc
    if "@" in netloc:
        userinfo = netloc.rpartition("@")[0]
        secrets += [userinfo, *userinfo.split(":")]
        netloc = f"{MASK}@{host}{port}" if ":" not in host else f"{MASK}@[{host}]{port}"
    query = split.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        secrets += [value for _, value in pairs]
        secrets += [part.partition("=")[2] for part in query.split("&")]
        query = "&".join(f"{name}={MASK}" for name, _ in pairs) or MASK
    found = [s for s in secrets if s]
    found += [unquote(s) for s in found]
    return urlunsplit((split.scheme, netloc, split.path, query, split.fragment)), found


def redact_url(url: str) -> str:
    """`url` with its user info and query values replaced by `***`."""
    return _parts(url)[0] if ("@" in url or "?" in url) else url


def url_secrets(url: str) -> tuple[str, ...]:
    """The credentials in `url` (user info, query values), longest first, for `scrub`."""
    if "@" not in url and "?" not in url:
        return ()
    return tuple(sorted(set(_parts(url)[1]), key=len, reverse=True))


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret replaced by `***` (longest first, so none survives in part)."""
    for secret in secrets:
        if len(secret) >= 3:  # a one- or two-letter value would mask ordinary words
            text = text.replace(secret, MASK)
    return text


def redact_spec(spec: str) -> str:
    """A model selection string as it may be shown: a server URL's credentials redacted."""
    prefix, sep, rest = spec.partition(":")
    if not sep or ("@" not in rest and "?" not in rest):
        return spec
    url, hash_sign, model = rest.partition("#")
    return f"{prefix}:{redact_url(url.strip())}{hash_sign}{model}"
