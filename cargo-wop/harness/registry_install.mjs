// openwop-app's registry install, written from the facts of its public source
// (openwop/openwop-app-install, backend/typescript/src/packs/registryInstaller.ts): no code of it
// is copied; no npm package is needed (Node >= 20). The registry is a folder served as
// packs.openwop.dev serves `registry/` (what `cargo wop publish --registry DIR` writes).
//
// For each {name, version}: the version manifest `registry/v1/packs/<name>/-/<version>.json`
// (name and version must match), the tarball's SHA-256 against `integrity` (`sha256-<base64>`),
// the key `registry/keys/<signing.publicKeyRef>.pub`, the Ed25519 signature
// (`<version>.sig`) over the raw `pack.json` bytes inside the tarball; then `tar -xzf` into a
// staging folder, only `pack.json`, `index.mjs`, `schemas/`, `keys/` and `prompts/` kept, and a
// trust marker with the SHA-256 of `pack.json` and `index.mjs`, checked again before each load.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

const MARKER = '.openwop-installed.json';
const KEPT_FILES = ['pack.json', 'index.mjs'];
const KEPT_DIRS = ['schemas', 'keys', 'prompts'];

function sha256(bytes, encoding) {
  return createHash('sha256').update(bytes).digest(encoding);
}

// `pack.json` inside a gzipped USTAR tarball, as its raw bytes; long-name records refused.
function packJsonOf(tgz) {
  const tar = gunzipSync(tgz);
  for (let off = 0; off + 512 <= tar.length;) {
    const field = tar.subarray(off, off + 100);
    const end = field.indexOf(0);
    const name = field.subarray(0, end < 0 ? 100 : end).toString('utf8');
    if (!name) break;
    const size = parseInt(tar.subarray(off + 124, off + 136).toString('ascii').replace(/\0/g, '').trim(), 8) || 0;
    const type = tar[off + 156];
    if (type === 0x78 || type === 0x4c) throw new Error('tarball uses an extended USTAR header; not supported');
    if (name === 'pack.json' || name === './pack.json') return tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error('pack.json not found in tarball');
}

function packRoot(stage) {
  if (existsSync(join(stage, 'pack.json'))) return stage;
  for (const e of readdirSync(stage)) {
    if (statSync(join(stage, e)).isDirectory() && existsSync(join(stage, e, 'pack.json'))) return join(stage, e);
  }
  return null;
}

// Installs name@version from the registry folder into packDir/<name>; answers the folder, or
// throws an Error whose message starts with the installer's code.
export function installFromRegistry(registryDir, packDir, { name, version }) {
  const base = join(registryDir, 'registry', 'v1', 'packs', name, '-', version);
  const manifest = JSON.parse(readFileSync(`${base}.json`, 'utf8'));
  if (manifest.name !== name || manifest.version !== version) {
    throw new Error(`manifest_identity_mismatch: requested ${name}@${version}, got ${manifest.name}@${manifest.version}`);
  }
  const tgz = readFileSync(`${base}.tgz`);
  const [algorithm, expected] = String(manifest.integrity).split('-');
  if (algorithm !== 'sha256') throw new Error(`unsupported_integrity_algorithm: ${algorithm}`);
  const actual = sha256(tgz, 'base64');
  if (actual !== expected) throw new Error(`pack_integrity_mismatch: expected ${expected}, got ${actual}`);
  const keyRef = manifest.signing?.publicKeyRef;
  if (!keyRef) throw new Error('pack_signature_unverifiable: no signing.publicKeyRef in manifest');
  const key = createPublicKey(readFileSync(join(registryDir, 'registry', 'keys', `${keyRef}.pub`), 'utf8'));
  if (!verify(null, packJsonOf(tgz), key, readFileSync(`${base}.sig`))) throw new Error('pack_signature_invalid');
  const stage = mkdtempSync(join(tmpdir(), 'openwop-install-stage-'));
  const dest = join(packDir, name);
  try {
    writeFileSync(join(stage, 'pack.tgz'), tgz);
    const r = spawnSync('tar', ['-xzf', join(stage, 'pack.tgz'), '-C', stage], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tar_extract_failed: ${r.stderr ?? ''}`);
    rmSync(join(stage, 'pack.tgz'), { force: true });
    const root = packRoot(stage);
    if (!root) throw new Error('extracted_archive_missing_pack_json');
    rmSync(dest, { recursive: true, force: true });
    mkdirSync(dest, { recursive: true });
    for (const f of KEPT_FILES) if (existsSync(join(root, f))) cpSync(join(root, f), join(dest, f));
    for (const d of KEPT_DIRS) if (existsSync(join(root, d))) cpSync(join(root, d), join(dest, d), { recursive: true });
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  const hashes = { 'pack.json': sha256(readFileSync(join(dest, 'pack.json')), 'hex') };
  if (existsSync(join(dest, 'index.mjs'))) hashes['index.mjs'] = sha256(readFileSync(join(dest, 'index.mjs')), 'hex');
  writeFileSync(join(dest, MARKER), JSON.stringify({ name, version, integrity: manifest.integrity, publicKeyRef: keyRef, contentHashes: hashes }, null, 2));
  return dest;
}

// The check before each load: null, or why the installed pack is refused.
export function verifyInstalledPack(dir) {
  if (!existsSync(join(dir, MARKER))) return 'marker_missing';
  let marker;
  try {
    marker = JSON.parse(readFileSync(join(dir, MARKER), 'utf8'));
  } catch {
    return 'marker_invalid_json';
  }
  for (const [file, expected] of Object.entries(marker.contentHashes ?? {})) {
    if (!existsSync(join(dir, file))) return `content_missing:${file}`;
    if (sha256(readFileSync(join(dir, file)), 'hex') !== expected) return `content_modified:${file}`;
  }
  return null;
}

// A scenario's `registryInstall: {registryDir, packs: [{name, version}], modifyAfterInstall?:
// {name, file, append}}`: the packs that install and verify, and what happened to each.
export function installAll(spec) {
  const packDir = mkdtempSync(join(tmpdir(), 'openwop-packs-'));
  const installs = [];
  const packs = [];
  for (const target of spec.packs ?? []) {
    try {
      const dir = installFromRegistry(spec.registryDir, packDir, target);
      const m = spec.modifyAfterInstall;
      if (m && m.name === target.name) writeFileSync(join(dir, m.file), readFileSync(join(dir, m.file), 'utf8') + m.append);
      const refused = verifyInstalledPack(dir);
      if (refused !== null) throw new Error(`pack_install_unverified: ${refused}`);
      installs.push({ ...target, installed: true, files: readdirSync(dir).sort() });
      packs.push({ entry: target.name, dir });
    } catch (e) {
      installs.push({ ...target, installed: false, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return { installs, packs };
}
