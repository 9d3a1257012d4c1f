import { startService, type ServiceUnderTest } from '../../support/service';
import { fileConnector, folder, meshByAnchor, rule, runExport, runImport, valueOf, writeCsv } from './syncSupport';

/**
 * A rule whose script fails on an object: the run goes on, and the object's error names the rule (name and
 * id) and the attribute, on import (an inbound flow) and on export (an outbound flow), over HTTP on the
 * running service with file connectors.
 */
jest.setTimeout(180_000);

let rt: ServiceUnderTest;
beforeAll(async () => {
  rt = await startService();
});
afterAll(async () => {
  await rt?.dispose();
});

describe('a failing script is a per-object error naming the rule, its id and its attribute', () => {
  test('import: an inbound flow rule', async () => {
    const hrDir = folder();
    writeCsv(
      hrDir,
      'hr.csv',
      ['id', 'givenName', 'mail'],
      [
        { id: 'p1', givenName: 'Ada', mail: 'Ada@Example.Test' },
        { id: 'p2', givenName: 'Alan', mail: null },
        { id: 'p3', givenName: null, mail: 'Grace@Example.Test' },
      ],
    );
    const hr = await fileConnector(rt, 'HR with gaps', hrDir);
    await rule(rt, { ruleType: 'ProjectionRule', connectorId: hr, sourceAttribute: 'id' });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'id', targetAttribute: 'personId', confidence: 50 });
    await rule(rt, { ruleType: 'FlowRule', connectorId: hr, sourceAttribute: 'givenName', targetAttribute: 'givenName', confidence: 50 });
    // Evaluated with the absent value too (by default an absent source is not evaluated): so it fails on p2.
    const mailRule = await rule(rt, {
      ruleName: 'Mail to email',
      ruleType: 'FlowRule',
      connectorId: hr,
      sourceAttribute: 'mail',
      targetAttribute: 'email',
      confidence: 50,
      evaluateWhenAbsent: true,
      transformScript: 'source.toLowerCase()',
    });

    const run = await runImport(rt, hr);
    expect(run).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsProcessed: 3, errors: 1 } });
    expect(run.errors).toEqual([
      {
        object: 'p2',
        message: expect.stringContaining(`Rule 'Mail to email' (id ${mailRule}) on attribute 'email': Cannot call 'toLowerCase' on null at line 1, column 7`),
      },
    ]);
    const mesh = await meshByAnchor();
    expect(valueOf(mesh.get('p1'), 'email')).toBe('ada@example.test');
    expect(mesh.has('p3')).toBe(true);
  });

  test('export: an outbound flow rule (the mesh object p3 has no givenName)', async () => {
    const outDir = folder();
    writeCsv(outDir, 'export.csv', ['uid', 'name'], []);
    const out = await fileConnector(rt, 'Export target', outDir, { anchorColumn: 'uid' });
    // Outbound rules without confidence: an outbound FlowRule does not use it.
    await rule(rt, { ruleType: 'FlowRule', connectorId: out, direction: 'outbound', sourceAttribute: 'personId', targetAttribute: 'uid' });
    const nameRule = await rule(rt, {
      ruleName: 'Upper name',
      ruleType: 'FlowRule',
      connectorId: out,
      direction: 'outbound',
      sourceAttribute: 'givenName',
      targetAttribute: 'name',
      evaluateWhenAbsent: true,
      transformScript: 'source.toUpperCase()',
    });
    const exported = await runExport(rt, out);
    // p1 and p2 (p2's failed inbound rule did not stop its others: it is in the mesh); p3 fails here.
    expect(exported).toMatchObject({ status: 'CompletedWithErrors', stats: { objectsCreated: 2, errors: 1 } });
    expect(exported.errors).toEqual([
      {
        object: 'p3',
        message: expect.stringContaining(`Rule 'Upper name' (id ${nameRule}) on attribute 'name': Cannot call 'toUpperCase' on null at line 1, column 7`),
      },
    ]);
  });
});
