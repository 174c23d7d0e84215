/**
 * Memory tools for an agent, in the plain shape agent frameworks take: a name, a description, a JSON
 * Schema of the input, and an `execute(input, { abortSignal })` that returns text for the model.
 * `recall_memory` answers with the context pack's `context_text`; `remember` stores a note.
 *
 * Run it against a server: XMEMO_URL=http://127.0.0.1:8420 XMEMO_API_KEY=... npm run example
 */

import { pathToFileURL } from "node:url";

import { type RecallFields, XmemoClient } from "xmemo-client";

/** A tool as agent frameworks describe one (see the README for the AI SDK and MCP wiring). */
export interface AgentTool<Input> {
  name: string;
  description: string;
  inputSchema: {
    type: "object";
    properties: Record<string, { type: string; description: string }>;
    required: string[];
    additionalProperties: false;
  };
  execute(input: Input, options?: { abortSignal?: AbortSignal }): Promise<string>;
}

/** What `recall_memory` answers when nothing matches (the MCP tool's words). */
export const NOTHING_RECALLED = "No matching memory was found.";

/** Recall before answering: the memories that bear on `query`, as text within a token budget. */
export function recallMemoryTool(
  xmemo: XmemoClient,
  budget: RecallFields = { max_items: 6, max_tokens: 1200 },
): AgentTool<{ query: string }> {
  return {
    name: "recall_memory",
    description:
      "Recall what you learned in earlier sessions that bears on a question or task. " +
      "Returns the relevant memories as text; read it before you answer.",
    inputSchema: {
      type: "object",
      properties: { query: { type: "string", description: "The question or task, in your own words." } },
      required: ["query"],
      additionalProperties: false,
    },
    async execute({ query }, { abortSignal } = {}) {
      const pack = await xmemo.recallContext(query, budget, abortSignal ? { signal: abortSignal } : {});
      return pack.items.length > 0 ? pack.context_text : NOTHING_RECALLED;
    },
  };
}

/**
 * Remember a fact, decision or lesson for later sessions, filed under `path`. It is sent with
 * `dedupe: true`: a note near-identical to one already stored is merged into it (`merged`, the same
 * id) rather than stored again, so an agent that saves the same lesson in every session keeps one.
 */
export function rememberTool(xmemo: XmemoClient, path = "agent/notes"): AgentTool<{ content: string }> {
  return {
    name: "remember",
    description:
      "Save a fact, decision or lesson worth knowing in a later session. One self-contained statement per call.",
    inputSchema: {
      type: "object",
      properties: { content: { type: "string", description: "The statement to remember." } },
      required: ["content"],
      additionalProperties: false,
    },
    async execute({ content }, { abortSignal } = {}) {
      const written = await xmemo.remember(content, path, { dedupe: true }, abortSignal ? { signal: abortSignal } : {});
      return `Remembered (${written.outcome}) as ${written.id}.`;
    },
  };
}

/** Remember one note and recall it, printing what the model would read; run again, it stores nothing new. */
async function main(): Promise<void> {
  const apiKey = process.env["XMEMO_API_KEY"];
  if (!apiKey) throw new Error("set XMEMO_API_KEY (and XMEMO_URL, default http://127.0.0.1:8420)");
  const xmemo = new XmemoClient(process.env["XMEMO_URL"] ?? "http://127.0.0.1:8420", apiKey);
  const remember = rememberTool(xmemo);
  const recall = recallMemoryTool(xmemo);
  console.log(await remember.execute({ content: "The refund runbook is in ops/runbooks/refunds.md." }));
  console.log(await recall.execute({ query: "Where is the refund runbook?" }));
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
