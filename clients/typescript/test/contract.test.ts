/**
 * The client's types against the running server's OpenAPI: each interface of results.ts and each
 * request of fields.ts names exactly the schema's fields, optional and nullable where it says so.
 *
 * The tables below are typed `FieldsOf<T>`: the compiler makes each list exactly T's fields with T's
 * own optionality and nullability, and the test makes the schema agree with the same list.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import type {
  AuditFields,
  AuditLog,
  AuditRecord,
  Budget,
  Candidates,
  CollapsedMemory,
  ContextPack,
  DroppedMemory,
  EditChanges,
  EventFields,
  Forgotten,
  Health,
  History,
  ListFields,
  MemoryFields,
  MemoryLink,
  MemoryPage,
  MemoryRecord,
  MemoryStatus,
  MemoryType,
  MemoryTypeInput,
  MemoryVersion,
  NewMemory,
  PackItem,
  PackMember,
  QueryReading,
  RecallFields,
  ReflectFields,
  ReflectReport,
  Remembered,
  RetrievalPlan,
  SearchFields,
  SearchHit,
  SearchResults,
  StateFields,
  StatusChange,
  TimeWindow,
} from "xmemo-client";

import { type TestServer, startServer } from "./server.js";

type Presence<T, K extends keyof T> = {} extends Pick<T, K> ? "optional" : "required";
type Nullability<T, K extends keyof T> = null extends T[K] ? " nullable" : "";
/** Each field of T, and how T has it: "required", "optional", "required nullable", "optional nullable". */
type FieldsOf<T> = { readonly [K in keyof T]-?: `${Presence<T, K>}${Nullability<T, K>}` };
/** A request's fields, and which the server needs: a request may be stricter about null than the server. */
type RequestFieldsOf<T> = { readonly [K in keyof T]-?: Presence<T, K> };
/** Every value of a union of strings, once. */
type ValuesOf<T extends string> = { readonly [V in T]: true };

interface SchemaField {
  type?: string;
  enum?: string[];
  anyOf?: SchemaField[];
}

interface Schema {
  properties?: Record<string, SchemaField>;
  required?: string[];
}

interface OpenApi {
  components: { schemas: Record<string, Schema> };
  paths: Record<string, Record<string, { parameters?: { name: string; in: string; required?: boolean }[] }>>;
}

const RESPONSES: Record<string, FieldsOf<object>> = {
  ContextPackOut: {
    version: "required",
    query: "required",
    retrieval_plan: "required",
    budget: "required",
    items: "required",
    context_text: "required",
    scope: "required",
  } satisfies FieldsOf<ContextPack>,
  BudgetOut: {
    max_items: "required",
    max_tokens: "required",
    used_items: "required",
    used_tokens: "required",
    dropped_items: "required",
    shortened_items: "required",
  } satisfies FieldsOf<Budget>,
  PackItemOut: {
    id: "required",
    type: "required",
    path: "required",
    score: "required",
    tokens: "required",
    shortened: "required",
    created_at: "required",
    occurred_at: "required",
    members: "optional",
  } satisfies FieldsOf<PackItem>,
  PackMemberOut: {
    id: "required",
    type: "required",
    path: "required",
    occurred_at: "required",
  } satisfies FieldsOf<PackMember>,
  RetrievalPlanOut: {
    strategy: "required",
    channels: "required",
    fusion: "required",
    ranking: "required",
    candidates: "required",
    query: "required",
    relevance_floor: "required nullable",
    items: "required",
    collapsed: "required",
    dropped: "required",
  } satisfies FieldsOf<RetrievalPlan>,
  CandidatesOut: {
    dense: "required",
    bm25: "required",
    union: "required",
    matched: "required",
  } satisfies FieldsOf<Candidates>,
  CollapsedOut: { id: "required", into: "required", reason: "required" } satisfies FieldsOf<CollapsedMemory>,
  DroppedOut: { id: "required", reason: "required", score: "required" } satisfies FieldsOf<DroppedMemory>,
  QueryReadingOut: {
    as_of: "optional nullable",
    speaker: "optional nullable",
    time_window: "optional nullable",
    recency: "optional nullable",
  } satisfies FieldsOf<QueryReading>,
  TimeWindowOut: {
    phrase: "required",
    start: "required",
    end: "required",
    path: "required",
    candidates: "required",
  } satisfies FieldsOf<TimeWindow>,
  SearchOut: { results: "required", query: "required", min_score: "required" } satisfies FieldsOf<SearchResults>,
  SearchResultOut: {
    id: "required",
    content: "required",
    content_truncated: "required",
    type: "required",
    path: "required",
    bucket: "required",
    scope: "required",
    team_id: "required nullable",
    created_at: "required",
    occurred_at: "required",
    importance: "required",
    score: "required",
    rank_score: "required",
  } satisfies FieldsOf<SearchHit>,
  WriteOut: {
    id: "required",
    memory_id: "required",
    status: "required",
    version: "required",
    deduplicated: "required",
    outcome: "required",
  } satisfies FieldsOf<Remembered>,
  MemoryOut: {
    id: "required",
    owner_id: "required",
    team_id: "required nullable",
    bucket: "required",
    scope: "required",
    path: "required",
    type: "required",
    content: "required",
    semantic_key: "required nullable",
    state_key: "required nullable",
    event_type: "required nullable",
    importance: "required",
    confidence: "required",
    source: "required",
    session_id: "required nullable",
    speaker: "optional nullable",
    metadata: "required",
    created_at: "required",
    updated_at: "required",
    occurred_at: "required",
    last_accessed_at: "required nullable",
    access_count: "required",
    expires_at: "required nullable",
    status: "required",
    version: "required",
    derived_from: "required",
  } satisfies FieldsOf<MemoryRecord>,
  MemoryPageOut: { memories: "required", next_cursor: "required nullable" } satisfies FieldsOf<MemoryPage>,
  StatusOut: { id: "required", status: "required", version: "required" } satisfies FieldsOf<StatusChange>,
  ForgetOut: { forgotten: "required", audit_record_ids: "required" } satisfies FieldsOf<Forgotten>,
  Version: {
    version: "required",
    at: "required",
    action: "required",
    actor: "required",
    audit_id: "required nullable",
    changes: "required",
  } satisfies FieldsOf<MemoryVersion>,
  LinkOut: {
    id: "required",
    type: "required",
    path: "required",
    status: "required",
    created_at: "required",
  } satisfies FieldsOf<MemoryLink>,
  AuditRecord: {
    id: "required",
    created_at: "required",
    actor: "required",
    action: "required",
    plan_id: "required nullable",
    owner_id: "required",
    team_id: "required nullable",
    memory_ids: "required",
    before: "required",
    after: "required",
    reason: "required",
  } satisfies FieldsOf<AuditRecord>,
  HistoryOut: {
    memory: "required",
    versions: "required",
    derived_from: "required",
    derived_into: "required",
    supersedes: "required",
    superseded_by: "required",
    audit: "required",
  } satisfies FieldsOf<History>,
  AuditListOut: { records: "required" } satisfies FieldsOf<AuditLog>,
  ReflectReportOut: {
    dry_run: "required",
    plan_id: "required",
    plan_digest: "required",
    actions: "required",
    filters: "required",
    now: "required",
    candidates: "required",
    summaries: "required",
    promotions: "required",
    lifecycle: "required",
    counts: "required",
    audit_record_ids: "required",
    excluded: "required",
    preview: "required",
    held_back: "optional",
  } satisfies FieldsOf<ReflectReport>,
  HealthOut: { status: "required" } satisfies FieldsOf<Health>,
};

const NEW_MEMORY = {
  content: "required",
  path: "required",
  memory_type: "optional",
  bucket: "optional",
  scope: "optional",
  team_id: "optional",
  source: "optional",
  importance: "optional",
  confidence: "optional",
  expires_at: "optional",
  occurred_at: "optional",
  speaker: "optional",
  session_id: "optional",
  metadata: "optional",
} as const satisfies RequestFieldsOf<NewMemory>;

const FILTERS = {
  scope: "optional",
  team_id: "optional",
  bucket: "optional",
  path_filter: "optional",
  memory_type: "optional",
} as const;

/** Request bodies: the wire's fields, the positional arguments (content, path, query...) included. */
const BODIES: Record<string, RequestFieldsOf<object>> = {
  RememberBody: {
    ...NEW_MEMORY,
    semantic_key: "optional",
    dedupe: "optional",
  } satisfies RequestFieldsOf<MemoryFields & { content: string; path: string }>,
  BatchItem: NEW_MEMORY,
  StateBody: {
    state_key: "required",
    content: "required",
    bucket: "optional",
    scope: "optional",
    source: "optional",
    metadata: "optional",
  } satisfies RequestFieldsOf<StateFields & { state_key: string; content: string }>,
  EventBody: {
    content: "required",
    event_type: "required",
    occurred_at: "required",
    session_id: "optional",
    bucket: "optional",
    scope: "optional",
    source: "optional",
    metadata: "optional",
  } satisfies RequestFieldsOf<EventFields & { content: string; event_type: string; occurred_at: string }>,
  RecallContextBody: {
    query: "required",
    ...FILTERS,
    max_items: "optional",
    max_tokens: "optional",
    as_of: "optional",
  } satisfies RequestFieldsOf<RecallFields & { query: string }>,
  EditBody: {
    expected_version: "required",
    content: "optional",
    path: "optional",
    memory_type: "optional",
    importance: "optional",
    confidence: "optional",
    source: "optional",
    expires_at: "optional",
    metadata: "optional",
  } satisfies RequestFieldsOf<EditChanges & { expected_version: number }>,
  ReflectPlanBody: {
    actions_csv: "optional",
    dry_run: "optional",
    time_window_hours: "optional",
    since: "optional",
    until: "optional",
    path_filter: "optional",
    owner_filter: "optional",
    bucket: "optional",
    scope: "optional",
    team_id: "optional",
    limit: "optional",
    expected_plan: "optional",
    exclude: "optional",
    reconsider: "optional",
  } satisfies RequestFieldsOf<ReflectFields>,
};

/** Query parameters of the GET routes, by path. */
const QUERIES: Record<string, RequestFieldsOf<object>> = {
  "/v1/memories/search": {
    query: "required",
    ...FILTERS,
    limit: "optional",
    min_score: "optional",
  } satisfies RequestFieldsOf<SearchFields & { query: string }>,
  "/api/v1/memories": {
    path_prefix: "optional",
    memory_type: "optional",
    status: "optional",
    bucket: "optional",
    team_id: "optional",
    scope: "optional",
    metadata: "optional",
    text: "optional",
    time_field: "optional",
    order: "optional",
    since: "optional",
    until: "optional",
    owner_id: "optional",
    cursor: "optional",
    limit: "optional",
  } satisfies RequestFieldsOf<ListFields>,
  "/api/v1/audit": {
    since: "optional",
    until: "optional",
    action: "optional",
    limit: "optional",
  } satisfies RequestFieldsOf<AuditFields>,
};

const MEMORY_TYPES: ValuesOf<MemoryType> = {
  episodic: true,
  semantic: true,
  procedural: true,
  identity: true,
  working: true,
};
const INPUT_TYPES: ValuesOf<MemoryTypeInput> = { auto: true, ...MEMORY_TYPES };
const STATUSES: ValuesOf<MemoryStatus> = { active: true, archived: true, expired: true, superseded: true };
const OUTCOMES: ValuesOf<Remembered["outcome"]> = { created: true, unchanged: true, superseded: true, merged: true };
const DROP_REASONS: ValuesOf<DroppedMemory["reason"]> = { budget: true, item_limit: true, floor: true };

function isNullable(field: SchemaField): boolean {
  return (field.anyOf ?? []).some((choice) => choice.type === "null");
}

/** The schema's fields as FieldsOf writes them, sorted by name. */
function fieldsOfSchema(schema: Schema, withNull: boolean): Record<string, string> {
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]): [string, string] => {
    const presence = required.has(name) ? "required" : "optional";
    return [name, withNull && isNullable(field) ? `${presence} nullable` : presence];
  });
  return Object.fromEntries(fields.sort(([a], [b]) => a.localeCompare(b)));
}

function sorted(fields: object): Record<string, string> {
  return Object.fromEntries(
    Object.entries(fields as Record<string, string>).sort(([a], [b]) => a.localeCompare(b)),
  );
}

function enumOf(schema: Schema | undefined, field: string): string[] {
  const property = schema?.properties?.[field];
  const values = property?.enum ?? property?.anyOf?.find((choice) => choice.enum !== undefined)?.enum ?? [];
  return [...values].sort();
}

let server: TestServer;
let openapi: OpenApi;

before(async () => {
  server = await startServer();
  const response = await fetch(`${server.url}/openapi.json`);
  openapi = (await response.json()) as OpenApi;
});

after(async () => {
  await server?.stop();
});

describe("results.ts matches the response schemas", () => {
  for (const [name, fields] of Object.entries(RESPONSES)) {
    test(name, () => {
      const schema = openapi.components.schemas[name];
      assert.ok(schema, `no schema ${name}`);
      assert.deepEqual(sorted(fields), fieldsOfSchema(schema, true));
    });
  }
});

describe("fields.ts matches the request schemas", () => {
  for (const [name, fields] of Object.entries(BODIES)) {
    test(name, () => {
      const schema = openapi.components.schemas[name];
      assert.ok(schema, `no schema ${name}`);
      assert.deepEqual(sorted(fields), fieldsOfSchema(schema, false));
    });
  }
  for (const [path, fields] of Object.entries(QUERIES)) {
    test(`GET ${path}`, () => {
      const parameters = (openapi.paths[path]?.["get"]?.parameters ?? []).filter((p) => p.in === "query");
      const fromSchema = Object.fromEntries(
        parameters
          .map((p): [string, string] => [p.name, p.required ? "required" : "optional"])
          .sort(([a], [b]) => a.localeCompare(b)),
      );
      assert.deepEqual(sorted(fields), fromSchema);
    });
  }
});

describe("the unions match the schemas' enums", () => {
  const schemas = (): Record<string, Schema> => openapi.components.schemas;
  test("MemoryType", () => assert.deepEqual(Object.keys(MEMORY_TYPES).sort(), enumOf(schemas()["MemoryOut"], "type")));
  test("MemoryTypeInput", () =>
    assert.deepEqual(Object.keys(INPUT_TYPES).sort(), enumOf(schemas()["RememberBody"], "memory_type")));
  test("MemoryStatus", () => assert.deepEqual(Object.keys(STATUSES).sort(), enumOf(schemas()["MemoryOut"], "status")));
  test("Remembered outcome", () =>
    assert.deepEqual(Object.keys(OUTCOMES).sort(), enumOf(schemas()["WriteOut"], "outcome")));
  test("DroppedMemory reason", () =>
    assert.deepEqual(Object.keys(DROP_REASONS).sort(), enumOf(schemas()["DroppedOut"], "reason")));
});
