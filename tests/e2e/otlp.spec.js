// `exporter: 'otlp'`: the beacon is an OTLP/HTTP JSON ExportTraceServiceRequest that parses
// with the official opentelemetry-proto definitions (Python protobuf, installed by the test
// command), one span per request whose span id is the one the server saw in traceparent; its
// `gen_ai.*`, `server.*` and `error.type` attributes are the semantic conventions' names with
// their types (tests/fixtures/genai-registry.yaml, copied from the conventions' registry).
import { test, expect } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { testId, truth, openPage } from './util.js';
import { toOtlp } from '../../js/deliver/otlp.js';

function validate(payload) {
  const r = spawnSync('.tools/venv/bin/python', ['tests/otlp_check.py', '--registry', 'tests/fixtures/genai-registry.yaml'], { input: payload, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** The `gen_ai.*` attributes of a span. */
const genai = (span) => Object.fromEntries(Object.entries(span.attributes).filter(([k]) => k.startsWith('gen_ai.')));

test('records become OTLP spans that parse with opentelemetry-proto, linked to the server trace', async ({ page }) => {
  const bodies = [];
  await page.context().route('**/otel/v1/traces', async (route) => {
    bodies.push({ body: route.request().postData(), type: route.request().headers()['content-type'] });
    await route.fulfill({ status: 200, contentType: 'application/json', body: '{}' });
  });
  await openPage(page);
  const id = testId('otlp');
  const rec = await page.evaluate(async (id) => {
    const h = await import('/helpers.js');
    await h.startRum({
      collector: '/otel/v1/traces',
      exporter: 'otlp',
      // The app says which model its thread route asks for, and whose it is.
      models: [{ match: '/v1/threads/', model: 'gpt-4.1-mini', provider: 'openai' }],
      // A model name can be dropped like any other field.
      beforeSend: (r) => (r.upstreamBuffered ? { ...r, model: null, modelSource: null } : r),
    });
    // The stream names a model other than the one asked (as OpenAI answers `gpt-4o` with a dated one).
    const res = await fetch('/v1/chat/completions?prefill_ms=100&gap_ms=20&tokens=20&stall_at=10&stall_ms=400&usage=1&served_model=gpt-4o-2024-08-06', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test-id': id },
      body: JSON.stringify({ model: 'gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [] }),
    });
    await h.readAll(res);
    // And one held back by an (imitated) buffering proxy, whose X-Accel-Buffering reaches the page.
    await h.readAll(await fetch('/v1/chat/completions?prefill_ms=50&gap_ms=10&tokens=12&proxy_buffer=1000000&accel_buffering=no', { method: 'POST', body: '{"stream":true}' }));
    // And an AI SDK UI stream, which names no model: the app's `models` rule does.
    await h.readAll(await fetch('/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/chat/completions?format=ai-sdk-ui&prefill_ms=20&gap_ms=5&tokens=5', { method: 'POST', body: '{"stream":true}' }));
    await h.waitRecord((r, i) => i === 2);
    return h.waitRecord(() => true);
  }, id);
  const t = await truth(id);
  await expect.poll(() => bodies.length, { timeout: 10_000 }).toBeGreaterThan(0);
  expect(bodies[0].type).toBe('application/json');
  const req = validate(bodies[0].body);
  // The buffered one, in this beacon or the next.
  await expect.poll(() => bodies.flatMap((b) => validate(b.body).spans).filter((s) => s.attributes['llm_rum.upstream_buffered']).length, { timeout: 10_000 }).toBe(2);
  const held = bodies.flatMap((b) => validate(b.body).spans).find((s) => s.attributes['llm_rum.upstream_buffered'] && s.spanId !== rec.spanId);
  expect(held.attributes['llm_rum.upstream_buffered']).toEqual({ boolValue: true });
  expect(held.attributes['llm_rum.upstream_hints']).toEqual({ arrayValue: { values: [{ stringValue: 'x-accel-buffering: no' }] } });
  expect(held.attributes['llm_rum.delivery.largest_arrival_share']).toEqual({ intValue: '1' });
  // beforeSend dropped its model: no model attribute at all (nothing invented in its place).
  expect(held.attributes['gen_ai.response.model']).toBeUndefined();
  expect(held.attributes['gen_ai.request.model']).toBeUndefined();
  // The AI SDK UI stream: the model the app's rule says its requests ask for, and its provider.
  await expect.poll(() => bodies.flatMap((b) => validate(b.body).spans).filter((s) => s.name.includes('/v1/threads/')).length, { timeout: 10_000 }).toBe(1);
  const thread = bodies.flatMap((b) => validate(b.body).spans).find((s) => s.name.includes('/v1/threads/'));
  expect(genai(thread)).toMatchObject({
    'gen_ai.operation.name': { stringValue: 'chat' },
    'gen_ai.provider.name': { stringValue: 'openai' },
    'gen_ai.request.model': { stringValue: 'gpt-4.1-mini' },
    'gen_ai.request.stream': { boolValue: true },
  });
  expect(thread.attributes['gen_ai.response.model']).toBeUndefined();

  expect(req.scope).toBe('llm-rum');
  expect(req.resource['service.name']).toEqual({ stringValue: 'llm-rum-browser' });
  const main = req.spans.find((s) => s.spanId === rec.spanId);
  const children = req.spans.filter((s) => s.parentSpanId === rec.spanId);
  expect(main.name).toBe('POST /v1/chat/completions');
  expect(main.kind).toBe(3); // SPAN_KIND_CLIENT
  expect(main.traceId).toBe(rec.traceId);
  expect(main.spanId).toBe(rec.spanId);
  // The server's spans are children of this one: it received this span id as parent.
  expect(main.spanId).toBe(t.parent_span_id);
  expect(main.traceId).toBe(t.trace_id);
  expect(main.start).toBe(String(Math.round(rec.startEpochMs * 1000)) + '000');
  expect(main.end).toBe(String(Math.round((rec.startEpochMs + rec.marks.end) * 1000)) + '000');
  expect(main.attributes['http.request.method']).toEqual({ stringValue: 'POST' });
  expect(main.attributes['http.response.status_code']).toEqual({ intValue: '200' });
  expect(main.attributes['gen_ai.usage.output_tokens']).toEqual({ intValue: String(rec.outputTokens) });
  // GenAI conventions: the stream's model as gen_ai.response.model (the server's truth says
  // which it named), TTFT in seconds as a double, the request marked streaming; no provider
  // for the app's own backend (none configured for this route), so none is sent.
  expect([rec.model, rec.modelSource, rec.provider]).toEqual(['gpt-4o-2024-08-06', 'stream', null]);
  expect(t.model).toBe(rec.model);
  expect(genai(main)).toEqual({
    'gen_ai.operation.name': { stringValue: 'chat' },
    'gen_ai.response.model': { stringValue: 'gpt-4o-2024-08-06' },
    'gen_ai.request.stream': { boolValue: true },
    'gen_ai.response.time_to_first_chunk': { doubleValue: expect.any(Number) },
    'gen_ai.usage.output_tokens': { intValue: String(rec.outputTokens) },
  });
  expect(main.attributes['gen_ai.response.time_to_first_chunk'].doubleValue).toBeCloseTo(rec.ttft / 1000, 6);
  expect(main.attributes['llm_rum.measured_in']).toEqual({ stringValue: 'browser' });
  const origin = new URL(rec.url);
  expect(main.attributes['server.address']).toEqual({ stringValue: origin.hostname });
  expect(main.attributes['server.port']).toEqual({ intValue: origin.port });
  expect(main.attributes['error.type']).toBeUndefined();
  // Every enum value sent is one of the conventions' well-known ones.
  expect(req.custom).toEqual({});
  expect(main.attributes['llm_rum.ttft_ms'].doubleValue ?? Number(main.attributes['llm_rum.ttft_ms'].intValue)).toBeCloseTo(rec.ttft, 3);
  expect(main.attributes['llm_rum.record_id']).toEqual({ stringValue: rec.id });
  // Delivery: 20 events streamed, not upstream-buffered; no hint headers (an empty array).
  expect(main.attributes['llm_rum.delivery.arrivals']).toEqual({ intValue: String(rec.delivery.arrivals) });
  expect(main.attributes['llm_rum.delivery.events_per_arrival.max']).toEqual({ intValue: String(rec.delivery.eventsPerArrival.max) });
  expect(main.attributes['llm_rum.upstream_buffered']).toEqual({ boolValue: false });
  expect(main.attributes['llm_rum.upstream_hints']).toEqual({ arrayValue: {} });
  expect(main.events).toEqual(expect.arrayContaining(['llm_rum.first_token', 'llm_rum.last_token', 'llm_rum.stall']));
  expect(rec.stalls.count).toBe(1);
  // Child spans for the client stages, parented to the request span, unique ids.
  expect(children.map((c) => c.name)).toEqual(['llm_rum.stage.waiting', 'llm_rum.stage.first_token', 'llm_rum.stage.decode']);
  for (const c of children) {
    expect(c.parentSpanId).toBe(main.spanId);
    expect(c.traceId).toBe(main.traceId);
  }
  expect(new Set(req.spans.map((s) => s.spanId)).size).toBe(req.spans.length);
});

// The export on its own (a pure re-shaping of records): units and types where a value could
// pass for another (a whole number of seconds is still a double), the model's two names, the
// error class, and records whose fields beforeSend deleted — all checked against the
// conventions' registry subset.
test('toOtlp: seconds as doubles, request vs response model, error.type, dropped fields', () => {
  const base = {
    id: '00112233445566aa', traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', url: 'https://api.anthropic.com/v1/messages',
    method: 'POST', status: 200, outcome: 'ok', format: 'anthropic', transport: 'fetch', startEpochMs: 1.7e12,
    marks: { start: 0, headers: 400, firstToken: 1000, lastToken: 3000, end: 3001 }, ttft: 1000, outputTokens: 42,
    itl: { n: 0 }, stalls: { count: 0, totalMs: 0 }, stallList: [], userMarks: {}, hidden: false,
    model: 'claude-sonnet-4-5', modelSource: 'stream', provider: 'anthropic',
  };
  const records = [
    base,
    { ...base, id: '00112233445566bb', url: 'https://chat.example.com/api/chat', modelSource: 'config', model: 'gpt-4o', provider: 'my-backend', ttft: 250 },
    { ...base, id: '00112233445566cc', url: 'https://chat.example.com:8443/api/chat', outcome: 'error', status: 503, ttft: null },
    { ...base, id: '00112233445566dd', outcome: 'error', status: 200 },
  ];
  const { model, modelSource, provider, ...dropped } = base;
  records.push({ ...dropped, id: '00112233445566ee' });
  const payload = JSON.stringify({ v: 1, sdk: 'llm-rum/0.1.0', session: 's', page: '/', records });
  const out = validate(toOtlp(payload));
  const span = (id) => out.spans.find((s) => s.attributes['llm_rum.record_id']?.stringValue === id);
  const a = span('00112233445566aa');
  expect(a.attributes['gen_ai.response.time_to_first_chunk']).toEqual({ doubleValue: 1 });
  expect(genai(a)['gen_ai.response.model']).toEqual({ stringValue: 'claude-sonnet-4-5' });
  expect(genai(a)['gen_ai.provider.name']).toEqual({ stringValue: 'anthropic' });
  expect([a.attributes['server.address'], a.attributes['server.port']]).toEqual([{ stringValue: 'api.anthropic.com' }, { intValue: '443' }]);
  const b = span('00112233445566bb');
  expect(genai(b)['gen_ai.request.model']).toEqual({ stringValue: 'gpt-4o' });
  expect(genai(b)['gen_ai.response.model']).toBeUndefined();
  expect(b.attributes['gen_ai.response.time_to_first_chunk']).toEqual({ doubleValue: 0.25 });
  // Values of the app's own (a provider) and HTTP's status codes (error.type) are allowed by
  // the conventions beside their well-known ones: reported, not refused.
  expect(out.custom).toEqual({ 'gen_ai.provider.name': ['my-backend'], 'error.type': ['503'] });
  const c = span('00112233445566cc');
  expect(c.attributes['error.type']).toEqual({ stringValue: '503' });
  expect(c.attributes['server.port']).toEqual({ intValue: '8443' });
  expect(c.attributes['gen_ai.response.time_to_first_chunk']).toBeUndefined();
  expect(span('00112233445566dd').attributes['error.type']).toEqual({ stringValue: '_OTHER' });
  const e = genai(span('00112233445566ee'));
  expect(Object.keys(e).sort()).toEqual(['gen_ai.operation.name', 'gen_ai.request.stream', 'gen_ai.response.time_to_first_chunk', 'gen_ai.usage.output_tokens']);
  // The registry check itself refuses what the conventions do not define: a whole number of
  // seconds sent as an int, a name they do not have.
  const doc = JSON.parse(toOtlp(payload));
  const attrs0 = doc.resourceSpans[0].scopeSpans[0].spans[0].attributes;
  attrs0.find((x) => x.key === 'gen_ai.response.time_to_first_chunk').value = { intValue: '1' };
  attrs0.push({ key: 'gen_ai.response.time_to_first_token', value: { doubleValue: 1 } });
  const r = spawnSync('.tools/venv/bin/python', ['tests/otlp_check.py', '--registry', 'tests/fixtures/genai-registry.yaml'], { input: JSON.stringify(doc), encoding: 'utf8' });
  expect(r.status).toBe(1);
  expect(r.stderr).toContain('gen_ai.response.time_to_first_chunk is a int_value, the conventions say double');
  expect(r.stderr).toContain('gen_ai.response.time_to_first_token is not defined by the conventions');
});
