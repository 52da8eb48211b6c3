// The glue between the facade and the wasm core: the `Core` class js/core.js builds (methods
// as src/wasm/exports.rs names them) over the raw numeric exports of src/wasm/abi.rs, whose
// header comment states the calling convention. Hand-written instead of wasm-bindgen's
// generated glue and shims (issue 14: ~8 KB less wasm, half the glue). The module instance is
// shared by every `Core` (as wasm-bindgen's was); the wasm imports nothing.

let w; // the instance's exports
let m8; // a view of its memory, renewed when the memory grows (the old buffer detaches)
let at; // where the current call's next argument goes in the scratch buffer
// Built by init(), not at import: the glue is bundled into dist/index.js, and importing the
// package must never throw (a runtime without them: init() then fails with one warning).
let enc;
let dec;
const reg = typeof FinalizationRegistry == 'function' ? new FinalizationRegistry((p) => w.core_free(p)) : null;

// Growing the memory detaches the old buffer, and a view of a detached buffer has length 0:
// cheaper to test on every call than the `buffer` getter.
const mem = () => (m8 && m8.length ? m8 : (m8 = new Uint8Array(w.memory.buffer)));
// The scratch buffer's address and the size it is known to have: only `scratch` moves or grows
// it, so a call whose arguments fit needs no `scratch` call (one wasm call less per chunk).
let sp = 0;
let sn = 0;
const room = (n) => (n > sn ? ((sn = n), (sp = w.scratch(n))) : sp);

/** Writes text (UTF-8) or bytes after the call's earlier arguments; returns its byte length. */
function put(x) {
  // `room` first, then `mem()`: growing the buffer may grow the memory (a new buffer).
  let n;
  if (typeof x == 'string') {
    // encodeInto writes at most 3 bytes per UTF-16 unit (a lone surrogate becomes U+FFFD).
    const p = room(at + x.length * 3) + at;
    n = enc.encodeInto(x, mem().subarray(p, p + x.length * 3)).written;
  } else {
    n = x.length;
    const p = room(at + n) + at;
    mem().set(x, p);
  }
  at += n;
  return n;
}
/** The first text or bytes argument of a call. */
const put0 = (x) => ((at = 0), put(x));
/** A text result of `n` bytes (-1: none, `undefined`, as wasm-bindgen's `Option<String>`). */
function text(n) {
  if (n < 0) return undefined;
  const p = w.out_ptr();
  return dec.decode(mem().subarray(p, p + n));
}

/**
 * Instantiates the wasm once: later calls, and calls made while it loads (two `init()`s at once,
 * e.g. React's StrictMode), get the same instance; after a failure the next call tries again.
 * `module_or_path`: a `Response` (compiled as it streams in; one served without
 * `application/wasm` falls back to its bytes), bytes, or a `WebAssembly.Module` — what
 * js/core.js passes.
 */
let loading;
export default function init(arg) {
  return (
    loading ||
    (loading = load(arg).catch((e) => {
      loading = null;
      throw e;
    }))
  );
}

async function load(arg) {
  enc = new TextEncoder();
  dec = new TextDecoder();
  const src = await (arg && arg.module_or_path !== undefined ? arg.module_or_path : arg);
  let r;
  if (src instanceof Response) {
    if (WebAssembly.instantiateStreaming) {
      r = await WebAssembly.instantiateStreaming(src, {}).catch((e) => {
        // Only a wrong content type is worth a second try, from the bytes.
        if (!src.ok || src.headers.get('content-type') === 'application/wasm') throw e;
      });
    }
    r = r || (await WebAssembly.instantiate(await src.arrayBuffer(), {}));
  } else r = await WebAssembly.instantiate(src, {});
  // instantiate(bytes) gives { module, instance }; instantiate(module) the instance.
  sn = 0;
  m8 = null;
  return (w = (r.instance || r).exports);
}

/**
 * The calling convention itself, for the chunks that wrap the exports only they use
 * (capture/es-measure.js: EventSource; deliver/transport.js: beacons) — so those wrappers are
 * not in what every page loads (issue 14: size). `fn(name)` is export `name` of the current
 * instance, called directly — `raw.fn('es_message')(p, …)`: no argument array per call, which
 * an EventSource pays per event; text and bytes arguments go through `put0` / `put`, text
 * results through `text`, as in `Core` below. Handed to the chunks by index.js (a shared
 * import would split off a third file every page loads).
 */
export const raw = { fn: (name) => w[name], put0, put, text };

export class Core {
  constructor(config) {
    this.p = w.core_new(put0(config));
    if (reg) reg.register(this, this.p);
  }
  begin(url, method, t, epochMs, random, interaction) {
    return w.begin(this.p, put0(url), put(method), put(random), t, epochMs, interaction) >>> 0;
  }
  set_route(h, template) {
    w.set_route(this.p, h, put0(template));
  }
  traceparent(h) {
    return text(w.traceparent(this.p, h));
  }
  adopt_traceparent(h, value) {
    w.adopt_traceparent(this.p, h, put0(value));
  }
  /** `headers`: the response's `Headers`, handed over as one `name:value` line each. */
  response(h, t, status, headers, measureAny) {
    let s = '';
    for (const [k, v] of headers) s += k + ':' + v + '\n';
    return !!w.response(this.p, h, t, status, put0(s), measureAny);
  }
  chunk(h, t, bytes, asked) {
    w.chunk(this.p, h, t, put0(bytes), asked);
  }
  end(h, t, outcome) {
    return !!w.end(this.p, h, t, outcome);
  }
  current_answer(before) {
    return w.current_answer(this.p, before) >>> 0;
  }
  observe(h, source) {
    return !!w.observe(this.p, h, source);
  }
  claim(h, s, whole) {
    return w.claim(this.p, h, put0(s), whole);
  }
  paint(h, t, len, errMs, probe) {
    return !!w.paint(this.p, h, t, len, errMs, put0(probe));
  }
  paint_ready(t) {
    w.paint_ready(this.p, t);
  }
  finish(h) {
    w.finish(this.p, h);
  }
  native_paint(t, resMs) {
    w.native_paint(this.p, t, resMs);
  }
  long_frame(start, dur, invoker, source, scriptMs) {
    w.long_frame(this.p, start, dur, put0(invoker), put(source), scriptMs);
  }
  mark(name, t) {
    return !!w.mark(this.p, put0(name), t);
  }
  page_hidden(t, unloading) {
    w.page_hidden(this.p, t, unloading);
  }
  page_shown() {
    w.page_shown(this.p);
  }
  take_records(outgoing) {
    return text(w.take_records(this.p, outgoing));
  }
}
