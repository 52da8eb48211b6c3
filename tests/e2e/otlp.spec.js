// `exporter: 'otlp'`: the beacon is an OTLP/HTTP JSON ExportTraceServiceRequest that parses
// with the official opentelemetry-proto definitions (Python protobuf, installed by the test
// command), one span per request whose span id is the one the server saw in traceparent.
import { test, expect } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { testId, truth, openPage } from './util.js';

function validate(payload) {
  const r = spawnSync('.tools/venv/bin/python', ['tests/otlp_check.py'], { input: payload, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

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
    await h.startRum({ collector: '/otel/v1/traces', exporter: 'otlp' });
    const res = await fetch('/v1/chat/completions?prefill_ms=100&gap_ms=20&tokens=20&stall_at=10&stall_ms=400&usage=1', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test-id': id },
      body: JSON.stringify({ model: 'default', stream: true, stream_options: { include_usage: true }, messages: [] }),
    });
    await h.readAll(res);
    // And one held back by an (imitated) buffering proxy, whose X-Accel-Buffering reaches the page.
    await h.readAll(await fetch('/v1/chat/completions?prefill_ms=50&gap_ms=10&tokens=12&proxy_buffer=1000000&accel_buffering=no', { method: 'POST', body: '{"stream":true}' }));
    await h.waitRecord((r, i) => i === 1);
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
