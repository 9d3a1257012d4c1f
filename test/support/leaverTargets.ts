import { Client as LdapClient } from 'ldapts';
import { Client as PgClient } from 'pg';
import { startDs389, type Ds389 } from './ds389';
import { startPostgres, type Postgres } from './postgres';
import { startSambaAd, type SambaAd } from './samba';
import { startSlapd, type Slapd } from './slapd';

/**
 * The four kinds of target the leaver clock is measured against (bench/leavers/leavers.js) and tested with
 * (test/integration/sync/leaversTargets.test.ts), each a real server started here: OpenLDAP (slapd, accesslog
 * deltas, leavers deleted), 389 Directory Server (retro changelog deltas, leavers deleted), a Samba AD DC (USN
 * deltas, leavers disabled through userAccountControl) and PostgreSQL (a row-version delta column, leavers
 * disabled by a `status` column). Each gives the Admin API body of its connector, its outbound flow rules and
 * join rule over the mesh attributes `employeeId`, `givenName` and `sn`, and reads from outside the engine
 * (its own LDAP or SQL client) which people are deprovisioned.
 */
export type LeaverTargetKind = 'slapd' | '389ds' | 'samba' | 'pg';
export const LEAVER_TARGET_KINDS: readonly LeaverTargetKind[] = ['slapd', '389ds', 'samba', 'pg'];

export interface LeaverTarget {
  kind: LeaverTargetKind;
  /** `delete` or `disable`: what the target's deprovisioning does. */
  action: 'delete' | 'disable';
  /** The body of `POST /connectors`. */
  connector: { name: string; type: string; config: Record<string, unknown> };
  /** Rule bodies of `POST /rules` without `connectorId` and `ruleName` (outbound flows and a join rule). */
  rules: Record<string, unknown>[];
  /** Of these employee ids, the ones the target shows deprovisioned now (deleted, or there and disabled). */
  deprovisioned(employeeIds: readonly string[]): Promise<Set<string>>;
  /** How many accounts the target holds now that are there and not disabled. */
  activeAccounts(): Promise<number>;
  /** Stop the server and remove its files. */
  stop(): Promise<void>;
}

export interface LeaverTargetOptions {
  /** `deprovisioning.deadlineMinutes` of the connector (default 5). */
  deadlineMinutes?: number;
}

/** Above any leaver run: a bench's set-up adds tens of thousands and removes hundreds. */
const THRESHOLD = { objects: 1_000_000, percent: 100 };
const CHUNK = 100;

const chunks = <T>(xs: readonly T[], n: number): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));
const orFilter = (attr: string, ids: readonly string[]) => `(|${ids.map((id) => `(${attr}=${id})`).join('')})`;

/** An outbound flow rule body (`transformScript` when the value is computed). */
const out = (sourceAttribute: string, targetAttribute: string, transformScript?: string): Record<string, unknown> => ({
  ruleType: 'FlowRule',
  direction: 'outbound',
  sourceAttribute,
  targetAttribute,
  confidence: 50,
  ...(transformScript ? { transformScript } : {}),
});

function ldapRules(): Record<string, unknown>[] {
  return [
    out('employeeId', 'uid'),
    out('employeeId', 'employeeNumber'),
    out('givenName', 'givenName'),
    out('sn', 'sn'),
    out('givenName', 'cn', 'object.givenName + " " + object.sn'),
    { ruleType: 'JoinRule', sourceAttribute: 'employeeNumber', targetAttribute: 'employeeId' },
  ];
}

/** An OpenLDAP or 389 DS target: entries uid=<employeeId> in one OU, deleted when their person leaves. */
async function directoryTarget(
  kind: 'slapd' | '389ds',
  server: Slapd | Ds389,
  ou: string,
  extra: Record<string, unknown>,
  o: LeaverTargetOptions,
  stop: () => Promise<void>,
): Promise<LeaverTarget> {
  const rootDN = server.rootDN;
  const client = new LdapClient({ url: server.url, timeout: 60_000 });
  await client.bind(rootDN, server.rootPassword);
  const base = `${ou},${server.suffix}`;
  if (kind === '389ds') await client.add(base, { objectClass: ['top', 'organizationalUnit'], ou: ou.slice(3) });
  return {
    kind,
    action: 'delete',
    connector: {
      name: kind === 'slapd' ? 'Directory' : 'Directory 389',
      type: 'ldap',
      config: {
        host: 'localhost',
        port: server.ldapsPort,
        security: 'ldaps',
        caCertificate: server.caCertificate,
        baseDN: base,
        bindDN: rootDN,
        bindPassword: server.rootPassword,
        exportDnTemplate: '"uid=" + dnEscape(source.uid) + "," + baseDN',
        deletionThreshold: THRESHOLD,
        deprovisioning: { action: 'delete', deadlineMinutes: o.deadlineMinutes ?? 5 },
        ...extra,
      },
    },
    rules: ldapRules(),
    async deprovisioned(ids) {
      const there = new Set<string>();
      for (const part of chunks(ids, CHUNK)) {
        const { searchEntries } = await client.search(base, { scope: 'one', filter: orFilter('uid', part), attributes: ['uid'] });
        for (const e of searchEntries) there.add(String(e.uid));
      }
      return new Set(ids.filter((id) => !there.has(id)));
    },
    async activeAccounts() {
      const { searchEntries } = await client.search(base, { scope: 'one', filter: '(uid=*)', attributes: ['1.1'], paged: { pageSize: 1000 } });
      return searchEntries.length;
    },
    async stop() {
      await client.unbind().catch(() => undefined);
      await stop();
    },
  };
}

const ACCOUNTDISABLE = 0x2;
/**
 * NORMAL_ACCOUNT | PASSWD_NOTREQD: an enabled account without a password, so an add costs no password hashing
 * and needs no password policy (the leaver test is about the disable, not the password).
 */
const ENABLED_NO_PASSWORD = 0x220;

/** A Samba AD DC target: users CN=<given sn> in OU=Leavers, disabled (bit 2 of userAccountControl) when their person leaves. */
async function sambaTarget(dc: SambaAd, o: LeaverTargetOptions): Promise<LeaverTarget> {
  const ou = await dc.addOU(`OU=Leavers,${dc.baseDN}`);
  const client = new LdapClient({ url: dc.ldapsUrl, tlsOptions: { ca: [dc.caCertificate] }, timeout: 60_000 });
  await client.bind(dc.adminDN, dc.adminPassword);
  const search = async (filter: string) =>
    (await client.search(ou, { scope: 'one', filter, attributes: ['employeeID', 'userAccountControl'], paged: { pageSize: 1000 } })).searchEntries;
  return {
    kind: 'samba',
    action: 'disable',
    connector: {
      name: 'AD',
      type: 'active_directory',
      config: {
        ...dc.connection,
        containers: { include: [ou] },
        exportDnTemplate: '"CN=" + dnEscape(source.cn) + ",OU=Leavers," + baseDN',
        deletionThreshold: THRESHOLD,
        deprovisioning: { action: 'disable', deadlineMinutes: o.deadlineMinutes ?? 5 },
      },
    },
    rules: [
      out('employeeId', 'employeeID'),
      out('employeeId', 'sAMAccountName'),
      out('givenName', 'givenName'),
      out('sn', 'sn'),
      out('givenName', 'cn', 'object.givenName + " " + object.sn'),
      out('employeeId', 'userAccountControl', `"${ENABLED_NO_PASSWORD}"`),
      { ruleType: 'JoinRule', sourceAttribute: 'employeeID', targetAttribute: 'employeeId' },
    ],
    async deprovisioned(ids) {
      const disabled = new Set<string>();
      for (const part of chunks(ids, CHUNK))
        for (const e of await search(orFilter('employeeID', part))) if (Number(e.userAccountControl) & ACCOUNTDISABLE) disabled.add(String(e.employeeID));
      return disabled;
    },
    async activeAccounts() {
      return (await search('(&(objectClass=user)(employeeID=*))')).filter((e) => !(Number(e.userAccountControl) & ACCOUNTDISABLE)).length;
    },
    async stop() {
      await client.unbind().catch(() => undefined);
      await dc.release();
    },
  };
}

/** A PostgreSQL target: rows of `accounts`, `status` set to `disabled` when their person leaves. */
async function pgTarget(pg: Postgres, o: LeaverTargetOptions): Promise<LeaverTarget> {
  const database = await pg.createDatabase('leavers');
  await pg.query(
    `CREATE SEQUENCE accounts_version;
     CREATE TABLE accounts (employee_id varchar(20) PRIMARY KEY, given_name text, sn text, status text NOT NULL,
       row_version bigint NOT NULL DEFAULT nextval('accounts_version'));
     CREATE INDEX accounts_row_version ON accounts (row_version);
     CREATE TABLE accounts_deleted (employee_id varchar(20) NOT NULL, row_version bigint NOT NULL DEFAULT nextval('accounts_version'));
     CREATE FUNCTION accounts_touch() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN NEW.row_version := nextval('accounts_version'); RETURN NEW; END $$;
     CREATE TRIGGER accounts_touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_touch();
     CREATE FUNCTION accounts_gone() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN INSERT INTO accounts_deleted (employee_id) VALUES (OLD.employee_id); RETURN OLD; END $$;
     CREATE TRIGGER accounts_gone AFTER DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION accounts_gone();`,
    [],
    database,
  );
  const client = new PgClient({ host: pg.host, port: pg.port, user: pg.user, password: pg.password, database });
  await client.connect();
  return {
    kind: 'pg',
    action: 'disable',
    connector: {
      name: 'Accounts DB',
      type: 'sql',
      config: {
        dialect: 'postgres',
        host: pg.host,
        port: pg.port,
        database,
        user: pg.user,
        password: pg.password,
        objectType: 'User',
        anchorColumn: 'employee_id',
        fullImportQuery: 'SELECT employee_id, given_name, sn, status, row_version FROM accounts',
        deltaImportQuery: 'SELECT employee_id, given_name, sn, status, row_version FROM accounts WHERE row_version > :watermark',
        deltaColumn: 'row_version',
        deleteDetection: { mode: 'query', query: 'SELECT employee_id FROM accounts_deleted WHERE row_version > :watermark' },
        exportStatements: {
          insert: 'INSERT INTO accounts (employee_id, given_name, sn, status) VALUES (:employee_id, :given_name, :sn, :status)',
          update:
            'UPDATE accounts SET given_name = COALESCE(:given_name, given_name), sn = COALESCE(:sn, sn), status = COALESCE(:status, status) WHERE employee_id = :anchor',
          delete: 'DELETE FROM accounts WHERE employee_id = :anchor',
        },
        deletionThreshold: THRESHOLD,
        deprovisioning: { action: 'disable', disableAttributes: { status: 'disabled' }, deadlineMinutes: o.deadlineMinutes ?? 5 },
      },
    },
    rules: [
      out('employeeId', 'employee_id'),
      out('givenName', 'given_name'),
      out('sn', 'sn'),
      out('employeeId', 'status', '"active"'),
      { ruleType: 'JoinRule', sourceAttribute: 'employee_id', targetAttribute: 'employeeId' },
    ],
    async deprovisioned(ids) {
      const { rows } = await client.query<{ employee_id: string }>("SELECT employee_id FROM accounts WHERE employee_id = ANY($1) AND status = 'disabled'", [
        ids,
      ]);
      return new Set(rows.map((r) => r.employee_id));
    },
    async activeAccounts() {
      const { rows } = await client.query<{ n: string }>("SELECT COUNT(*) AS n FROM accounts WHERE status <> 'disabled'");
      return Number(rows[0].n);
    },
    async stop() {
      await client.end().catch(() => undefined);
      await pg.stop();
    },
  };
}

/** Start the server of one kind of target and make it ready for a connector (an empty OU or table). */
export async function startLeaverTarget(kind: LeaverTargetKind, o: LeaverTargetOptions = {}): Promise<LeaverTarget> {
  switch (kind) {
    case 'slapd': {
      const slapd = await startSlapd();
      try {
        return await directoryTarget('slapd', slapd, 'ou=people', { deltaStrategy: 'accesslog' }, o, () => slapd.stop());
      } catch (err) {
        await slapd.stop();
        throw err;
      }
    }
    case '389ds': {
      const ds = await startDs389();
      try {
        return await directoryTarget('389ds', ds, 'ou=staff', { deltaStrategy: 'changelog' }, o, () => ds.stop());
      } catch (err) {
        await ds.stop();
        throw err;
      }
    }
    case 'samba': {
      const dc = await startSambaAd();
      try {
        return await sambaTarget(dc, o);
      } catch (err) {
        await dc.release();
        throw err;
      }
    }
    case 'pg': {
      const pg = await startPostgres();
      try {
        return await pgTarget(pg, o);
      } catch (err) {
        await pg.stop();
        throw err;
      }
    }
  }
}
