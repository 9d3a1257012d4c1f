import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { portAnswers } from '../../lib/runtime/azurite';
import { placeOnce } from './placeOnce';
import { selfSignedLocalhost } from './certificates';
import { onFreePorts } from './ports';
import { pidFile, trackPid } from './processes';

/**
 * A private, throwaway OpenLDAP slapd for the tests (authentication's group lookup, the LDAP connector).
 * cn=config is built offline with `slapadd -n0`: mdb backend, suffix dc=example,dc=com (configurable),
 * overlays memberof (groupOfNames/member -> memberOf), refint (member, manager), syncprov and accesslog
 * (cn=accesslog, writes logged with reqStart as the monotonic key), a self-signed certificate (CN=localhost,
 * SAN 127.0.0.1) for ldaps and StartTLS. Optional bulk LDIF is loaded offline with `slapadd -q`, which
 * bypasses the overlays: such LDIF must carry its own memberOf values and is not in the accesslog.
 * Entries added over LDAP once started go through every overlay.
 */
export interface Slapd {
  dir: string;
  suffix: string;
  rootDN: string;
  rootPassword: string;
  /** `ldap://127.0.0.1:PORT` (StartTLS available). */
  url: string;
  /** `ldaps://localhost:PORT` (the certificate names localhost and 127.0.0.1). */
  ldapsUrl: string;
  port: number;
  ldapsPort: number;
  /** PEM of the self-signed server certificate, to trust in clients. */
  caCertificate: string;
  caCertificateFile: string;
  /** The running slapd's process id (changes with {@link Slapd.restart}). */
  pid: number;
  /** Stop slapd (SIGTERM) and remove its directory. */
  stop(): Promise<void>;
  /** Stop slapd (SIGTERM) and keep its data: the server is down until {@link Slapd.restart}. */
  halt(): Promise<void>;
  /** Start a halted slapd again on the same ports with the same data. */
  restart(): Promise<void>;
}

export interface SlapdOptions {
  suffix?: string;
  rootPassword?: string;
  /** LDIF text bulk-loaded offline after the base entries (suffix, ou=people, ou=groups). */
  ldif?: string;
  /** An LDIF file bulk-loaded the same way (large data sets). */
  ldifFile?: string;
  /** Skip the base entries (the LDIF brings its own suffix entry). */
  noBaseEntries?: boolean;
  /** How long slapadd may take to load `ldifFile` (a million entries take minutes). Default 120 s. */
  bulkLoadTimeoutSeconds?: number;
  /** Map size of the main database (raise it for 100k+ entries). Default 8 GiB (sparse). */
  maxSizeBytes?: number;
  /**
   * The attributes the refint overlay rewrites when an entry they name is moved or deleted. Default member and
   * manager; a test that must see the engine (not slapd) follow a move leaves manager out.
   */
  refintAttributes?: string[];
}

function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** The config database: the same shape as a production slapd with the overlays the connectors rely on. */
function configLdif(dir: string, suffix: string, rootDN: string, hash: string, maxSize: number, refint: string[]): string {
  return `dn: cn=config
objectClass: olcGlobal
cn: config
olcPidFile: ${dir}/slapd.pid
olcArgsFile: ${dir}/slapd.args
olcLogLevel: none
olcTLSCertificateFile: ${dir}/tls/cert.pem
olcTLSCertificateKeyFile: ${dir}/tls/key.pem
olcToolThreads: 2

dn: cn=module{0},cn=config
objectClass: olcModuleList
cn: module{0}
olcModulePath: /usr/lib/ldap
olcModuleLoad: back_mdb
olcModuleLoad: accesslog
olcModuleLoad: memberof
olcModuleLoad: syncprov
olcModuleLoad: refint

dn: cn=schema,cn=config
objectClass: olcSchemaConfig
cn: schema

include: file:///etc/ldap/schema/core.ldif
include: file:///etc/ldap/schema/cosine.ldif
include: file:///etc/ldap/schema/nis.ldif
include: file:///etc/ldap/schema/inetorgperson.ldif

dn: olcDatabase={-1}frontend,cn=config
objectClass: olcDatabaseConfig
objectClass: olcFrontendConfig
olcDatabase: {-1}frontend
olcSizeLimit: unlimited

dn: olcDatabase={0}config,cn=config
objectClass: olcDatabaseConfig
olcDatabase: {0}config
olcRootDN: cn=admin,cn=config
olcRootPW: ${hash}

dn: olcDatabase={1}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {1}mdb
olcSuffix: cn=accesslog
olcDbDirectory: ${dir}/accesslog
olcRootDN: ${rootDN}
olcDbMaxSize: 2147483648
olcDbNoSync: TRUE
olcDbIndex: default eq
olcDbIndex: objectClass,entryCSN,reqStart,reqEnd,reqResult,reqType,reqDN
olcAccess: {0}to * by dn.exact="${rootDN}" read by * none
olcSizeLimit: unlimited

dn: olcOverlay={0}syncprov,olcDatabase={1}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcSyncProvConfig
olcOverlay: {0}syncprov
olcSpNoPresent: TRUE
olcSpReloadHint: TRUE

dn: olcDatabase={2}mdb,cn=config
objectClass: olcDatabaseConfig
objectClass: olcMdbConfig
olcDatabase: {2}mdb
olcSuffix: ${suffix}
olcDbDirectory: ${dir}/data
olcRootDN: ${rootDN}
olcRootPW: ${hash}
olcDbMaxSize: ${maxSize}
olcDbNoSync: TRUE
olcDbIndex: objectClass,uid,mail,employeeNumber,member,uniqueMember,manager,secretary,owner,memberOf,entryUUID,entryCSN,modifyTimestamp eq
olcDbIndex: cn,sn,givenName eq,sub
olcSizeLimit: unlimited
olcAccess: {0}to attrs=userPassword by self write by anonymous auth by * none
olcAccess: {1}to * by users read by * none

dn: olcOverlay={0}memberof,olcDatabase={2}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcMemberOf
olcOverlay: {0}memberof
olcMemberOfRefInt: FALSE
olcMemberOfGroupOC: groupOfNames
olcMemberOfMemberAD: member
olcMemberOfMemberOfAD: memberOf

dn: olcOverlay={1}syncprov,olcDatabase={2}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcSyncProvConfig
olcOverlay: {1}syncprov
olcSpCheckpoint: 100 10
olcSpSessionLog: 10000

dn: olcOverlay={2}accesslog,olcDatabase={2}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcAccessLogConfig
olcOverlay: {2}accesslog
olcAccessLogDB: cn=accesslog
olcAccessLogOps: writes
olcAccessLogSuccess: TRUE
olcAccessLogOld: (objectClass=*)
olcAccessLogOldAttr: entryUUID
olcAccessLogOldAttr: uid
olcAccessLogOldAttr: employeeNumber
olcAccessLogPurge: 07+00:00 01+00:00

dn: olcOverlay={3}refint,olcDatabase={2}mdb,cn=config
objectClass: olcOverlayConfig
objectClass: olcRefintConfig
olcOverlay: {3}refint
${refint.map((a) => `olcRefintAttribute: ${a}`).join('\n')}
`;
}

function baseLdif(suffix: string): string {
  const dc = /^dc=([^,]+)/i.exec(suffix)?.[1] ?? 'example';
  return `dn: ${suffix}
objectClass: dcObject
objectClass: organization
dc: ${dc}
o: ${dc}

dn: ou=people,${suffix}
objectClass: organizationalUnit
ou: people

dn: ou=groups,${suffix}
objectClass: organizationalUnit
ou: groups
`;
}

/** Slapd fixtures this suite (this module instance: jest loads modules once per test file) has started. */
let started = 0;

/** Where this test run keeps the certificates of fixtures (removed by globalTeardown, {@link removeCertificates}). */
const certificatePrefix = () => `slapd-tls-${path.basename(pidFile())}-`;

/**
 * A self-signed certificate (CN=localhost, SAN localhost and 127.0.0.1) and its key into `tls`. Generating the
 * RSA key is most of a fixture's start, so the test run keeps the ones it made: the nth slapd of every suite
 * gets the run's nth certificate. Within a suite every slapd still has a certificate of its own (tests
 * check that one server's CA does not trust another), and the first suite to need the nth one makes it in a
 * directory of its own renamed into place.
 */
async function certificate(tls: string): Promise<void> {
  const kept = path.join(os.tmpdir(), `${certificatePrefix()}${started++}`);
  if (!existsSync(path.join(kept, 'cert.pem'))) {
    const staging = mkdtempSync(path.join(os.tmpdir(), 'slapd-tls-staging-'));
    try {
      await selfSignedLocalhost(path.join(staging, 'key.pem'), path.join(staging, 'cert.pem'));
      placeOnce(staging, kept, 'cert.pem');
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  for (const f of ['key.pem', 'cert.pem']) copyFileSync(path.join(kept, f), path.join(tls, f));
}

/** Remove this test run's kept certificates (globalTeardown). */
export function removeCertificates(): void {
  for (const name of readdirSync(os.tmpdir())) if (name.startsWith(certificatePrefix())) rmSync(path.join(os.tmpdir(), name), { recursive: true, force: true });
}

export async function startSlapd(options: SlapdOptions = {}): Promise<Slapd> {
  const suffix = options.suffix ?? 'dc=example,dc=com';
  const rootDN = `cn=admin,${suffix}`;
  const rootPassword = options.rootPassword ?? 'secret';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'slapd-'));
  for (const sub of ['slapd.d', 'data', 'accesslog', 'tls']) mkdirSync(path.join(dir, sub));
  await certificate(path.join(dir, 'tls'));
  const hash = (await run('slappasswd', ['-s', rootPassword])).trim();
  writeFileSync(
    path.join(dir, 'config.ldif'),
    configLdif(dir, suffix, rootDN, hash, options.maxSizeBytes ?? 8 * 1024 ** 3, options.refintAttributes ?? ['member', 'manager']),
  );
  await run('slapadd', ['-n0', '-F', path.join(dir, 'slapd.d'), '-l', path.join(dir, 'config.ldif')]);

  const data = [options.noBaseEntries ? '' : baseLdif(suffix), options.ldif ?? ''].filter(Boolean).join('\n');
  if (data) {
    writeFileSync(path.join(dir, 'data.ldif'), data);
    await run('slapadd', ['-q', '-F', path.join(dir, 'slapd.d'), '-b', suffix, '-l', path.join(dir, 'data.ldif')]);
  }
  if (options.ldifFile)
    await run('slapadd', ['-q', '-F', path.join(dir, 'slapd.d'), '-b', suffix, '-l', options.ldifFile], (options.bulkLoadTimeoutSeconds ?? 120) * 1000);

  // The ports are picked just before slapd binds them (onFreePorts: tried again on new ports if another process
  // took one in between).
  let child!: ChildProcess;
  const [port, ldapsPort] = await onFreePorts(2, async ([p, ps]) => {
    child = await launch(dir, p, ps);
    return [p, ps];
  });
  const halt = async () => {
    const running = child;
    if (running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
      running.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      running.kill('SIGTERM');
    });
  };

  const caCertificateFile = path.join(dir, 'tls/cert.pem');
  const server: Slapd = {
    dir,
    suffix,
    rootDN,
    rootPassword,
    url: `ldap://127.0.0.1:${port}`,
    ldapsUrl: `ldaps://localhost:${ldapsPort}`,
    port,
    ldapsPort,
    caCertificate: readFileSync(caCertificateFile, 'utf8'),
    caCertificateFile,
    pid: child.pid!,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
    halt,
    async restart() {
      await halt();
      child = await launch(dir, port, ldapsPort);
      server.pid = child.pid!;
    },
  };
  return server;
}

/** Spawn slapd on the prepared directory and wait until both ports answer. */
async function launch(dir: string, port: number, ldapsPort: number): Promise<ChildProcess> {
  const urls = `ldap://127.0.0.1:${port}/ ldaps://127.0.0.1:${ldapsPort}/`;
  // -d 0 keeps slapd in the foreground, so the child we track is slapd itself. Its stderr is kept (the
  // last 4 KB) to say why a start failed.
  const child: ChildProcess = spawn('/usr/sbin/slapd', ['-F', path.join(dir, 'slapd.d'), '-h', urls, '-d', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  trackPid(child.pid);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4096);
  });
  const deadline = Date.now() + 15_000;
  while (!(await portAnswers('127.0.0.1', port)) || !(await portAnswers('127.0.0.1', ldapsPort))) {
    if (child.exitCode !== null) {
      const said = stderr.trim();
      const message = `slapd exited with ${child.exitCode} during start (config in ${dir})${said ? `: ${said}` : ''}`;
      throw new Error(message);
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`slapd did not listen within 15 s${stderr.trim() ? `: ${stderr.trim()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // Once started, slapd's stderr is no longer needed; keep draining it so it never blocks.
  child.stderr!.removeAllListeners('data');
  child.stderr!.resume();
  return child;
}
