// A TypeScript consumer of the package's types: type-checked by the toolchain test with
// `--strict` and `skipLibCheck: false`, with and without "dom" in `lib`, under bundler and
// node16 module resolution, by TypeScript 5 and 7.
import { init, VERSION, type Rum, type RumRecord, type RumOptions } from 'llm-rum';

const options: RumOptions = {
  collector: '/rum',
  stallThresholdMs: 250,
  budgets: { ttft: 800, 'itl.p95': 150 },
  onRecord(record: RumRecord) {
    const ttft: number | null = record.ttft;
    const firstPaint: number | null = record.marks.firstPaint;
    void [ttft, firstPaint, record.stalls.count, record.outcome];
  },
};

export async function start(): Promise<Rum | null> {
  const rum = await init(options);
  // Degraded mode (no wasm, not a browser): init() resolved, nothing is measured.
  if (!rum.active) return null;
  const undo: () => void = rum.observe('#messages');
  undo();
  return rum;
}

export const version: string = VERSION;
