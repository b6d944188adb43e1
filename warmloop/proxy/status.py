"""The proxy's status page (`GET /warmloop/status` on the proxy, `warmloop proxy --status`):
per conversation, its lineage (a parent and its sub-agents share one), its requests, busts
and forks, prompt tokens and the share read from cache, and the dollars the breakpoints the
proxy placed saved against the same requests without them. A routing key is shown hashed
(`exchange.identity.shown_key`): Claude Code's holds a device and a session id.

Each conversation's misses are named as the audit names them (`proxy.misses`: no
`prompt_cache_key` on a model that needs one, an affinity shorter than the TTL, an opening
written again, evicted, ...), per kind with the requests and the dollars they cost
(`lost_usd`, None where the model has no prices), and summed over the page.

Only the breakpoints' saving is priced: on a wire that caches only at markers, a request
that carries none reads nothing, so the same request without the proxy pays its whole
prompt at the input rate. A routing key's effect has no such counterfactual (the host may
have hit its cache anyway) and is shown as reuse only."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from warmloop.exchange.formats import model_name, model_spec
from warmloop.exchange.identity import shown_key
from warmloop.facts.price_table import prices_for
from warmloop.facts.pricing import cost
from warmloop.facts.usage import Usage
from warmloop.providers.records import WireFormat
from warmloop.proxy.conversations import LiveConversation, Placed
from warmloop.proxy.misses import MissFigures

STATUS_PATH = "/warmloop/status"
"""The proxy answers this path itself; no provider's API has it."""
PAGE_PATH = "/warmloop"
"""The live status page (HTML): the same figures, fetched from `STATUS_PATH` every
`REFRESH_MS` milliseconds. Loopback only, like the proxy; it loads nothing from elsewhere."""
REFRESH_MS = 2000
SERVICE = "warmloop proxy"
"""The status page's `service`: what `warmloop proxy --status` checks it talks to."""


@dataclass(frozen=True)
class Forwarded:
    """A model request on its way: where it was filed (None: filed nowhere), the client's
    parsed body, the headers and body that go upstream (None: the client's bytes), and
    what the fixes added."""

    placed: Placed | None
    request: Mapping[str, Any]
    headers: list[tuple[str, str]]
    body: bytes | None = None
    added: tuple[str, ...] = ()
    ttl: str | None = None
    """The longer TTL the proxy wrote it with (None: the model's own)."""


def saved_usd(
    wire: WireFormat, request: Mapping[str, Any], path: str, usage: Usage
) -> float | None:
    """What a request's cache reads and writes saved against paying its whole prompt at the
    input rate (negative for a first request, whose writes cost a premium); None when its
    model has no prices."""
    prices = prices_for(model_spec(wire, model_name(request, path)))
    if prices is None:
        return None
    uncached = replace(
        usage,
        cache_read_tokens=0,
        cache_write_tokens=0,
        cache_write_1h_tokens=0,
        cache_write_12h_tokens=0,
    )
    return cost(uncached, prices) - cost(usage, prices)


KEEPALIVE_FIELDS = ("keepalives", "keepalive_usd", "keepalive_saved_usd")
"""A row's keep-alive figures (`proxy.keepalive`): sent, their cost, and what they saved
net of it."""


Misses = Callable[[str], Mapping[str, MissFigures]]
"""A conversation's misses per kind: `requests` and `lost_usd` (`LiveMisses.figures`)."""


def status_page(
    conversations: Sequence[LiveConversation],
    keepalives: Callable[[str], Mapping[str, Any]] | None = None,
    misses: Misses | None = None,
) -> dict[str, Any]:
    """The page as JSON: totals, then each live conversation, most recent first;
    `keepalives` gives a conversation's keep-alive figures (None: keep-alive off), `misses`
    its misses per kind (None: none named)."""
    named = {c.id: misses(c.id) if misses is not None else {} for c in conversations}
    rows = [
        {
            "id": c.id,
            "lineage": c.lineage,
            "parent": c.parent,
            "format": c.wire.name,
            "key": shown_key(c.key),
            "requests": c.requests,
            "busts": c.busts,
            "forks": c.forks,
            "prompt_tokens": c.prompt_tokens,
            "cached_tokens": c.cached_tokens,
            "reuse": round(c.cached_tokens / c.prompt_tokens, 4) if c.prompt_tokens else None,
            "saved_usd": round(c.saved_usd, 6) if c.priced else None,
            **(keepalives(c.id) if keepalives is not None else {}),
            "misses": dict(named[c.id]),
        }
        for c in conversations
    ]
    kept = {name: round(sum(row.get(name, 0) for row in rows), 6) for name in KEEPALIVE_FIELDS}
    prompt = sum(c.prompt_tokens for c in conversations)
    cached = sum(c.cached_tokens for c in conversations)
    return {
        "service": SERVICE,
        "conversations": len(rows),
        "requests": sum(c.requests for c in conversations),
        "busts": sum(c.busts for c in conversations),
        "reuse": round(cached / prompt, 4) if prompt else None,
        "saved_usd": round(sum(c.saved_usd for c in conversations), 6),
        **(kept if keepalives is not None else {}),
        "misses": _summed(list(named.values())),
        "by_conversation": rows,
    }


def _summed(conversations: Sequence[Mapping[str, MissFigures]]) -> dict[str, MissFigures]:
    """Misses per kind over every conversation: requests, and dollars where all are priced."""
    total: dict[str, MissFigures] = {}
    for kinds in conversations:
        for kind, figures in kinds.items():
            into = total.setdefault(kind, MissFigures(requests=0, lost_usd=0.0))
            into["requests"] += figures["requests"]
            usd, so_far = figures["lost_usd"], into["lost_usd"]
            into["lost_usd"] = None if usd is None or so_far is None else so_far + usd
    for figures in total.values():
        if figures["lost_usd"] is not None:
            figures["lost_usd"] = round(figures["lost_usd"], 6)
    return dict(sorted(total.items()))


STATUS_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>warmloop proxy</title>
<link rel="icon" href="data:,">
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
#totals { margin: .5em 0 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: .3em .6em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child, td.text, th.text { text-align: left; }
tr.child td:first-child { padding-left: 2em; }
.bust { color: #b00; font-weight: 600; }
#error { color: #b00; }
</style>
</head>
<body>
<h1>warmloop proxy</h1>
<div id="totals">loading...</div>
<div id="error"></div>
<table>
<thead><tr>
<th>conversation</th><th class="text">format</th><th class="text">key</th>
<th>requests</th><th>busts</th><th>forks</th><th>reuse</th><th>saved</th><th>keep-alives</th>
<th>keep-alive cost</th>
<th>keep-alives saved</th>
<th class="text">misses</th>
</tr></thead>
<tbody id="rows"></tbody>
</table>
<script>
"use strict";
const REFRESH = __REFRESH__;
function share(v) { return v === null || v === undefined ? "-" : (100 * v).toFixed(0) + "%"; }
function usd(v) { return v === null || v === undefined ? "-" : "$" + v.toFixed(4); }
function missed(m) {
  const kinds = Object.keys(m || {});
  return kinds.length ? kinds.map(k => k + " " + m[k].requests +
    (m[k].lost_usd === null ? "" : " (" + usd(m[k].lost_usd) + ")")).join(", ") : "-";
}
function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
}
function draw(page) {
  const kept = "keepalives" in page;
  document.getElementById("totals").textContent =
    page.conversations + " conversations, " + page.requests + " requests, " +
    page.busts + " busts, reuse " + share(page.reuse) + ", saved " + usd(page.saved_usd) +
    " by the breakpoints placed" + (kept ? "; " + page.keepalives + " keep-alives (" +
    usd(page.keepalive_usd) + ") saved " + usd(page.keepalive_saved_usd) + " net" : "") +
    "; misses: " + missed(page.misses);
  const body = document.getElementById("rows");
  body.replaceChildren();
  const rows = page.by_conversation.slice();
  const order = new Map();
  rows.forEach((r, i) => order.set(r.id, i));
  rows.sort((a, b) => (order.get(a.lineage) ?? 0) - (order.get(b.lineage) ?? 0) ||
    (a.parent ? 1 : 0) - (b.parent ? 1 : 0) || order.get(a.id) - order.get(b.id));
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.dataset.id = r.id;
    if (r.parent) tr.className = "child";
    cell(tr, r.id);
    cell(tr, r.format, "text");
    cell(tr, r.key ?? "-", "text");
    cell(tr, r.requests);
    cell(tr, r.busts, r.busts ? "bust" : "");
    cell(tr, r.forks);
    cell(tr, share(r.reuse));
    cell(tr, usd(r.saved_usd));
    cell(tr, kept ? r.keepalives : "-");
    cell(tr, kept ? usd(r.keepalive_usd) : "-");
    cell(tr, kept ? usd(r.keepalive_saved_usd) : "-");
    cell(tr, missed(r.misses), "text");
    body.appendChild(tr);
  }
  document.body.dataset.loaded = "yes";
}
async function refresh() {
  try {
    const answer = await fetch("__STATUS__", { cache: "no-store" });
    draw(await answer.json());
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = "the proxy did not answer: " + e;
  }
}
refresh();
setInterval(refresh, REFRESH);
</script>
</body>
</html>
""".replace("__REFRESH__", str(REFRESH_MS)).replace("__STATUS__", STATUS_PATH)
"""The live status page: a table of the conversations, a parent's sub-agents under it."""
