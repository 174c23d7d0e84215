/**
 * `XmemoClient`: the HTTP API of an xmemo server as typed, awaited methods, named as the Python
 * client's (clients/python, `xmemo_client`) in camelCase. Each method is one route: its method, path, query
 * parameters and body, sent by transport.ts. Refusals are thrown as the errors of errors.ts.
 */

import type {
  AuditFields,
  CallOptions,
  EditChanges,
  EventFields,
  ListFields,
  MemoryFields,
  NewMemory,
  RecallFields,
  ReflectFields,
  SearchFields,
  StateFields,
} from "./fields.js";
import type {
  AuditLog,
  ContextPack,
  Forgotten,
  Health,
  History,
  MemoryPage,
  MemoryRecord,
  ReflectReport,
  Remembered,
  SearchResults,
  StatusChange,
} from "./results.js";
import { type Call, type Connection, type ParamValue, send } from "./transport.js";

/** How long a call waits for its answer unless told otherwise (the Python client's default too). */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  /** Milliseconds a call waits for its whole answer (default 30,000); a call's own `timeoutMs` wins. */
  timeoutMs?: number;
  /** Headers sent with every call (an `X-Request-ID`, say). */
  headers?: Record<string, string>;
}

function memoryPath(memoryId: string, rest = ""): string {
  return `/api/v1/memories/${encodeURIComponent(memoryId)}${rest}`;
}

function atVersion(expectedVersion: number | undefined): Record<string, ParamValue> {
  return { expected_version: expectedVersion };
}

/** A client of one server with one API key. It holds no connection of its own: nothing to close. */
export class XmemoClient {
  readonly #connection: Connection;

  /**
   * @param baseUrl The server's URL (`http://127.0.0.1:8420`); a trailing slash is dropped.
   * @param apiKey The API key sent as `Authorization: Bearer ...` with every call. An unset or blank
   *   key (`process.env.XMEMO_API_KEY` when the variable is not set) throws a TypeError here, rather
   *   than every call being refused as unauthenticated.
   */
  constructor(baseUrl: string, apiKey: string, options: ClientOptions = {}) {
    if (typeof apiKey !== "string" || apiKey.trim() === "") {
      const given = typeof apiKey === "string" ? "an empty or blank string" : String(apiKey);
      throw new TypeError(`XmemoClient needs an API key, got ${given} (is XMEMO_API_KEY set?)`);
    }
    this.#connection = {
      baseUrl: baseUrl.replace(/\/+$/, ""),
      headers: {
        accept: "application/json",
        "user-agent": "xmemo-client",
        ...options.headers,
        authorization: `Bearer ${apiKey}`,
      },
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    };
  }

  #send<T>(call: Call<T>, options: CallOptions): Promise<T> {
    return send(this.#connection, call, options.signal, options.timeoutMs);
  }

  // -- writes ---------------------------------------------------------------------------------

  /** Store a memory; the same `semantic_key` with new content supersedes the old version. */
  remember(content: string, path: string, fields: MemoryFields = {}, options: CallOptions = {}): Promise<Remembered> {
    return this.#send({ method: "POST", path: "/api/v1/remember", body: { content, path, ...fields } }, options);
  }

  /** Up to 500 memories in one transaction (all or none); a batch sent again adds nothing. */
  rememberBatch(memories: readonly NewMemory[], options: CallOptions = {}): Promise<Remembered[]> {
    const call: Call<Remembered[]> = {
      method: "POST",
      path: "/api/v1/memories/batch",
      body: { memories },
      read: (data) => (data as { results: Remembered[] }).results,
    };
    return this.#send(call, options);
  }

  /** The one current `working` memory of `stateKey` (a new version when the content changes). */
  updateState(
    stateKey: string,
    content: string,
    fields: StateFields = {},
    options: CallOptions = {},
  ): Promise<Remembered> {
    const body = { state_key: stateKey, content, ...fields };
    return this.#send({ method: "POST", path: "/api/v1/update_state", body }, options);
  }

  /** Append an episodic event that happened at `occurredAt` (ISO 8601 with a zone); never deduplicated. */
  timelineEvent(
    content: string,
    eventType: string,
    occurredAt: string,
    fields: EventFields = {},
    options: CallOptions = {},
  ): Promise<Remembered> {
    const body = { content, event_type: eventType, occurred_at: occurredAt, ...fields };
    return this.#send({ method: "POST", path: "/api/v1/timeline/events", body }, options);
  }

  // -- reads ----------------------------------------------------------------------------------

  /**
   * The context pack for `query`: the few memories that matter, within the item and token budgets.
   *
   * @param query The question or task: not blank, and at most 8,192 characters as the server counts
   *   them (Unicode code points: a character beyond the Basic Multilingual Plane, an emoji say, is 1
   *   there and 2 in a JavaScript string's `length`). A longer query is refused with ValidationError
   *   (422): shorten it before the call.
   */
  recallContext(query: string, fields: RecallFields = {}, options: CallOptions = {}): Promise<ContextPack> {
    return this.#send({ method: "POST", path: "/v1/recall/context", body: { query, ...fields } }, options);
  }

  /**
   * Strict search: only memories that match `query` well (the list may be empty).
   *
   * @param query What to look for: not blank, and at most 8,192 characters as the server counts them
   *   (Unicode code points: a character beyond the Basic Multilingual Plane, an emoji say, is 1 there
   *   and 2 in a JavaScript string's `length`). A longer query is refused with ValidationError (422):
   *   shorten it before the call.
   */
  search(query: string, fields: SearchFields = {}, options: CallOptions = {}): Promise<SearchResults> {
    return this.#send({ method: "GET", path: "/v1/memories/search", params: { query, ...fields } }, options);
  }

  /** One memory by id (NotFoundError when this key cannot see it). */
  getMemory(memoryId: string, options: CallOptions = {}): Promise<MemoryRecord> {
    return this.#send({ method: "GET", path: memoryPath(memoryId) }, options);
  }

  /** One page of the memories this key may see, newest created first, any status unless `status`. */
  listMemories(fields: ListFields = {}, options: CallOptions = {}): Promise<MemoryPage> {
    return this.#send({ method: "GET", path: "/api/v1/memories", params: { ...fields } }, options);
  }

  /** A memory's versions, links and audit trail. */
  history(memoryId: string, options: CallOptions = {}): Promise<History> {
    return this.#send({ method: "GET", path: memoryPath(memoryId, "/history") }, options);
  }

  /** Audit records, newest first. */
  audit(fields: AuditFields = {}, options: CallOptions = {}): Promise<AuditLog> {
    return this.#send({ method: "GET", path: "/api/v1/audit", params: { ...fields } }, options);
  }

  /** Liveness: the server answers (no key needed, but it is sent). */
  health(options: CallOptions = {}): Promise<Health> {
    return this.#send({ method: "GET", path: "/healthz" }, options);
  }

  // -- management -----------------------------------------------------------------------------

  /** Change a memory in place at `expectedVersion` (ConflictError if it moved on). */
  edit(
    memoryId: string,
    expectedVersion: number,
    changes: EditChanges,
    options: CallOptions = {},
  ): Promise<MemoryRecord> {
    // A null is sent as null: it clears `expires_at`.
    const body = { expected_version: expectedVersion, ...changes };
    return this.#send({ method: "PATCH", path: memoryPath(memoryId), body }, options);
  }

  /** An archived or expired memory becomes active again. */
  restore(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<StatusChange> {
    const params = atVersion(expectedVersion);
    return this.#send({ method: "POST", path: memoryPath(memoryId, "/restore"), params }, options);
  }

  /** Archive (soft, audited, restorable). */
  archive(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<StatusChange> {
    return this.#send({ method: "DELETE", path: memoryPath(memoryId), params: atVersion(expectedVersion) }, options);
  }

  /** Forget: the content is removed from every store; the audit keeps a tombstone. */
  forget(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<Forgotten> {
    const params = { hard: true, ...atVersion(expectedVersion) };
    return this.#send({ method: "DELETE", path: memoryPath(memoryId), params }, options);
  }

  /** Forget every memory of an owner ("forget me"; a memory:admin key). */
  forgetOwner(ownerId: string, options: CallOptions = {}): Promise<Forgotten> {
    return this.#send({ method: "DELETE", path: `/api/v1/owners/${encodeURIComponent(ownerId)}/memories` }, options);
  }

  /** Consolidate and age memories; `dry_run: true` plans and writes nothing. */
  reflect(fields: ReflectFields = {}, options: CallOptions = {}): Promise<ReflectReport> {
    return this.#send({ method: "POST", path: "/api/v1/reflect", body: { ...fields } }, options);
  }
}
