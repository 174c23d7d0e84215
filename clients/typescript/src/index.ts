/**
 * xmemo-client: a typed TypeScript client of an xmemo server's REST API, on the platform's `fetch`
 * and `AbortSignal` alone (Node.js 20.3 or later). `new XmemoClient(baseUrl, apiKey)`.
 */

export { type ClientOptions, DEFAULT_TIMEOUT_MS, XmemoClient } from "./client.js";
export {
  AbortedError,
  AuthenticationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  RequestTimeoutError,
  ServerError,
  UnavailableError,
  ValidationError,
  XmemoClientError,
} from "./errors.js";
export type * from "./fields.js";
export type * from "./results.js";
