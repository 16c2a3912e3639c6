"""Drive vouch's MCP resources, prompts and subscriptions with the official
MCP Python SDK, over stdio and over streamable HTTP.

Run by crates/vouch/tests/e2e/mcp_sdk.rs with the interpreter scripts/test.sh
installs (see requirements.txt):

    python resources.py --vouch VOUCH --kb KB --agent NAME --http URL --token TOKEN --fixture FIXTURE.json

1. stdio, as the agent, with ClientSession (the initialize handshake):
   templates, every page of resources/list, reads of a claim, a source with
   its text and a context pack, a missing claim and a foreign URI, the
   prompts; then a proposal and a `resources/subscribe` to the claim it
   would make.
2. streamable HTTP, as a reviewer, with the SDK's Client in auto mode
   (`subscriptions/listen` when the 2026-07-28 protocol is negotiated,
   `resources/subscribe` otherwise): the same reads, a subscription to the
   proposal, then the approval. Both subscribers must hear of it.

Prints one JSON object on stdout and exits 0; on failure prints
`mcp-client: FAILED: <why>` on stderr and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import quote

try:
    import anyio
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.client import Client
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    # The checks and the report, shared with the tools' driver beside this file.
    from client import Failed, check, run_and_report
except ImportError as e:  # the Rust test checks for this exact prefix
    print(f"mcp-client: FAILED: the MCP Python SDK is not importable ({e}); run scripts/test.sh", file=sys.stderr)
    sys.exit(1)

CALL_TIMEOUT_S = 30.0
TOTAL_TIMEOUT_S = 150.0
HEAR_WITHIN_S = 15.0


def contents(read: types.ReadResourceResult) -> list[dict[str, Any]]:
    return [{"uri": str(c.uri), "mime_type": c.mime_type, "text": getattr(c, "text", None)} for c in read.contents]


async def error_code(coro: Any) -> int:
    try:
        await coro
    except MCPError as e:
        return e.error.code
    raise Failed("expected a JSON-RPC error, got a result")


async def resources_and_prompts(s: ClientSession | Client, f: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    templates = await s.list_resource_templates()
    out["templates"] = sorted(t.uri_template for t in templates.resource_templates)
    listed: list[str] = []
    cursor = None
    for _ in range(1000):
        page = await (s.list_resources(cursor=cursor) if isinstance(s, Client) else s.list_resources(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None))
        listed += [str(r.uri) for r in page.resources]
        cursor = page.next_cursor
        if not cursor:
            break
    out["listed"] = listed
    out["claim"] = contents(await s.read_resource(f"vouch://claim/{quote(f['claim'], safe='')}"))
    out["source"] = contents(await s.read_resource(f"vouch://source/{f['source']}"))
    out["context"] = contents(await s.read_resource(f"vouch://context/{quote(f['query'], safe='')}"))
    out["not_found"] = await error_code(s.read_resource("vouch://claim/no-such-claim"))
    out["foreign"] = await error_code(s.read_resource("file:///etc/passwd"))
    prompts = await s.list_prompts()
    out["prompts"] = sorted(p.name for p in prompts.prompts)
    know = await s.get_prompt("what_we_know", {"topic": f["query"]})
    out["what_we_know"] = [m.content.model_dump(mode="json", exclude_none=True) for m in know.messages]
    out["missing_argument"] = await error_code(s.get_prompt("what_we_know", {}))
    return out


async def run(a: argparse.Namespace) -> dict[str, Any]:
    f = json.loads(open(a.fixture, encoding="utf-8").read())
    out: dict[str, Any] = {}
    heard: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            heard.append(str(message.params.uri))
            arrived.set()

    server = StdioServerParameters(command=a.vouch, args=["--kb", a.kb, "--agent", a.agent, "serve"], cwd=a.kb)
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S, message_handler=on_message) as agent:
            init = await agent.initialize()
            check(init.capabilities.resources is not None, "no resources capability")
            check(bool(init.capabilities.resources.subscribe), "resources cannot be subscribed to")
            check(init.capabilities.prompts is not None, "no prompts capability")
            out["stdio"] = await resources_and_prompts(agent, f)
            proposed = await agent.call_tool(
                "kb_propose_claim",
                {"text": f["new_claim"], "evidence": [{"source_id": f["source"], "quote": f["new_quote"]}]},
            )
            check(not proposed.is_error, f"propose failed: {proposed.content!r}")
            proposal = proposed.structured_content
            claim_uri = f"vouch://claim/{quote(proposal['claim_id'], safe='')}"
            proposal_uri = f"vouch://proposal/{quote(proposal['proposal_id'], safe='')}"
            out["proposal"] = proposal
            await agent.subscribe_resource(claim_uri)

            http = create_mcp_http_client(headers={"Authorization": f"Bearer {a.token}"})
            async with Client(
                streamable_http_client(a.http, http_client=http), mode="auto", read_timeout_seconds=CALL_TIMEOUT_S
            ) as reviewer:
                modern = reviewer.protocol_version in MODERN_PROTOCOL_VERSIONS
                out["http"] = await resources_and_prompts(reviewer, f)
                out["http"]["protocol_version"] = reviewer.protocol_version
                out["http"]["modern"] = modern
                if modern:
                    async with reviewer.listen(resource_subscriptions=[proposal_uri]) as sub:
                        approved = await reviewer.call_tool("kb_approve", {"proposal_id": proposal["proposal_id"]})
                        check(not approved.is_error, f"approve failed: {approved.content!r}")
                        with anyio.move_on_after(HEAR_WITHIN_S):
                            async for event in sub:
                                out["http"]["heard"] = repr(event)
                                break
                else:
                    raise Failed(f"auto mode negotiated {reviewer.protocol_version}; this test expects listen")
            with anyio.move_on_after(HEAR_WITHIN_S):
                while claim_uri not in heard:
                    await arrived.wait()
                    arrived = anyio.Event()
            out["stdio"]["heard"] = heard
            out["stdio"]["claim_uri"] = claim_uri
            out["stdio"]["proposal_uri"] = proposal_uri
            out["stdio"]["new_claim"] = contents(await agent.read_resource(claim_uri))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("vouch", "kb", "agent", "http", "token", "fixture"):
        ap.add_argument(f"--{name}", required=True)
    a = ap.parse_args()
    return run_and_report(lambda: run(a), TOTAL_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main())
