// The bridge's instructions per ctx.callAI call, counted by callgrind: ROUNDS node executions of
// Book AI's draft-scene through the pack's index.mjs (the addon), each with CALLS structured calls
// to an instant RFC 0248 callAI (the answer of the harness's `bench`), or the same work as the
// harness's pure-JavaScript node (`pure`). Nothing is timed here; run it under callgrind twice:
//
//   for n in 1 4; do valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//       node benches/node_bridge/calls.mjs PACKS_DIR $n 3000 [rust|pure]; done
//
// and take (I(4) - I(1)) / 3 / 3000 from the two "Collected" lines (Node's start-up and the JIT's
// warm-up are in both). PACKS_DIR holds community.demo.bookai/ (BENCHMARKS.md §8 writes it).
import { pathToFileURL } from 'node:url';

const [dir, calls, rounds, which] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5] ?? 'rust'];
if (!dir || !(calls >= 1) || !(rounds >= 1) || !['rust', 'pure'].includes(which)) {
  console.error('usage: node calls.mjs PACKS_DIR CALLS ROUNDS [rust|pure]');
  process.exit(2);
}
process.env.WOP_SDK_HOST_CAPABILITIES = JSON.stringify({ aiProviders: { providers: ['mock'], callAccounting: { attempts: true, retryPolicy: true } } });
const { nodes } = await import(pathToFileURL(`${dir}/community.demo.bookai/index.mjs`).href);
const answer = { data: { text: 'Mara Quill waited.' }, usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop', model: 'mock-1',
  attemptId: 'a-1', attempts: { count: 1, outputTokens: 1, usageComplete: true, structuredOutput: 'prompt' } };
const callAI = async () => answer;
const pure = async (ctx) => {
  const scenes = [];
  for (const beat of ctx.inputs.chapter.scenes) {
    const r = await ctx.callAI({ provider: 'mock', model: 'mock-1', messages: [{ role: 'user', content: `Write the scene: ${beat}` }],
      maxTokens: 600, responseSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } } });
    if (r.data === null || typeof r.data !== 'object' || typeof r.data.text !== 'string') throw new Error('bad data');
    scenes.push({ beat, text: r.data.text, placeholder: false, repaired: false });
  }
  return { status: 'success', outputs: { number: ctx.inputs.chapter.number, scenes } };
};
const run = which === 'pure' ? pure : nodes['community.demo.bookai.draft-scene'];
const inputs = (n) => ({ chapter: { number: 1, title: 'T', characters: ['Mara Quill'], scenes: Array.from({ length: n }, (_, i) => `beat ${i}`) }, minWords: 1 });
for (let i = 0; i < rounds; i++) {
  const o = await run({ runId: `bench-${i}`, nodeId: 'draft-1', attempt: 1, inputs: inputs(calls), config: {}, callAI });
  if (o.status !== 'success' || o.outputs.scenes.some((s) => s.placeholder)) throw new Error(`the node failed: ${JSON.stringify(o)}`);
}
