// `exporter: 'otlp'`: the same records as OTLP/HTTP JSON (an ExportTraceServiceRequest), for
// users who already run an OpenTelemetry Collector. Loaded on demand (a separate chunk), so
// the default JSON exporter pays nothing for it. A pure re-shaping of the v1 records (the
// core computed everything); OTLP/JSON rules: ids are hex strings, 64-bit integers are
// decimal strings, enums are numbers (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding).
//
// One span per request: its span id is the one sent in `traceparent`, so the server's spans
// are its children. Child spans for the client-side stages; span events for first token,
// first paint and each stall.
//
// Names: OpenTelemetry's where the conventions define one — HTTP client (`http.*`, `url.*`,
// `server.*`, `error.type`) and GenAI (`gen_ai.*`, open-telemetry/semantic-conventions-genai,
// status Development: an inference span's attributes; tests/fixtures/genai-registry.yaml is
// the subset checked) — and `llm_rum.*` for what they do not (paint, render delay, stalls,
// delivery). README "OpenTelemetry GenAI conventions" lists both.

const CLIENT = 3; // SpanKind.SPAN_KIND_CLIENT
const ERROR = 2; // Status.STATUS_CODE_ERROR

/** Epoch milliseconds → unix nanoseconds as a decimal string (exact to the microsecond). */
const nanos = (ms) => String(Math.round(ms * 1000)) + '000';

const value = (v) =>
  typeof v === 'string'
    ? { stringValue: v }
    : typeof v === 'boolean'
      ? { boolValue: v }
      : Array.isArray(v)
        ? { arrayValue: { values: v.map(value) } }
        : typeof v === 'object'
          ? v // already an AnyValue (`seconds`)
          : Number.isInteger(v)
            ? { intValue: String(v) }
            : { doubleValue: v };
const attr = (key, v) => ({ key, value: value(v) });

/** Milliseconds → a double of seconds (a whole number of seconds is still a double). */
const seconds = (ms) => (typeof ms == 'number' ? { doubleValue: ms / 1000 } : null);

/** Attributes for the defined values only. */
const attrs = (pairs) => pairs.filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => attr(k, v));

/** A child span id: the record id with its last byte varied (unique within the trace). */
const childId = (rid, i) => rid.slice(0, 14) + ((parseInt(rid.slice(14), 16) ^ (i + 1)) & 255).toString(16).padStart(2, '0');

function spans(r, templated) {
  const t0 = r.startEpochMs;
  const m = r.marks;
  const at = (off) => nanos(t0 + off);
  const end = m.end ?? m.lastToken ?? 0;
  // The path as recorded (not re-parsed: URL() would percent-encode a `{id}` template).
  let path = r.url;
  let host = null;
  let port = null;
  try {
    const u = new URL(r.url);
    if (path.startsWith(u.origin)) path = path.slice(u.origin.length).split(/[?#]/)[0] || '/';
    host = u.hostname;
    port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
  } catch {
    /* keep the url */
  }
  // With id templating on (the default) the path is the route's template: `url.template`,
  // and the span name is `{method} {url.template}` (HTTP client span semantic conventions);
  // without it, the raw path would make every conversation its own span name: `{method}`.
  const template = templated ? path : null;
  const events = [];
  const ev = (name, off, a = []) => off != null && events.push({ timeUnixNano: at(off), name, attributes: a });
  ev('llm_rum.first_token', m.firstToken);
  ev('llm_rum.first_paint', m.firstPaint);
  ev('llm_rum.last_token', m.lastToken);
  for (const s of r.stallList) ev('llm_rum.stall', s.start, attrs([['llm_rum.stall.duration_ms', s.dur], ['llm_rum.stall.cause', s.cause]]));
  for (const [name, off] of Object.entries(r.userMarks)) ev('llm_rum.mark', off, attrs([['llm_rum.mark.name', name]]));

  const main = {
    traceId: r.traceId,
    spanId: r.spanId,
    name: template ? `${r.method} ${template}` : r.method,
    kind: CLIENT,
    startTimeUnixNano: at(0),
    endTimeUnixNano: at(end),
    attributes: attrs([
      // OpenTelemetry semantic conventions where one exists (HTTP client, GenAI usage).
      ['http.request.method', r.method],
      // The recorded URL: query stripped, ids templated (no id leaves the page).
      ['url.full', r.url],
      ['url.template', template],
      ['http.response.status_code', r.status || null],
      ['server.address', host],
      ['server.port', port],
      // HTTP's rule (the status code as a string); `_OTHER` for a network error or a
      // provider's in-band error event.
      ['error.type', r.outcome === 'error' ? (r.status >= 400 ? String(r.status) : '_OTHER') : null],
      // GenAI: every record is a streamed answer; the model that answered (the stream named
      // it) or the one the app says its requests ask for (`models` option: modelSource
      // 'config'); the provider as the core found it (null → left out, not guessed).
      ['gen_ai.operation.name', 'chat'],
      ['gen_ai.provider.name', r.provider],
      [r.modelSource === 'config' ? 'gen_ai.request.model' : 'gen_ai.response.model', r.model],
      ['gen_ai.request.stream', true],
      // In seconds, as the convention says: our `ttft` (the first content-bearing chunk),
      // measured in the page — which `llm_rum.measured_in` says (the conventions have no
      // attribute for where a client measured).
      ['gen_ai.response.time_to_first_chunk', seconds(r.ttft)],
      ['gen_ai.usage.output_tokens', r.outputTokens],
      ['llm_rum.measured_in', 'browser'],
      ['llm_rum.record_id', r.id],
      ['llm_rum.outcome', r.outcome],
      ['llm_rum.format', r.format],
      ['llm_rum.transport', r.transport],
      ['llm_rum.ttft_ms', r.ttft],
      ['llm_rum.ttfp_ms', r.ttfp],
      ['llm_rum.perceived_ttft_ms', r.perceivedTtft],
      ['llm_rum.total_ms', r.total],
      ['llm_rum.perceived_total_ms', r.perceivedTotal],
      ['llm_rum.tpot_ms', r.tpot],
      ['llm_rum.itl.p50_ms', r.itl.p50],
      ['llm_rum.itl.p95_ms', r.itl.p95],
      ['llm_rum.itl.max_ms', r.itl.max],
      ['llm_rum.stalls.count', r.stalls.count],
      ['llm_rum.stalls.total_ms', r.stalls.totalMs],
      ['llm_rum.chars', r.chars],
      ['llm_rum.hidden', r.hidden],
      // How the text reached the page: the UI's own buffering and buffering upstream of it
      // (a proxy, compression) are different fixes.
      ['llm_rum.buffered', r.buffered],
      ['llm_rum.delivery.arrivals', r.delivery && r.delivery.arrivals],
      ['llm_rum.delivery.events_per_arrival.p50', r.delivery && r.delivery.eventsPerArrival.p50],
      ['llm_rum.delivery.events_per_arrival.max', r.delivery && r.delivery.eventsPerArrival.max],
      ['llm_rum.delivery.largest_arrival_share', r.delivery && r.delivery.largestArrivalShare],
      ['llm_rum.upstream_buffered', r.upstreamBuffered],
      ['llm_rum.upstream_hints', r.upstreamHints],
      ...(r.serverTiming || []).filter((e) => e.dur != null).map((e) => [`llm_rum.server.${e.name}_ms`, e.dur]),
    ]),
    events,
    status: r.outcome === 'error' ? { code: ERROR } : {},
  };
  // Client-side stages as child spans, where both ends are known.
  const stages = [
    ['llm_rum.stage.waiting', 0, m.headers],
    ['llm_rum.stage.first_token', m.headers, m.firstToken],
    ['llm_rum.stage.decode', m.firstToken, m.lastToken],
    ['llm_rum.stage.render', m.lastToken, m.lastPaint],
  ];
  const children = stages
    .map(([name, a, b], i) =>
      a != null && b != null
        ? { traceId: r.traceId, spanId: childId(r.id, i), parentSpanId: r.spanId, name, kind: CLIENT, startTimeUnixNano: at(a), endTimeUnixNano: at(b) }
        : null,
    )
    .filter(Boolean);
  return [main, ...children];
}

/**
 * A v1 beacon payload (from the beacon queue, queue.js) → an ExportTraceServiceRequest JSON text.
 * `templated`: the records' paths are route templates (the `templateIds` option).
 * Partial records are left out: OTLP backends do not dedupe, and the completed span follows.
 */
export function toOtlp(payload, templated = true) {
  const b = JSON.parse(payload);
  const all = b.records.filter((r) => r.outcome !== 'partial').flatMap((r) => spans(r, templated));
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: attrs([['service.name', 'llm-rum-browser'], ['telemetry.sdk.name', 'llm-rum'], ['telemetry.sdk.version', b.sdk.split('/')[1] || ''], ['session.id', b.session], ['llm_rum.page', b.page]]) },
        scopeSpans: [{ scope: { name: 'llm-rum', version: b.sdk.split('/')[1] || '' }, spans: all }],
      },
    ],
  });
}
