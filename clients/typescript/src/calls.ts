/**
 * Each operation of the HTTP API as data: its method, path, query parameters, body, and how to read
 * its answer. The client (client.ts) only sends them, so the routes live in this one place.
 */

import type {
  AuditFields,
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

/** A query parameter's value; undefined means "the server's default", so it is not sent. */
export type ParamValue = string | number | boolean | undefined;

export interface Call<T> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  params?: Readonly<Record<string, ParamValue>>;
  /** Sent as JSON; fields left undefined are not sent. */
  body?: object;
  /** The typed result from the decoded JSON answer. */
  read: (data: unknown) => T;
}

/** The answer is the result as the server sent it, typed by the contract. */
function asSent<T>(data: unknown): T {
  return data as T;
}

function memoryPath(memoryId: string, rest = ""): string {
  return `/api/v1/memories/${encodeURIComponent(memoryId)}${rest}`;
}

function atVersion(expectedVersion: number | undefined): Record<string, ParamValue> {
  return { expected_version: expectedVersion };
}

export function remember(content: string, path: string, fields: MemoryFields): Call<Remembered> {
  return { method: "POST", path: "/api/v1/remember", body: { content, path, ...fields }, read: asSent };
}

export function rememberBatch(memories: readonly NewMemory[]): Call<Remembered[]> {
  return {
    method: "POST",
    path: "/api/v1/memories/batch",
    body: { memories },
    read: (data) => (data as { results: Remembered[] }).results,
  };
}

export function updateState(stateKey: string, content: string, fields: StateFields): Call<Remembered> {
  return {
    method: "POST",
    path: "/api/v1/update_state",
    body: { state_key: stateKey, content, ...fields },
    read: asSent,
  };
}

export function timelineEvent(
  content: string,
  eventType: string,
  occurredAt: string,
  fields: EventFields,
): Call<Remembered> {
  return {
    method: "POST",
    path: "/api/v1/timeline/events",
    body: { content, event_type: eventType, occurred_at: occurredAt, ...fields },
    read: asSent,
  };
}

export function recallContext(query: string, fields: RecallFields): Call<ContextPack> {
  return { method: "POST", path: "/v1/recall/context", body: { query, ...fields }, read: asSent };
}

export function search(query: string, fields: SearchFields): Call<SearchResults> {
  return { method: "GET", path: "/v1/memories/search", params: { query, ...fields }, read: asSent };
}

export function getMemory(memoryId: string): Call<MemoryRecord> {
  return { method: "GET", path: memoryPath(memoryId), read: asSent };
}

export function listMemories(fields: ListFields): Call<MemoryPage> {
  return { method: "GET", path: "/api/v1/memories", params: { ...fields }, read: asSent };
}

export function history(memoryId: string): Call<History> {
  return { method: "GET", path: memoryPath(memoryId, "/history"), read: asSent };
}

export function edit(memoryId: string, expectedVersion: number, changes: EditChanges): Call<MemoryRecord> {
  // A null is sent as null: it clears `expires_at`.
  return {
    method: "PATCH",
    path: memoryPath(memoryId),
    body: { expected_version: expectedVersion, ...changes },
    read: asSent,
  };
}

export function restore(memoryId: string, expectedVersion?: number): Call<StatusChange> {
  return { method: "POST", path: memoryPath(memoryId, "/restore"), params: atVersion(expectedVersion), read: asSent };
}

export function archive(memoryId: string, expectedVersion?: number): Call<StatusChange> {
  return { method: "DELETE", path: memoryPath(memoryId), params: atVersion(expectedVersion), read: asSent };
}

export function forget(memoryId: string, expectedVersion?: number): Call<Forgotten> {
  return {
    method: "DELETE",
    path: memoryPath(memoryId),
    params: { hard: true, ...atVersion(expectedVersion) },
    read: asSent,
  };
}

export function forgetOwner(ownerId: string): Call<Forgotten> {
  return { method: "DELETE", path: `/api/v1/owners/${encodeURIComponent(ownerId)}/memories`, read: asSent };
}

export function reflect(fields: ReflectFields): Call<ReflectReport> {
  return { method: "POST", path: "/api/v1/reflect", body: { ...fields }, read: asSent };
}

export function audit(fields: AuditFields): Call<AuditLog> {
  return { method: "GET", path: "/api/v1/audit", params: { ...fields }, read: asSent };
}

export function health(): Call<Health> {
  return { method: "GET", path: "/healthz", read: asSent };
}
