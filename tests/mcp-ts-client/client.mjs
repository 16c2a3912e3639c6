// Drive `vouch serve` with the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json + package-lock.json),
// the client most MCP hosts are built on.
//
// Run by crates/vouch/tests/mcp_ts_sdk.rs after scripts/test.sh has run
// `npm ci` here:
//
//   node client.mjs --vouch PATH/TO/vouch --kb KB_DIR --agent NAME \
//       --http URL --token TOKEN --fixture FIXTURE.json
//
// 1. stdio, as NAME: initialize, tools/list (the SDK's own types of the
//    protocol check every tool), a strict draft 2020-12 compile of every
//    input and output schema (Ajv, strict: unknown keywords and formats
//    fail), a call of every read-only tool with real ids (the SDK checks
//    each structuredContent against the tool's outputSchema; we check it
//    again with the strict compile), then a proposal.
//    Then resources (templates, every page of the list, a read of every
//    kind, the errors) and prompts, and a subscription to the claim the
//    proposal would make.
// 2. streamable HTTP (`/mcp` with the token of a reviewer): tools/list,
//    resources and prompts again, a subscription to the proposal, approve
//    it; both subscribers hear of it; search finds the new claim.
// 3. stdio again: the agent's own search finds it too.
//
// Prints one JSON object on stdout and exits 0; on failure prints
// `mcp-ts-client: FAILED: <why>` on stderr and exits 1. Anything the SDK
// or Ajv logs (warnings a host would show) is collected in `warnings`.

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

// Warnings hosts would print (Ajv's "unknown format ... ignored"): caught,
// reported, and a test failure on the Rust side.
const warnings = [];
for (const level of ["warn", "error", "log", "info"]) {
  console[level] = (...args) => warnings.push(`${level}: ${args.map(String).join(" ")}`);
}

function fail(why) {
  process.stderr.write(`mcp-ts-client: FAILED: ${why}\n`);
  process.exit(1);
}

function check(cond, why) {
  if (!cond) throw new Error(why);
}

let Client, StdioClientTransport, getDefaultEnvironment, StreamableHTTPClientTransport, types, Ajv2020, addFormats;
try {
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
  ({ StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  types = await import("@modelcontextprotocol/sdk/types.js");
  Ajv2020 = (await import("ajv/dist/2020.js")).default;
  addFormats = (await import("ajv-formats")).default;
} catch (e) {
  // The Rust test checks for this exact prefix.
  fail(`the MCP TypeScript SDK is not importable (${e.message}); run scripts/test.sh`);
}

const { values: args } = parseArgs({
  options: {
    vouch: { type: "string" },
    kb: { type: "string" },
    agent: { type: "string" },
    http: { type: "string" },
    token: { type: "string" },
    fixture: { type: "string" },
    person: { type: "string" },
  },
});
for (const k of ["vouch", "kb", "agent", "http", "token", "fixture", "person"]) {
  if (!args[k]) fail(`--${k} is required`);
}
const fixture = JSON.parse(readFileSync(args.fixture, "utf8"));

const CALL_TIMEOUT_MS = 30_000;
const TOTAL_TIMEOUT_MS = 150_000;
setTimeout(() => fail(`did not finish within ${TOTAL_TIMEOUT_MS} ms`), TOTAL_TIMEOUT_MS).unref();

// ----- schemas ----------------------------------------------------------------

// A standard draft 2020-12 validator in strict mode: an unknown keyword or
// format is an error at compile time, not a silent pass.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
addFormats(ajv);

// Keywords whose values are subschemas, by shape.
const ONE = ["additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames",
  "unevaluatedProperties", "unevaluatedItems", "contentSchema"];
const LISTS = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAPS = ["properties", "patternProperties", "$defs", "dependentSchemas"];

// Every boolean subschema in `schema`, by JSON pointer; `additionalProperties:
// false` (the closed-object idiom) is the one allowed.
function booleanSubschemas(schema, at = "#") {
  const found = [];
  const visit = (s, path, key) => {
    if (typeof s === "boolean") {
      if (!(key === "additionalProperties" && s === false)) found.push(path);
      return;
    }
    if (s === null || typeof s !== "object" || Array.isArray(s)) return;
    for (const k of ONE) if (k in s) visit(s[k], `${path}/${k}`, k);
    for (const k of LISTS) if (Array.isArray(s[k])) s[k].forEach((x, i) => visit(x, `${path}/${k}/${i}`, k));
    for (const k of MAPS) if (s[k] && typeof s[k] === "object") {
      for (const [name, x] of Object.entries(s[k])) visit(x, `${path}/${k}/${name}`, k);
    }
  };
  visit(schema, at, null);
  return found;
}

const validators = new Map();
function compile(tool, which, schema) {
  const problems = booleanSubschemas(schema).map((p) => `${tool} ${which}: boolean subschema at ${p}`);
  try {
    validators.set(`${tool} ${which}`, ajv.compile(schema));
  } catch (e) {
    problems.push(`${tool} ${which}: ${e.message}`);
  }
  return problems;
}

// ----- calls ------------------------------------------------------------------

function textOf(result) {
  const texts = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  check(texts.length === 1, `expected one text block, got ${JSON.stringify(result.content)}`);
  return texts[0];
}

// A call that must succeed: the SDK has already checked structuredContent
// against the outputSchema (it throws when it does not fit); we check the
// text and structuredContent agree and validate once more, strictly.
async function callOk(client, name, callArgs, checked) {
  const result = await client.callTool({ name, arguments: callArgs }, undefined, { timeout: CALL_TIMEOUT_MS });
  const text = textOf(result);
  check(!result.isError, `${name} returned isError: ${text}`);
  const value = JSON.parse(text);
  const validate = validators.get(`${name} output`);
  if (validate) {
    check(result.structuredContent !== undefined, `${name}: no structuredContent although it has an outputSchema`);
    check(JSON.stringify(result.structuredContent) === JSON.stringify(value),
      `${name}: structuredContent differs from the text`);
    check(validate(result.structuredContent),
      `${name}: structuredContent does not fit the outputSchema: ${ajv.errorsText(validate.errors)}`);
    if (checked) checked.push(name);
  }
  return value;
}

async function callErr(client, name, callArgs) {
  const result = await client.callTool({ name, arguments: callArgs }, undefined, { timeout: CALL_TIMEOUT_MS });
  const text = textOf(result);
  check(result.isError === true, `${name} ${JSON.stringify(callArgs)} should have failed, got: ${text}`);
  return { is_error: true, text };
}

// Arguments for every read-only tool, with the fixture's real ids. A new
// read tool without an entry here fails the run, so none goes untested.
function readArgs(f) {
  return {
    kb_capabilities: {},
    kb_status: {},
    kb_read_claim: { id: f.claim },
    kb_read_page: { id: f.page },
    kb_read_entity: { id: f.entity },
    kb_read_relation: { id: f.relation },
    kb_read_source: { id: f.source },
    kb_read_evidence: { id: f.evidence },
    kb_read_session: { id: f.session },
    kb_read_proposal: { id: f.proposal },
    kb_list_claims: {},
    kb_list_pages: {},
    kb_list_entities: {},
    kb_list_relations: {},
    kb_list_sources: {},
    kb_list_evidence: {},
    kb_list_sessions: {},
    kb_list_pending: {},
    kb_source_verify: {},
    kb_lifecycle_changes: { all: true },
    kb_audit: { tail: 5 },
    kb_audit_verify: {},
    kb_search: { query: f.query },
    kb_context: { task: f.query },
    kb_recall: { task: f.query },
    kb_knowledge_validate: { path: f.knowledge_dir },
    kb_eval: { queries: [{ query: f.query, expected: [f.claim] }] },
    kb_lint: {},
    kb_export_check: { path: f.bundle },
    kb_import_check: { path: f.bundle },
    kb_why: { id: f.claim },
    kb_impact: { id: f.source },
    kb_neighbors: { id: f.entity },
    kb_gate_stats: {},
  };
}

// ----- resources and prompts ---------------------------------------------------

// An error the server must answer with a JSON-RPC error of this code.
async function rpcError(promise, code, what) {
  try {
    await promise;
  } catch (e) {
    check(e.code === code, `${what}: expected error ${code}, got ${e.code}: ${e.message}`);
    return { code: e.code, message: e.message };
  }
  throw new Error(`${what}: expected error ${code}, got a result`);
}

// Templates, every page of resources/list, a read of every kind with the
// fixture's ids, the errors, and every prompt. The SDK parses each result
// with its types of the protocol before returning it.
async function resourcesAndPrompts(client, f) {
  const o = {};
  const caps = client.getServerCapabilities();
  o.capabilities = { resources: caps?.resources ?? null, prompts: caps?.prompts ?? null };
  const templates = await client.listResourceTemplates(undefined, { timeout: CALL_TIMEOUT_MS });
  o.templates = templates.resourceTemplates.map((t) => ({
    uri_template: t.uriTemplate, title: t.title ?? null, mime_type: t.mimeType ?? null,
  }));
  // Page through resources/list until it ends.
  o.listed = [];
  o.pages = 0;
  let cursor;
  do {
    const page = await client.listResources(cursor ? { cursor } : undefined, { timeout: CALL_TIMEOUT_MS });
    o.pages += 1;
    o.listed.push(...page.resources.map((r) => r.uri));
    cursor = page.nextCursor;
  } while (cursor && o.pages < 1000);
  const enc = encodeURIComponent;
  o.reads = {};
  for (const [kind, uri] of Object.entries({
    claim: `vouch://claim/${enc(f.claim)}`,
    page: `vouch://page/${enc(f.page)}`,
    entity: `vouch://entity/${enc(f.entity)}`,
    relation: `vouch://relation/${enc(f.relation)}`,
    source: `vouch://source/${f.source}`,
    evidence: `vouch://evidence/${enc(f.evidence)}`,
    proposal: `vouch://proposal/${enc(f.proposal)}`,
    why: `vouch://why/${enc(f.claim)}`,
    context: `vouch://context/${enc(f.query)}`,
    status: "vouch://status",
    gate: "vouch://gate/stats",
  })) {
    const read = await client.readResource({ uri }, { timeout: CALL_TIMEOUT_MS });
    o.reads[kind] = read.contents.map((c) => ({
      uri: c.uri, mime_type: c.mimeType ?? null, text: c.text ?? null,
    }));
  }
  o.not_found = await rpcError(client.readResource({ uri: "vouch://claim/no-such-claim" }), -32002, "missing claim");
  o.unknown = await rpcError(client.readResource({ uri: "file:///etc/passwd" }), -32602, "foreign URI");
  o.traversal = await rpcError(client.readResource({ uri: "vouch://claim/..%2F..%2Fconfig" }), -32602, "traversal");
  const prompts = await client.listPrompts(undefined, { timeout: CALL_TIMEOUT_MS });
  o.prompts = prompts.prompts.map((p) => ({
    name: p.name, title: p.title ?? null, arguments: (p.arguments ?? []).map((a) => [a.name, a.required ?? false]),
  }));
  o.prompt = {};
  for (const [name, args] of Object.entries({
    what_we_know: { topic: f.query },
    record_learning: { learning: f.new_claim },
  })) {
    const got = await client.getPrompt({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS });
    o.prompt[name] = got.messages.map((m) => m.content.type === "text"
      ? { type: "text", text: m.content.text }
      : { type: m.content.type, uri: m.content.resource?.uri ?? null, text: m.content.resource?.text ?? null });
  }
  o.prompt_missing_arg = await rpcError(client.getPrompt({ name: "what_we_know", arguments: {} }), -32602, "missing topic");
  return o;
}

// Resolves with the URIs of notifications/resources/updated as they come.
function updates(client) {
  const seen = [];
  const waiters = [];
  client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => {
    seen.push(n.params.uri);
    for (const w of waiters.splice(0)) w();
  });
  return {
    seen,
    async waitFor(uri, ms) {
      const until = Date.now() + ms;
      while (!seen.includes(uri) && Date.now() < until) {
        await new Promise((r) => { waiters.push(r); setTimeout(r, 200); });
      }
      return seen.includes(uri);
    },
  };
}

async function listTools(client) {
  const listed = await client.listTools(undefined, { timeout: CALL_TIMEOUT_MS });
  check(listed.nextCursor === undefined, "tools/list is paginated; expected one page");
  // The SDK parsed the result with its types of the protocol
  // (ListToolsResultSchema) before returning; parse each tool again so a
  // lenient path could not have let one through.
  for (const tool of listed.tools) types.ToolSchema.parse(tool);
  return listed.tools;
}

function nonEmpty(v) {
  return Array.isArray(v) ? v.length > 0 : v !== null && v !== undefined;
}

async function run() {
  const out = {
    sdk: { package: "@modelcontextprotocol/sdk", version: JSON.parse(readFileSync(
      new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8")).version },
    spec_version: types.LATEST_PROTOCOL_VERSION,
  };

  // --- 1. stdio, as the agent ------------------------------------------------
  const stdio = new StdioClientTransport({
    command: args.vouch,
    args: ["--kb", args.kb, "--agent", args.agent, "serve"],
    cwd: args.kb,
    stderr: "inherit",
  });
  // The SDK tells a transport the version it negotiated when the
  // transport asks (HTTP does, for its header); the stdio one does not.
  let negotiated = null;
  stdio.setProtocolVersion = (v) => { negotiated = v; };
  const client = new Client({ name: "vouch-ts-sdk-test", version: "1.0.0" });
  await client.connect(stdio, { timeout: CALL_TIMEOUT_MS });
  out.initialize = {
    protocol_version: negotiated,
    server: client.getServerVersion(),
    tools_capability: client.getServerCapabilities()?.tools !== undefined,
  };

  const tools = await listTools(client);
  out.tools = Object.fromEntries(tools.map((t) => [t.name, {
    title: t.title ?? null,
    annotations: t.annotations ?? null,
    has_output_schema: t.outputSchema !== undefined,
  }]));
  out.schema_problems = [];
  for (const t of tools) {
    out.schema_problems.push(...compile(t.name, "input", t.inputSchema));
    if (t.outputSchema) out.schema_problems.push(...compile(t.name, "output", t.outputSchema));
  }

  // Every read-only tool, called with real ids.
  const reads = readArgs(fixture);
  out.read_calls = {};
  out.output_checked = [];
  for (const t of tools.filter((t) => t.annotations?.readOnlyHint === true)) {
    check(t.name in reads, `read-only tool ${t.name} has no arguments in client.mjs: add it`);
    const value = await callOk(client, t.name, reads[t.name], out.output_checked);
    out.read_calls[t.name] = nonEmpty(value);
  }
  out.search_before = (await callOk(client, "kb_search", { query: fixture.new_query })).map((h) => h.id);
  out.resources = await resourcesAndPrompts(client, fixture);
  const agentUpdates = updates(client);

  // A proposal with a quoted span, then the agent's own approval: refused.
  const proposal = await callOk(client, "kb_propose_claim", {
    text: fixture.new_claim,
    evidence: [{ source_id: fixture.source, quote: fixture.new_quote }],
  }, out.output_checked);
  check(proposal.valid === true, `proposal invalid: ${JSON.stringify(proposal)}`);
  out.proposal = { id: proposal.proposal_id, claim_id: proposal.claim_id };
  out.self_approve = await callErr(client, "kb_approve", { proposal_id: proposal.proposal_id });
  // The agent asks for its proposals to review: the one just filed.
  out.review_prompt = (await client.getPrompt({ name: "review_session", arguments: {} }, { timeout: CALL_TIMEOUT_MS }))
    .messages.map((m) => m.content.type === "text" ? { text: m.content.text } : { uri: m.content.resource?.uri ?? null });
  // The agent follows the claim its proposal would make: not found yet.
  const newClaim = `vouch://claim/${encodeURIComponent(proposal.claim_id)}`;
  await client.subscribeResource({ uri: newClaim }, { timeout: CALL_TIMEOUT_MS });

  // --- 2. streamable HTTP, as the reviewer -------------------------------------
  const http = new StreamableHTTPClientTransport(new URL(args.http), {
    requestInit: { headers: { Authorization: `Bearer ${args.token}` } },
  });
  const reviewer = new Client({ name: "vouch-ts-sdk-test-reviewer", version: "1.0.0" });
  await reviewer.connect(http, { timeout: CALL_TIMEOUT_MS });
  out.http = {
    protocol_version: http.protocolVersion ?? null,
    session: http.sessionId !== undefined,
    tool_names: (await listTools(reviewer)).map((t) => t.name),
  };
  out.http.status = await callOk(reviewer, "kb_status", {}, out.output_checked);
  out.http.resources = await resourcesAndPrompts(reviewer, fixture);
  // The reviewer follows the proposal it is about to decide.
  const reviewerUpdates = updates(reviewer);
  const proposalUri = `vouch://proposal/${encodeURIComponent(proposal.proposal_id)}`;
  await reviewer.subscribeResource({ uri: proposalUri }, { timeout: CALL_TIMEOUT_MS });
  out.approve = await callOk(reviewer, "kb_approve", { proposal_id: proposal.proposal_id }, out.output_checked);
  out.updates = {
    stdio_claim: await agentUpdates.waitFor(newClaim, 15_000),
    http_proposal: await reviewerUpdates.waitFor(proposalUri, 15_000),
  };
  out.updates.stdio_seen = agentUpdates.seen;
  out.updates.http_seen = reviewerUpdates.seen;
  out.new_claim_read = (await client.readResource({ uri: newClaim }, { timeout: CALL_TIMEOUT_MS }))
    .contents.map((c) => c.text);
  out.http.search_after = (await callOk(reviewer, "kb_search", { query: fixture.new_query })).map((h) => h.id);
  await http.terminateSession();
  await reviewer.close();

  // --- 3. the agent sees the approved claim ------------------------------------
  out.search_after = (await callOk(client, "kb_search", { query: fixture.new_query })).map((h) => h.id);
  await client.close();

  // --- 4. a host that opens review pages (URL-mode elicitation) -----------------
  // The person's own config names where the review pages are; the host
  // declares URL-mode elicitation and "accepts" every ask: that decides
  // nothing, the proposal stays pending.
  const host = new Client(
    { name: "vouch-ts-sdk-test-host", version: "1.0.0" },
    { capabilities: { elicitation: { url: {} } } },
  );
  // The person takes their time: the host answers only when released.
  const asked = [];
  let release;
  const released = new Promise((r) => { release = r; });
  host.setRequestHandler(types.ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    await released;
    return { action: "accept" };
  });
  await host.connect(new StdioClientTransport({
    command: args.vouch,
    args: ["--kb", args.kb, "--agent", args.agent, "serve"],
    cwd: args.kb,
    env: { ...getDefaultEnvironment(), XDG_CONFIG_HOME: args.person },
    stderr: "inherit",
  }), { timeout: CALL_TIMEOUT_MS });
  const linked = await callOk(host, "kb_propose_claim", {
    text: fixture.linked_claim,
    evidence: [fixture.source],
  });
  for (let i = 0; i < 50 && asked.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  // A second proposal while the first ask is open does not ask again.
  const second = await callOk(host, "kb_propose_claim", { text: fixture.second_linked_claim, evidence: [fixture.source] });
  await new Promise((r) => setTimeout(r, 500));
  release();
  await new Promise((r) => setTimeout(r, 300));
  out.elicitation = {
    proposal: linked,
    second,
    asked,
    still_pending: (await callOk(host, "kb_read_proposal", { id: linked.proposal_id })).status,
  };
  await host.close();

  out.output_checked = [...new Set(out.output_checked)].sort();
  out.warnings = warnings;
  return out;
}

try {
  const out = await run();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (e) {
  fail(`${e.stack ?? e}\nwarnings so far: ${JSON.stringify(warnings)}`);
}
