/**
 * The optional fields of each operation, typed as the server's request schemas define them
 * (service/schemas.py): a field left out takes the server's default. Timestamps are ISO 8601 text
 * with a zone (`2023-05-13T10:00:00Z`). Field names are the wire's (snake_case).
 */

import type { JsonObject, MemoryType } from "./results.js";

/** A memory's type on input: `auto` guesses it from the text (semantic when a semantic_key is given). */
export type MemoryTypeInput = "auto" | MemoryType;

/** The fields of a new memory besides its content and path (remember, and each memory of a batch). */
export interface NewMemoryFields {
  memory_type?: MemoryTypeInput;
  bucket?: string;
  scope?: string;
  team_id?: string;
  source?: string;
  importance?: number;
  confidence?: number;
  expires_at?: string;
  /** When it happened (default: now); dates in questions resolve against it. */
  occurred_at?: string;
  /** Who said it (a conversation's speaker, a chat's `user` or `assistant`). */
  speaker?: string;
  /** The conversation it belongs to. */
  session_id?: string;
  metadata?: JsonObject;
}

/** remember's optional fields. */
export interface MemoryFields extends NewMemoryFields {
  /** Your stable name for a fact: the same key with new content supersedes the old version. */
  semantic_key?: string;
  /** Also merge a near-identical memory. */
  dedupe?: boolean;
}

/** One memory of `rememberBatch` (a batch takes no semantic_key and no dedupe). */
export interface NewMemory extends NewMemoryFields {
  content: string;
  path: string;
}

/** updateState's optional fields. */
export interface StateFields {
  bucket?: string;
  scope?: string;
  source?: string;
  metadata?: JsonObject;
}

/** timelineEvent's optional fields. */
export interface EventFields extends StateFields {
  session_id?: string;
}

/** The filters a read shares: only memories of that scope, team, bucket, path (`%` a wildcard), type. */
export interface ReadFilters {
  scope?: string;
  team_id?: string;
  bucket?: string;
  path_filter?: string;
  memory_type?: MemoryTypeInput;
}

/** recallContext's optional fields. */
export interface RecallFields extends ReadFilters {
  /** 1 to 50 (default 8). */
  max_items?: number;
  /** 1 to 12,000 (default 1,500). */
  max_tokens?: number;
  /** When the question is asked (default now): "last Saturday" resolves against it. */
  as_of?: string;
}

/** search's optional fields. */
export interface SearchFields extends ReadFilters {
  /** 1 to 100 (default 10). */
  limit?: number;
  /** 0 to 1 (default: the server's XMEMO_SEARCH_MIN_SCORE). */
  min_score?: number;
}

/** listMemories' optional fields. */
export interface ListFields {
  path_prefix?: string;
  memory_type?: MemoryType;
  status?: "active" | "archived" | "expired" | "superseded";
  bucket?: string;
  team_id?: string;
  scope?: string;
  /** `key=value`: the metadata field equals this text. */
  metadata?: string;
  /** Content contains this. */
  text?: string;
  time_field?: "created_at" | "updated_at" | "occurred_at";
  order?: "created_at" | "updated_at" | "occurred_at";
  since?: string;
  until?: string;
  /** Another owner's memories (memory:admin). */
  owner_id?: string;
  /** `next_cursor` of the previous page. */
  cursor?: string;
  /** 1 to the server's page limit (default 50). */
  limit?: number;
}

/** The fields `edit` changes (only those given); `expires_at: null` clears it. */
export interface EditChanges {
  content?: string;
  path?: string;
  memory_type?: MemoryType;
  importance?: number;
  confidence?: number;
  source?: string;
  expires_at?: string | null;
  metadata?: JsonObject;
}

/** reflect's optional fields (the contract's section 5). */
export interface ReflectFields {
  /** Comma-separated actions: summarize, promote, expire, decay, archive (default all five). */
  actions_csv?: string;
  /** Plan and report only; write nothing. */
  dry_run?: boolean;
  time_window_hours?: number;
  since?: string;
  until?: string;
  path_filter?: string;
  owner_filter?: string;
  bucket?: string;
  scope?: string;
  team_id?: string;
  limit?: number;
  /** A dry run's `plan_digest`: apply only if the plan is still this one, else ConflictError. */
  expected_plan?: string;
  /** `proposal_id`s of that dry run to leave out; a real run records each as turned down (`held_back` later). */
  exclude?: readonly string[];
  /** Clear the proposals earlier reviews turned down and plan as if none had been. */
  reconsider?: boolean;
}

/** audit's optional fields. */
export interface AuditFields {
  since?: string;
  until?: string;
  /** Comma-separated actions (create, edit, archive, restore, forget, or reflect's). */
  action?: string;
  limit?: number;
}

/** Options of one call, apart from what it sends. */
export interface CallOptions {
  /** Abort the call with this signal (an agent framework's own, say): it rejects with AbortedError. */
  signal?: AbortSignal;
  /** Give up after this many milliseconds (default: the client's `timeoutMs`): RequestTimeoutError. */
  timeoutMs?: number;
}
