// Many node executions in one host process, as a host that runs for weeks has them: the
// process's memory and threads sampled along the way, and what the pack's addon still holds.
//
//   soak: { typeId, inputs, config?, executions, samples? }
//
// Each execution gets an instant ctx.callAI (a plain reply) and must succeed. The report:
// { executions, ms, samples: [{ executions, rssMiB, heapUsedMiB, threads, inProgress }] }, the
// first sample after a warm-up of executions / samples, the last at the end (after a GC when
// Node runs with --expose-gc). `threads` is this process's thread count (/proc/self/status);
// `inProgress` the pack's node executions still held by its addon (index.mjs's `inProgress`).
import { readFileSync } from 'node:fs';

function threads() {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('Threads:'));
    return line === undefined ? null : Number(line.split(/\s+/)[1]);
  } catch {
    return null; // not Linux
  }
}

export async function soak(registry, spec) {
  const execute = await registry.resolve(spec.typeId);
  if (!execute) throw new Error(`soak: no pack provides ${spec.typeId}`);
  const pack = registry.index.get(spec.typeId);
  const loaded = registry.loaded.get(pack.dir);
  const inProgress = () => (typeof loaded?.inProgress === 'function' ? loaded.inProgress() : null);
  const callAI = async () => ({ content: 'ok', usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop', model: 'mock-1' });
  const executions = spec.executions;
  const every = Math.max(1, Math.floor(executions / (spec.samples ?? 10)));
  const samples = [];
  const sample = (n) => {
    if (typeof globalThis.gc === 'function') globalThis.gc();
    const m = process.memoryUsage();
    samples.push({ executions: n, rssMiB: m.rss / 2 ** 20, heapUsedMiB: m.heapUsed / 2 ** 20, threads: threads(), inProgress: inProgress() });
  };
  const t0 = process.hrtime.bigint();
  for (let i = 1; i <= executions; i++) {
    const ctx = { runId: `soak-${i}`, nodeId: 'soak', attempt: 1, inputs: spec.inputs ?? null, config: spec.config ?? {}, callAI };
    const outcome = await execute(ctx);
    if (outcome.status !== 'success') throw new Error(`soak: execution ${i} failed: ${JSON.stringify(outcome)}`);
    if (i % every === 0 || i === executions) sample(i);
  }
  return { executions, ms: Number(process.hrtime.bigint() - t0) / 1e6, samples };
}
