import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CLIENTS, type ClientName } from './catalog.js';

const run = promisify(execFile);

/** Written last into an install folder: an install without it (killed half-way) is redone. */
const MARKER = '.compactor-installed.json';

/** npm's own settings pass to the nested npm; what `npm run` sets about the calling package does not. */
const NPM_SETTINGS =
  /^npm_config_(registry|cache|userconfig|globalconfig|proxy|https_proxy|noproxy|strict_ssl|cafile|fetch_.*)$/i;

/** An installed agent. */
export interface InstalledClient {
  name: ClientName;
  pkg: string;
  version: string;
  /** The install folder. */
  dir: string;
  /** The binary, absolute. */
  bin: string;
}

/** Where agents are installed: `$COMPACTOR_CLIENTS_CACHE`, default `~/.cache/compactor-clients`. */
export function cacheRoot(): string {
  return process.env.COMPACTOR_CLIENTS_CACHE || join(homedir(), '.cache', 'compactor-clients');
}

/** The install folder of one version: `<cache>/<pkg>@<version>` (a scoped package nests under its scope). */
export function installDir(pkg: string, version: string): string {
  return join(cacheRoot(), `${pkg}@${version}`);
}

/** The environment for a nested npm: this process's, without what `npm run` says about the calling package. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) || NPM_SETTINGS.test(key)) env[key] = value;
  }
  return env;
}

/** The newest published version of an agent (`npm view <pkg> version`). */
export async function latestVersion(name: ClientName): Promise<string> {
  const { stdout } = await run('npm', ['view', CLIENTS[name].pkg, 'version'], { env: npmEnv(), timeout: 60_000 });
  return stdout.trim();
}

/** Whether the npm registry answers (`npm ping`), with npm's own words when it does not. */
export async function registryReachable(): Promise<{ ok: true } | { ok: false; reason: string }> {
  try {
    await run('npm', ['ping'], { env: npmEnv(), timeout: 60_000 });
    return { ok: true };
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    const lines = stderr.split('\n');
    const line = lines.find((l) => /FetchError|request to/.test(l)) ?? lines.find((l) => /npm error code/.test(l));
    return { ok: false, reason: (line ?? stderr.trim().split('\n')[0] ?? 'npm ping failed').replace(/^npm error\s*/, '') };
  }
}

/** The binary's path in an install folder. */
function binIn(dir: string, bin: string): string {
  return join(dir, 'node_modules', '.bin', bin);
}

/** Whether an install folder is complete (its marker written, its binary there). */
async function complete(dir: string, bin: string, version: string): Promise<boolean> {
  try {
    const marker = JSON.parse(await readFile(join(dir, MARKER), 'utf8')) as { version?: string };
    return marker.version === version && existsSync(binIn(dir, bin));
  } catch {
    return false;
  }
}

/** Runs `<bin> --version` with a throw-away HOME and checks that it names `version`. */
async function checkVersion(bin: string, version: string): Promise<void> {
  const home = await mkdtemp(join(tmpdir(), 'compactor-client-version-'));
  try {
    const env = { PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, HOME: home };
    const { stdout } = await run(bin, ['--version'], { env, timeout: 60_000 });
    if (!stdout.includes(version)) throw new Error(`${bin} --version said ${stdout.trim()}, not ${version}`);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** Whether a process id is alive (a staging folder's owner). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the staging folders that killed installs of `dir` left (their process is gone). */
async function removeStale(dir: string): Promise<void> {
  const prefix = `${basename(dir)}.partial-`;
  const siblings = await readdir(dirname(dir)).catch(() => [] as string[]);
  for (const name of siblings) {
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (name.startsWith(prefix) && Number.isInteger(pid) && !alive(pid))
      await rm(join(dirname(dir), name), { recursive: true, force: true });
  }
}

/**
 * Installs one version of an agent into the cache (default: its pinned version), unless a
 * complete install is already there. The install runs `npm install --save-exact` in a staging
 * folder beside the final one, checks that the binary reports its version, writes the marker
 * and renames the folder into place: a killed install leaves only a staging folder, and two
 * processes installing at once both end with one complete folder. Throws with npm's output
 * when npm fails.
 */
export async function installClient(name: ClientName, version: string = CLIENTS[name].pinned): Promise<InstalledClient> {
  const spec = CLIENTS[name];
  const dir = installDir(spec.pkg, version);
  const installed: InstalledClient = { name, pkg: spec.pkg, version, dir, bin: binIn(dir, spec.bin) };
  if (await complete(dir, spec.bin, version)) return installed;
  await mkdir(dirname(dir), { recursive: true });
  await removeStale(dir);
  const staging = `${dir}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  await mkdir(staging);
  try {
    const manifest = { name: 'compactor-client-cache', private: true, allowScripts: { [spec.pkg]: true } };
    await writeFile(join(staging, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    // --prefer-offline: what the npm cache holds installs without asking the registry again.
    const args = [
      'install',
      '--save-exact',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      `${spec.pkg}@${version}`,
    ];
    const npm = await run('npm', args, { cwd: staging, env: npmEnv(), timeout: 15 * 60_000, maxBuffer: 16 * 1024 * 1024 }).catch(
      (error: { stderr?: string; message?: string }) => {
        throw new Error(
          `npm install ${spec.pkg}@${version} failed: ${(error.stderr || error.message || '').trim().slice(-2000)}`,
        );
      },
    );
    await writeFile(join(staging, 'install.log'), `${npm.stdout}${npm.stderr}`);
    await checkVersion(binIn(staging, spec.bin), version);
    await writeFile(
      join(staging, MARKER),
      `${JSON.stringify({ pkg: spec.pkg, version, installedAt: new Date().toISOString() })}\n`,
    );
    if (!(await complete(dir, spec.bin, version))) {
      await rm(dir, { recursive: true, force: true });
      await rename(staging, dir).catch(async (error: unknown) => {
        // Another process finished first: its folder is as good as ours.
        if (!(await complete(dir, spec.bin, version))) throw error;
      });
    }
    return installed;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
