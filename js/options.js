// Option validation. Bad configuration is reported once with console.warn and replaced by
// the default; it never throws into the host page.

const DEFAULTS = {
  collector: null,
  exporter: 'json',
  match: null,
  propagateTraceUrls: [],
  correlationHeaders: ['x-request-id', 'request-id', 'openai-processing-ms'],
  stallThresholdMs: undefined, // the core's default (src/core/stalls.rs)
  sampleRate: 1,
  budgets: {},
  observe: 'auto',
  patchGlobals: true,
  onRecord: null,
  beforeSend: null,
  stripQuery: true,
  templateIds: true,
  urlTemplates: [],
  models: [],
  wasmUrl: null,
  traceparentQueryParam: null,
  nativePaintTimes: true,
};

/** The URL relative URLs (options, requests) resolve against: the page's. */
export const base = () => (globalThis.location ? globalThis.location.href : 'http://localhost/');

/** A URL that resolves against the page (a bad one would otherwise fail every send). */
const parses = (v) => {
  try {
    new URL(String(v), base());
    return true;
  } catch {
    return false;
  }
};

const isList = (v) => Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * Returns [normalised options, list of problems]: every option present, with its default
 * where it was missing or bad.
 * @param {import('./index').RumOptions | undefined} options
 */
export function normalize(options) {
  const problems = [];
  const o = { ...DEFAULTS };
  if (options == null || typeof options !== 'object') {
    if (options != null) problems.push('options must be an object');
    return [o, problems];
  }
  const take = (key, ok, why) => {
    const v = options[key];
    if (v === undefined) return;
    if (ok(v)) o[key] = v;
    else problems.push(`${key}: ${why}`);
  };
  take('collector', (v) => v === null || ((typeof v === 'string' || v instanceof URL) && parses(v)), 'expected a URL string');
  take('exporter', (v) => v === 'json' || v === 'otlp', "expected 'json' or 'otlp'");
  take(
    'match',
    (v) => {
      const list = Array.isArray(v) ? v : [v];
      return list.every((m) => typeof m === 'string' || m instanceof RegExp || typeof m === 'function');
    },
    'expected strings, RegExps or predicates',
  );
  take('propagateTraceUrls', isList, 'expected an array of origin or URL-prefix strings');
  take('correlationHeaders', isList, 'expected an array of header names');
  take('stallThresholdMs', (v) => typeof v === 'number' && v > 0 && v < 1e6, 'expected a positive number of ms');
  take('sampleRate', (v) => typeof v === 'number' && v >= 0 && v <= 1, 'expected a number in [0, 1]');
  take(
    'budgets',
    (v) => typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'number' && x >= 0),
    'expected { metric: ms }',
  );
  take('patchGlobals', (v) => typeof v === 'boolean', 'expected a boolean');
  take('onRecord', (v) => v === null || typeof v === 'function', 'expected a function');
  take('beforeSend', (v) => v === null || typeof v === 'function', 'expected a function');
  take('stripQuery', (v) => typeof v === 'boolean', 'expected a boolean');
  take('templateIds', (v) => typeof v === 'boolean', 'expected a boolean');
  take(
    'urlTemplates',
    // A template is a path: it replaces the URL's path (no query or fragment in it).
    (v) => Array.isArray(v) && v.every((t) => t && (typeof t.match === 'string' || t.match instanceof RegExp) && /^\/[^?#]*$/.test(t.template)),
    "expected [{ match: string | RegExp, template: '/path/:id' }]",
  );
  take(
    'models',
    // Matched in the core (src/core/config.rs), which has no RegExp: strings only.
    (v) => Array.isArray(v) && v.every((r) => r && typeof r.match === 'string' && r.match !== '' && ['model', 'provider'].every((k) => r[k] == null || typeof r[k] === 'string')),
    "expected [{ match: '/api/chat', model?: string, provider?: string }]",
  );
  take('wasmUrl', (v) => v === null || ((typeof v === 'string' || v instanceof URL) && parses(v)), 'expected a URL');
  take('observe', (v) => v === null || v === false || typeof v === 'string' || (typeof Node === 'function' && v instanceof Node), "expected an element, a selector, 'auto' or false");
  take('nativePaintTimes', (v) => typeof v === 'boolean', 'expected a boolean');
  take('traceparentQueryParam', (v) => v === null || (typeof v === 'string' && /^[\w.-]+$/.test(v)), 'expected a query parameter name');
  if (o.collector) o.collector = String(o.collector);
  // beforeSend guards what goes to the collector: without one, records never wait for it.
  else o.beforeSend = null;
  if (o.match && !Array.isArray(o.match)) o.match = [o.match];
  return [o, problems];
}

/**
 * The app's route template for `url` (absolute): the `template` of the first `urlTemplates`
 * entry whose `match` is a substring of it or a RegExp matching it, or '' (then the core's
 * automatic rule applies). Here, not in the core: a RegExp cannot cross into wasm.
 */
export function templateOf(templates, url) {
  for (const { match, template } of templates) {
    // (lastIndex: a /g or /y RegExp keeps state between test() calls.)
    if (typeof match === 'string' ? url.includes(match) : ((match.lastIndex = 0), match.test(url))) return template;
  }
  return '';
}
