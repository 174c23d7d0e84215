/**
 * What the client returns: the server's JSON answers, typed as the REST contract and the server's
 * OpenAPI define them (service/routes/responses.py and models.py). Field names are the wire's
 * (snake_case); a field the server adds later is still on the object, untyped.
 * test/contract.test.ts checks every interface here against the running server's /openapi.json.
 */

/** A JSON object whose fields the contract leaves open. */
export type JsonObject = Record<string, unknown>;

/** The type of a stored memory (`auto` on input lets the server choose one of these). */
export type MemoryType = "episodic" | "semantic" | "procedural" | "identity" | "working";

export type MemoryStatus = "active" | "archived" | "expired" | "superseded";

/** A write's answer: `outcome` is created, unchanged (same key and content), superseded or merged. */
export interface Remembered {
  id: string;
  /** The same id (XMemo's name for it). */
  memory_id: string;
  status: MemoryStatus;
  version: number;
  deduplicated: boolean;
  outcome: "created" | "unchanged" | "superseded" | "merged";
}

/** A memory record (the contract's record). */
export interface MemoryRecord {
  id: string;
  owner_id: string;
  team_id: string | null;
  bucket: string;
  scope: string;
  path: string;
  type: MemoryType;
  content: string;
  semantic_key: string | null;
  state_key: string | null;
  event_type: string | null;
  importance: number;
  confidence: number;
  source: string;
  session_id: string | null;
  speaker?: string | null;
  metadata: JsonObject;
  created_at: string;
  updated_at: string;
  occurred_at: string;
  last_accessed_at: string | null;
  access_count: number;
  expires_at: string | null;
  status: MemoryStatus;
  version: number;
  derived_from: string[];
}

/** One page of a listing, newest first; pass `next_cursor` as `cursor` for the next (null: the last). */
export interface MemoryPage {
  memories: MemoryRecord[];
  next_cursor: string | null;
}

/** One memory in a context pack. */
export interface PackItem {
  id: string;
  type: MemoryType;
  path: string;
  score: number;
  /** Tokens of this item's block in `context_text`. */
  tokens: number;
  shortened: boolean;
  created_at: string;
  occurred_at: string;
  /** A group's (a summary or promotion showing memories the pack holds): the memories its lines show, in order. */
  members?: PackMember[];
}

/** A memory a grouped pack item's line shows: the id to cite or edit, and where it is. */
export interface PackMember {
  id: string;
  type: MemoryType;
  path: string;
  occurred_at: string;
}

/** A pack's budget: `used_tokens` is the exact cl100k count of `context_text`, never over `max_tokens`. */
export interface Budget {
  max_items: number;
  max_tokens: number;
  used_items: number;
  used_tokens: number;
  /** Memories among the top `max_items` that the token budget kept out. */
  dropped_items: number;
  shortened_items: number;
}

/** How many candidates each channel found, their union, and how many matched. */
export interface Candidates {
  dense: number;
  bm25: number;
  union: number;
  matched: number;
}

/** A memory shown as another packed item (a restatement, or a member grouped under a summary). */
export interface CollapsedMemory {
  id: string;
  into: string;
  reason: string;
}

/** A memory read for the pack and left out, with why. */
export interface DroppedMemory {
  id: string;
  reason: "budget" | "item_limit" | "floor";
  score: number;
}

/** The time a query names (a date phrase resolved against `as_of`). */
export interface TimeWindow {
  phrase: string;
  start: string;
  end: string;
  /** `time-led`: the question is mostly its date, and what occurred in the window leads; `preferred`: the window lifts what matches. */
  path: "time-led" | "preferred";
  /** How many memories occurred in the window (at most 1000 are read). */
  candidates: number;
}

/** What the query was read to say: soft preferences, never filters. */
export interface QueryReading {
  as_of?: string | null;
  speaker?: string | null;
  time_window?: TimeWindow | null;
  /** The word that asked for what is recent ("recent", "latest", "最近"): the newest answers lead. */
  recency?: string | null;
}

/** How the pack was retrieved and ranked. */
export interface RetrievalPlan {
  strategy: string;
  channels: string[];
  /** The fusion method and its parameters. */
  fusion: JsonObject;
  /** The recency and importance blend and its parameters. */
  ranking: JsonObject;
  candidates: Candidates;
  query: QueryReading;
  relevance_floor: number | null;
  /** Each packed item's id and score components. */
  items: JsonObject[];
  collapsed: CollapsedMemory[];
  dropped: DroppedMemory[];
}

/** A context pack: `context_text` is what an agent puts in its prompt; `items` what it holds. */
export interface ContextPack {
  version: string;
  query: string;
  retrieval_plan: RetrievalPlan;
  budget: Budget;
  items: PackItem[];
  context_text: string;
  scope: string;
}

/** One strict search match. */
export interface SearchHit {
  id: string;
  /** The memory's text, its first 8,192 characters when it is longer (`content_truncated`). */
  content: string;
  content_truncated: boolean;
  type: MemoryType;
  path: string;
  bucket: string;
  scope: string;
  team_id: string | null;
  created_at: string;
  occurred_at: string;
  importance: number;
  /** Cosine with the query, or 1.0 when every query term is in the memory. */
  score: number;
  /** The hybrid ranking's score. */
  rank_score: number;
}

/** Strict search: only good matches, so `results` may be empty. */
export interface SearchResults {
  results: SearchHit[];
  query: string;
  min_score: number;
}

/** The five counts of a reflect pass (the contract's section 5). */
export interface ReflectCounts {
  summarized: number;
  promoted: number;
  expired: number;
  decayed: number;
  archived: number;
}

/**
 * The compactor's report. A dry run's is exactly the plan a real run applies: send its `plan_digest`
 * back as `expected_plan`, and the `proposal_id` of each `preview` entry you turn down in `exclude`.
 */
export interface ReflectReport {
  dry_run: boolean;
  plan_id: string;
  plan_digest: string;
  actions: string[];
  filters: JsonObject;
  now: string;
  candidates: Record<string, number>;
  summaries: JsonObject[];
  promotions: JsonObject[];
  lifecycle: Record<string, JsonObject[]>;
  counts: ReflectCounts;
  audit_record_ids: string[];
  excluded: string[];
  preview: JsonObject[];
  /** Proposals an earlier review turned down, not made again until one of their memories changes or another joins. */
  held_back?: JsonObject[];
}

/** The answer of archive and restore. */
export interface StatusChange {
  id: string;
  status: MemoryStatus;
  version: number;
}

/** The answer of forget: the ids removed from every store, and the tombstones left in the audit log. */
export interface Forgotten {
  forgotten: string[];
  audit_record_ids: string[];
}

/** One version of a memory. */
export interface MemoryVersion {
  version: number;
  at: string;
  action: string;
  actor: string;
  audit_id: string | null;
  changes: JsonObject;
}

/** Another memory named by a link, briefly. */
export interface MemoryLink {
  id: string;
  type: MemoryType;
  path: string;
  status: MemoryStatus;
  created_at: string;
}

/** One audit record: before and after hold the changed fields, by memory id. */
export interface AuditRecord {
  id: string;
  created_at: string;
  actor: string;
  action: string;
  plan_id: string | null;
  owner_id: string;
  team_id: string | null;
  memory_ids: string[];
  before: JsonObject;
  after: JsonObject;
  reason: string;
}

/** A memory's versions (oldest first), its links both ways, and its audit trail (oldest first). */
export interface History {
  memory: MemoryRecord;
  versions: MemoryVersion[];
  derived_from: MemoryLink[];
  derived_into: MemoryLink[];
  supersedes: MemoryLink[];
  superseded_by: MemoryLink[];
  audit: AuditRecord[];
}

/** Audit records, newest first. */
export interface AuditLog {
  records: AuditRecord[];
}

export interface Health {
  status: string;
}
