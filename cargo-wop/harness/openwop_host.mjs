// A harness of openwop-app's contract for JavaScript packs, written from the facts of its public
// source (openwop/openwop-app-install, backend/typescript/src: packs/tarballLoader.ts,
// bootstrap/mountLocalPacks.ts, bootstrap/nodePackResolver.ts, packs/registryInstaller.ts,
// aiProviders/aiProvidersHost.ts, executor/types.ts). No code of it is copied; no npm package
// is needed (Node >= 20).
//
//   node cargo-wop/harness/openwop_host.mjs SCENARIO.json   → prints the report as JSON
//
// Scenario: {
//   packsDir,                 the folder holding pack folders (OPENWOP_LOCAL_PACKS_DIR)
//   prefixes?: [..],          OPENWOP_LOCAL_PACK_PREFIXES (default: the host's own, no `community.`)
//   install?: bool,           first copy each pack as a registry install does (allow-listed files only)
//   registryInstall?: {registryDir, packs: [{name, version}], modifyAfterInstall?: {name, file, append}}
//                             install from a registry folder as openwop-app's installer does (hash,
//                             signature, the kept files, the trust marker; see registry_install.mjs)
//                             instead of mounting packsDir; the report's `installs` says what happened
//   rfc0248?: bool,           be a host that advertises aiProviders.callAccounting {attempts, retryPolicy}
//   providers?: [..],         the providers callAI accepts (default ["mock"])
//   steps: [{ runId, nodeId, typeId, inputs, config?, script: [step, ...], hostAnswers?: [..],
//             mutateRequests?: bool }],
//   bench?: { rounds?, repeats?, concurrency? }   (the bridge's cost per call; see `bench` below)
//   soak?: { typeId, inputs, config?, executions, samples? }   (memory and threads over many node
//             executions in this one process; see soak.mjs)
// }
// A step's `abortAfterMs` gives its ctx an AbortSignal (`ctx.signal`) that fires after that long,
// as a host that cancels a node does.
// A step's `inputs` may hold {"$output": "<nodeId>", "pointer": "/json/pointer"}: the output of
// an earlier step. `script` is the mock provider's replies for that node, one per provider request
// (the wop-sdk script format: content or chunks, usage | false, finishReason, error, hang). `hostAnswers`
// replaces callAI itself with scripted answers (malformed-host tests): {result}, {throwValue},
// {throwError: {message, code?}}, {hang: true}. A step's report has `callAI`: each request as
// ctx.callAI received it, as JSON text; `mutateRequests` makes the host change the response
// schema of each request it was given once it has answered, as a host may.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installAll } from './registry_install.mjs';
import { soak } from './soak.mjs';

// ── Errors: the host's AiProviderError {code, message, details} ─────────────────────────────
export class AiProviderError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = 'AiProviderError';
    this.code = code;
    this.details = details;
  }
}

// ── Loader: dev mount, registry install, typeId index, import, `nodes` ──────────────────────
const DEFAULT_PREFIXES = ['core.openwop.', 'vendor.myndhyve.', 'feature.'];
const INSTALL_FILES = ['pack.json', 'index.mjs'];
const INSTALL_DIRS = ['schemas', 'keys', 'prompts'];

export function mountedPacks(packsDir, prefixes = DEFAULT_PREFIXES) {
  const found = [];
  for (const entry of readdirSync(packsDir).sort()) {
    if (!prefixes.some((p) => entry.startsWith(p))) continue;
    const dir = join(packsDir, entry);
    if (!statSync(dir).isDirectory() || !existsSync(join(dir, 'pack.json'))) continue;
    found.push({ entry, dir });
  }
  return found;
}

// A registry install keeps only the allow-listed files and folders.
export function registryInstall(pack, destRoot) {
  const dest = join(destRoot, pack.entry);
  mkdirSync(dest, { recursive: true });
  for (const f of INSTALL_FILES) if (existsSync(join(pack.dir, f))) cpSync(join(pack.dir, f), join(dest, f));
  for (const d of INSTALL_DIRS) if (existsSync(join(pack.dir, d))) cpSync(join(pack.dir, d), join(dest, d), { recursive: true });
  return { entry: pack.entry, dir: dest };
}

export class Registry {
  constructor(packs) {
    this.index = new Map(); // typeId → pack (from pack.json nodes[].typeId only)
    for (const pack of packs) {
      const manifest = JSON.parse(readFileSync(join(pack.dir, 'pack.json'), 'utf8'));
      for (const n of Array.isArray(manifest.nodes) ? manifest.nodes : []) {
        if (n && typeof n.typeId === 'string' && !this.index.has(n.typeId)) this.index.set(n.typeId, { ...pack, manifest });
      }
    }
    this.modules = new Map(); // typeId → execute(ctx)
    this.loaded = new Map(); // pack dir → the pack's loaded module
  }

  async resolve(typeId) {
    if (this.modules.has(typeId)) return this.modules.get(typeId);
    const pack = this.index.get(typeId);
    if (!pack) return null;
    const entry = pack.manifest.runtime?.entry ?? './index.mjs';
    const loaded = await import(pathToFileURL(join(pack.dir, entry)).href);
    this.loaded.set(pack.dir, loaded);
    if (!loaded.nodes || typeof loaded.nodes !== 'object') throw new Error(`${pack.entry}: pack export missing \`nodes\` map`);
    for (const [id, fn] of Object.entries(loaded.nodes)) {
      if (typeof fn !== 'function') continue;
      this.modules.set(id, wrapNode(fn));
    }
    return this.modules.get(typeId) ?? null;
  }
}

// What the host does around a pack node: success and failure shapes.
function wrapNode(fn) {
  return async (ctx) => {
    let result;
    try {
      result = await fn(ctx);
    } catch (err) {
      const code = err && typeof err === 'object' && typeof err.code === 'string' ? err.code : 'pack_node_error';
      const message = err instanceof Error ? err.message : String(err);
      return { status: 'failure', error: { code, message } };
    }
    if (result && result.status === 'success') return { status: 'success', outputs: result.outputs };
    return { status: 'failure', error: { code: 'pack_node_error', message: 'Pack node returned non-success outcome' } };
  };
}

// ── The mock provider: one scripted reply per request, per node ─────────────────────────────
class MockProvider {
  constructor(scripts) {
    this.scripts = scripts; // nodeId → steps
    this.cursor = new Map();
    this.requests = [];
  }

  // One provider dispatch, as openwop-app's `fetchWith429Retry` (providers/dispatch.ts) makes
  // it: an HTTP 429 is sent again, up to 3 requests in all, before the dispatch fails.
  async dispatch(nodeId, req) {
    for (let sent = 1; ; sent++) {
      try {
        return await this.request(nodeId, req);
      } catch (e) {
        if (sent >= 3 || !(e instanceof AiProviderError) || !/^HTTP 429\b/.test(e.message)) throw e;
      }
    }
  }

  async request(nodeId, req) {
    const steps = this.scripts.get(nodeId) ?? [];
    const i = this.cursor.get(nodeId) ?? 0;
    this.cursor.set(nodeId, i + 1);
    this.requests.push({ nodeId, maxTokens: req.maxTokens ?? null, systemPrompt: req.systemPrompt ?? null, messages: req.messages });
    const step = steps[i];
    if (step === undefined) throw new AiProviderError('provider_unavailable', `mock: no scripted reply ${i} for ${nodeId}`);
    if (step.hang) return new Promise(() => {});
    if (step.error) throw new AiProviderError('provider_unavailable', String(step.error));
    // A streamed step's chunks are one reply to a host that answers whole replies.
    let content = Array.isArray(step.chunks)
      ? step.chunks.join('')
      : typeof step.content === 'string' ? step.content : JSON.stringify(step.content ?? '');
    let finishReason = step.finishReason ?? 'stop';
    let usage = step.usage === false ? undefined : { inputTokens: step.usage?.inputTokens ?? 10, outputTokens: step.usage?.outputTokens ?? 0 };
    // The wop-sdk mock's rule: reported tokens are clamped to maxTokens, and a reply longer than
    // the budget is served truncated.
    if (usage && req.maxTokens !== undefined && usage.outputTokens > req.maxTokens) {
      usage.outputTokens = req.maxTokens;
      finishReason = 'length';
      content = content.slice(0, Math.max(1, Math.floor(content.length / 2)));
    }
    if (usage) usage.totalTokens = usage.inputTokens + usage.outputTokens;
    return { content, usage, finishReason, model: req.model };
  }
}

// ── callAI: the host's own loop ─────────────────────────────────────────────────────────────
const MAX_RETRY_ATTEMPTS = 3;
const TRUNCATION_MULTIPLIER = 2;
const RETRY_REASONS = ['invalid_output', 'tool_validation_failed', 'provider_failure', 'user_requested', 'workflow_policy'];

function lenientParse(text) {
  const attempts = [text, text.replace(/^\s*```(?:json)?\s*/i, '').replace(/\s*```\s*$/, '')];
  const start = text.search(/[[{]/);
  if (start >= 0) {
    const open = text[start];
    const close = open === '{' ? '}' : ']';
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      if (text[i] === open) depth++;
      else if (text[i] === close && --depth === 0) {
        attempts.push(text.slice(start, i + 1));
        break;
      }
    }
  }
  for (const t of attempts) {
    try {
      return { data: JSON.parse(t) };
    } catch {
      /* next path */
    }
  }
  return null;
}

// The host's schema check: the data is an object holding every `required` key. No more.
function requiredKeysPresent(data, schema) {
  if (!data || typeof data !== 'object') return false;
  if (!schema || typeof schema !== 'object') return true;
  for (const key of Array.isArray(schema.required) ? schema.required : []) if (!(key in data)) return false;
  return true;
}

function isNaturalLanguage(text) {
  const head = text.trimStart().slice(0, 16);
  return head.length > 0 && !head.startsWith('{') && !head.startsWith('[') && !head.startsWith('```');
}

function stableJson(v) {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`).join(',')}}`;
  return JSON.stringify(v ?? null);
}

export class OpenwopHost {
  constructor({ providers = ['mock'], rfc0248 = false } = {}) {
    this.providers = providers;
    this.rfc0248 = rfc0248;
    this.cache = new Map();
    this.cacheHits = 0;
    this.events = [];
    this.provider = new MockProvider(new Map());
    this.issued = new Map(); // attemptId → `${runId}/${nodeId}`
    this.nextAttempt = 0;
  }

  capabilityDocument() {
    return {
      aiProviders: { providers: this.providers, ...(this.rfc0248 ? { callAccounting: { attempts: true, retryPolicy: true } } : {}) },
      envelopes: {
        reliability: {
          maxRetryAttempts: MAX_RETRY_ATTEMPTS,
          events: ['envelope.retry.attempted', 'envelope.retry.exhausted', 'envelope.refusal', 'envelope.truncated', 'envelope.recovery.applied', 'envelope.nlToFormat.engaged'],
          completion: { distinguishesTruncation: true, truncationBudgetMultiplier: TRUNCATION_MULTIPLIER },
        },
      },
      providerUsage: {},
    };
  }

  emit(scope, type, payload) {
    this.events.push({ runId: scope.runId, nodeId: scope.nodeId, type, payload });
  }

  validateRfc0248(req) {
    if (req.retry !== undefined) {
      const r = req.retry;
      if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new AiProviderError('validation_error', '`retry` must be an object', { field: 'retry' });
      for (const k of Object.keys(r)) if (!['maxAttempts', 'growMaxTokens'].includes(k)) throw new AiProviderError('validation_error', `unknown key ${k}`, { field: `retry.${k}` });
      if (r.maxAttempts !== undefined && !(Number.isInteger(r.maxAttempts) && r.maxAttempts >= 1 && r.maxAttempts <= 16)) throw new AiProviderError('validation_error', '`retry.maxAttempts` must be an integer in 1..16', { field: 'retry.maxAttempts' });
      if (r.growMaxTokens !== undefined && typeof r.growMaxTokens !== 'boolean') throw new AiProviderError('validation_error', '`retry.growMaxTokens` must be a boolean', { field: 'retry.growMaxTokens' });
    }
    const hasId = req.retryOfAttemptId !== undefined;
    const hasReason = req.retryReason !== undefined;
    if (hasId !== hasReason) throw new AiProviderError('validation_error', 'retryOfAttemptId and retryReason go together', { field: 'retryOfAttemptId' });
    if (hasReason && !RETRY_REASONS.includes(req.retryReason)) throw new AiProviderError('validation_error', 'unknown retryReason', { field: 'retryReason' });
  }

  async callAI(scope, req) {
    if (typeof req.provider !== 'string' || !this.providers.includes(req.provider)) {
      throw new AiProviderError('provider_not_supported', `Provider "${req.provider}" is not supported by this host.`, { provider: req.provider });
    }
    if (typeof req.model !== 'string' || req.model.length === 0) throw new AiProviderError('invalid_request', '`model` is required', { field: 'model' });
    if (this.rfc0248) {
      this.validateRfc0248(req);
      if (req.retryOfAttemptId !== undefined && this.issued.get(req.retryOfAttemptId) !== `${scope.runId}/${scope.nodeId}`) {
        throw new AiProviderError('validation_error', 'retryOfAttemptId is not a completed attempt of this run', { field: 'retryOfAttemptId' });
      }
    }
    // The replay cache: keyed on the run, the node, the node attempt and a hash of the request
    // fields the host knows (defaults filled in first). An RFC 0248 host knows `retry` and the
    // lineage too.
    const known = {
      provider: req.provider, model: req.model, messages: req.messages, systemPrompt: req.systemPrompt ?? null,
      temperature: req.temperature ?? null, maxTokens: req.maxTokens ?? 4096, stopSequences: req.stopSequences ?? null,
      responseSchema: req.responseSchema ?? null,
      ...(this.rfc0248 ? { retry: req.retry ?? null, retryOfAttemptId: req.retryOfAttemptId ?? null, retryReason: req.retryReason ?? null } : {}),
    };
    const key = `${scope.runId}|${scope.nodeId}|${scope.attempt}|${createHash('sha256').update(stableJson(known)).digest('hex')}`;
    if (this.cache.has(key)) {
      this.cacheHits++;
      return { ...this.cache.get(key) };
    }
    const tally = { count: 0, outputTokens: 0, usageComplete: true };
    const send = async (r) => {
      tally.count++;
      const raw = await this.provider.dispatch(scope.nodeId, r);
      if (raw.usage) {
        tally.outputTokens += raw.usage.outputTokens;
        this.emit(scope, 'provider.usage', { provider: r.provider, model: r.model, inputTokens: raw.usage.inputTokens, outputTokens: raw.usage.outputTokens, nodeId: scope.nodeId });
      } else {
        tally.usageComplete = false;
      }
      return raw;
    };
    let result = req.responseSchema ? await this.structured(scope, req, send) : await send(req);
    result = { content: result.content, data: result.data, usage: result.usage, finishReason: result.finishReason, model: result.model };
    if (result.data !== undefined) delete result.content;
    if (this.rfc0248) {
      result.attempts = { count: tally.count, outputTokens: tally.outputTokens, usageComplete: tally.usageComplete, ...(req.responseSchema ? { structuredOutput: 'prompt' } : {}) };
      result.attemptId = `att-${++this.nextAttempt}`;
      this.issued.set(result.attemptId, `${scope.runId}/${scope.nodeId}`);
    }
    this.cache.set(key, result);
    return { ...result };
  }

  async structured(scope, req, send) {
    const hint = `Respond with a JSON object that matches this schema, with no preamble or trailing text: ${JSON.stringify(req.responseSchema)}`;
    const system = [req.systemPrompt, hint].filter(Boolean).join('\n\n');
    const cap = this.rfc0248 ? Math.min(MAX_RETRY_ATTEMPTS, req.retry?.maxAttempts ?? MAX_RETRY_ATTEMPTS) : MAX_RETRY_ATTEMPTS;
    const grow = !(this.rfc0248 && req.retry?.growMaxTokens === false);
    let maxTokens = req.maxTokens;
    let suppressHint = false;
    let lastReason = null;
    let lastText = '';
    let sent = 0;
    for (let attempt = 1; attempt <= cap; attempt++) {
      if (attempt > 1) this.emit(scope, 'envelope.retry.attempted', { nodeId: scope.nodeId, attempt, reason: lastReason });
      let raw;
      sent++;
      try {
        raw = await send({ ...req, systemPrompt: suppressHint ? req.systemPrompt : system, ...(maxTokens !== undefined ? { maxTokens } : {}) });
      } catch {
        lastReason = 'parse-error';
        suppressHint = false;
        continue;
      }
      if (raw.finishReason === 'content-filter') {
        this.emit(scope, 'envelope.refusal', { nodeId: scope.nodeId, provider: req.provider, model: req.model });
        throw new AiProviderError('envelope_refusal', `LLM provider returned an explicit refusal for ${req.provider}/${req.model}.`, { provider: req.provider, model: req.model });
      }
      if (raw.finishReason === 'length') {
        this.emit(scope, 'envelope.truncated', { nodeId: scope.nodeId, provider: req.provider, model: req.model, stopReason: 'length', outputTokenCount: raw.usage?.outputTokens ?? null });
        lastReason = 'truncation';
        if (grow) maxTokens = maxTokens !== undefined ? Math.min(maxTokens * TRUNCATION_MULTIPLIER, 64000) : 4000;
        suppressHint = true;
        continue;
      }
      lastText = raw.content ?? '';
      const parsed = lenientParse(lastText);
      if (parsed !== null && requiredKeysPresent(parsed.data, req.responseSchema)) return { ...raw, content: undefined, data: parsed.data };
      lastReason = parsed === null ? 'parse-error' : 'schema-violation';
      suppressHint = false;
    }
    // The natural-language fallback: one more request after the loop (inside the cap on an
    // RFC 0248 host, which counts it in maxAttempts).
    if (lastReason !== null && lastReason !== 'truncation' && isNaturalLanguage(lastText) && (!this.rfc0248 || sent < cap)) {
      this.emit(scope, 'envelope.nlToFormat.engaged', { nodeId: scope.nodeId, originalEnvelopeType: 'structured-output', fallbackCalls: 1 });
      const coercion = 'Your previous response was natural language; you MUST emit a JSON object that exactly matches the response schema.';
      try {
        const raw = await send({ ...req, systemPrompt: [req.systemPrompt, system, coercion].filter(Boolean).join('\n\n') });
        const parsed = lenientParse(raw.content ?? '');
        if (parsed !== null && requiredKeysPresent(parsed.data, req.responseSchema)) return { ...raw, content: undefined, data: parsed.data };
      } catch {
        /* exhaustion below */
      }
    }
    this.emit(scope, 'envelope.retry.exhausted', { nodeId: scope.nodeId, totalAttempts: sent, finalReason: lastReason ?? 'unknown' });
    if (lastReason === 'truncation') throw new AiProviderError('envelope_truncation_unrecoverable', `Provider truncated the structured-output emission across ${sent} attempts.`, { finalReason: lastReason });
    throw new AiProviderError('envelope_invalid', `Provider did not emit valid JSON matching the response schema after ${sent} attempts.`, { finalReason: lastReason });
  }
}

// ── Running a scenario ──────────────────────────────────────────────────────────────────────
function resolveInputs(v, outputs) {
  if (Array.isArray(v)) return v.map((x) => resolveInputs(x, outputs));
  if (v && typeof v === 'object') {
    if (typeof v.$output === 'string') {
      let out = outputs.get(v.$output);
      for (const part of (v.pointer ?? '').split('/').slice(1)) out = out?.[part];
      return out;
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolveInputs(x, outputs)]));
  }
  return v;
}

function scriptedCallAI(answers) {
  let i = 0;
  return () => {
    const a = answers[Math.min(i++, answers.length - 1)];
    if (a.hang) return new Promise(() => {});
    if ('throwValue' in a) throw a.throwValue;
    if (a.throwError) throw Object.assign(new Error(a.throwError.message ?? 'failed'), a.throwError.code ? { code: a.throwError.code } : {});
    if (a.rejectValue !== undefined) return Promise.reject(a.rejectValue);
    return Promise.resolve(a.result);
  };
}

export async function runScenario(scenario) {
  const host = new OpenwopHost({ providers: scenario.providers, rfc0248: scenario.rfc0248 === true });
  // How the bridge learns the kind of host (read by the pack's index.mjs at import).
  process.env.WOP_SDK_HOST_CAPABILITIES = JSON.stringify(host.capabilityDocument());
  let installs;
  let packs;
  if (scenario.registryInstall) {
    ({ installs, packs } = installAll(scenario.registryInstall));
  } else {
    packs = mountedPacks(scenario.packsDir, scenario.prefixes ?? DEFAULT_PREFIXES);
  }
  if (scenario.install) {
    const root = mkdtempSync(join(tmpdir(), 'openwop-install-'));
    packs = packs.map((p) => registryInstall(p, root));
  }
  const registry = new Registry(packs);
  host.provider = new MockProvider(new Map((scenario.steps ?? []).map((s) => [s.nodeId, s.script ?? []])));
  const outputs = new Map();
  const report = { mounted: packs.map((p) => p.entry), ...(installs ? { installs } : {}), steps: [] };
  for (const step of scenario.steps ?? []) {
    const execute = await registry.resolve(step.typeId);
    if (!execute) {
      report.steps.push({ nodeId: step.nodeId, outcome: { status: 'failure', error: { code: 'node_type_unknown', message: `no pack provides ${step.typeId}` } } });
      continue;
    }
    const scope = { runId: step.runId ?? 'run-1', nodeId: step.nodeId, attempt: 1 };
    // Each request as ctx.callAI received it (JSON text); with `mutateRequests`, the host then
    // changes the response schema it was given, as a host may (no later call may see it).
    const received = [];
    const recorded = (callAI) => (req) => {
      received.push(JSON.stringify(req));
      const answer = callAI(req); // a synchronous throw stays one
      if (step.mutateRequests && req !== null && typeof req === 'object') {
        const mutate = () => {
          const schema = req.responseSchema;
          if (schema === null || typeof schema !== 'object') return;
          schema.mutatedByHost = true;
          if (schema.properties !== null && typeof schema.properties === 'object') schema.properties.mutatedByHost = {};
        };
        Promise.resolve(answer).then(mutate, mutate);
      }
      return answer;
    };
    const ctx = {
      runId: scope.runId, nodeId: scope.nodeId, tenantId: 'tenant-1', attempt: 1,
      inputs: resolveInputs(step.inputs ?? null, outputs), config: step.config ?? {}, configurable: {}, secrets: {},
      ...(step.abortAfterMs !== undefined ? { signal: AbortSignal.timeout(step.abortAfterMs) } : {}),
      emit: async (type, payload) => { host.emit(scope, type, payload); return { eventId: `e${host.events.length}`, sequence: host.events.length }; },
      callAI: recorded(step.hostAnswers ? scriptedCallAI(step.hostAnswers) : (req) => host.callAI(scope, req)),
    };
    const started = host.provider.requests.length;
    const outcome = await execute(ctx);
    if (outcome.status === 'success') outputs.set(step.nodeId, outcome.outputs);
    const requests = host.provider.requests.slice(started);
    report.steps.push({
      nodeId: step.nodeId,
      outcome,
      requests: requests.length,
      outputTokens: host.events.filter((e) => e.type === 'provider.usage' && e.nodeId === step.nodeId).reduce((s, e) => s + e.payload.outputTokens, 0),
      usageComplete: requests.length === host.events.filter((e) => e.type === 'provider.usage' && e.nodeId === step.nodeId).length,
      messages: requests.map((r) => r.messages),
      callAI: received,
    });
  }
  report.cacheHits = host.cacheHits;
  report.events = host.events.map((e) => ({ nodeId: e.nodeId, type: e.type }));
  if (scenario.bench) report.bench = await bench(registry, host, scenario.bench);
  if (scenario.soak) report.soak = await soak(registry, scenario.soak);
  return report;
}

// The bridge's cost per call. The same work written as a pure-JS node and as Book AI's Rust
// `draft-scene` (through the addon): one structured call per scene to an instant callAI (an
// RFC 0248 answer, so each call is charged 1: four fit the node's budget of 6, as each reserves
// its worst case of 3), timed per node execution with 1 and with 4 calls, in wall time and in
// this process's CPU time. The marginal cost of a call is (T4 - T1) / 3; the fixed
// cost of a node execution is T1 minus one call.
async function bench(registry, _host, b) {
  process.env.WOP_SDK_HOST_CAPABILITIES = JSON.stringify(new OpenwopHost({ rfc0248: true }).capabilityDocument());
  const answer = { data: { text: 'Mara Quill waited.' }, usage: { inputTokens: 1, outputTokens: 1 }, finishReason: 'stop', model: 'mock-1',
    attemptId: 'a-1', attempts: { count: 1, outputTokens: 1, usageComplete: true, structuredOutput: 'prompt' } };
  const callAI = async () => answer;
  const rust = await registry.resolve('community.demo.bookai.draft-scene');
  const pure = wrapNode(async (ctx) => {
    const scenes = [];
    for (const beat of ctx.inputs.chapter.scenes) {
      const r = await ctx.callAI({ provider: 'mock', model: 'mock-1', messages: [{ role: 'user', content: `Write the scene: ${beat}` }],
        maxTokens: 600, responseSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } } });
      if (r.data === null || typeof r.data !== 'object' || typeof r.data.text !== 'string') throw Object.assign(new Error('bad data'), { code: 'envelope_invalid' });
      scenes.push({ beat, text: r.data.text, placeholder: false, repaired: false });
    }
    return { status: 'success', outputs: { number: ctx.inputs.chapter.number, scenes } };
  });
  const inputs = (n) => ({ chapter: { number: 1, title: 'T', characters: ['Mara Quill'], scenes: Array.from({ length: n }, (_, i) => `beat ${i}`) }, minWords: 1 });
  const time = async (execute, n, rounds) => {
    const ctx = (i) => ({ runId: `bench-${i}`, nodeId: 'draft-1', attempt: 1, inputs: inputs(n), config: {}, callAI });
    for (let i = 0; i < 50; i++) {
      const o = await execute(ctx(i));
      if (o.status !== 'success' || o.outputs.scenes.some((x) => x.placeholder)) throw new Error(`bench node failed: ${JSON.stringify(o)}`);
    }
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    // `concurrency` node executions in flight at once, as a host running many nodes has them
    // (1: one after another)
    for (let i = 0; i < rounds; i += concurrency) {
      const group = [];
      for (let k = i; k < Math.min(i + concurrency, rounds); k++) group.push(execute(ctx(k)));
      await Promise.all(group);
    }
    const cpu = process.cpuUsage(c0);
    // µs per node execution: wall time, and this process's CPU time (less moved by other
    // processes on a loaded machine)
    return [Number(process.hrtime.bigint() - t0) / rounds / 1000, (cpu.user + cpu.system) / rounds];
  };
  const rounds = b.rounds ?? 500;
  const concurrency = Math.max(1, b.concurrency ?? 1);
  const samples = { pure1: [], pure4: [], rust1: [], rust4: [] };
  const cpu = { pure1: [], pure4: [], rust1: [], rust4: [] };
  for (let r = 0; r < (b.repeats ?? 7); r++) {
    for (const [key, execute, n] of [['pure1', pure, 1], ['pure4', pure, 4], ['rust1', rust, 1], ['rust4', rust, 4]]) {
      const [wall, used] = await time(execute, n, rounds);
      samples[key].push(wall);
      cpu[key].push(used);
    }
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
  const c = Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, median(v)]));
  const perCall = { pure: (m.pure4 - m.pure1) / 3, rust: (m.rust4 - m.rust1) / 3 };
  const cpuPerCall = { pure: (c.pure4 - c.pure1) / 3, rust: (c.rust4 - c.rust1) / 3 };
  return {
    rounds, concurrency, node: process.version,
    usPerNode: m,
    usPerCall: perCall,
    usFixedPerNode: { pure: m.pure1 - perCall.pure, rust: m.rust1 - perCall.rust },
    bridgeUsPerCall: perCall.rust - perCall.pure,
    cpuUsPerCall: cpuPerCall,
    bridgeCpuUsPerCall: cpuPerCall.rust - cpuPerCall.pure,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const scenario = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  const report = await runScenario(scenario);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
