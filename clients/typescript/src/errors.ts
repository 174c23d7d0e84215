/**
 * The errors a client throws: one class per status class of the contract, each carrying the HTTP
 * `status` and the server's `code` and `message` (`{"error": {"code", "message"}}`), so a caller
 * catches what it can act on.
 *
 *     XmemoClientError              any refusal or failure of a call; `status` 0 when nothing answered
 *     ├── ValidationError           400, 413, 422: the request was malformed; nothing was written
 *     ├── AuthenticationError       401: the key is missing, unknown or revoked
 *     ├── ForbiddenError            403: the key lacks the scope, team or owner the request needs
 *     ├── NotFoundError             404: no memory with that id is visible to this key
 *     ├── ConflictError             409: the memory or the reviewed plan changed; read again and retry
 *     ├── RateLimitedError          429: too many requests for this key; `retryAfter` seconds to wait
 *     ├── UnavailableError          503, or no answer: a store is unavailable or full, or unreachable
 *     │   └── RequestTimeoutError   no answer within the call's timeout
 *     ├── AbortedError              the caller's own signal aborted the call (`cause`: its reason)
 *     └── ServerError               another 5xx: a fault of the server
 */

export class XmemoClientError extends Error {
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The server's error code (`validation_error`, `not_found`, ...), or the client's own. */
  readonly code: string;

  /** `message` is the server's message as it sent it (or the client's own when nothing answered). */
  constructor(status: number, code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
  }
}

/** 422 (or 400, 413): the request was malformed; nothing was written. */
export class ValidationError extends XmemoClientError {}

/** 401: the key is missing, unknown or revoked. */
export class AuthenticationError extends XmemoClientError {}

/** 403: the key lacks the scope, team or owner the request needs. */
export class ForbiddenError extends XmemoClientError {}

/** 404: no memory with that id is visible to this key. */
export class NotFoundError extends XmemoClientError {}

/** 409: the memory or the reviewed plan changed since it was read; read again and retry. */
export class ConflictError extends XmemoClientError {}

/** 429: too many requests for this key; `retryAfter` seconds until the next is taken (null: not said). */
export class RateLimitedError extends XmemoClientError {
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null) {
    super(status, code, message);
    this.retryAfter = retryAfter;
  }
}

/** 503, or no answer at all: a store is unavailable or full, or the server cannot be reached. */
export class UnavailableError extends XmemoClientError {}

/** No answer within the call's timeout (`timeoutMs`); the request may or may not have been applied. */
export class RequestTimeoutError extends UnavailableError {}

/** The caller's own `signal` aborted the call; `cause` is the signal's reason. */
export class AbortedError extends XmemoClientError {}

/** Another 5xx: a fault of the server. */
export class ServerError extends XmemoClientError {}

type StatusError = new (status: number, code: string, message: string) => XmemoClientError;

const BY_STATUS: ReadonlyMap<number, StatusError> = new Map<number, StatusError>([
  [400, ValidationError],
  [401, AuthenticationError],
  [403, ForbiddenError],
  [404, NotFoundError],
  [409, ConflictError],
  [413, ValidationError],
  [422, ValidationError],
  [503, UnavailableError],
]);

/** Seconds from a `Retry-After` header given in seconds; null when absent or not a number. */
function secondsOf(retryAfter: string | null): number | null {
  if (retryAfter === null || retryAfter.trim() === "") return null;
  const seconds = Number(retryAfter);
  return Number.isFinite(seconds) ? seconds : null;
}

function detailOf(body: unknown): { code: string; message: string } {
  const error = typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined;
  if (typeof error !== "object" || error === null) return { code: "error", message: "" };
  const { code, message } = error as { code?: unknown; message?: unknown };
  return { code: code === undefined ? "error" : String(code), message: message === undefined ? "" : String(message) };
}

/** The error for an error response: its status, and the contract's error body when it has one. */
export function errorFor(status: number, body: unknown, retryAfter: string | null = null): XmemoClientError {
  const detail = detailOf(body);
  const message = detail.message || `the server answered ${status}`;
  if (status === 429) return new RateLimitedError(status, detail.code, message, secondsOf(retryAfter));
  const kind = BY_STATUS.get(status) ?? (status >= 500 ? ServerError : XmemoClientError);
  return new kind(status, detail.code, message);
}
