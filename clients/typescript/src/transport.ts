/**
 * Sending one call over the platform's `fetch`: the bearer key, a timeout per call
 * (`AbortSignal.timeout`) combined with the caller's own signal (`AbortSignal.any`), and every way a
 * call can fail turned into one of the errors of errors.ts.
 */

import {
  AbortedError,
  RequestTimeoutError,
  UnavailableError,
  XmemoClientError,
  errorFor,
} from "./errors.js";

/** A query parameter's value; undefined means "the server's default", so it is not sent. */
export type ParamValue = string | number | boolean | undefined;

/** One operation of the HTTP API as data: its method, path, query parameters, body, and how to read its answer. */
export interface Call<T> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  params?: Readonly<Record<string, ParamValue>>;
  /** Sent as JSON; fields left undefined are not sent. */
  body?: object;
  /** The typed result from the decoded JSON answer (default: the answer as sent, typed by the contract). */
  read?: (data: unknown) => T;
}

export interface Connection {
  /** The server's base URL without a trailing slash. */
  baseUrl: string;
  headers: Readonly<Record<string, string>>;
  timeoutMs: number;
}

function urlOf(baseUrl: string, path: string, params: Readonly<Record<string, ParamValue>> = {}): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    // undefined is "the server's default"; a null from untyped JavaScript is taken to mean the same
    if (value !== undefined && value !== null) query.append(name, String(value));
  }
  const text = query.toString();
  return `${baseUrl}${path}${text ? `?${text}` : ""}`;
}

function callName(call: Call<unknown>): string {
  return `${call.method} ${call.path}`;
}

/** Why a fetch that threw failed: the caller's abort, our timeout, or no answer. */
function failureOf(
  call: Call<unknown>,
  error: unknown,
  timeout: AbortSignal,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): XmemoClientError {
  if (signal?.aborted) {
    return new AbortedError(0, "aborted", `${callName(call)} was aborted by the caller's signal`, {
      cause: signal.reason,
    });
  }
  if (timeout.aborted) {
    return new RequestTimeoutError(0, "timeout", `no answer to ${callName(call)} within ${timeoutMs} ms`, {
      cause: error,
    });
  }
  const reason = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
  return new UnavailableError(0, "unreachable", `cannot reach the server: ${reason}`, { cause: error });
}

async function decode(call: Call<unknown>, response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    if (!response.ok) return undefined; // an error answer without the contract's body: its status says enough
    throw new XmemoClientError(response.status, "bad_response", `the answer to ${callName(call)} is not JSON`, {
      cause: error,
    });
  }
}

/** Send `call`; its typed result, or the error for what went wrong. */
export async function send<T>(
  connection: Connection,
  call: Call<T>,
  signal?: AbortSignal,
  timeoutMs: number = connection.timeoutMs,
): Promise<T> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const headers: Record<string, string> = { ...connection.headers };
  if (call.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  let data: unknown;
  try {
    response = await fetch(urlOf(connection.baseUrl, call.path, call.params), {
      method: call.method,
      headers,
      body: call.body === undefined ? null : JSON.stringify(call.body),
      signal: signal === undefined ? timeout : AbortSignal.any([timeout, signal]),
    });
    data = await decode(call, response);
  } catch (error) {
    if (error instanceof XmemoClientError) throw error;
    throw failureOf(call, error, timeout, timeoutMs, signal);
  }
  if (!response.ok) throw errorFor(response.status, data, response.headers.get("retry-after"));
  if (data === undefined) {
    throw new XmemoClientError(response.status, "bad_response", `the answer to ${callName(call)} is empty`);
  }
  return call.read === undefined ? (data as T) : call.read(data);
}
