import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { portAnswers } from '../../lib/runtime/azurite';
import { onFreePorts } from './ports';
import { trackPid } from './processes';

/**
 * A private MIT Kerberos realm for the tests: krb5kdc on a free loopback port, its database, config, keytab
 * and replay cache in a temp dir, nothing touching /etc. Processes that use the realm (the service under
 * test, kinit, curl) need `env` in THEIR environment: GSSAPI reads KRB5_CONFIG and friends from the C
 * environment, which a jest worker's `process.env` copy does not reach.
 */
export interface Kdc {
  dir: string;
  realm: string;
  port: number;
  /** KRB5_CONFIG, KRB5_KDC_PROFILE, KRB5_KTNAME (the service keytab), KRB5RCACHEDIR. */
  env: Record<string, string>;
  /** Keytab holding every service principal the realm was started with. */
  keytab: string;
  addUser(name: string, password: string): Promise<void>;
  /** kinit into a credential cache of its own; returns the env (with KRB5CCNAME) of a client holding the ticket. */
  kinit(name: string, password: string): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export interface KdcOptions {
  realm?: string;
  /** Service principals put in the keytab; the default suits http://localhost:PORT. */
  services?: string[];
}

function run(cmd: string, args: string[], env: Record<string, string>, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

export async function startKdc(options: KdcOptions = {}): Promise<Kdc> {
  const realm = options.realm ?? 'EXAMPLE.TEST';
  const services = options.services ?? ['HTTP/localhost'];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kdc-'));
  const keytab = path.join(dir, 'service.keytab');
  // The port goes into both files; the database tools do not use it, so it is picked just before krb5kdc starts
  // (a port picked earlier could be taken by another process while the database is made).
  const writeConfig = (port: number) => {
    writeFileSync(
      path.join(dir, 'krb5.conf'),
      `[libdefaults]
    default_realm = ${realm}
    dns_lookup_kdc = false
    dns_lookup_realm = false
    dns_canonicalize_hostname = false
    rdns = false
    udp_preference_limit = 0
[realms]
    ${realm} = {
        kdc = 127.0.0.1:${port}
    }
[domain_realm]
    localhost = ${realm}
    .localhost = ${realm}
`,
    );
    writeFileSync(
      path.join(dir, 'kdc.conf'),
      `[kdcdefaults]
    kdc_listen = 127.0.0.1:${port}
    kdc_tcp_listen = 127.0.0.1:${port}
[realms]
    ${realm} = {
        database_name = ${dir}/principal
        key_stash_file = ${dir}/stash
        acl_file = ${dir}/kadm5.acl
        kdc_listen = 127.0.0.1:${port}
        kdc_tcp_listen = 127.0.0.1:${port}
        max_life = 1h
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }
[logging]
    kdc = FILE:${dir}/kdc.log
    default = FILE:${dir}/kdc.log
`,
    );
  };
  writeConfig(0);
  writeFileSync(path.join(dir, 'kadm5.acl'), '');
  const env = {
    KRB5_CONFIG: path.join(dir, 'krb5.conf'),
    KRB5_KDC_PROFILE: path.join(dir, 'kdc.conf'),
    KRB5_KTNAME: `FILE:${keytab}`,
    KRB5RCACHEDIR: dir,
  };
  await run('kdb5_util', ['create', '-s', '-r', realm, '-P', 'master-password-not-secret'], env);
  for (const spn of services) {
    await run('kadmin.local', ['-q', `addprinc -randkey ${spn}`], env);
    await run('kadmin.local', ['-q', `ktadd -k ${keytab} ${spn}`], env);
  }
  chmodSync(keytab, 0o600);

  const { port, child } = await onFreePorts(1, async ([candidate]) => {
    writeConfig(candidate);
    const child: ChildProcess = spawn('krb5kdc', ['-n', '-P', path.join(dir, 'krb5kdc.pid')], { env: { ...process.env, ...env }, stdio: 'ignore' });
    trackPid(child.pid);
    const deadline = Date.now() + 15_000;
    while (!(await portAnswers('127.0.0.1', candidate))) {
      if (child.exitCode !== null) throw new Error(`krb5kdc exited with ${child.exitCode}; see ${dir}/kdc.log`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error('krb5kdc did not listen within 15 s');
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { port: candidate, child };
  });

  let ccaches = 0;
  return {
    dir,
    realm,
    port,
    env,
    keytab,
    async addUser(name, password) {
      await run('kadmin.local', ['-q', `addprinc -pw ${password} ${name}`], env);
    },
    async kinit(name, password) {
      const clientEnv = { ...env, KRB5CCNAME: `FILE:${path.join(dir, `ccache-${++ccaches}`)}` };
      await run('kinit', [name], clientEnv, `${password}\n`);
      return clientEnv;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
