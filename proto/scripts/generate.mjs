#!/usr/bin/env node
// Regenerates proto/gen/ from the .proto contracts with buf and the local ts-proto plugin, and
// builds proto/gen/descriptors.binpb: the FileDescriptorSet (source info included, so comments
// too) of every keel/**/*.proto plus grpc.health.v1's health.proto, which the services' gRPC
// reflection serves as it is (see packages/runtime/src/grpc-reflection.ts).
//
//   node proto/scripts/generate.mjs            write proto/gen/ (the committed output)
//   node proto/scripts/generate.mjs --check    fail when regenerating would change proto/gen/,
//                                              or when `buf lint` / `buf format` complain
//   ... --check --against <git-ref>            also run `buf breaking` against proto/ at <git-ref>
//
// Works from any directory and offline: buf and protoc-gen-ts_proto come from the repository's
// node_modules, and the template (proto/buf.gen.yaml) names no remote plugin or dependency.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';

const protoDir = dirname(dirname(fileURLToPath(import.meta.url)));
const repoRoot = dirname(protoDir);
const binDir = join(repoRoot, 'node_modules', '.bin');
const buf = join(binDir, process.platform === 'win32' ? 'buf.cmd' : 'buf');
const genDir = join(protoDir, 'gen');
// The health.proto grpc-health-check's HealthImplementation serves (grpc.health.v1), so the
// descriptor and the implementation come from one package and cannot drift apart.
const healthProtoDir = join(repoRoot, 'node_modules', 'grpc-health-check', 'proto');
const DESCRIPTORS_FILE = 'descriptors.binpb';

const args = process.argv.slice(2);
const check = args.includes('--check');
const againstIndex = args.indexOf('--against');
const against = againstIndex >= 0 ? args[againstIndex + 1] : undefined;
if (againstIndex >= 0 && !against) fail('--against needs a git ref, e.g. --against main');

if (!existsSync(buf)) fail(`buf not found at ${buf}; run npm install at ${repoRoot}`);

if (check) {
  const problems = [];
  const tmp = mkdtempSync(join(tmpdir(), 'keel-proto-'));
  try {
    runBuf(['generate', '--output', tmp]);
    buildDescriptors(join(tmp, 'gen'), mkdtempSync(join(tmpdir(), 'keel-proto-')));
    problems.push(...compareTrees(join(tmp, 'gen'), genDir));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  if (problems.length > 0) {
    console.error('proto/gen is out of date; run `npm run proto:gen` and commit the result:');
    for (const p of problems) console.error(`  ${p}`);
  }
  const lint = runBuf(['lint'], { allowFailure: true });
  if (lint !== 0) problems.push('buf lint failed');
  const format = runBuf(['format', '--diff', '--exit-code'], { allowFailure: true });
  if (format !== 0)
    problems.push('buf format: .proto files are not formatted (run `npx buf format -w proto`)');
  if (against) {
    const breaking = runBuf(
      ['breaking', '--against', `${join(repoRoot, '.git')}#ref=${against},subdir=proto`],
      {
        allowFailure: true,
      },
    );
    if (breaking !== 0) problems.push(`buf breaking against ${against} failed`);
  }
  if (problems.length > 0) process.exit(1);
  console.log(
    'proto: gen/ is up to date, lint and format clean' +
      (against ? `, no breaking change since ${against}` : ''),
  );
} else {
  runBuf(['generate']);
  buildDescriptors(genDir, mkdtempSync(join(tmpdir(), 'keel-proto-')));
  console.log(
    `proto: generated ${listFiles(genDir).length} files into ${relative(process.cwd(), genDir) || '.'}`,
  );
}

/** Runs buf in proto/ (where buf.yaml and buf.gen.yaml live); returns its exit code. */
function runBuf(bufArgs, { allowFailure = false } = {}) {
  const result = spawnSync(buf, bufArgs, {
    cwd: protoDir,
    stdio: 'inherit',
    // The ts-proto plugin is a `#!/usr/bin/env node` script: make this node the one it finds.
    env: { ...process.env, PATH: [dirname(process.execPath), binDir, process.env.PATH].join(delimiter) },
    shell: process.platform === 'win32',
  });
  if (result.error) fail(`could not run buf: ${result.error.message}`);
  const code = result.status ?? 1;
  if (code !== 0 && !allowFailure) fail(`buf ${bufArgs.join(' ')} exited with ${code}`);
  return code;
}

/**
 * Writes <outDir>/descriptors.binpb: `buf build` of this module (imports included) and of
 * grpc-health-check's health.proto, merged into one FileDescriptorSet. `buf generate` (clean:
 * true) empties gen/ first, so this runs after it. workDir is removed afterwards.
 */
function buildDescriptors(outDir, workDir) {
  try {
    if (!existsSync(join(healthProtoDir, 'health', 'v1', 'health.proto'))) {
      fail(`grpc-health-check's health.proto not found under ${healthProtoDir}; run npm install`);
    }
    const keelImage = join(workDir, 'keel.binpb');
    const healthImage = join(workDir, 'health.binpb');
    runBuf(['build', '--output', keelImage]);
    runBuf(['build', healthProtoDir, '--output', healthImage]);
    const files = [keelImage, healthImage].flatMap(
      (image) => fromBinary(FileDescriptorSetSchema, readFileSync(image)).file,
    );
    const names = files.map((file) => file.name);
    const duplicate = names.find((name, index) => names.indexOf(name) !== index);
    if (duplicate) fail(`${duplicate} is in both descriptor sets`);
    writeFileSync(
      join(outDir, DESCRIPTORS_FILE),
      toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: files })),
    );
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Lists the differences between a fresh generation and the committed one, byte for byte. */
function compareTrees(fresh, committed) {
  const freshFiles = new Set(listFiles(fresh));
  const committedFiles = new Set(listFiles(committed));
  const problems = [];
  for (const file of [...new Set([...freshFiles, ...committedFiles])].sort()) {
    const shown = `proto/gen/${file}`;
    if (!committedFiles.has(file)) problems.push(`missing: ${shown}`);
    else if (!freshFiles.has(file)) problems.push(`stale (no longer generated): ${shown}`);
    else if (!readFileSync(join(fresh, file)).equals(readFileSync(join(committed, file)))) {
      problems.push(`differs: ${shown}`);
    }
  }
  return problems;
}

/** Files under dir, as sorted '/'-separated paths relative to it; [] when dir does not exist. */
function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

function fail(message) {
  console.error(`proto: ${message}`);
  process.exit(1);
}
