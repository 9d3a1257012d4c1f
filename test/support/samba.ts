import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Attribute, Change, Client } from 'ldapts';
import { portAnswers } from '../../lib/runtime/azurite';
import { pidFile, trackPid } from './processes';

/**
 * A real Active Directory domain controller for the tests: Samba 4's AD DC (Debian samba-ad-dc), provisioned
 * into a temp dir as the domain SAMDOM.TEST (base DN DC=samdom,DC=test), running only its LDAP server and KDC
 * (`server services = ldap,kdc`), with a CA and server certificate of our own (SAN localhost, 127.0.0.1).
 *
 * Samba has no port setting: it listens on 389 (LDAP), 636 (LDAPS) and 88 (Kerberos) of 127.0.0.1, so one DC may
 * run on the machine at a time. {@link startSambaAd} first takes a machine-wide exclusive lock (a kernel flock held
 * by a `flock` child whose stdin is our pipe: if the test process dies, the lock goes with it), waiting for suites
 * of other jest workers, other test runs and other users of the machine; then it stops a DC a dead holder left
 * (recorded in the state file beside the lock), waits until the three ports are free, provisions (about 4 s; once
 * per test run, later suites copy the fresh domain: see dcDir) and starts samba (about 2 s). samba runs with `-i`, which makes it exit when its stdin (our pipe) closes, so it dies
 * with the test process too; its pid is tracked for globalTeardown and .ci/run's trap. Call
 * {@link SambaAd.release} in afterAll: it stops samba, removes the temp dir and frees the lock.
 *
 * Because suites wait for each other, give the beforeAll that starts the DC a long timeout
 * (SAMBA_START_TIMEOUT_MS) so a wait for another suite is not taken for a hang.
 */
export interface SambaAd {
  dir: string;
  /** SAMDOM.TEST */
  realm: string;
  /** The NetBIOS domain name, SAMDOM. */
  domain: string;
  /** DC=samdom,DC=test */
  baseDN: string;
  /** CN=Administrator,CN=Users,DC=samdom,DC=test (a domain admin). */
  adminDN: string;
  adminPassword: string;
  /** Administrator@SAMDOM.TEST */
  adminUpn: string;
  /** Connect to `localhost` (the certificate names localhost and 127.0.0.1). */
  host: string;
  ldapPort: number;
  ldapsPort: number;
  /** ldap://127.0.0.1:389 (simple binds are allowed over plain LDAP: test only). */
  ldapUrl: string;
  /** ldaps://localhost:636 */
  ldapsUrl: string;
  /** PEM of the CA that issued the DC's certificate. */
  caCertificate: string;
  caCertificateFile: string;
  /**
   * How a directory connector reaches this DC: LDAPS with its CA trusted, the domain's base DN, bound as the
   * administrator. Spread into an `active_directory` connector's config.
   */
  connection: { host: string; port: number; security: 'ldaps'; caCertificate: string; baseDN: string; bindDN: string; bindPassword: string };
  /** A krb5.conf naming the DC's KDC (127.0.0.1:88) for the realm, with localhost mapped to it. */
  krb5Conf: string;
  /** KRB5_CONFIG and KRB5RCACHEDIR for processes that use the realm (kinit, the service under test). */
  env: Record<string, string>;
  /** The samba process id. */
  pid: number;
  /** samba-tool with this DC's smb.conf (`-s`) appended: e.g. tool(['user', 'create', 'bob', 'Passw0rd!1']). */
  tool(args: string[]): Promise<string>;
  /** A bound admin ldapts client over LDAPS for the callback; unbound afterwards. */
  ldap<T>(fn: (client: Client) => Promise<T>): Promise<T>;
  /** Add an organizational unit (its parents must exist); returns its DN. */
  addOU(dn: string): Promise<string>;
  /** Add a user over LDAPS; returns its DN. See {@link SambaUser}. */
  addUser(user: SambaUser): Promise<string>;
  /** Add a global security group; returns its DN. */
  addGroup(group: { cn: string; parentDN?: string; members?: string[]; attributes?: Record<string, string | string[]> }): Promise<string>;
  /** Add member DNs to a group. */
  addMembers(groupDN: string, memberDNs: string[]): Promise<void>;
  /**
   * Bulk-load users (added disabled) and then groups with all their members, through the DC's own sam.ldb
   * (test/support/samLoad.py, as samba-tool writes): about twice as fast as LDAP adds, with Samba's own
   * objectGUIDs, SIDs, USNs and linked values. A user's `attributes` are added with it (a `manager` DN
   * must name a user loaded before it). `timeoutMs` defaults to 10 minutes.
   */
  samLoad(
    spec: {
      users?: Array<{ dn: string; sAMAccountName: string; attributes?: Record<string, string | string[]> }>;
      groups?: Array<{ dn: string; sAMAccountName: string; members?: string[] }>;
    },
    timeoutMs?: number,
  ): Promise<void>;
  /** The entry's objectGUID (16 bytes as AD stores them). */
  objectGuid(dn: string): Promise<Buffer>;
  /** kinit `name@REALM` into a credential cache of its own; returns the env (with KRB5CCNAME) of a client holding the ticket. */
  kinit(name: string, password: string): Promise<Record<string, string>>;
  /**
   * A service keytab for `spn` (default HTTP/localhost): a user account is made for the service, the SPN added to
   * it (`samba-tool spn add`) and its keys exported (`samba-tool domain exportkeytab --principal`). Returns the
   * keytab path and the env a Negotiate acceptor needs (env plus KRB5_KTNAME).
   */
  exportKeytab(spn?: string): Promise<{ keytab: string; env: Record<string, string> }>;
  /** Stop samba (SIGTERM) and keep its data and the lock: the DC is down until {@link SambaAd.restart}. */
  halt(): Promise<void>;
  /** Start samba again on the same data (stopping it first if it runs); `pid` changes. */
  restart(): Promise<void>;
  /** Stop samba, remove the temp dir, release the machine-wide lock. Safe to call twice. */
  release(): Promise<void>;
}

export interface SambaUser {
  /** sAMAccountName (also the CN unless cn is given). */
  sAMAccountName: string;
  cn?: string;
  /** The container; default CN=Users,<base DN>. */
  parentDN?: string;
  /** Set as unicodePwd (quoted, UTF-16LE) in the add. Without it the account is added disabled. */
  password?: string;
  /** Default true when a password is given (userAccountControl 512), else 514. */
  enabled?: boolean;
  /** userPrincipalName; default sAMAccountName@samdom.test. */
  userPrincipalName?: string;
  attributes?: Record<string, string | string[]>;
}

export interface SambaAdOptions {
  /** Administrator password; default Passw0rd!Admin. */
  adminPassword?: string;
  /** How long to wait for the machine-wide lock (other suites using the DC); default SAMBA_LOCK_WAIT_MS or 15 min. */
  lockWaitMs?: number;
}

/** Use as the timeout of the beforeAll that calls startSambaAd: the lock wait plus provisioning. */
export const SAMBA_START_TIMEOUT_MS = 20 * 60_000;

const REALM = 'SAMDOM.TEST';
const DOMAIN = 'SAMDOM';
const BASE_DN = 'DC=samdom,DC=test';
const PORTS = [389, 636, 88];

/**
 * The lock and state files are machine-wide on purpose: the ports are. They live in /tmp (not TMPDIR, which
 * .ci/run points at a folder of its own) so that a CI run and engineers' runs on one machine see the same lock;
 * TEST_SAMBA_LOCK_DIR overrides.
 */
function lockDir(): string {
  return process.env.TEST_SAMBA_LOCK_DIR ?? (existsSync('/tmp') ? '/tmp' : os.tmpdir());
}
const lockFile = () => path.join(lockDir(), 'ims-samba-ad.lock');
const stateFile = () => path.join(lockDir(), 'ims-samba-ad.state.json');

function run(cmd: string, args: string[], env: Record<string, string> = {}, input?: string, timeout = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { env: { ...process.env, ...env }, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr || stdout || err.message}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** The Python samba-tool runs with (its shebang), which has Samba's bindings (python3 on PATH may be another). */
function sambaPython(): string {
  try {
    const tool = execFileSync('sh', ['-c', 'command -v samba-tool']).toString().trim();
    return /^#!\s*(\S+)/.exec(readFileSync(tool, 'utf8').split('\n')[0])?.[1] ?? 'python3';
  } catch {
    return 'python3';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Take the machine-wide lock: `flock -x` on the lock file, held by the flock process for as long as its stdin (our
 * pipe) is open. The kernel frees a flock when its holder dies, so a crashed test run never leaves a stale lock.
 */
async function acquireLock(waitMs: number): Promise<ChildProcess> {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  const holder = spawn('flock', ['-x', '-o', '-w', String(seconds), lockFile(), '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackPid(holder.pid);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    let err = '';
    holder.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('locked')) resolve();
    });
    holder.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    holder.once('error', reject);
    holder.once('exit', (code) =>
      reject(
        new Error(`the Samba AD DC lock ${lockFile()} was not free within ${seconds} s (another suite or user runs the DC; flock exit ${code} ${err.trim()})`),
      ),
    );
  });
  return holder;
}

async function releaseLock(holder: ChildProcess): Promise<void> {
  if (holder.exitCode !== null || holder.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => holder.kill('SIGKILL'), 5_000);
    holder.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    holder.stdin!.end();
  });
}

interface State {
  pid: number;
  dir: string;
}

function processName(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

/** A DC a previous lock holder started and did not stop (its process died without teardown): stop it. */
async function clearLeftover(): Promise<void> {
  let state: State | undefined;
  try {
    state = JSON.parse(readFileSync(stateFile(), 'utf8')) as State;
  } catch {
    return;
  }
  if (state.pid && processName(state.pid)?.startsWith('samba')) {
    try {
      process.kill(state.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  if (state.dir && state.dir.includes('samba-ad-')) rmSync(state.dir, { recursive: true, force: true });
  rmSync(stateFile(), { force: true });
}

/**
 * Where the DC runs: one folder per test run and administrator password, the same for every suite of the run
 * (only one DC runs at a time: the lock). Provisioning (about 4 s) happens once per run: the first suite keeps
 * a copy of the fresh domain beside it (`.template`), later suites start from a copy of that copy, in the same
 * folder, since the provisioned configuration and databases name it. globalTeardown removes both
 * ({@link removeDcFolders}).
 */
function dcDir(adminPassword: string): string {
  const password = createHash('sha256').update(adminPassword).digest('hex').slice(0, 8);
  return path.join(os.tmpdir(), `samba-ad-${path.basename(pidFile())}-${password}`);
}

/** Remove this test run's DC folders and domain templates (globalTeardown: no suite of the run holds the DC). */
export function removeDcFolders(): void {
  const prefix = `samba-ad-${path.basename(pidFile())}-`;
  for (const name of readdirSync(os.tmpdir())) if (name.startsWith(prefix)) rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
}

/** Wait until nothing listens on 389, 636 and 88 of 127.0.0.1 (a DC this fixture did not start may hold them). */
async function waitForFreePorts(waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const busy: number[] = [];
    for (const p of PORTS) if (await portAnswers('127.0.0.1', p, 300)) busy.push(p);
    if (!busy.length) return;
    if (Date.now() > deadline) {
      throw new Error(
        `port(s) ${busy.join(', ')} of 127.0.0.1 are in use by a process this fixture did not start (another Samba or LDAP server?); the AD DC needs them`,
      );
    }
    await sleep(1000);
  }
}

async function makeCertificates(tls: string): Promise<void> {
  mkdirSync(tls, { recursive: true });
  const f = (n: string) => path.join(tls, n);
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=Test AD CA', '-keyout', f('ca.key'), '-out', f('ca.pem')]);
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', f('key.pem'), '-out', f('req.csr')]);
  writeFileSync(f('san.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('req.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('san.cnf'),
    '-out',
    f('cert.pem'),
  ]);
  chmodSync(f('key.pem'), 0o600);
}

export async function startSambaAd(options: SambaAdOptions = {}): Promise<SambaAd> {
  const adminPassword = options.adminPassword ?? 'Passw0rd!Admin';
  const lockWaitMs = options.lockWaitMs ?? Number(process.env.SAMBA_LOCK_WAIT_MS ?? 15 * 60_000);
  const lock = await acquireLock(lockWaitMs);
  let dir = '';
  let child: ChildProcess | undefined;
  try {
    await clearLeftover();
    dir = dcDir(adminPassword);
    const template = `${dir}.template`;
    rmSync(dir, { recursive: true, force: true });
    if (existsSync(path.join(template, 'etc/smb.conf'))) {
      // The run's provisioned domain, as it was before its first start (the provisioned paths name `dir`).
      await run('cp', ['-a', template, dir]);
      await waitForFreePorts(Math.min(lockWaitMs, 5 * 60_000));
    } else {
      mkdirSync(dir);
      // Certificates while waiting for the ports costs nothing.
      await makeCertificates(path.join(dir, 'tls'));
      await waitForFreePorts(Math.min(lockWaitMs, 5 * 60_000));
      await run('samba-tool', [
        'domain',
        'provision',
        `--realm=${REALM}`,
        `--domain=${DOMAIN}`,
        '--server-role=dc',
        '--dns-backend=NONE',
        `--adminpass=${adminPassword}`,
        '--use-rfc2307',
        `--targetdir=${dir}`,
        '--option=interfaces=lo',
        '--option=bind interfaces only=yes',
      ]);
      mkdirSync(path.join(dir, 'run'));
      rmSync(`${template}.part`, { recursive: true, force: true });
      await run('cp', ['-a', dir, `${template}.part`]);
      renameSync(`${template}.part`, template);
    }
    child = await launchSamba(dir);
  } catch (err) {
    if (child) await stopChild(child);
    if (dir) rmSync(dir, { recursive: true, force: true });
    rmSync(stateFile(), { force: true });
    await releaseLock(lock);
    throw err;
  }

  let samba = child;
  const conf = path.join(dir, 'etc/smb.conf');
  const krb5Conf = path.join(dir, 'krb5.conf');
  writeFileSync(
    krb5Conf,
    `[libdefaults]
    default_realm = ${REALM}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 0
[realms]
    ${REALM} = {
        kdc = 127.0.0.1:88
    }
[domain_realm]
    localhost = ${REALM}
    .localhost = ${REALM}
`,
  );
  const env = { KRB5_CONFIG: krb5Conf, KRB5RCACHEDIR: dir };
  const caCertificateFile = path.join(dir, 'tls/ca.pem');
  const caCertificate = readFileSync(caCertificateFile, 'utf8');
  const adminDN = `CN=Administrator,CN=Users,${BASE_DN}`;

  const ldap = async <T>(fn: (client: Client) => Promise<T>): Promise<T> => {
    const client = new Client({ url: 'ldaps://localhost:636', tlsOptions: { ca: [caCertificate] }, timeout: 30_000, connectTimeout: 10_000 });
    try {
      await client.bind(adminDN, adminPassword);
      return await fn(client);
    } finally {
      await client.unbind().catch(() => undefined);
    }
  };
  let ccaches = 0;
  let keytabs = 0;
  let released = false;

  const dc: SambaAd = {
    dir,
    realm: REALM,
    domain: DOMAIN,
    baseDN: BASE_DN,
    adminDN,
    adminPassword,
    adminUpn: `Administrator@${REALM}`,
    host: 'localhost',
    ldapPort: 389,
    ldapsPort: 636,
    ldapUrl: 'ldap://127.0.0.1:389',
    ldapsUrl: 'ldaps://localhost:636',
    caCertificate,
    caCertificateFile,
    connection: { host: 'localhost', port: 636, security: 'ldaps', caCertificate, baseDN: BASE_DN, bindDN: adminDN, bindPassword: adminPassword },
    krb5Conf,
    env,
    pid: samba.pid!,
    tool: (args) => run('samba-tool', [...args, '-s', conf], env),
    ldap,
    async addOU(dn) {
      await ldap((c) => c.add(dn, { objectClass: ['top', 'organizationalUnit'] }));
      return dn;
    },
    async addUser(user) {
      const cn = user.cn ?? user.sAMAccountName;
      const dn = `CN=${cn},${user.parentDN ?? `CN=Users,${BASE_DN}`}`;
      const enabled = user.enabled ?? user.password !== undefined;
      const values: Record<string, string | string[]> = {
        objectClass: ['top', 'person', 'organizationalPerson', 'user'],
        cn,
        sAMAccountName: user.sAMAccountName,
        userPrincipalName: user.userPrincipalName ?? `${user.sAMAccountName}@samdom.test`,
        userAccountControl: enabled ? '512' : '514',
        ...user.attributes,
      };
      const entry = Object.entries(values).map(([type, v]) => new Attribute({ type, values: Array.isArray(v) ? v : [v] }));
      if (user.password !== undefined) entry.push(new Attribute({ type: 'unicodePwd', values: [Buffer.from(`"${user.password}"`, 'utf16le')] }));
      await ldap((c) => c.add(dn, entry));
      return dn;
    },
    async addGroup(group) {
      const dn = `CN=${group.cn},${group.parentDN ?? `CN=Users,${BASE_DN}`}`;
      const entry: Record<string, string | string[]> = {
        objectClass: ['top', 'group'],
        cn: group.cn,
        sAMAccountName: group.cn,
        ...group.attributes,
      };
      if (group.members?.length) entry.member = group.members;
      await ldap((c) => c.add(dn, entry));
      return dn;
    },
    async addMembers(groupDN, memberDNs) {
      await ldap((c) => c.modify(groupDN, [new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: memberDNs }) })]));
    },
    async samLoad(spec, timeoutMs = 600_000) {
      await run(sambaPython(), [path.join(__dirname, 'samLoad.py'), conf], env, JSON.stringify(spec), timeoutMs);
    },
    async objectGuid(dn) {
      return ldap(async (c) => {
        const { searchEntries } = await c.search(dn, { scope: 'base', attributes: ['objectGUID'], explicitBufferAttributes: ['objectGUID'] });
        const v = searchEntries[0]?.objectGUID;
        if (!Buffer.isBuffer(v)) throw new Error(`no objectGUID read for ${dn}`);
        return v;
      });
    },
    async kinit(name, password) {
      const clientEnv = { ...env, KRB5CCNAME: `FILE:${path.join(dir, `ccache-${++ccaches}`)}` };
      await run('kinit', [name.includes('@') ? name : `${name}@${REALM}`], clientEnv, `${password}\n`, 20_000);
      return clientEnv;
    },
    async exportKeytab(spn = 'HTTP/localhost') {
      const n = ++keytabs;
      const account = `svc-keytab${n}`;
      const keytab = path.join(dir, `service-${n}.keytab`);
      await dc.tool(['user', 'create', account, `Svc-${n}-${Date.now()}!aA`]);
      await dc.tool(['spn', 'add', spn, account]);
      await dc.tool(['domain', 'exportkeytab', keytab, `--principal=${spn}`]);
      chmodSync(keytab, 0o600);
      return { keytab, env: { ...env, KRB5_KTNAME: `FILE:${keytab}` } };
    },
    async halt() {
      await stopChild(samba);
    },
    async restart() {
      await stopChild(samba);
      samba = await launchSamba(dir);
      dc.pid = samba.pid!;
    },
    async release() {
      if (released) return;
      released = true;
      await stopChild(samba);
      rmSync(dir, { recursive: true, force: true });
      rmSync(stateFile(), { force: true });
      await releaseLock(lock);
    },
  };
  return dc;
}

/** Spawn samba on a provisioned directory and wait until LDAP, LDAPS and Kerberos answer. */
async function launchSamba(dir: string): Promise<ChildProcess> {
  const conf = path.join(dir, 'etc/smb.conf');
  const child = spawn(
    '/usr/sbin/samba',
    [
      '-i',
      '-M',
      'single',
      '-s',
      conf,
      '--option=server services=ldap,kdc',
      // Simple binds over plain LDAP for test tools; the connector's own rules (LDAPS for passwords) are tested on top.
      '--option=ldap server require strong auth=no',
      '--option=tls enabled=yes',
      `--option=tls keyfile=${dir}/tls/key.pem`,
      `--option=tls certfile=${dir}/tls/cert.pem`,
      `--option=tls cafile=${dir}/tls/ca.pem`,
      `--option=pid directory=${dir}/run`,
      `--option=log file=${dir}/samba.log`,
    ],
    // stdin stays our pipe: samba -i exits when it closes, so the DC never outlives the test process.
    { stdio: ['pipe', 'ignore', 'ignore'] },
  );
  trackPid(child.pid);
  writeFileSync(stateFile(), JSON.stringify({ pid: child.pid ?? 0, dir } satisfies State));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const up = (await portAnswers('127.0.0.1', 636, 300)) && (await portAnswers('127.0.0.1', 389, 300)) && (await portAnswers('127.0.0.1', 88, 300));
    if (up) return child;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`samba exited (${child.exitCode ?? child.signalCode}) during start; see ${dir}/samba.log`);
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`samba did not listen on 389/636/88 within 60 s; see ${dir}/samba.log`);
    }
    await sleep(100);
  }
}

/** SIGTERM, then SIGKILL after 10 s; resolves when samba is gone and its ports are released. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await portAnswers('127.0.0.1', 636, 200))) await sleep(100);
}
