import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runImport, valueOf, waitRun, writeCsv } from './syncSupport';

/**
 * Rule failures, end to end over HTTP: a flow whose source attribute is absent is not evaluated (it never fails
 * the object, as in MIM and Entra Connect); a failing rule does not stop the others for that object, and the
 * object is tried again by every later run until it succeeds (a delta would not read it again); a change of a
 * connector's rules is said on the connector and in its next delta, and a FullSync brings the objects in line.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService();
});
afterAll(async () => {
  await rt?.dispose();
});

const COLS = ['id', 'kind', 'cn', 'mail', 'phone'];

test('an absent source attribute is not evaluated; a rule may ask to be evaluated with null', async () => {
  const dir = folder();
  writeCsv(dir, 'dir.csv', COLS, [
    { id: 'u1', kind: 'user', cn: 'Ada', mail: 'Ada@Example.test', phone: '1' },
    { id: 'g1', kind: 'group', cn: 'Staff', mail: null, phone: null },
  ]);
  const c = await fileConnector(rt, 'Absent', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'cn', objectType: 'User' });
  // Groups have no mail: this script would fail on them if it were evaluated with null.
  await rule(rt, {
    ruleType: 'FlowRule',
    connectorId: c,
    sourceAttribute: 'mail',
    targetAttribute: 'email',
    confidence: 50,
    transformScript: 'source.toLowerCase()',
  });
  // This one asks to see the absent value.
  await rule(rt, {
    ruleType: 'FlowRule',
    connectorId: c,
    sourceAttribute: 'phone',
    targetAttribute: 'phone',
    confidence: 50,
    evaluateWhenAbsent: true,
    transformScript: 'source == null ? "none" : source',
  });
  const run = await runImport(rt, c);
  expect(run.errors ?? []).toEqual([]);
  expect(run).toMatchObject({ status: 'Completed', stats: { objectsCreated: 2, errors: 0 } });
  const mesh = await meshByAnchor();
  expect(valueOf(mesh.get('Ada'), 'email')).toBe('ada@example.test');
  expect(mesh.get('Staff')!.attributes.email).toBeUndefined();
  expect(valueOf(mesh.get('Staff'), 'phone')).toBe('none');

  // The user's mail goes: its contribution is withdrawn (no value left), the object is not failed.
  writeCsv(dir, 'dir.csv', COLS, [
    { id: 'u1', kind: 'user', cn: 'Ada', mail: null, phone: '1' },
    { id: 'g1', kind: 'group', cn: 'Staff', mail: null, phone: null },
  ]);
  const delta = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(delta).toMatchObject({ status: 'Completed', stats: { objectsUpdated: 1, errors: 0 } });
  expect((await meshByAnchor()).get('Ada')!.attributes.email).toBeUndefined();
});

test('a failing rule does not stop the others; the object is tried again by later runs until the rule is fixed', async () => {
  const dir = folder();
  writeCsv(dir, 'hr.csv', COLS, [
    { id: 'p1', kind: 'user', cn: 'Grace', mail: 'grace@example.test', phone: '7' },
    { id: 'p2', kind: 'user', cn: 'Alan', mail: 'no-at-sign', phone: '8' },
  ]);
  const c = await fileConnector(rt, 'Failing', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'cn', objectType: 'User' });
  await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'phone', targetAttribute: 'phone', confidence: 50 });
  // Fails on a mail without "@" (no second part to upper-case).
  const domain = await rule(rt, {
    ruleType: 'FlowRule',
    connectorId: c,
    sourceAttribute: 'mail',
    targetAttribute: 'domain',
    confidence: 50,
    transformScript: 'source.split("@")[1].toUpperCase()',
  });
  const full = await runImport(rt, c);
  expect(full).toMatchObject({ status: 'CompletedWithErrors', stats: { errors: 1 } });
  expect(full.errors).toEqual([{ object: 'p2', message: expect.stringMatching(/^Rule '.*' \(id [0-9a-f-]+\) on attribute 'domain': /) }]);
  let mesh = await meshByAnchor();
  // The other rule of the failing object was applied.
  expect(valueOf(mesh.get('Alan'), 'phone')).toBe('8');
  expect(valueOf(mesh.get('Grace'), 'domain')).toBe('EXAMPLE.TEST');

  // Nothing changes in the source: a delta reads nothing, but the failed object is tried again (and fails again).
  const again = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(again).toMatchObject({ status: 'CompletedWithErrors', stats: { errors: 1 } });

  // The rule is fixed: the next delta (still nothing read from the source) applies it to the failed object.
  const fixed = await rt.call('PUT', `rules/${domain}`, {
    body: {
      ruleName: 'domain',
      ruleType: 'FlowRule',
      connectorId: c,
      sourceAttribute: 'mail',
      targetAttribute: 'domain',
      confidence: 50,
      transformScript: 'source.includes("@") ? source.split("@")[1].toUpperCase() : null',
    },
  });
  expect(fixed.status).toBe(200);
  const healed = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(healed).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  mesh = await meshByAnchor();
  expect(valueOf(mesh.get('Alan'), 'phone')).toBe('8');
  const after = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(after).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, errors: 0 } });
});

test('a change of the rules is said on the connector and in its next delta; a FullSync applies it; fullSyncOnRuleChange runs it', async () => {
  const dir = folder();
  writeCsv(dir, 'hr.csv', COLS, [{ id: 'q1', kind: 'user', cn: 'Hedy', mail: 'hedy@example.test', phone: '5' }]);
  const c = await fileConnector(rt, 'Rules change', dir);
  await rule(rt, { ruleType: 'ProjectionRule', connectorId: c, sourceAttribute: 'cn', objectType: 'User' });
  expect(await runImport(rt, c)).toMatchObject({ status: 'Completed' });
  expect((await rt.call('GET', `connectors/${c}`)).body.fullSyncRequired).toBe(false);

  await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'phone', targetAttribute: 'phone', confidence: 50 });
  expect((await rt.call('GET', `connectors/${c}`)).body.fullSyncRequired).toBe(true);
  const delta = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(delta).toMatchObject({ status: 'Completed', stats: { objectsProcessed: 0, errors: 0 } });
  expect(delta.errors).toEqual([{ message: expect.stringMatching(/rules of this connector changed.*FullSync/) }]);
  expect((await meshByAnchor()).get('Hedy')!.attributes.phone).toBeUndefined();

  const res = await rt.call('POST', `connectors/${c}/import`, { body: { runType: 'FullSync' } });
  expect(res.status).toBe(202);
  expect(await waitRun(rt, res.body.runId)).toMatchObject({ status: 'Completed', runType: 'FullSync', stats: { objectsProcessed: 1, errors: 0 } });
  expect(valueOf((await meshByAnchor()).get('Hedy'), 'mail')).toBeUndefined();
  expect(valueOf((await meshByAnchor()).get('Hedy'), 'phone')).toBe('5');
  expect((await rt.call('GET', `connectors/${c}`)).body.fullSyncRequired).toBe(false);

  // With fullSyncOnRuleChange, the delta goes on as a FullSync by itself.
  const current = (await rt.call('GET', `connectors/${c}`)).body;
  const put = await rt.call('PUT', `connectors/${c}`, { body: { name: current.name, config: { ...current.config, fullSyncOnRuleChange: true } } });
  expect(put.status).toBe(200);
  await rule(rt, { ruleType: 'FlowRule', connectorId: c, sourceAttribute: 'mail', targetAttribute: 'mail', confidence: 50 });
  const auto = await runImport(rt, c, { runType: 'DeltaImport' });
  expect(auto).toMatchObject({ status: 'Completed', stats: { errors: 0 } });
  expect(auto.errors).toEqual([{ message: expect.stringMatching(/went on as a FullSync/) }]);
  expect(valueOf((await meshByAnchor()).get('Hedy'), 'mail')).toBe('hedy@example.test');
  expect((await rt.call('GET', `connectors/${c}`)).body.fullSyncRequired).toBe(false);
});
