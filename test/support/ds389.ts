import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, portAnswers } from '../../lib/runtime/azurite';
import { onFreePorts } from './ports';
import { pidFile as trackedPidFile, trackPid } from './processes';

/**
 * A private, throwaway 389 Directory Server (the server under Red Hat Directory Server and FreeIPA) for the
 * tests: instance `t<random>` with suffix dc=example,dc=com and its sample entries (made before the entryUUID
 * plugin runs, so they have no entryUUID; every entry has nsUniqueId), the retro changelog (cn=changelog,
 * changeNumber), memberOf and referential integrity (member, uniqueMember, owner, seeAlso, manager) enabled,
 * LDAP and LDAPS on free loopback ports with the instance's self-signed CA.
 *
 * dscreate and its start/stop call systemctl; without systemd, a stand-in on PATH (in the instance's temp
 * directory) starts ns-slapd directly. Everything lives in a `mktemp -d` directory except the instance's
 * configuration, which 389 DS keeps in /etc/dirsrv/slapd-<instance> (removed by {@link Ds389.stop}). ns-slapd
 * detaches: its pid (read from its pid file, under the temp directory) is tracked for globalTeardown and the
 * CI trap.
 */
export interface Ds389 {
  dir: string;
  instance: string;
  suffix: string;
  rootDN: string;
  rootPassword: string;
  /** `ldap://127.0.0.1:PORT`. */
  url: string;
  /** `ldaps://localhost:PORT` (the certificate names localhost). */
  ldapsUrl: string;
  port: number;
  ldapsPort: number;
  /** PEM of the instance's CA, to trust in clients. */
  caCertificate: string;
  caCertificateFile: string;
  pid: number;
  /** Make the retro changelog keep 2 s of changes (trimmed every second; a restart applies it) and wait until it trimmed past `changeNumber`. */
  trimChangelogPast(changeNumber: number): Promise<void>;
  /** Stop ns-slapd and keep the instance: the server is down until {@link Ds389.restart}. */
  halt(): Promise<void>;
  /** Start a halted server again, on the same ports with the same data (`pid` changes). */
  restart(): Promise<void>;
  /** Stop ns-slapd and remove the instance (its temp directory and /etc/dirsrv/slapd-<instance>). */
  stop(): Promise<void>;
}

export interface Ds389Options {
  /**
   * Also record the target entry's nsUniqueId in the retro changelog (`nsslapd-attribute: nsuniqueid:targetUniqueId`).
   * Default false: the changelog names the target by DN only, as a default 389 DS does.
   */
  changelogUniqueId?: boolean;
}

const ROOT_DN = 'cn=Directory Manager';
const ROOT_PASSWORD = 'Secret123!';

/** The instances' configuration folders (outside the temp dir), listed beside the tracked pids for globalTeardown. */
function instancesFile(): string {
  return `${trackedPidFile()}.ds389`;
}

/** Remove the configuration folders of instances a crashed or timed-out suite left behind (their ns-slapd is killed by pid). */
export function removeLeftoverInstances(): void {
  let text = '';
  try {
    text = readFileSync(instancesFile(), 'utf8');
  } catch {
    return;
  }
  for (const dir of text.split('\n')) if (/^\/etc\/dirsrv\/slapd-t[0-9a-f]+$/.test(dir.trim())) rmSync(dir.trim(), { recursive: true, force: true });
  rmSync(instancesFile(), { force: true });
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { timeout: 180_000, maxBuffer: 16 * 1024 * 1024, env: env ?? process.env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr || stdout || err.message}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** The stand-in for systemctl that dscreate calls: starts and stops ns-slapd for dirsrv@<instance>. */
const SYSTEMCTL = `#!/bin/bash
cmd=$1; unit=\${@: -1}; inst=\${unit#dirsrv@}; conf=/etc/dirsrv/slapd-$inst
pidf=$(grep -i '^nsslapd-rundir' $conf/dse.ldif 2>/dev/null | awk '{print $2}')/slapd-$inst.pid
running() { [ -f "$pidf" ] && kill -0 $(cat "$pidf") 2>/dev/null; }
case "$cmd" in
  start) rm -f "$pidf"; /usr/sbin/ns-slapd -D $conf -i $pidf >/dev/null 2>&1; for i in $(seq 300); do [ -f "$pidf" ] && exit 0; sleep 0.1; done; exit 1;;
  stop) running && kill $(cat "$pidf"); for i in $(seq 300); do running || { rm -f "$pidf"; exit 0; }; sleep 0.1; done; exit 1;;
  restart) "$0" stop "$2"; "$0" start "$2";;
  is-active) running && { echo active; exit 0; }; echo inactive; exit 3;;
  *) exit 0;;
esac
`;

/**
 * dse.ldif with the attributes of the named entries replaced (an attribute not there is added). An entry's folded
 * lines are unfolded; the server reads long lines as they are. Throws if an entry is missing.
 */
export function setDseAttributes(text: string, changes: Record<string, Record<string, string[]>>): string {
  const blocks = text.split(/\n\n/);
  for (const [dn, attrs] of Object.entries(changes)) {
    const i = blocks.findIndex((b) => b.split('\n', 1)[0].toLowerCase() === `dn: ${dn.toLowerCase()}`);
    if (i < 0) throw new Error(`dse.ldif has no entry ${dn}`);
    const names = new Set(Object.keys(attrs).map((a) => a.toLowerCase()));
    const lines = blocks[i].replace(/\n /g, '').split('\n');
    const kept = lines.filter((l) => !names.has(l.slice(0, l.indexOf(':')).toLowerCase()));
    blocks[i] = [...kept, ...Object.entries(attrs).flatMap(([a, values]) => values.map((v) => `${a}: ${v}`))].join('\n');
  }
  return blocks.join('\n\n');
}

/** SIGKILL `pid` and wait (up to 10 s) until it has exited: gone, or a zombie its new parent has not reaped yet. */
async function killAndWait(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return; // gone
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    let state = '';
    try {
      state = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    } catch {
      return;
    }
    if (state === 'Z' || state === 'X') return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitPort(port: number, seconds: number): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await portAnswers('127.0.0.1', port))) {
    if (Date.now() > deadline) throw new Error(`389 DS did not listen on ${port} within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startDs389(options: Ds389Options = {}): Promise<Ds389> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ds389-'));
  // ns-slapd runs as the dirsrv user: it must reach its folders in here.
  chmodSync(dir, 0o755);
  for (const sub of ['bin', 'db', 'ldif', 'lock', 'log', 'run', 'bak']) mkdirSync(path.join(dir, sub));
  writeFileSync(path.join(dir, 'bin/systemctl'), SYSTEMCTL, { mode: 0o755 });
  const instance = `t${randomBytes(5).toString('hex')}`;
  const configDir = `/etc/dirsrv/slapd-${instance}`;
  let [port, ldapsPort] = [await freePort(), await freePort()];
  const env = { ...process.env, PATH: `${path.join(dir, 'bin')}:${process.env.PATH ?? ''}` };
  writeFileSync(
    path.join(dir, 'inst.inf'),
    `[general]
full_machine_name = localhost
start = False
systemd = False
strict_host_checking = False
[slapd]
instance_name = ${instance}
port = ${port}
secure_port = ${ldapsPort}
root_password = ${ROOT_PASSWORD}
self_sign_cert = True
db_dir = ${dir}/db
ldif_dir = ${dir}/ldif
lock_dir = ${dir}/lock
log_dir = ${dir}/log
run_dir = ${dir}/run
backup_dir = ${dir}/bak
ldapi = ${dir}/run/slapd.socket
[backend-userroot]
sample_entries = yes
suffix = dc=example,dc=com
`,
  );
  const pidFile = path.join(dir, 'run', `slapd-${instance}.pid`);
  const systemctl = (cmd: string) => run(path.join(dir, 'bin/systemctl'), [cmd, `dirsrv@${instance}`], env);
  const track = () => {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    trackPid(pid);
    return pid;
  };
  // The instance is thrown away, so ns-slapd is killed rather than stopped: a clean stop takes 389 DS seconds
  // (its database threads wind down), and nothing of the instance is kept.
  const remove = async () => {
    if (existsSync(pidFile)) await killAndWait(Number(readFileSync(pidFile, 'utf8').trim()));
    rmSync(configDir, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  };
  appendFileSync(instancesFile(), `${configDir}\n`);
  try {
    await run('dscreate', ['from-file', path.join(dir, 'inst.inf')], env);
    // Configured in dse.ldif before the first start (dscreate leaves the server stopped): enabling a plugin over
    // LDAP needs a restart, and a 389 DS stop takes seconds (its database threads wind down).
    const dse = path.join(configDir, 'dse.ldif');
    writeFileSync(
      dse,
      setDseAttributes(readFileSync(dse, 'utf8'), {
        'cn=config': { 'nsslapd-listenhost': ['127.0.0.1'], 'nsslapd-securelistenhost': ['127.0.0.1'] },
        'cn=Retro Changelog Plugin,cn=plugins,cn=config': {
          'nsslapd-pluginEnabled': ['on'],
          ...(options.changelogUniqueId ? { 'nsslapd-attribute': ['nsuniqueid:targetUniqueId'] } : {}),
        },
        'cn=MemberOf Plugin,cn=plugins,cn=config': { 'nsslapd-pluginEnabled': ['on'] },
        'cn=referential integrity postoperation,cn=plugins,cn=config': {
          'nsslapd-pluginEnabled': ['on'],
          'referint-membership-attr': ['member', 'uniquemember', 'owner', 'seeAlso', 'manager'],
          'referint-update-delay': ['0'],
        },
      }),
    );
    // dscreate takes seconds, and another process can take a port picked before it: the ports are picked
    // again just before ns-slapd starts (written into dse.ldif), and again on new ones if one was taken.
    [port, ldapsPort] = await onFreePorts(2, async ([p, ps]) => {
      let text = readFileSync(dse, 'utf8');
      for (const [name, value] of [
        ['nsslapd-port', p],
        ['nsslapd-secureport', ps],
      ] as const) {
        const line = new RegExp(`^${name}: \\d+$`, 'im');
        if (!line.test(text)) throw new Error(`${dse} has no ${name} line`);
        text = text.replace(line, `${name}: ${value}`);
      }
      writeFileSync(dse, text);
      try {
        await systemctl('start');
        track();
        await waitPort(p, 60);
      } catch (err) {
        await systemctl('stop').catch(() => undefined);
        throw err;
      }
      return [p, ps];
    });
    await waitPort(ldapsPort, 60);
  } catch (err) {
    await remove();
    throw err;
  }
  const pid = track();
  const caCertificateFile = path.join(configDir, 'ca.crt');
  const server: Ds389 = {
    dir,
    instance,
    suffix: 'dc=example,dc=com',
    rootDN: ROOT_DN,
    rootPassword: ROOT_PASSWORD,
    url: `ldap://127.0.0.1:${port}`,
    ldapsUrl: `ldaps://localhost:${ldapsPort}`,
    port,
    ldapsPort,
    caCertificate: readFileSync(caCertificateFile, 'utf8'),
    caCertificateFile,
    pid,
    async trimChangelogPast(changeNumber: number) {
      await run(
        'ldapmodify',
        ['-x', '-H', server.url, '-D', ROOT_DN, '-w', ROOT_PASSWORD],
        env,
        `dn: cn=Retro Changelog Plugin,cn=plugins,cn=config
changetype: modify
replace: nsslapd-changelogmaxage
nsslapd-changelogmaxage: 2s
-
replace: nsslapd-changelog-trim-interval
nsslapd-changelog-trim-interval: 1
`,
      );
      // The plugin reads its trimming settings at start; trimming then runs every few seconds.
      await systemctl('restart');
      server.pid = track();
      await waitPort(port, 60);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const out = await run(
          'ldapsearch',
          ['-x', '-LLL', '-H', server.url, '-D', ROOT_DN, '-w', ROOT_PASSWORD, '-s', 'base', '-b', '', 'firstChangeNumber'],
          env,
        );
        const first = Number(/firstChangeNumber:\s*(\d+)/i.exec(out)?.[1] ?? 0);
        if (first > changeNumber) return;
        if (Date.now() > deadline) throw new Error(`the retro changelog was not trimmed past ${changeNumber} within 60 s (first is ${first})`);
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    async halt() {
      await systemctl('stop');
    },
    async restart() {
      if (existsSync(pidFile)) await systemctl('stop');
      await systemctl('start');
      server.pid = track();
      await waitPort(port, 60);
      await waitPort(ldapsPort, 60);
    },
    stop: remove,
  };
  return server;
}
