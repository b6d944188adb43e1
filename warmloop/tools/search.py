"""Ranking a tool catalog for `search_tools`: BM25F, pure and deterministic.

BM25F is BM25 over weighted fields (Robertson and Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond", 2009). It is what this job needs: a catalog is a few hundred
short texts whose signal is shared words (a tool's name parts, its summary, its argument
names), it runs offline in well under a millisecond per query with no model to install or
download, and the same catalog and query always give the same order, so a search's result
(which becomes part of the cached prompt) is reproducible. Anthropic's own server-side tool
search offers BM25 as its natural-language variant for the same reasons. Embeddings would
rank synonyms better but need a model at run time; a caller who has one can rank with it
and hand the names to the toolbox instead.

Fields and weights: the tool's name (split at `_`, `-`, `.` and camelCase, weight 4), its
description (1) and its argument names and descriptions (0.5). Words are lower-cased, a
short stop list is dropped and a light suffix stemmer folds plurals and -ing/-ed forms.
A query that names a tool exactly ranks that tool first. Ties go to the lower name.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from warmloop.messages import JsonData
from warmloop.tools.schema import ToolSpec

K1 = 1.2
ARGUMENTS_WEIGHT = 0.5
B = 0.75
NAME_WEIGHT = 4.0
EXACT_NAME_BONUS = 1000.0
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it"}
    | {"of", "on", "or", "that", "the", "this", "to", "with"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
FIELDS = ("name", "description", "arguments")
WEIGHTS = {"name": NAME_WEIGHT, "description": 1.0, "arguments": ARGUMENTS_WEIGHT}


def stem(word: str) -> str:
    """A light suffix stemmer: `files`/`file`, `searches`/`search`, `running`/`runn`."""
    for suffix in ("ies", "ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "ies":
                return word[:-3] + "y"
            if suffix == "es" and not word.endswith(("sses", "shes", "ches", "xes", "zes")):
                return word[:-1]
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """Index terms of `text`: words split at punctuation and camelCase, lower-cased,
    stop words dropped, stemmed."""
    words = (w.lower() for w in _WORD.findall(text))
    return [stem(w) for w in words if w not in STOP_WORDS]


def argument_text(parameters: Mapping[str, JsonData]) -> str:
    """The argument names and their descriptions, as searchable text."""
    props = parameters.get("properties", {})
    parts: list[str] = []
    for name, schema in props.items() if isinstance(props, Mapping) else ():
        parts.append(str(name))
        description = schema.get("description") if isinstance(schema, Mapping) else None
        if isinstance(description, str):
            parts.append(description)
    return " ".join(parts)


@dataclass(frozen=True)
class Document:
    """One tool's indexed fields: term counts per field and each field's length."""

    name: str
    counts: Mapping[str, Counter[str]]
    lengths: Mapping[str, int]


def document(spec: ToolSpec) -> Document:
    """A tool's fields, ready to rank."""
    fields = {
        "name": terms(spec.name),
        "description": terms(spec.description),
        "arguments": terms(argument_text(spec.parameters)),
    }
    return Document(
        spec.name,
        {f: Counter(ts) for f, ts in fields.items()},
        {f: len(ts) for f, ts in fields.items()},
    )


class Index:
    """A BM25F index over a fixed set of tools (rebuilt when the catalog changes)."""

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self.documents = tuple(document(s) for s in specs)
        count = len(self.documents) or 1
        self.average = {
            f: (sum(d.lengths[f] for d in self.documents) / count) or 1.0 for f in FIELDS
        }
        frequency: Counter[str] = Counter()
        for doc in self.documents:
            frequency.update({t for f in FIELDS for t in doc.counts[f]})
        total = len(self.documents)
        self.idf = {t: math.log(1 + (total - n + 0.5) / (n + 0.5)) for t, n in frequency.items()}

    def score(self, doc: Document, query: Sequence[str]) -> float:
        """BM25F: per term, field frequencies normalised by field length and weighted,
        summed, then saturated once (so a term repeated across fields is not counted
        twice at full strength)."""
        total = 0.0
        for term in set(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            weighted = 0.0
            for f in FIELDS:
                tf = doc.counts[f][term]
                if tf:
                    norm = 1 - B + B * doc.lengths[f] / self.average[f]
                    weighted += WEIGHTS[f] * tf / norm
            if weighted:
                total += idf * weighted / (K1 + weighted)
        return total

    def rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The best `limit` tools for `query` as `(name, score)`, best first; tools that
        share no term with the query are left out."""
        words = terms(query)
        wanted = query.strip()
        scored = []
        for doc in self.documents:
            value = self.score(doc, words)
            if doc.name == wanted:
                value += EXACT_NAME_BONUS
            if value > 0:
                scored.append((doc.name, value))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:limit]
