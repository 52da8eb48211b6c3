// The peer in `make bench`: OpenTelemetry web's fetch tracing as its README sets it up — a
// tracer provider with a batch span processor and the OTLP/HTTP exporter, W3C trace context
// propagation, and @opentelemetry/instrumentation-fetch, which patches window.fetch. Bundled by
// scripts/bench.js with esbuild (minified ESM, like dist/index.js), versions pinned in
// package.json. `start()` returns when the instrumentation is in place (its "ready").
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TracerProvider, BatchSpanProcessor, StackContextManager } from '@opentelemetry/sdk-trace';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { FetchInstrumentation } from '@opentelemetry/instrumentation-fetch';
import { registerInstrumentations } from '@opentelemetry/instrumentation';

/** @param {{ collector: string }} opts */
export function start({ collector }) {
  const provider = new TracerProvider({
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: collector }))],
  });
  context.setGlobalContextManager(new StackContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const fetchInstrumentation = new FetchInstrumentation();
  registerInstrumentations({ instrumentations: [fetchInstrumentation], tracerProvider: provider });
  return { provider, fetchInstrumentation };
}
