// Types for llm-rum. Times are milliseconds from performance.now(); marks and metrics are
// offsets from the request's `start`. Names are the wire contract: collectors and other tools
// read records and beacons by them.
//
// The types name DOM ones (Element, URL, fetch, EventSource): declared here, so a consumer
// whose tsconfig `lib` has no "dom" (a server or worker project) still type-checks them.
/// <reference lib="dom" />

/** A request selector: substring of the absolute URL, a RegExp tested on it, or a predicate. */
export type Matcher = string | RegExp | ((url: string, info: { method: string }) => boolean);

export interface RumOptions {
  /** Beacon URL (records are POSTed as text/plain JSON). Omit to use `onRecord` only. */
  collector?: string | URL | null;
  /**
   * 'json' (the v1 beacon, for the llm-rum collector) or 'otlp' (OTLP/HTTP JSON spans, for an
   * OpenTelemetry Collector's /v1/traces; loaded on demand; completed records only). Default 'json'.
   */
  exporter?: 'json' | 'otlp';
  /**
   * Which requests to measure. When given, matched requests are measured whatever their
   * response type (so HTTP errors are recorded) and nothing else is. Default: any response
   * whose content type is a stream (text/event-stream, NDJSON/JSON Lines, AI SDK streams).
   */
  match?: Matcher | Matcher[] | null;
  /**
   * Cross-origin URLs that may receive a `traceparent` header: origins
   * ('https://api.example.com') or URL prefixes ('https://api.example.com/v1/'). Same-origin
   * requests always get one; other origins never (the header would force a CORS preflight).
   */
  propagateTraceUrls?: string[];
  /** Response headers copied into `record.correlation`. Default x-request-id, request-id, openai-processing-ms. */
  correlationHeaders?: string[];
  /** A gap longer than this (ms) between visible progress is a stall. Default 250. */
  stallThresholdMs?: number;
  /** Fraction of tab sessions recorded (decided once per session). Default 1. */
  sampleRate?: number;
  /**
   * Budgets by metric name: 'ttft', 'ttfp', 'perceivedTtft', 'total', 'perceivedTotal', 'tpot',
   * 'itl.p50|p95|p99|max', 'renderDelay.first|p50|p95|max', 'stalls.count|totalMs|longestMs'.
   * Breaches go to `record.budgetBreaches`; unknown names never breach.
   */
  budgets?: Record<string, number>;
  /**
   * Where the answer is painted. `'auto'` (the default): for each measured stream the SDK finds
   * the element whose text grows with the answer by itself (matching the start, then the growth,
   * of the answer text it has seen — in the page only, never sent), searching the document and
   * open shadow roots; `record.paintSource` says `'auto'`, or `'none'` when nothing showed it.
   * An element or a selector (resolved when each request starts): the messages container —
   * text growth inside it after a measured stream started is that stream's answer (the newest
   * stream owns it; non-stream requests never do). `false` (or `null`): no paint metrics unless
   * `rum.observe(el)` names an answer element, which wins over both. Paint observation is a
   * chunk of its own (2.4 KB brotli): init() loads it unless this is `false`/`null`, in which
   * case the first `rum.observe(el)` does.
   */
  observe?: Element | string | 'auto' | false | null;
  /**
   * Refine bracketed paint times with the browser's own presentation times of those frames
   * (Paint Timing `presentationTime` on Long Animation Frame, interaction-contentful-paint and,
   * where the app marks its answer with `elementtiming`, Element Timing entries). Default true.
   */
  nativePaintTimes?: boolean;
  /** Wrap window.fetch and window.EventSource (undone by shutdown()). Default true. */
  patchGlobals?: boolean;
  /**
   * EventSource cannot send headers. When set to a query parameter name (e.g. 'traceparent'),
   * the W3C traceparent is appended to EventSource URLs under that name — same-origin URLs and
   * `propagateTraceUrls` only — for servers that read it there. The browser's reconnects
   * request the same URL, so they carry the same trace. Off by default: the value lands in
   * access logs, proxies and analytics like any query string, and a server that rejects
   * unknown parameters breaks. `EventSource.url` still shows the app's own URL.
   */
  traceparentQueryParam?: string | null;
  /**
   * Called with every finished record (same shape as in the beacon). Exceptions are contained.
   * A record finishes when the core is done with it, not always at body end: with an answer
   * element, at the frame that paints its end (≤ 3 s); in auto mode, an answer not found by the
   * end waits 3 quiet frames (≤ 1 s) for a buffered UI to show it. `rum.flush()` and page
   * hide deliver held records at once.
   */
  onRecord?: ((record: RumRecord) => void) | null;
  /**
   * Called with a copy of each record on its way to the collector, after `onRecord`: return
   * the record (edited or replaced), or `false` / `null` to drop it; returning nothing sends
   * the copy as edited in place. Also called for the `partial` snapshot of a stream running
   * when the page hides (its completed record, same `id`, comes through again). Synchronous
   * (a returned Promise drops the record). A hook that throws drops that record and is
   * reported once with console.warn; later records still go through it. Keep `id`: the queue
   * dedupes by it. Only with `collector`.
   */
  beforeSend?: ((record: RumRecord) => RumRecord | false | null | void) | null;
  /** Drop `?query` and `#fragment` from recorded URLs. Default true. */
  stripQuery?: boolean;
  /**
   * Replace id-like path segments of `record.url` and the beacon's `page` with `:id`: UUIDs,
   * numbers of 4+ digits, long hex, opaque tokens (`thread_9QxZr4…`, 16+ random-looking
   * letters and digits); words such as `v1`, `chat`, `gpt-4o-mini` stay. Default true.
   */
  templateIds?: boolean;
  /**
   * The app's own routes, checked before the automatic rule: the first entry whose `match` is
   * a substring of the absolute URL (or a RegExp matching it) replaces the URL's path with its
   * `template`, used as given. Applies to requests and to the page (`page`). Default [].
   */
  urlTemplates?: UrlTemplate[];
  /**
   * Which model and provider answer requests to some URLs, for what the stream cannot say: a
   * stream that names no model (AI SDK UI streams, NDJSON without `model`, text), and the
   * provider behind the app's own backend (only API hosts such as `api.openai.com` name one by
   * themselves). The first entry whose `match` is a substring of the absolute URL applies. A
   * model the stream names wins over `model` here (`record.modelSource`); `provider` here wins
   * over the host's. Names are held to 128 chars of letters, digits and `-._:/@+` (anything
   * else becomes `_`). Strings only: matched in the core, which has no RegExp. Default [].
   */
  models?: ModelRule[];
  /**
   * Where to load the wasm from (e.g. the URL a bundler's file loader gives for
   * `llm-rum/llm_rum_bg.wasm`). Default: next to the module, a URL webpack, Vite, Parcel and
   * Next.js rewrite to the file they emit; where it cannot be fetched, an inline copy. A
   * `wasmUrl` that cannot be fetched is not replaced by the copy: init() warns and resolves
   * inactive.
   */
  wasmUrl?: string | URL | null;
}

/** One of the app's routes: `{ match: /\/v1\/threads\/[^/]+\/runs/, template: '/v1/threads/:id/runs' }`. */
export interface UrlTemplate {
  /** A substring of the absolute URL, or a RegExp tested on it. */
  match: string | RegExp;
  /** The path recorded instead (starts with '/'; no query or fragment). */
  template: string;
}

/** `{ match: '/api/chat', model: 'gpt-4o', provider: 'openai' }` (see `RumOptions.models`). */
export interface ModelRule {
  /** A substring of the request's absolute URL (`'/api/chat'`, `'https://llm.internal/'`). */
  match: string;
  /** The model requests there ask for (`gen_ai.request.model`), for streams that name none. */
  model?: string;
  /**
   * Who serves them: preferably one of OpenTelemetry GenAI's well-known
   * `gen_ai.provider.name` values (`openai`, `anthropic`, `azure.ai.openai`, `aws.bedrock`,
   * `gcp.vertex_ai`, …), or the app's own name for it.
   */
  provider?: string;
}

/** Marks, as offsets in ms from `start` (null when the moment did not happen). */
export interface Marks {
  /** The user's action that caused the request (markInteraction / trusted input within 1 s). */
  interaction: number | null;
  /**
   * Always 0: the instrumented fetch was called / the EventSource was constructed. For an
   * EventSource reconnect: its request's start from Resource Timing (else its `open`).
   */
  start: 0;
  /** Response headers available (the fetch promise resolved / the EventSource's `open`). */
  headers: number | null;
  /** First body chunk delivered to the page (EventSource: first message). */
  firstByte: number | null;
  /** First reasoning ("thinking") text. */
  firstReasoning: number | null;
  /** First content-bearing event (non-empty answer text). */
  firstToken: number | null;
  /** When the screen showed the first frame with answer text (needs an answer element: named or found, see paintSource). */
  firstPaint: number | null;
  /** Last content-bearing event. */
  lastToken: number | null;
  /** When the screen showed the frame with the last of the answer. */
  lastPaint: number | null;
  /** Stream finished, aborted, failed, or was cut off by page hide/unload. */
  end: number | null;
}

export interface Distribution {
  first: number | null;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

/** Percentiles of inter-token gaps; estimates within 1% (log histogram), `max` exact. */
export interface Itl {
  /** Number of gaps (content-bearing arrivals − 1). */
  n: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  /**
   * The gaps counted per bucket of OpenTelemetry GenAI's `time_per_output_chunk` histogram:
   * 15 counts, for gaps ≤ 10, 20, 40, … 81 920 ms, then above (a gap within 2 % above a bound
   * may count below it). Sums to `n`.
   */
  buckets: number[];
}

export interface Stalls {
  count: number;
  totalMs: number;
  longestMs: number;
  /** Stalls with nothing waiting to be painted. */
  network: number;
  /** Stalls where text had arrived but was not painted. */
  render: number;
}

export interface Stall {
  /** Offset of the last progress before the gap. */
  start: number;
  dur: number;
  cause: 'network' | 'render';
  /**
   * Render stalls: the Long Animation Frame script that overlapped the gap most (LoAF script
   * attribution), or null. `invoker` 'stream-read' (source '') = the app's own handling of a
   * streamed chunk (LoAF names the SDK's re-stream callback as the entry point it ran in).
   */
  blame: { invoker: string; source: string; scriptMs: number } | null;
}

/**
 * How the answer's text reached the page (`RumRecord.delivery`). An arrival is what reached
 * the page at one moment: content-bearing reads (EventSource: messages) within 16 ms (one
 * frame) of the arrival's first read.
 */
export interface Delivery {
  /** Arrivals that carried answer text. */
  arrivals: number;
  /** Content events per arrival: median (nearest rank, exact below 50) and largest; null without answer text. */
  eventsPerArrival: { p50: number | null; max: number | null };
  /** The largest share (0–1, chars) of the answer's text that came in one arrival; null without answer text. */
  largestArrivalShare: number | null;
}

/**
 * Something the SDK could not see of a request (`RumRecord.unseen`):
 * - `'firstPaint'`: answer text arrived before paint observation watched the request (it came
 *   in after the app had the text), so when it was first painted is not known: `firstPaint`,
 *   `ttfp`, `perceivedTtft`, `renderDelay` and `buffered` are null; what was seen from then on
 *   stands (`lastPaint`, `perceivedTotal`, `stalls` between the paints seen);
 * - `'end'`: the early tap's bound was reached before the core came (256 KiB or 4096 chunks of
 *   one response, README), so the record covers the stream up to `marks.end`: its `outcome` is
 *   `'partial'`.
 */
export type Unseen = 'firstPaint' | 'end';

/**
 * A response fact that can explain bursts (`RumRecord.upstreamHints`): a compressed stream
 * (by coding), the server's `X-Accel-Buffering` reaching the page (so no nginx consumed it),
 * or the presence — never the value — of a proxy or CDN header.
 */
export type UpstreamHint =
  | 'content-encoding: gzip'
  | 'content-encoding: br'
  | 'content-encoding: deflate'
  | 'content-encoding: zstd'
  | 'content-encoding: other'
  | 'x-accel-buffering: no'
  | 'x-accel-buffering: yes'
  | 'via'
  | 'cf-ray'
  | 'x-amz-cf-id'
  | 'x-served-by'
  | 'x-cache'
  | 'x-vercel-id'
  | 'fly-request-id'
  | 'x-azure-ref';

export interface ServerTimingEntry {
  name: string;
  dur: number | null;
  desc: string | null;
}

export interface BudgetBreach {
  metric: string;
  limit: number;
  value: number;
}

/** One measured request. Plain JSON; never contains prompt or answer text. */
export interface RumRecord {
  /** Unique per record (16 hex); the collector dedupes on it. */
  id: string;
  /** 32 hex: the trace the request belongs to (see traceSource). */
  traceId: string;
  /** 16 hex: this client span (the parent id sent in traceparent). */
  spanId: string;
  /**
   * propagated: we sent traceparent; app: the app's own was adopted; server: taken from the
   * response (Server-Timing `trace;desc=`, traceresponse; EventSource: Resource Timing's
   * serverTiming, an `id:` line or an `event: trace` message holding a traceparent or a bare
   * 32-hex trace id); none: unlinked.
   */
  traceSource: 'propagated' | 'app' | 'server' | 'none';
  sampled: boolean;
  /**
   * Absolute URL as recorded: query and fragment stripped and id-like path segments replaced
   * by `:id` by default (`stripQuery`, `templateIds`, `urlTemplates`).
   */
  url: string;
  method: string;
  /** The browser API that carried the request. */
  transport: 'fetch' | 'eventsource';
  /**
   * EventSource: every connection attempt is its own record; the browser's reconnects carry
   * the `id` of the first attempt's record here. null otherwise.
   */
  reconnectOf: string | null;
  /** HTTP status (0 when no response; an EventSource that opened: 200). */
  status: number;
  /**
   * `ok`; `aborted` (abort signal, reader cancel); `error` (network error, HTTP status ≥ 400,
   * or an in-band error event — whatever ended the read after it, e.g. the official clients'
   * abort); `partial` (cut off by page hide/unload). EventSource: `ok` when the stream's end
   * marker was seen, else `aborted` when the app called close(), `error` when the connection
   * dropped or failed.
   */
  outcome: 'ok' | 'aborted' | 'error' | 'partial';
  format: 'openai-chat' | 'openai-responses' | 'anthropic' | 'ai-sdk-ui' | 'ndjson' | 'text' | 'unknown';
  /**
   * The model that answered, as the stream names it (Chat Completions chunks' `model`,
   * Responses' `response.model`, Anthropic's `message_start` `message.model`, NDJSON lines'
   * `model`); for a stream that names none, the `models` option's for the URL; else null.
   * Never taken from the prompt. At most 128 chars of letters, digits and `-._:/@+` (others
   * become `_`). Not user content, but `beforeSend` may drop it like anything else.
   */
  model: string | null;
  /** Where `model` came from: the stream itself, or the `models` option (null: no model). */
  modelSource: 'stream' | 'config' | null;
  /**
   * Who served it, as OpenTelemetry GenAI's `gen_ai.provider.name`: the `models` option's for
   * the URL, else the API host's well-known value (`api.openai.com` → `openai`,
   * `api.anthropic.com` → `anthropic`, `*.openai.azure.com` → `azure.ai.openai`, Bedrock →
   * `aws.bedrock`, …; README "OpenTelemetry GenAI conventions"); null for any other host —
   * the app's own backend included, whatever format it relays.
   */
  provider: string | null;
  /** False when a line exceeded the parser's bounded buffer (content metrics incomplete). */
  understood: boolean;
  /** The stream's own end marker was seen ([DONE], message_stop, ...). */
  complete: boolean;
  /** Wall-clock time of `start` (ms since the epoch). */
  startEpochMs: number;
  marks: Marks;
  /** firstToken − start. */
  ttft: number | null;
  /** firstPaint − start. */
  ttfp: number | null;
  /** firstPaint − (interaction ?? start). */
  perceivedTtft: number | null;
  /** lastToken − start. */
  total: number | null;
  /** lastPaint − (interaction ?? start). */
  perceivedTotal: number | null;
  /** Paint time − arrival time per unit of answer text. */
  renderDelay: Distribution | null;
  /** Gaps between consecutive content-bearing arrivals. */
  itl: Itl;
  /** (lastToken − firstToken) / (outputTokens − 1). */
  tpot: number | null;
  stalls: Stalls;
  /**
   * The UI buffered the answer: the first paint came when ≥ 90 % of the text had arrived and
   * more than 50 ms after the first token.
   */
  buffered: boolean | null;
  /**
   * Error bound of the paint times (when the screen showed the frame, reported at the next
   * frame's rAF timestamp): the larger side of the bracket from the frame's rAF callback to two
   * frames past the next frame's callback, or the engine's presentation-time resolution, plus
   * the page clock's step (0.1 ms in Chromium, 5 µs cross-origin isolated, 1 ms in Firefox and
   * WebKit).
   */
  paintErrorMs: number | null;
  /**
   * How the answer element was known: `'observed'` named by the app (the `observe` option or
   * `rum.observe(el)`), `'auto'` found by auto mode (the element whose text grew with this
   * answer), `'none'` not known — auto mode off, or nothing on the page showed the answer's text
   * where the SDK can see it (closed shadow roots, canvas, iframes, a UI that never showed it).
   * The paint fields are null with `'none'`.
   */
  paintSource: 'observed' | 'auto' | 'none';
  /** From the stream's `usage` when present, else content events (see outputTokensSource). */
  outputTokens: number;
  outputTokensSource: 'usage' | 'events';
  /** Unicode scalar values of answer text. */
  chars: number;
  reasoningChars: number;
  contentEvents: number;
  /** Body chunks delivered (EventSource: messages the SDK saw). */
  chunks: number;
  /** Body bytes (EventSource: UTF-8 bytes of the messages' data; the framing is not visible). */
  bytes: number;
  /** How the answer's text reached the page: arrivals, events per arrival, the largest share in one. */
  delivery: Delivery;
  /**
   * Something between the model and the page (a buffering proxy, compression without
   * flushes) delivered the text in bursts no streaming server produces: true when bursts — an
   * arrival of ≥ 8 content events after the page waited ≥ 100 ms for it (the app's own time
   * before its read does not count) — carried at least half of the text and were at least half
   * of the arrivals, or one burst carried at least half of the text; false otherwise; null
   * below 8 content events (too short to tell). Not the UI's own buffering: that is `buffered`.
   */
  upstreamBuffered: boolean | null;
  /**
   * Response facts that explain bursts (see UpstreamHint); [] when none; null when headers
   * could not be seen (EventSource, no response). Cross-origin: only headers the server
   * exposes (Access-Control-Expose-Headers).
   */
  upstreamHints: UpstreamHint[] | null;
  /**
   * The response's Server-Timing. EventSource: from the stream's Resource Timing entry when
   * the attempt ends (cross-origin only with Timing-Allow-Origin); `dur` 0 reads as null there.
   * `null` when it could not be seen at all — an EventSource in an engine that creates no
   * Resource Timing entry for it (WebKit) — as opposed to `[]`, the server sent none.
   */
  serverTiming: ServerTimingEntry[] | null;
  /** ttft split into the server's Server-Timing stages and the rest (network, proxies, client). */
  ttftSplit: { server: number; network: number } | null;
  /** Correlation header values, keyed by lower-case header name. */
  correlation: Record<string, string>;
  /** The longest stalls (at most 16). */
  stallList: Stall[];
  budgetBreaches: BudgetBreach[];
  /**
   * The page was hidden while the stream ran. Paint times after the hide are not reported
   * (nobody waited for them): firstPaint only if it came before, lastPaint/perceivedTotal/
   * renderDelay only if the end of the answer was painted before.
   */
  hidden: boolean;
  /**
   * What the SDK could not see of this request ([] normally). Only requests made before the
   * wasm core was in can miss anything: they reach the app at once and are measured from a
   * bounded tap (README "How it works: before the core is in").
   */
  unseen: Unseen[];
  /** rum.mark(name) offsets. */
  userMarks: Record<string, number>;
  /** Per-stage durations: each mark minus the previous mark in time (the first: minus start). */
  userStages: Record<string, number>;
}

/** The v1 beacon the SDK POSTs to `collector` (text/plain;charset=UTF-8). */
export interface Beacon {
  v: 1;
  /** `llm-rum/<version>`. */
  sdk: string;
  /** The tab session's id (16 hex). */
  session: string;
  /** The page's path (templated like record URLs). */
  page: string;
  /**
   * Why it was sent: the queue's timer, `rum.flush()`, the page hidden or unloading (sent
   * urgently), back online, or records restored that an earlier page load could not send.
   */
  reason: 'timer' | 'manual' | 'hidden' | 'pagehide' | 'online' | 'restore';
  /** Records the queue had to drop since the last beacon. */
  dropped: number;
  /**
   * When this beacon was sent: epoch ms (whole), on the same clock as the records'
   * `startEpochMs` (performance.timeOrigin + now). The collector corrects each record's start
   * by the client's clock skew (its receive time − sentAt, less a bounded transit). Set anew
   * on every attempt, retries and restored records included.
   */
  sentAt: number;
  records: RumRecord[];
}

export interface Rum {
  /** Instrumented fetch: pass to clients that take one (new OpenAI({ fetch: rum.fetch })). */
  fetch: typeof fetch;
  /**
   * Instrumented EventSource class (a subclass of the native one, from init() on; when the
   * core does not load it measures nothing and `window.EventSource` is the native class
   * again). Messages are measured on `onmessage` and on the named event types the app
   * subscribes to with `addEventListener`, plus `event: trace` messages.
   */
  EventSource: typeof EventSource;
  /**
   * The answer element for the current answer (the newest running measured stream without an
   * explicit element), else for the next measured stream — requests whose responses are not
   * measured (JSON calls in between) do not take it. Returns an undo function. A removed
   * element stops being observed.
   */
  observe(el: Element | string): () => void;
  /** A custom stage mark on the current request; false when no request runs. */
  mark(name: string): boolean;
  /**
   * The user's action that will cause the next request (for UIs input events cannot
   * attribute): now, or at `timeStamp` (performance.now() ms, e.g. an event's timeStamp).
   */
  markInteraction(timeStamp?: number): void;
  /** Sends what is queued now (records auto mode still holds too); resolves when the send was handed to the browser. */
  flush(): Promise<void>;
  /** Restores globals, flushes, removes listeners. */
  shutdown(): Promise<void>;
  /**
   * Resolves when the wasm core is in (true), or failed to load (false: the globals are the
   * native ones again, `active` is false). init() resolves before it: fetch and EventSource are
   * wrapped at once, and what the app does meanwhile is measured once the core is in, from the
   * moment the app did it — a fetch's response waits for the core at most 1 s (then it goes
   * to the app unmeasured), it carries no traceparent of ours; an EventSource keeps its events;
   * observe() and mark() apply.
   */
  readonly ready: Promise<boolean>;
  /**
   * False in the degraded mode: the core did not load (no WebAssembly, a CSP without
   * 'wasm-unsafe-eval', not a browser) or an internal error turned measurement off. The app's
   * requests work either way; `rum.fetch` then hands on to the native fetch. True while the
   * core is on its way (see `ready`).
   */
  readonly active: boolean;
}

/**
 * Starts llm-rum. Never rejects; on failure `fetch` is the native one. Resolves at once, before
 * the wasm core is in (`rum.ready`): measurement is on from then.
 */
export function init(options?: RumOptions): Promise<Rum>;
export const VERSION: string;
