/**
 * `XmemoClient`: the HTTP API of an xmemo server as typed, awaited methods, named as the Python
 * client's (service/client) in camelCase. Refusals are thrown as the errors of errors.ts.
 */

import * as calls from "./calls.js";
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
import { type Connection, send } from "./transport.js";

/** How long a call waits for its answer unless told otherwise (the Python client's default too). */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ClientOptions {
  /** Milliseconds a call waits for its whole answer (default 30,000); a call's own `timeoutMs` wins. */
  timeoutMs?: number;
  /** Headers sent with every call (an `X-Request-ID`, say). */
  headers?: Record<string, string>;
}

/** A client of one server with one API key. It holds no connection of its own: nothing to close. */
export class XmemoClient {
  readonly #connection: Connection;

  constructor(baseUrl: string, apiKey: string, options: ClientOptions = {}) {
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

  #send<T>(call: calls.Call<T>, options: CallOptions): Promise<T> {
    return send(this.#connection, call, options.signal, options.timeoutMs);
  }

  // -- writes ---------------------------------------------------------------------------------

  /** Store a memory; the same `semantic_key` with new content supersedes the old version. */
  remember(content: string, path: string, fields: MemoryFields = {}, options: CallOptions = {}): Promise<Remembered> {
    return this.#send(calls.remember(content, path, fields), options);
  }

  /** Up to 500 memories in one transaction (all or none); a batch sent again adds nothing. */
  rememberBatch(memories: readonly NewMemory[], options: CallOptions = {}): Promise<Remembered[]> {
    return this.#send(calls.rememberBatch(memories), options);
  }

  /** The one current `working` memory of `stateKey` (a new version when the content changes). */
  updateState(
    stateKey: string,
    content: string,
    fields: StateFields = {},
    options: CallOptions = {},
  ): Promise<Remembered> {
    return this.#send(calls.updateState(stateKey, content, fields), options);
  }

  /** Append an episodic event that happened at `occurredAt` (ISO 8601 with a zone); never deduplicated. */
  timelineEvent(
    content: string,
    eventType: string,
    occurredAt: string,
    fields: EventFields = {},
    options: CallOptions = {},
  ): Promise<Remembered> {
    return this.#send(calls.timelineEvent(content, eventType, occurredAt, fields), options);
  }

  // -- reads ----------------------------------------------------------------------------------

  /** The context pack for `query`: the few memories that matter, within the item and token budgets. */
  recallContext(query: string, fields: RecallFields = {}, options: CallOptions = {}): Promise<ContextPack> {
    return this.#send(calls.recallContext(query, fields), options);
  }

  /** Strict search: only memories that match `query` well (the list may be empty). */
  search(query: string, fields: SearchFields = {}, options: CallOptions = {}): Promise<SearchResults> {
    return this.#send(calls.search(query, fields), options);
  }

  /** One memory by id (NotFoundError when this key cannot see it). */
  getMemory(memoryId: string, options: CallOptions = {}): Promise<MemoryRecord> {
    return this.#send(calls.getMemory(memoryId), options);
  }

  /** One page of the memories this key may see, newest created first, any status unless `status`. */
  listMemories(fields: ListFields = {}, options: CallOptions = {}): Promise<MemoryPage> {
    return this.#send(calls.listMemories(fields), options);
  }

  /** A memory's versions, links and audit trail. */
  history(memoryId: string, options: CallOptions = {}): Promise<History> {
    return this.#send(calls.history(memoryId), options);
  }

  /** Audit records, newest first. */
  audit(fields: AuditFields = {}, options: CallOptions = {}): Promise<AuditLog> {
    return this.#send(calls.audit(fields), options);
  }

  /** Liveness: the server answers (no key needed, but it is sent). */
  health(options: CallOptions = {}): Promise<Health> {
    return this.#send(calls.health(), options);
  }

  // -- management -----------------------------------------------------------------------------

  /** Change a memory in place at `expectedVersion` (ConflictError if it moved on). */
  edit(
    memoryId: string,
    expectedVersion: number,
    changes: EditChanges,
    options: CallOptions = {},
  ): Promise<MemoryRecord> {
    return this.#send(calls.edit(memoryId, expectedVersion, changes), options);
  }

  /** An archived or expired memory becomes active again. */
  restore(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<StatusChange> {
    return this.#send(calls.restore(memoryId, expectedVersion), options);
  }

  /** Archive (soft, audited, restorable). */
  archive(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<StatusChange> {
    return this.#send(calls.archive(memoryId, expectedVersion), options);
  }

  /** Forget: the content is removed from every store; the audit keeps a tombstone. */
  forget(memoryId: string, expectedVersion?: number, options: CallOptions = {}): Promise<Forgotten> {
    return this.#send(calls.forget(memoryId, expectedVersion), options);
  }

  /** Forget every memory of an owner ("forget me"; a memory:admin key). */
  forgetOwner(ownerId: string, options: CallOptions = {}): Promise<Forgotten> {
    return this.#send(calls.forgetOwner(ownerId), options);
  }

  /** Consolidate and age memories; `dry_run: true` plans and writes nothing. */
  reflect(fields: ReflectFields = {}, options: CallOptions = {}): Promise<ReflectReport> {
    return this.#send(calls.reflect(fields), options);
  }
}
