#!/usr/bin/env node
'use strict';
/**
 * The wake latency of the directory change streams (docs/continuous.md, "Change streams"): from a change written
 * to the directory to the continuous DeltaImport run that imports it, per server.
 *
 * Per server of `--servers` (default `slapd,ds389`; add `samba` for a Samba AD DC, which takes a machine-wide
 * lock): the server (the test fixtures), the service (local runtime, in-memory Azurite), a directory connector
 * with a projection and an `sn` flow, a full import, then continuous mode with `intervalSeconds: 300` (so a batch
 * within seconds is the stream's doing) and `reconcileMinutes: 60`; once the stream is open
 * (`meshsync_continuous_stream_up` 1) and seen registered (a probe change counted by
 * `meshsync_continuous_stream_notifications_total`, its batch over), `--changes` (default 20) changes of one entry's sn, one at a time, each
 * `--gap` seconds (default 2) after the previous batch ended. For each change: the run's `startedAt` minus the
 * moment the bench's modify returned (wake: notification -> look -> run started), and until the run completed.
 * Prints JSON: per server wake and complete p50/p95/max seconds, batches that were not continuous, the service's
 * CPU seconds and the Admin API requests the bench made; machine: cpus, load.
 *
 * Usage: npm run bench:stream-wake [-- --servers slapd,ds389,samba --changes 20 --gap 2]
 */
require('../ldap/ts-register');
const os = require('node:os');
const { Attribute, Change, Client } = require('ldapts');
const { arg, cpuSeconds, sleep, startService } = require('../support');

const SERVERS = String(arg('servers', 'slapd,ds389')).split(',').filter(Boolean);
const CHANGES = arg('changes', 20);
const GAP_S = arg('gap', 2);

const pct = (xs, p) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return +s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)].toFixed(3);
};
const summary = (xs) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), max: xs.length ? +Math.max(...xs).toFixed(3) : null });

/** A directory under the bench: its connector config, the entry changed and how to change it. */
async function directory(name) {
  if (name === 'samba') {
    const { startSambaAd } = require('../../test/support/samba');
    const dc = await startSambaAd();
    const ou = await dc.addOU(`OU=Wake,${dc.baseDN}`);
    const dn = await dc.addUser({ sAMAccountName: 'wake', parentDN: ou, attributes: { sn: 'Before' } });
    return {
      type: 'active_directory',
      config: { ...dc.connection, containers: { include: [ou] }, deltaStrategy: 'usn' },
      anchor: 'sAMAccountName',
      client: async () => {
        const c = new Client({ url: 'ldaps://localhost:636', tlsOptions: { ca: [dc.caCertificate] } });
        await c.bind(dc.adminDN, dc.adminPassword);
        return c;
      },
      dn,
      stop: () => dc.release(),
    };
  }
  const server = name === 'ds389' ? await require('../../test/support/ds389').startDs389() : await require('../../test/support/slapd').startSlapd();
  const base = `ou=wake,${server.suffix}`;
  const dn = `uid=wake,${base}`;
  const c = new Client({ url: server.url });
  await c.bind(server.rootDN, server.rootPassword);
  await c.add(base, { objectClass: 'organizationalUnit', ou: 'wake' });
  await c.add(dn, { objectClass: 'inetOrgPerson', uid: 'wake', cn: 'Wake', sn: 'Before' });
  await c.unbind();
  return {
    type: 'ldap',
    config: {
      host: 'localhost',
      port: server.ldapsPort,
      security: 'ldaps',
      caCertificate: server.caCertificate,
      baseDN: base,
      bindDN: server.rootDN,
      bindPassword: server.rootPassword,
      deltaStrategy: 'auto',
    },
    anchor: 'uid',
    client: async () => {
      const cl = new Client({ url: server.url });
      await cl.bind(server.rootDN, server.rootPassword);
      return cl;
    },
    dn,
    stop: () => server.stop(),
  };
}

async function measure(name) {
  const d = await directory(name);
  const svc = await startService();
  let requests = 0;
  const call = (...a) => (requests++, svc.call(...a));
  const must = async (p, status) => svc.must(p, status);
  const ldap = await d.client();
  try {
    const conn = await must(call('POST', 'connectors', { name: 'Wake', type: d.type, config: d.config }), 201);
    await must(call('POST', 'rules', { ruleName: 'p', ruleType: 'ProjectionRule', connectorId: conn.id, sourceAttribute: d.anchor, objectType: 'User' }), 201);
    await must(
      call('POST', 'rules', { ruleName: 'f', ruleType: 'FlowRule', connectorId: conn.id, sourceAttribute: 'sn', targetAttribute: 'sn', confidence: 50 }),
      201,
    );
    const full = await svc.runImport(conn.id, 'FullImport');
    if (full.run.status !== 'Completed') throw new Error(`full import: ${JSON.stringify(full.run)}`);
    const current = await must(call('GET', `connectors/${conn.id}`), 200);
    await must(
      call('PUT', `connectors/${conn.id}`, {
        name: current.name,
        config: { ...current.config, continuous: { enabled: true, intervalSeconds: 300, reconcileMinutes: 60 } },
      }),
      200,
    );
    const deadline = Date.now() + 60_000;
    for (;;) {
      const text = await fetch(`${svc.base}/metrics`, { headers: { authorization: `Bearer ${svc.token}` } }).then((r) => r.text());
      requests++;
      if (/^meshsync_continuous_stream_up\{connector="Wake"\} 1$/m.test(text)) break;
      if (Date.now() > deadline) throw new Error('the change stream did not open within 60 s');
      await sleep(200);
    }
    const runs = async () => (await must(call('GET', `runs?connectorId=${conn.id}&take=100`), 200)).items;
    // A persistent search or a change notification gets no answer when the server registered it: a change in the
    // instant before is not notified. The entry is changed once a second until the service counts a notification,
    // and that batch is waited for, before the changes measured.
    const notifications = async () => {
      const text = await fetch(`${svc.base}/metrics`, { headers: { authorization: `Bearer ${svc.token}` } }).then((r) => r.text());
      requests++;
      const m = /^meshsync_continuous_stream_notifications_total\{connector="Wake"\} (\d+)$/m.exec(text);
      return m ? Number(m[1]) : 0;
    };
    const probeKnown = new Set((await runs()).map((r) => r.runId));
    const n0 = await notifications();
    for (let k = 0; (await notifications()) === n0; k++) {
      if (Date.now() > deadline + 60_000) throw new Error('no notification of the stream counted within 60 s of changes');
      await ldap.modify(d.dn, [new Change({ operation: 'replace', modification: new Attribute({ type: 'sn', values: [`Probe${k}`] }) })]);
      const until = Date.now() + 1000;
      while ((await notifications()) === n0 && Date.now() < until) await sleep(100);
    }
    for (const probeAt = Date.now(); ;) {
      const all = await runs();
      if (all.some((r) => !probeKnown.has(r.runId)) && all.every((r) => !['Running', 'Queued'].includes(r.status))) break;
      if (Date.now() - probeAt > 120_000) throw new Error("the probe's batch did not end within 120 s");
      await sleep(200);
    }
    await sleep(GAP_S * 1000);
    const known = new Set((await runs()).map((r) => r.runId));
    const wake = [];
    const complete = [];
    let notContinuous = 0;
    const cpu0 = cpuSeconds(svc.pid);
    const requests0 = requests;
    for (let i = 1; i <= CHANGES; i++) {
      await ldap.modify(d.dn, [new Change({ operation: 'replace', modification: new Attribute({ type: 'sn', values: [`Wake${i}`] }) })]);
      const changedAt = Date.now();
      let run;
      for (;;) {
        run = (await runs()).find((r) => !known.has(r.runId) && r.runType === 'DeltaImport');
        if (run && !['Running', 'Queued'].includes(run.status)) break;
        if (Date.now() - changedAt > 120_000) throw new Error(`change ${i}: no batch within 120 s`);
        await sleep(50);
      }
      known.add(run.runId);
      if (run.trigger?.type !== 'continuous' || run.stats.objectsUpdated < 1) notContinuous++;
      wake.push((Date.parse(run.startedAt) - changedAt) / 1000);
      complete.push((Date.parse(run.completedAt) - changedAt) / 1000);
      await sleep(GAP_S * 1000);
    }
    return {
      server: name,
      changes: CHANGES,
      wakeSeconds: summary(wake),
      completedSeconds: summary(complete),
      notContinuousBatches: notContinuous,
      serviceCpuSeconds: cpu0 === null ? null : +(cpuSeconds(svc.pid) - cpu0).toFixed(2),
      apiRequests: requests - requests0,
    };
  } finally {
    await ldap.unbind().catch(() => undefined);
    await svc.stop();
    await d.stop();
  }
}

async function main() {
  const load0 = os.loadavg();
  const results = [];
  for (const s of SERVERS) results.push(await measure(s));
  console.log(
    JSON.stringify(
      {
        bench: 'stream-wake',
        date: new Date().toISOString(),
        intervalSeconds: 300,
        results,
        machine: { cpus: os.cpus().length, loadBefore: load0, loadAfter: os.loadavg() },
      },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
