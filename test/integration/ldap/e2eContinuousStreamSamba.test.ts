import { Attribute, Change } from 'ldapts';
import { SAMBA_START_TIMEOUT_MS, startSambaAd, type SambaAd } from '../../support/samba';
import { describeWithServer } from '../../support/servers';
import { rule } from '../sync/syncSupport';
import { streamSuite } from './continuousStreamSuite';

/** Continuous mode with the change stream end to end (continuousStreamSuite.ts): a Samba AD DC source followed through change notification. */
jest.setTimeout(600_000);

describeWithServer('samba')('continuous mode with the change stream: Samba AD change notification', () => {
  let dc: SambaAd;
  streamSuite(
    async () => {
      dc = await startSambaAd();
      const ou = await dc.addOU(`OU=Streamed${process.pid},${dc.baseDN}`);
      const dn = await dc.addUser({ sAMAccountName: 'streamed', parentDN: ou, attributes: { sn: 'Before' } });
      return {
        kind: 'change notification',
        anchor: 'streamed',
        connector: async (rt, name) => {
          const res = await rt.call('POST', 'connectors', {
            body: {
              name,
              type: 'active_directory',
              config: { ...dc.connection, containers: { include: [ou] }, deltaStrategy: 'usn', deletionThreshold: { objects: 10, percent: 100 } },
            },
          });
          expect(res.status).toBe(201);
          const id = res.body.id as string;
          await rule(rt, { ruleType: 'ProjectionRule', connectorId: id, sourceAttribute: 'sAMAccountName', objectType: 'User' });
          for (const a of ['sAMAccountName', 'sn'])
            await rule(rt, { ruleType: 'FlowRule', connectorId: id, sourceAttribute: a, targetAttribute: a, confidence: 50 });
          return id;
        },
        setSn: (value) => dc.ldap((c) => c.modify(dn, [new Change({ operation: 'replace', modification: new Attribute({ type: 'sn', values: [value] }) })])),
        halt: () => dc.halt(),
        restart: () => dc.restart(),
      };
    },
    async () => {
      await dc?.release();
    },
    SAMBA_START_TIMEOUT_MS,
  );
});
