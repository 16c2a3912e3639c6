"""Drive `vouch serve` (MCP over stdio) with the official MCP Python SDK.

Run by crates/vouch/tests/mcp_sdk.rs with the interpreter scripts/test.sh
installs (see requirements.txt):

    python client.py --vouch PATH/TO/vouch --kb KB_DIR --agent NAME --query WORDS

The SDK starts the server itself (stdio_client), initializes, lists the tools
and calls kb_status, kb_register_source, kb_propose_claim and kb_search, plus
two failures the server must survive: a domain error (a tool result with
isError) and an unknown tool (a JSON-RPC error). It prints one JSON object
summarising what it saw on stdout and exits 0; on any failure it prints
`mcp-client: FAILED: <why>` on stderr and exits 1. The server's stderr goes
to this process's stderr.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from importlib import metadata
from typing import Any, Awaitable, Callable

try:
    import anyio
    import jsonschema
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.client import Client
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS
except ImportError as e:  # the Rust test checks for this exact prefix
    print(f"mcp-client: FAILED: the MCP Python SDK is not importable ({e}); run scripts/test.sh", file=sys.stderr)
    sys.exit(1)

if sys.version_info < (3, 11):  # anyio depends on the backport there
    from exceptiongroup import BaseExceptionGroup

# Every step is bounded: a stuck server fails the test instead of hanging it.
CALL_TIMEOUT_S = 30.0
TOTAL_TIMEOUT_S = 120.0

EXPECTED_TOOLS = ("kb_status", "kb_propose_claim", "kb_search", "kb_register_source")

SOURCE_TEXT = (
    "Release builds are signed with the offline hardware key.\n"
    "The signing ceremony needs two maintainers present.\n"
)
CLAIM_TEXT = "Release builds are signed with the offline hardware key."
QUOTE = "signed with the offline hardware key"
CLAIM_TEXT_2 = "The signing ceremony needs two maintainers present."


class Failed(Exception):
    pass


def check(cond: bool, why: str) -> None:
    if not cond:
        raise Failed(why)


def text_of(result: types.CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    check(len(texts) == 1, f"expected exactly one text content block, got {result.content!r}")
    return texts[0]


async def call_ok(session: ClientSession | Client, name: str, args: dict[str, Any]) -> Any:
    """Call a tool that must succeed; return its JSON result (parsed from the text block)."""
    result = await session.call_tool(name, args, read_timeout_seconds=CALL_TIMEOUT_S)
    text = text_of(result)
    check(not result.is_error, f"{name} returned isError: {text}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise Failed(f"{name}: text content is not JSON ({e}): {text!r}") from e
    if isinstance(value, dict):
        check(
            result.structured_content == value,
            f"{name}: structuredContent {result.structured_content!r} differs from the text {value!r}",
        )
    else:
        check(result.structured_content is None, f"{name}: structuredContent on a non-object result")
    return value


async def call_err(session: ClientSession | Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must fail with a domain error: a tool result with isError."""
    result = await session.call_tool(name, args, read_timeout_seconds=CALL_TIMEOUT_S)
    text = text_of(result)
    check(result.is_error, f"{name} {args!r} should have failed with isError, got: {text}")
    return {"is_error": result.is_error, "text": text}


async def run(vouch: str, kb: str, agent: str, query: str) -> dict[str, Any]:
    server = StdioServerParameters(command=vouch, args=["--kb", kb, "--agent", agent, "serve"], cwd=kb)
    out: dict[str, Any] = {"sdk": {"package": "mcp", "version": metadata.version("mcp")}}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session:
            # --- initialize --------------------------------------------------
            init = await session.initialize()
            check(
                init.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS,
                f"server negotiated {init.protocol_version!r}, not one of {HANDSHAKE_PROTOCOL_VERSIONS}",
            )
            check(
                init.protocol_version == LATEST_HANDSHAKE_VERSION,
                f"we offered {LATEST_HANDSHAKE_VERSION!r}, which the server supports, "
                f"but it answered {init.protocol_version!r}",
            )
            check(session.protocol_version == init.protocol_version, "session did not adopt the negotiated version")
            check(init.capabilities.tools is not None, "server does not advertise the tools capability")
            out["initialize"] = {
                "offered": LATEST_HANDSHAKE_VERSION,
                "protocol_version": init.protocol_version,
                "server_name": init.server_info.name,
                "server_version": init.server_info.version,
                "server_title": init.server_info.title,
                "tools_capability": True,
                "instructions": init.instructions,
            }

            # --- tools/list --------------------------------------------------
            listed = await session.list_tools()
            check(listed.next_cursor is None, "tools/list is paginated; expected one page")
            tools = {t.name: t for t in listed.tools}
            check(len(tools) == len(listed.tools), "tools/list repeats a name")
            for name in EXPECTED_TOOLS:
                check(name in tools, f"tools/list lacks {name}; got {sorted(tools)}")
                schema = tools[name].input_schema
                check(
                    isinstance(schema, dict) and schema.get("type") == "object",
                    f"{name}: inputSchema is not a JSON object schema: {schema!r}",
                )
                check(bool(tools[name].description), f"{name} has no description")
            out["tools"] = {
                name: {
                    "description": t.description,
                    "input_schema": t.input_schema,
                    "read_only_hint": t.annotations.read_only_hint if t.annotations else None,
                }
                for name, t in sorted(tools.items())
            }

            # --- calls -------------------------------------------------------
            out["status_before"] = await call_ok(session, "kb_status", {})
            source = await call_ok(
                session,
                "kb_register_source",
                {"content": SOURCE_TEXT, "locator": "notes/release.md", "title": "release notes"},
            )
            out["source"] = source
            out["proposal"] = await call_ok(
                session,
                "kb_propose_claim",
                {"text": CLAIM_TEXT, "evidence": [{"source_id": source["id"], "quote": QUOTE}], "type": "fact"},
            )
            out["status_after"] = await call_ok(session, "kb_status", {})
            out["search"] = await call_ok(session, "kb_search", {"query": query})
            out["search_pending_words"] = await call_ok(session, "kb_search", {"query": "offline hardware key"})
            out["synthesize"] = await call_ok(session, "kb_synthesize", {"query": query})


            # --- failures the server must survive ----------------------------
            out["error_no_evidence"] = await call_err(session, "kb_propose_claim", {"text": "An uncited claim."})
            out["error_over_limit"] = await call_err(session, "kb_search", {"query": query, "limit": 100000})
            try:
                await session.call_tool("kb_no_such_tool", {}, read_timeout_seconds=CALL_TIMEOUT_S)
            except MCPError as e:
                out["error_unknown_tool"] = {"code": e.error.code, "message": e.error.message}
            else:
                raise Failed("calling an unknown tool should be a JSON-RPC error")
            out["status_final"] = await call_ok(session, "kb_status", {})

            # --- results the SDK checks against each tool's outputSchema -----
            # (ClientSession validates structuredContent whenever tools/list
            # gave the tool an outputSchema, and raises if it does not fit.)
            out["output_schemas"] = sorted(n for n, t in tools.items() if t.output_schema)
            session_id = (await call_ok(session, "kb_session_start", {"task": "schema check"}))["session_id"]
            checked: dict[str, list[str]] = {}
            for name, args in [
                ("kb_capabilities", {}),
                ("kb_context", {"task": query}),
                ("kb_recall", {}),
                ("kb_audit_verify", {}),
                ("kb_lint", {}),
                ("kb_doctor", {}),
                ("kb_source_verify", {"id": source["id"]}),
                ("kb_register_evidence", {"source_id": source["id"], "quote": QUOTE}),
                ("kb_session_end", {"session_id": session_id}),
                ("kb_crystallize", {"session_id": session_id, "no_page": True}),
                ("kb_index_rebuild", {}),
            ]:
                check(name in out["output_schemas"], f"{name} has no outputSchema")
                value = await call_ok(session, name, args)
                checked[name] = sorted(value)
            out["schema_checked"] = checked

            # --- results that are not objects (lists, an object or null) -----
            # MCP gives such tools no outputSchema, so the result schemas of
            # `vouch methods --json` are checked here, with the jsonschema
            # package the SDK itself validates with.
            catalog = {
                m["tool"]: m["result"]
                for m in json.loads(subprocess.run([vouch, "methods", "--json"], check=True, capture_output=True).stdout)
            }
            first: dict[str, str] = {}
            for kind in ["claims", "pages", "entities", "relations", "evidence", "sessions", "pending"]:
                listed_objects = await call_ok(session, f"kb_list_{kind}", {})
                check(bool(listed_objects), f"kb_list_{kind}: nothing to check the schema with")
                first[kind] = listed_objects[0]["id"]
            wire_checked: dict[str, list[str]] = {}
            for name, args in [
                ("kb_list_claims", {}),
                ("kb_read_claim", {"id": first["claims"]}),
                ("kb_read_claim", {"id": "clm_no_such_claim"}),
                ("kb_list_pages", {}),
                ("kb_read_page", {"id": first["pages"]}),
                ("kb_read_page", {"id": "no-such-page"}),
                ("kb_list_entities", {}),
                ("kb_read_entity", {"id": first["entities"]}),
                ("kb_list_relations", {}),
                ("kb_read_relation", {"id": first["relations"]}),
                ("kb_list_sources", {}),
                ("kb_read_source", {"id": source["id"]}),
                ("kb_list_evidence", {}),
                ("kb_read_evidence", {"id": first["evidence"]}),
                ("kb_list_sessions", {}),
                ("kb_read_session", {"id": first["sessions"]}),
                ("kb_list_pending", {}),
                ("kb_read_proposal", {"id": first["pending"]}),
                ("kb_audit", {"tail": 20}),
                ("kb_search", {"query": query}),
                ("kb_lifecycle_changes", {"all": True}),
            ]:
                check(name not in out["output_schemas"], f"{name} is checked by the SDK already")
                value = await call_ok(session, name, args)
                try:
                    jsonschema.validate(value, catalog[name])
                except jsonschema.ValidationError as e:
                    raise Failed(f"{name} {args!r}: result does not fit its schema: {e.message}") from e
                # What was checked: "list" only for a non-empty list.
                shape = "empty list" if value == [] else type(value).__name__
                wire_checked.setdefault(name, []).append(shape)
            out["wire_checked"] = wire_checked
            out["status_end"] = await call_ok(session, "kb_status", {})

    # --- second connection: the SDK's high-level Client, default mode -------
    # mode="auto" probes `server/discover` (the stateless 2026-07-28 era) and
    # falls back to the initialize handshake; either way it must work.
    async with Client(server, mode="auto", read_timeout_seconds=CALL_TIMEOUT_S) as client:
        version = client.protocol_version
        check(
            version in HANDSHAKE_PROTOCOL_VERSIONS or version in MODERN_PROTOCOL_VERSIONS,
            f"auto mode negotiated an unknown version {version!r}",
        )
        info = client.server_info
        listed = await client.list_tools()
        out["auto"] = {
            "protocol_version": version,
            "modern": version in MODERN_PROTOCOL_VERSIONS,
            "server_name": info.name if info else None,
            "tool_names": sorted(t.name for t in listed.tools),
            "status": await call_ok(client, "kb_status", {}),
            "proposal": await call_ok(
                client,
                "kb_propose_claim",
                {"text": CLAIM_TEXT_2, "evidence": [out["source"]["id"]], "type": "fact"},
            ),
            "search": await call_ok(client, "kb_search", {"query": query}),
            "error_no_evidence": await call_err(client, "kb_propose_claim", {"text": "An uncited claim."}),
            "status_final": await call_ok(client, "kb_status", {}),
        }
    return out


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which anyio task groups raise."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in leaves(sub)]
    return [e]


def run_and_report(run: Callable[[], Awaitable[dict[str, Any]]], total_timeout_s: float) -> int:
    """Run `run` within `total_timeout_s`; print its JSON summary and return 0, or print
    `mcp-client: FAILED: <why>` for each failure and return 1."""

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(total_timeout_s):
            return await run()

    try:
        out = anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001 - report anything, including timeouts
        for leaf in leaves(e):
            why = str(leaf) if isinstance(leaf, Failed) else f"{type(leaf).__name__}: {leaf!r}"
            print(f"mcp-client: FAILED: {why}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vouch", required=True, help="path to the vouch binary")
    ap.add_argument("--kb", required=True, help="a directory holding .vouch/")
    ap.add_argument("--agent", required=True, help="the actor the server records")
    ap.add_argument("--query", required=True, help="words kb_search should find in approved knowledge")
    a = ap.parse_args()
    return run_and_report(lambda: run(a.vouch, a.kb, a.agent, a.query), TOTAL_TIMEOUT_S)


if __name__ == "__main__":
    sys.exit(main())
